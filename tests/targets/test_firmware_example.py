"""examples/firmware, a firmware of a user's own (docs/firmware-example.md): built through
its own Makefile into a temporary folder (runtime and models generated, CMake with the
example's toolchain file, linker script and startup), run in QEMU on seeded random
quantized inputs written as its .bin files, and both models' outputs compared bit for bit
with ONNX Runtime, the way `verify --io quantized` compares them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generated, in_qemu, skip_where_ort_differs

from codegen.api import check_quantized_inputs
from codegen.backend.interface import Interface
from codegen.backend.io_boundary import graph_feeds, harness_entries
from codegen.oracle.verify import (
    compare_outputs,
    input_quantizations,
    random_inputs,
    reference_model,
    run_ort,
    with_outputs,
)
from codegen.target.build import decode_samples, encode_samples

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "firmware"
BOARD = "cortex-m4f"
# What the Makefile generates both models with (the runtime changes nothing computed).
INTERFACE = Interface(io="quantized", arena="caller")
SEED = 2024

if shutil.which("cmake") is None or shutil.which("make") is None:
    print("\n*** tests/targets/test_firmware_example.py SKIPPED: cmake or make is missing "
          "(make cortex-m-tools) ***\n", file=sys.stderr)
    pytest.skip("no cmake or make", allow_module_level=True)


def example_models() -> dict[str, Path]:
    """The models the example's Makefile generates, by C name (its defaults, read from it:
    the test runs what `make firmware-example` runs)."""
    text = (EXAMPLE / "Makefile").read_text()
    found = dict(re.findall(r"^(KWS|VISION)_MODEL \?= \$\(REPO\)/(\S+)$", text, re.M))
    assert set(found) == {"KWS", "VISION"}, found
    return {name.lower(): REPO / path for name, path in found.items()}


def source_tree() -> set[Path]:
    return {p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*")}


@in_qemu
def test_the_example_firmware_is_bit_exact_with_onnx_runtime(tmp_path: Path) -> None:
    models = example_models()
    for model in models.values():
        skip_where_ort_differs(model, board=BOARD, interface=INTERFACE)
    run = tmp_path / "run"
    run.mkdir()
    cases = {}
    for index, (name, model) in enumerate(models.items()):
        gen = generated(model, board=BOARD, interface=INTERFACE)
        [entry] = harness_entries(gen.program)
        data = random_inputs(entry.inputs, 1, SEED + index, input_quantizations(gen.graph))
        (run / f"{name}_input.bin").write_bytes(encode_samples(entry.inputs, data))
        cases[name] = (gen, entry, data)
    before = source_tree()

    result = subprocess.run(
        ["make", "-C", str(EXAMPLE), f"BUILD={tmp_path / 'build'}", f"RUN={run}",
         f"ONNX2MCU={sys.executable} -m codegen.cli", f"PYTHON={sys.executable}", "run"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert source_tree() == before  # everything went to BUILD, nothing into the example
    assert ("qemu-system-arm -M mps2-an386 -nographic -semihosting-config "
            "enable=on,target=native -kernel") in result.stdout
    printed = result.stdout.splitlines()

    for name, (gen, entry, data) in cases.items():
        raw = (run / f"{name}_output.bin").read_bytes()
        ours = decode_samples(entry.outputs, raw, 1)
        # ORT on verify's reference, fed the dequantized inputs; the quantized tensors at
        # the model's boundary are its intermediates, asked for by name.
        reference = reference_model(gen.model, gen.graph, gen.qdq_rules)
        names = [t.onnx_name for t in (*entry.inputs, *entry.outputs)]
        refs = run_ort(with_outputs(reference.model, names),
                       graph_feeds(gen.program, entry, data), config=reference.config)
        check_quantized_inputs(entry, data, refs)
        reports = compare_outputs(entry.outputs, ours, refs)
        assert reports and all(r.elements and r.mismatches == 0 for r in reports), reports

        # The firmware's line for the model shows the scores it wrote.
        [output] = entry.outputs
        scores = ours[0][output.onnx_name].ravel()
        line = (f"{name}: class {int(scores.argmax())} of {scores.size}; int8 scores: "
                + " ".join(str(int(v)) for v in scores))
        assert line in printed, result.stdout
        # One line per layer from the hooks (the cycles: 0 in QEMU, which models no time).
        header = (tmp_path / "build" / "generated" / name / f"{name}.h").read_text()
        layers = int(re.search(rf"#define {name.upper()}_NUM_LAYERS (\d+)", header).group(1))
        timed = [s for s in printed if re.match(rf"  {name} layer +\d+: +0 cycles  \S", s)]
        assert len(timed) == layers, result.stdout
