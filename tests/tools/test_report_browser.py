"""The HTML report and its arena picture as a real browser lays them out (Debian's headless
Chromium): nothing overflows its box. A script added to the page measures, after layout,
every text of the picture against the picture's width, every table cell's content
against the cell, and the page against the window; the DOM the browser dumps carries its
findings."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inprocess import run_cli

BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")
if BROWSER is None:
    print("\n*** tests/tools/test_report_browser.py SKIPPED: no headless Chromium (apt-get "
          "install chromium-headless-shell; make test installs it) ***\n", file=sys.stderr)
    pytest.skip("no headless Chromium", allow_module_level=True)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn_qop.onnx"
WINDOW = (1000, 800)

# Runs once the page is laid out; writes what overflows into <body data-overflow=...>.
CHECK = """<script>
window.addEventListener('load', () => {
  const bad = [];
  for (const svg of document.querySelectorAll('svg')) {
    const width = svg.viewBox.baseVal.width;
    for (const text of svg.querySelectorAll('text')) {
      const box = text.getBBox();
      if (box.x < -0.5 || box.x + box.width > width + 0.5) {
        bad.push('picture text past the picture (' + Math.round(box.x + box.width) + ' > ' +
                 width + '): ' + text.textContent.slice(0, 80));
      }
    }
  }
  for (const cell of document.querySelectorAll('td, th, li, p, h1, h2')) {
    if (cell.scrollWidth > cell.clientWidth + 1) {
      bad.push(cell.tagName + ' content wider than its box: ' + cell.textContent.slice(0, 80));
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth) {
    bad.push('page wider than the window: ' + document.documentElement.scrollWidth);
  }
  document.body.setAttribute('data-overflow', JSON.stringify(bad));
});
</script>
"""


def overflows(page: Path, tmp_path: Path) -> list[str]:
    checked = tmp_path / "checked.html"
    checked.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
    result = subprocess.run(
        [str(BROWSER), "--headless", "--no-sandbox", "--disable-gpu",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=5000",
         "--dump-dom", checked.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'data-overflow="([^"]*)"', result.stdout)
    assert found is not None, "the check did not run: " + result.stdout[-2000:]
    findings: list[str] = json.loads(found.group(1).replace("&quot;", '"')
                                     .replace("&amp;", "&").replace("&lt;", "<")
                                     .replace("&gt;", ">"))
    return findings


@pytest.mark.parametrize("model, extra", [
    (EXAMPLE, []),  # a small picture: the header is longer than the plot
    (CORPUS / "kws_gru_dynamo_quark_a8w8.onnx", ["--board", "nucleo-l432kc"]),
    (CORPUS / "tv_mobilenet_v2_dynamo_ort_qdq_s8s8.onnx",
     ["--board", "nucleo-l432kc", "--memory", "min"]),  # arena below the lower bound
])
def test_nothing_overflows_its_box(model: Path, extra: list[str], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = run_cli("report", model, *extra, "--format", "html", "--output", page)
    assert result.returncode == 0, result.stderr
    assert overflows(page, tmp_path) == []


def test_the_check_finds_an_overflow(tmp_path: Path) -> None:
    """The measuring script itself: a picture text past its picture and a page wider than
    the window are found."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><svg width="100" height="40" '
                    'viewBox="0 0 100 40"><text x="10" y="20">a text far too long for '
                    'this picture</text></svg><div style="width:3000px">wide</div></body>'
                    "</html>")
    found = overflows(page, tmp_path)
    assert any(f.startswith("picture text past the picture") for f in found), found
    assert any(f.startswith("page wider than the window") for f in found), found
