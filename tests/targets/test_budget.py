"""Several models on one board's budget: `report A B` against each model's own report,
the rest of the firmware reserved (--reserve-flash/--reserve-ram) in generate, report
and --weights auto, and quantize naming --memory min where that fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_inprocess import run_cli

from codegen.options import Options
from codegen.target.firmware import cross_toolchain_available
from codegen.views.inspection import inspect_model

if not cross_toolchain_available():
    print("\n*** tests/targets/test_budget.py SKIPPED: arm-none-eabi-gcc is missing "
          "(apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi) ***\n", file=sys.stderr)
    pytest.skip("no Cortex-M toolchain", allow_module_level=True)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# The firmware example's two models (examples/firmware/Makefile).
KWS = CORPUS / "kws_gru_dynamo_quark_a8w8.onnx"
VISION = CORPUS / "tv_mobilenet_v2_dynamo_ort_qdq_s8s8.onnx"
SHIPPED = ["--board", "nucleo-l432kc", "--io", "quantized", "--arena", "caller"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"


def report_json(*args: str | Path) -> dict[str, object]:
    result = run_cli("report", *args, "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("shared", [False, True])
def test_two_models_together_beside_the_hand_sum_of_their_reports(shared: bool) -> None:
    alone = [report_json(model, *SHIPPED)["totals"] for model in (KWS, VISION)]
    extra = ["--shared-arena"] if shared else []
    both = report_json(KWS, VISION, *SHIPPED, *extra, "--reserve-flash", "40K",
                       "--reserve-ram", "10K")
    models = both["models"]
    assert isinstance(models, list)
    for cost, totals in zip(models, alone, strict=True):
        assert isinstance(totals, dict)
        for field in ("flash_bytes", "ram_bytes", "arena_bytes", "stack_bytes", "io_bytes",
                      "weight_bytes"):
            assert cost[field] == totals[field], (field, cost, totals)
    together = both["together"]
    assert isinstance(together, dict)
    flash_sum = sum(int(t["flash_bytes"]) for t in alone)  # type: ignore[index]
    # The kernels, library routines and startup the two share, counted once.
    assert both["shared_flash_bytes"] == flash_sum - together["flash_bytes"] > 1000
    assert together["flash_bytes"] > max(int(t["flash_bytes"]) for t in alone)  # type: ignore[index]
    arenas = [int(t["arena_bytes"]) for t in alone]  # type: ignore[index]
    assert together["arena_bytes"] == (max(arenas) if shared else sum(arenas))
    assert together["stack_bytes"] == max(int(t["stack_bytes"]) for t in alone)  # type: ignore[index]
    # RAM: the arenas (overlaid or not), the deepest stack, the statics of both.
    statics = sum(int(t["ram_bytes"]) - int(t["arena_bytes"]) - int(t["stack_bytes"])  # type: ignore[index]
                  for t in alone)
    assert together["ram_bytes"] == together["arena_bytes"] + together["stack_bytes"] + statics
    # As one model's report: the budgets are the board's less the reserves.
    assert (both["flash_reserved"], both["ram_reserved"]) == (40 * 1024, 10 * 1024)
    assert both["flash_budget"] == 256 * 1024 - 40 * 1024
    assert both["ram_budget"] == 64 * 1024 - 10 * 1024
    assert both["fits"] == (together["flash_bytes"] <= both["flash_budget"]  # type: ignore[operator]
                            and together["ram_bytes"] <= both["ram_budget"])  # type: ignore[operator]
    assert both["fits"] is shared  # 49 + 5.4 KB of arenas, 10 KB reserved: only overlaid


def test_the_text_report_says_whether_they_fit() -> None:
    result = run_cli("report", KWS, VISION, *SHIPPED, "--reserve-ram", "10K")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("board nucleo-l432kc: 2 models in one firmware")
    assert lines[-1].startswith("result: does NOT fit: over in RAM by ")
    assert lines[-1].endswith("; --shared-arena overlays the arenas")
    shared = run_cli("report", KWS, VISION, *SHIPPED, "--reserve-ram", "10K", "--shared-arena")
    assert shared.returncode == 0 and shared.stdout.splitlines()[-1].startswith("result: fits")
    refused = run_cli("report", KWS, VISION, *SHIPPED, "--svg", "x.svg")
    assert refused.returncode == 2
    assert refused.stderr.startswith("onnx2mcu: error: --svg: with several models")
    static = run_cli("report", KWS, VISION, "--board", "nucleo-l432kc", "--shared-arena")
    assert static.returncode == 2
    assert static.stderr.startswith("onnx2mcu: error: --shared-arena goes with --arena caller")


def test_models_of_any_names_link_together(tmp_path: Path) -> None:
    """Two files of one name, and names the combined build itself might use: each model
    gets a C name of its own and its sources a folder of their own."""
    import shutil

    for folder, stem in (("a", "combined"), ("b", "combined"), ("c", "q8_combined_main"),
                         ("d", "x" * 40)):
        (tmp_path / folder).mkdir()
        shutil.copy(EXAMPLE, tmp_path / folder / f"{stem}.onnx")
    models = [tmp_path / "a" / "combined.onnx", tmp_path / "b" / "combined.onnx",
              tmp_path / "d" / f"{'x' * 40}.onnx", tmp_path / "d" / f"{'x' * 40}.onnx"]
    data = report_json(*models, "--board", "cortex-m4f")
    names = [m["name"] for m in data["models"]]  # type: ignore[union-attr, index]
    assert names == ["combined", "combined_2", "x" * 40, "x" * 38 + "_2"]
    assert data["fits"] is True


def test_reserves_hold_the_model_to_what_is_left(tmp_path: Path) -> None:
    """--weights auto takes int16 weights on the whole board, and int8 where the rest of
    the firmware leaves too little flash for them; the budget line says what is left."""
    # The model's flash with each weight width (about 145 KB and 112 KB): the reserve
    # below leaves 139,264 bytes, between the two.
    wide, narrow = (int(report_json(VISION, *SHIPPED, "--weights", w)["totals"]  # type: ignore[index]
                        ["flash_bytes"]) for w in ("int16", "int8"))
    assert narrow < 262144 - 120 * 1024 < wide
    whole = run_cli("generate", VISION, "-o", tmp_path / "a", *SHIPPED)
    assert whole.returncode == 0, whole.stderr
    assert f"board nucleo-l432kc: flash {wide} of 262144 bytes;" in whole.stdout
    tight = run_cli("generate", VISION, "-o", tmp_path / "b", *SHIPPED, "--reserve-flash",
                    "120K")
    assert tight.returncode == 0, tight.stderr
    assert f"flash {narrow} of 139264 bytes left of 262144;" in tight.stdout
    assert "note: weights int8: --weights auto's int16 weights (and the kernels of both " \
        "widths) would not fit the flash left; int8 weights do" in tight.stdout
    # Every command builds what generate ships: report and inspect take int8 weights too.
    reported = report_json(VISION, *SHIPPED, "--reserve-flash", "120K")["totals"]
    assert reported["flash_bytes"] == narrow  # type: ignore[index]
    inspected = run_cli("inspect", VISION, *SHIPPED, "--reserve-flash", "120K")
    assert "_w16" not in inspected.stdout and "note: weights int8" in inspected.stdout
    over = run_cli("generate", VISION, "-o", tmp_path / "c", *SHIPPED, "--reserve-flash",
                   "200K")
    assert over.returncode == 2 and not (tmp_path / "c").exists()
    assert "board has 256.0 KB less 200.0 KB reserved for the rest of the firmware" \
        in over.stderr
    too_much = run_cli("inspect", VISION, "--board", "nucleo-l432kc", "--reserve-ram", "64K")
    assert too_much.returncode == 2
    assert too_much.stderr.strip() == ("onnx2mcu: error: --reserve-ram 65536: board "
                                       "'nucleo-l432kc' has 65536 bytes in all, nothing would "
                                       "be left for the model")


def test_quantize_names_memory_min_where_it_fits() -> None:
    from codegen.cli import board_fit_lines, min_memory_line
    from codegen.core.boards import load_board

    board = load_board("nucleo-g071rb")  # 36 KB of RAM
    fast = inspect_model(str(VISION), Options(board="nucleo-g071rb"))
    assert "does NOT fit" in board_fit_lines(fast, board)[0]
    banded = inspect_model(str(VISION), Options(board="nucleo-g071rb", memory="min"))
    line = min_memory_line(banded, board)
    assert line.startswith("with --memory min (layers in row bands) the arena is ")
    assert line.endswith(": fits, before code, stack and I/O; generate with --memory min (it "
                         "measures them)")


def test_generate_says_when_the_test_harness_does_not_fit(tmp_path: Path) -> None:
    """On a part the model nearly fills (36 KB for 35.0 KB), the model fits but the test
    harness beside it (newlib's stdio, semihosting, its stack reserve) does not: generate
    points at `make lib`, which builds, not at `make`, whose link fails."""
    import subprocess

    out = tmp_path / "g071"
    result = run_cli("generate", EXAMPLE, "-o", out, "--board", "nucleo-g071rb")
    assert result.returncode == 0, result.stderr
    assert "board nucleo-g071rb: flash " in result.stdout
    assert f"build: make -C {out} lib  ->  {out}/build/libtiny_cnn_qop.a for your firmware " \
           "(the test harness" in result.stdout
    assert subprocess.run(["make", "-s", "-C", str(out), "lib"], capture_output=True
                          ).returncode == 0
    harness = subprocess.run(["make", "-s", "-C", str(out)], capture_output=True, text=True)
    assert harness.returncode != 0 and "does not fit the RAM" in harness.stderr
    roomy = run_cli("generate", EXAMPLE, "-o", tmp_path / "l432", "--board", "nucleo-l432kc")
    assert f"build: make -C {tmp_path / 'l432'}  ->  " in roomy.stdout


def test_weights_auto_weighs_the_models_together() -> None:
    """Each model's int16 weights fit the flash left alone, not together: every model
    takes int8 weights, said in a note, and they fit."""
    data = report_json(KWS, VISION, *SHIPPED, "--shared-arena", "--reserve-flash", "110K")
    notes = [n for m in data["models"] for n in m["notes"]]  # type: ignore[union-attr]
    assert sum(n.startswith("weights int8 in every model") for n in notes) == 2, notes
    assert data["fits"] is True
    text = run_cli("report", KWS, VISION, *SHIPPED, "--shared-arena", "--reserve-flash", "110K")
    assert "note: vision" not in text.stdout  # the models' own names
    assert "note: tv_mobilenet_v2_dynamo_ort_qdq_s8s8: weights int8 in every model" \
        in text.stdout
