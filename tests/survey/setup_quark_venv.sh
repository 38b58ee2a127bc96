#!/usr/bin/env bash
# The AMD Quark venv of the fresh-model survey: /tmp/survey/venv-quark (or $1).
# amd-quark 0.13 pins onnx<=1.22 (the main torch venv has a newer onnx), so it lives
# apart. amd-quark declares no torch dependency and quark.onnx's ModelQuantizer imports
# none for the configurations the survey uses (no AdaRound/AdaQuant fine-tuning), so torch
# is installed only if `import quark.onnx` asks for it (then torch==2.13.0, nothing else).
set -euo pipefail
VENV=${1:-/tmp/survey/venv-quark}
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "amd-quark==0.13" "onnxruntime==1.32.*" "onnx>=1.21,<=1.22"
if ! "$VENV/bin/python" -c "import quark.onnx" 2>"$VENV/import.err"; then
    if grep -q "No module named 'torch'" "$VENV/import.err"; then
        "$VENV/bin/pip" install -q "torch==2.13.0"
        "$VENV/bin/python" -c "import quark.onnx"
    else
        cat "$VENV/import.err" >&2
        exit 1
    fi
fi
"$VENV/bin/python" -c "import quark, onnx, onnxruntime; print('quark', quark.__version__, 'onnx', onnx.__version__, 'onnxruntime', onnxruntime.__version__)"
