# onnx2mcu developer entry points. Everything runs from a local .venv.
#   make demo   set up, then generate, build and verify C for the shipped example model
#   make test   set up with the test extras, then lint, type-check and run the whole suite
#   make test-fast   the unit, kernel and operator layers (tests/unit, kernels, ops) on the
#               host, without their tests marked qemu
#   make fuzz   a long fuzz campaign of broken models (FUZZ_COUNT, FUZZ_SEED)
#   make test-cpu-profiles   the CPU-sensitive tests under each forced CPU profile
#   make docs   regenerate docs/operators.md and docs/cli.md (a test fails when they are stale)
#   make firmware-example   a firmware of your own (examples/firmware): two models, one shared
#               runtime, one arena, built with CMake and run in QEMU on a Cortex-M4F
# The suite, its layers and these targets: docs/testing.md.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXAMPLE := examples/tiny_cnn_qop.onnx
DEMO_OUT := demo-out
JOBS ?= auto
FUZZ_COUNT ?= 50000
FUZZ_SEED ?= 1

.PHONY: demo test test-fast lint pytest fuzz example stripes clean cortex-m-tools riscv-tools test-cpu-profiles test-corpus-makefiles \
	test-interfaces docs firmware-example browser-tools

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "onnx2mcu needs Python >= 3.11 (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Re-install when the package metadata changes; the package itself is editable.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

demo: $(VENV)/.installed
	$(BIN)/onnx2mcu generate $(EXAMPLE) -o $(DEMO_OUT) --force
	$(MAKE) -C $(DEMO_OUT)
	$(BIN)/python examples/run_harness.py $(EXAMPLE) $(DEMO_OUT)
	$(BIN)/onnx2mcu verify $(EXAMPLE) --samples 20
	$(BIN)/onnx2mcu verify $(EXAMPLE) --samples 20 --requant int
	@if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null && command -v cmake >/dev/null; then \
		$(BIN)/onnx2mcu verify $(EXAMPLE) --samples 5 --board cortex-m4f; \
	else \
		echo "(no arm-none-eabi-gcc/qemu-system-arm: skipping the Cortex-M4F run; make cortex-m-tools)"; \
	fi
	@if command -v riscv64-unknown-elf-gcc >/dev/null && command -v qemu-system-riscv32 >/dev/null; then \
		$(BIN)/onnx2mcu verify $(EXAMPLE) --samples 5 --board riscv32; \
	else \
		echo "(no riscv64-unknown-elf-gcc/qemu-system-riscv32: skipping the RISC-V run; make riscv-tools)"; \
	fi

lint: $(VENV)/.installed-test
	$(BIN)/ruff check codegen tests examples bench docs
	$(BIN)/mypy

pytest: $(VENV)/.installed-test cortex-m-tools riscv-tools browser-tools
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q --durations=40

# The layers that need no whole model (pure Python, C kernels, operator families), on the
# host: their tests that run on a board in QEMU (marker qemu) are left to `make test`.
test-fast: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q -m "not qemu" tests/unit tests/kernels tests/ops

# The Cortex-M cross compiler and QEMU, installed with apt when missing (CI runs as
# root on Debian). Without apt or root the Cortex-M tests are skipped, loudly.
CORTEX_M_PACKAGES := gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm cmake
cortex-m-tools:
	@if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null && command -v cmake >/dev/null; then \
		exit 0; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing $(CORTEX_M_PACKAGES) with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $(CORTEX_M_PACKAGES) >/dev/null; \
	else \
		echo "*** WARNING: arm-none-eabi-gcc or qemu-system-arm missing and apt-get (as root)"; \
		echo "*** unavailable: the Cortex-M tests will be SKIPPED. Install:"; \
		echo "***   $(CORTEX_M_PACKAGES)"; \
	fi

# The RV32 cross compiler, picolibc and QEMU's RISC-V machines, the same way.
RISCV_PACKAGES := gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
riscv-tools:
	@if command -v riscv64-unknown-elf-gcc >/dev/null && command -v qemu-system-riscv32 >/dev/null \
			&& [ -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ]; then \
		exit 0; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing $(RISCV_PACKAGES) with apt-get"; \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(RISCV_PACKAGES) >/dev/null 2>&1 || (apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(RISCV_PACKAGES) >/dev/null)); \
	else \
		echo "*** WARNING: riscv64-unknown-elf-gcc, picolibc or qemu-system-riscv32 missing and"; \
		echo "*** apt-get (as root) unavailable: the RISC-V tests will be SKIPPED. Install:"; \
		echo "***   $(RISCV_PACKAGES)"; \
	fi

# Debian's headless Chromium lays out the HTML report for tests/tools/test_report_browser.py.
browser-tools:
	@if command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null; then \
		exit 0; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium-headless-shell with apt-get"; \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			chromium-headless-shell >/dev/null 2>&1 || (apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			chromium-headless-shell >/dev/null)); \
	else \
		echo "*** WARNING: no headless Chromium and apt-get (as root) unavailable: the HTML"; \
		echo "*** report's layout test will be SKIPPED. Install chromium-headless-shell"; \
	fi

test: lint pytest

# The tests whose comparisons with ORT depend on ORT's CPU (codegen/oracle/cpu.py), run under
# each forced profile (ONNX2MCU_CPU_PROFILE): green each time, the checks that would not
# hold on that CPU skipped with the reason, the modelled u8 x s8 paths exercised.
# CPU_PROFILES, CPU_PROFILE_TESTS and CPU_PROFILE_PYTEST_ARGS (say, -k) narrow it.
CPU_PROFILES ?= x86-avx512-vnni x86-avx512 x86-avx2-vnni x86-avx2 x86-sse arm64 unknown
CPU_PROFILE_TESTS ?= tests/unit/test_cpu_profiles.py tests/ops/test_u8s8_reference.py \
	tests/ops/test_float_islands.py tests/ops/test_recipes.py tests/networks/test_qdq.py tests/networks/test_zoo.py \
	tests/ops/test_elementwise_ops.py tests/ops/test_extreme_inputs.py tests/ops/test_matrix_ops.py \
	tests/networks/test_quantized_cnn.py tests/ops/test_tabulate.py tests/ops/test_reduce.py \
	tests/ops/test_conv_transpose.py tests/networks/test_corpus.py tests/tools/test_refusals.py \
	tests/ops/test_resize.py tests/ops/test_recurrent.py tests/ops/test_where.py tests/ops/test_layer_norm.py \
	tests/ops/test_instance_norm.py tests/ops/test_transpose.py
CPU_PROFILE_PYTEST_ARGS ?=
test-cpu-profiles: $(VENV)/.installed-test
	@for profile in $(CPU_PROFILES); do \
		echo "== ONNX2MCU_CPU_PROFILE=$$profile"; \
		ONNX2MCU_CPU_PROFILE=$$profile $(BIN)/python -m pytest -n $(JOBS) -q -ra \
			$(CPU_PROFILE_PYTEST_ARGS) $(CPU_PROFILE_TESTS) || exit 1; \
	done

# Every C interface (--io quantized|both, --arena caller, --arena-section) on every zoo
# model (32), on the host and in QEMU on cortex-m4f and cortex-m0plus.
test-interfaces: $(VENV)/.installed-test cortex-m-tools
	ONNX2MCU_INTERFACE_MATRIX=1 $(BIN)/python -m pytest -n $(JOBS) -q -ra \
		tests/targets/test_interface_matrix.py

# Every corpus model through its generated Makefile and OUT/build/net_main in both
# requantization modes (make test takes one mode per model beyond one per family).
test-corpus-makefiles: $(VENV)/.installed-test
	ONNX2MCU_CORPUS_ALL_MODES=1 $(BIN)/python -m pytest -n $(JOBS) -q -ra \
		tests/networks/test_corpus.py -k test_every_model_through_its_makefile

# The CI campaign (tests/tools/test_fuzz.py) uses seed 0; this one explores further. A crash
# prints its case number: replay it with tests/fuzz_models.py --seed S --case N.
fuzz: $(VENV)/.installed-test
	$(BIN)/python tests/fuzz_models.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED)

# The worked example: a float CNN quantized, generated, verified and validated.
stripes: $(VENV)/.installed cortex-m-tools
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/stripes/walkthrough.sh build/stripes

# The reference pages generated from the operator registry and the argument parser.
docs: $(VENV)/.installed
	$(BIN)/python docs/generate_reference.py

# examples/firmware (docs/firmware-example.md): generates the shared runtime and two models
# into build/firmware-example, builds the firmware, runs it in QEMU; prints both outputs.
firmware-example: $(VENV)/.installed cortex-m-tools
	$(MAKE) -C examples/firmware BUILD=$(CURDIR)/build/firmware-example \
		ONNX2MCU=$(CURDIR)/$(BIN)/onnx2mcu PYTHON=$(CURDIR)/$(BIN)/python

# Rebuild the shipped example model (needs only this package's dependencies).
example: $(VENV)/.installed
	$(BIN)/python examples/make_tiny_cnn.py --activations uint8 $(EXAMPLE)

clean:
	rm -rf $(DEMO_OUT) .pytest_cache .mypy_cache .ruff_cache build dist
