"""`onnx2mcu report`: the per-layer table, the totals and the arena picture for every zoo
model (host board, in process), a Cortex-M4F report with measured budget and per-layer
instruction counts, hostile names escaped in SVG and HTML, and no clobbered files."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from zoo import SPREAD_CASES, case_id, quantized_model

from codegen import api
from codegen.cli import main
from codegen.options import Options
from codegen.pipeline import generate_sources
from codegen.target.firmware import cross_toolchain_available
from codegen.target.qemu import qemu_available
from codegen.views.report import (
    build_report,
    format_report_text,
    printable,
    render_arena_svg,
    render_report_html,
    report_to_json,
)

SVG = "{http://www.w3.org/2000/svg}"
ROW = re.compile(r"^\s*\d+\s")  # a table row starts with its step number
HOSTILE = 'a<b&c"d\'e*/f]]>g\n-->h'
needs_cortex_m = pytest.mark.skipif(
    not (cross_toolchain_available() and qemu_available()),
    reason="no arm-none-eabi-gcc or qemu-system-arm")


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if ROW.match(line)]


def buffer_rects(svg: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(svg)
    frame = root.find(f".//{SVG}rect[@class='frame']")
    assert frame is not None
    return frame, root.findall(f".//{SVG}rect[@class='buffer']")


def check_svg(svg: str, placements: int, arena: int) -> None:
    """One rectangle per planned buffer, each inside the arena's byte range and inside
    the plot."""
    frame, rects = buffer_rects(svg)
    assert len(rects) == placements
    top = float(frame.attrib["y"])
    bottom = top + float(frame.attrib["height"])
    left = float(frame.attrib["x"])
    right = left + float(frame.attrib["width"])
    for rect in rects:
        offset, size = int(rect.attrib["data-offset"]), int(rect.attrib["data-size"])
        assert offset >= 0 and offset + size <= arena
        x, y = float(rect.attrib["x"]), float(rect.attrib["y"])
        w, h = float(rect.attrib["width"]), float(rect.attrib["height"])
        assert left - 0.01 <= x and x + w <= right + 0.01
        assert top - 0.01 <= y and y + h <= bottom + 0.01


@pytest.mark.parametrize("case", SPREAD_CASES, ids=case_id)
def test_report_for_every_zoo_architecture(case: tuple[str, str], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    model = save(quantized_model(*case), tmp_path / "m.onnx")
    gen = generate_sources(str(model), Options())
    plan = gen.plan

    assert main(["report", str(model), "--svg", str(tmp_path / "a.svg")]) == 0
    text = capsys.readouterr().out
    rows = table_rows(text)
    assert len(rows) == len(gen.program.calls)
    for row, call in zip(rows, gen.program.calls, strict=True):
        assert call.function in row
    assert f"arena: {plan.size} bytes, lower bound {plan.lower_bound} bytes" in text
    check_svg((tmp_path / "a.svg").read_text(), len(plan.placements), plan.size)

    assert main(["report", str(model), "--format", "json",
                 "--output", str(tmp_path / "r.json")]) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["totals"]["arena_bytes"] == plan.size
    assert data["totals"]["arena_lower_bound"] == plan.lower_bound
    assert len(data["layers"]) == len(gen.program.calls)
    assert {b["name"]: (b["offset"], b["size"], b["first"], b["last"])
            for b in data["buffers"]} == {
        p.tensor: (p.offset, p.size, p.first, p.last) for p in plan.placements.values()}
    # The per-step allocation list: what is live at each call, and the bound is its peak.
    assert len(data["steps"]) == len(gen.program.calls)
    assert max(s["live_bytes"] for s in data["steps"]) == plan.lower_bound
    for layer in data["layers"]:
        for t in layer["outputs"]:
            if t["storage"] == "arena":
                assert plan.placements[gen.program.root(t["name"])].offset == t["offset"]


def test_report_is_deterministic() -> None:
    model = quantized_model("squeezenet_style", "u8-pc")
    first, second = (build_report(generate_sources(model, Options())) for _ in range(2))
    for render in (format_report_text, report_to_json, render_arena_svg, render_report_html):
        assert render(first) == render(second)


def rename(model: onnx.ModelProto, old: str, new: str) -> None:
    """Rename a tensor everywhere it appears."""
    for node in model.graph.node:
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]
    for value in model.graph.value_info:
        if value.name == old:
            value.name = new


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    model = quantized_model("lenet5", "i8-pc")
    conv = next(n for n in model.graph.node if n.op_type == "QLinearConv")
    rename(model, conv.output[0], HOSTILE)
    conv.name = HOSTILE + " node"
    report = build_report(generate_sources(model, Options()))
    assert any(b.name == HOSTILE for b in report.buffers)

    svg = render_arena_svg(report)
    root = ET.fromstring(svg)  # parses: nothing unescaped broke the document
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(t.startswith(printable(HOSTILE) + ":") for t in titles)
    assert HOSTILE not in svg and "a<b" not in svg
    check_svg(svg, len(report.buffers), report.totals.arena_bytes)

    page = render_report_html(report)
    assert "a<b" not in page and 'c"d' not in page and "\n-->h" not in page
    assert "a&lt;b&amp;c&quot;d&#x27;e*/f]]&gt;g?--&gt;h node" in page
    inline = page[page.index("<svg"):page.index("</svg>") + len("</svg>")]
    assert len(buffer_rects(inline)[1]) == len(report.buffers)

    # The newline in the name cannot split a table row.
    assert len(table_rows(format_report_text(report))) == len(report.layers)


def test_bidirectional_overrides_are_not_printed(tmp_path: Path) -> None:
    """U+202E (right-to-left override) in a name would reorder what the terminal shows of
    the rest of the line: report replaces it, as the other commands escape it."""
    model = quantized_model("lenet5", "i8-pc")
    conv = next(n for n in model.graph.node if n.op_type == "QLinearConv")
    conv.name = "conv\u200b\u202e1"
    report = build_report(generate_sources(model, Options()))
    for render in (format_report_text, render_arena_svg, render_report_html):
        text = render(report)
        assert "\u202e" not in text and "\u200b" not in text
    assert "conv??1" in format_report_text(report)


def test_never_clobbers_existing_files(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    model = save(quantized_model("lenet5", "u8-pt"), tmp_path / "m.onnx")
    for option in ("--output", "--svg"):
        precious = tmp_path / f"precious{option}.txt"
        precious.write_text("user data")
        assert main(["report", str(model), option, str(precious)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exists; pass --force" in err
        assert precious.read_text() == "user data"
        assert main(["report", str(model), option, str(precious), "--force"]) == 0
        assert precious.read_text() != "user data"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize("args,needle", [
    (["--count-instructions"], "need a microcontroller board"),
    (["--inputs", "x.npz"], "--inputs goes with --count-instructions"),
    (["--output", "same.svg", "--svg", "same.svg"], "same file"),
])
def test_bad_report_options(args: list[str], needle: str, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = save(quantized_model("lenet5", "u8-pt"), tmp_path / "m.onnx")
    assert main(["report", str(model), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@needs_cortex_m
def test_cortex_m_report_with_instruction_counts(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    model = save(quantized_model("ad_autoencoder", "i8-pc"), tmp_path / "ad.onnx")
    report = api.report(str(model), board="cortex-m4f", count=True)
    t = report.totals
    assert t.flash_bytes is not None and t.code_bytes is not None and t.ram_bytes is not None
    assert t.flash_bytes == t.weight_bytes + t.code_bytes <= (t.flash_budget or 0)
    assert t.ram_bytes == t.arena_bytes + (t.stack_bytes or 0) + (t.static_bytes or 0)
    assert t.ram_bytes <= (t.ram_budget or 0)
    counts = [layer.instructions for layer in report.layers]
    assert all(c is not None and c > 0 for c in counts)
    assert t.instructions == sum(c or 0 for c in counts) + (t.instructions_overhead or 0)

    assert main(["report", str(model), "--board", "cortex-m4f", "--format", "html",
                 "--output", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "flash: weights" in page and "of 4194304" in page
    assert page.count("<tr>") == len(report.layers) + 1


def test_model_without_arena() -> None:
    """One QuantizeLinear: its input and output are the model's own buffers, so the arena
    is empty and the picture says so."""
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")], "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4])],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
         helper.make_tensor("z", TensorProto.INT8, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    report = build_report(generate_sources(model, Options()))
    assert report.totals.arena_bytes == 0 and not report.buffers
    svg = render_arena_svg(report)
    check_svg(svg, 0, 0)
    assert "the arena is empty" in svg
    assert len(table_rows(format_report_text(report))) == 1
    json.loads(report_to_json(report))
