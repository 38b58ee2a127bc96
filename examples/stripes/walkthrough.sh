#!/usr/bin/env bash
# From a float model to a validated firmware, with the example's float CNN and data set:
#   bash examples/stripes/walkthrough.sh [WORK_DIR]      (default: build/stripes)
# Needs `onnx2mcu` on PATH (make demo or make test put it in .venv/bin) and a C compiler;
# the Cortex-M steps run when arm-none-eabi-gcc and qemu-system-arm are installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-build/stripes}"
rm -rf "$work" && mkdir -p "$work"

# 1. Quantize the float model with its calibration samples (ONNX Runtime's quantizer).
onnx2mcu quantize "$here/stripes_cnn.onnx" -o "$work/stripes_q.onnx" \
    --calibration "$here/stripes.npz"

# 2. What onnx2mcu makes of the quantized model: one line per node, then the totals.
onnx2mcu inspect "$work/stripes_q.onnx"

# 3. The C project, built and run on the host.
onnx2mcu generate "$work/stripes_q.onnx" -o "$work/stripes_c"
make -s -C "$work/stripes_c"

# 4. Every sample: the C against ONNX Runtime (bit for bit) and against the float model.
onnx2mcu verify "$work/stripes_q.onnx" --dataset "$here/stripes.npz" \
    --labels "$here/stripes_labels.npy"
onnx2mcu validate "$work/stripes_q.onnx" --float-model "$here/stripes_cnn.onnx" \
    --dataset "$here/stripes.npz" --labels "$here/stripes_labels.npy"

# 5. RAM, flash and time on a Cortex-M4F, and the same validation in QEMU on a Cortex-M0+.
if command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null; then
    onnx2mcu report "$work/stripes_q.onnx" --board cortex-m4f --count-cycles
    onnx2mcu validate "$work/stripes_q.onnx" --float-model "$here/stripes_cnn.onnx" \
        --dataset "$here/stripes.npz" --labels "$here/stripes_labels.npy" \
        --board cortex-m0plus
else
    onnx2mcu report "$work/stripes_q.onnx"
fi
