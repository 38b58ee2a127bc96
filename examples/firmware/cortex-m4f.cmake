# CMake toolchain file: arm-none-eabi-gcc for a Cortex-M4 with its single-precision FPU.
#   cmake -S examples/firmware -B BUILD -DCMAKE_TOOLCHAIN_FILE=$PWD/examples/firmware/cortex-m4f.cmake
# (an absolute path: CMake resolves a relative one against the build folder, then the
# source folder, never the current one).
# The CPU flags live here, once, so that every target of the build gets them: your own
# sources and the onnx2mcu libraries alike (the generated CMakeLists add no CPU flags of
# their own). They must match the board the models were generated for (--board cortex-m4f:
# hard-float ABI, FPv4-SP), or the objects will not link together.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
# No operating system to link a test program against while CMake probes the compiler.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# CMake passes CMAKE_C_FLAGS to the link step too, so the linker picks the matching
# (thumb, hard-float) multilib of newlib and libgcc.
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
