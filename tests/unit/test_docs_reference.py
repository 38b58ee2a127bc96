"""The reference pages generated from the code (docs/operators.md from the operator
registry, docs/cli.md from the argument parser) are committed as the code renders them:
a change to an OpDef or an option fails here until `python docs/generate_reference.py`
writes them again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "docs" / "generate_reference.py"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


GENERATE = load_generator()


@pytest.mark.parametrize("path", sorted(GENERATE.RENDERERS), ids=lambda p: p.name)
def test_the_committed_page_is_what_the_code_renders(path: Path) -> None:
    rendered = GENERATE.RENDERERS[path]()
    committed = path.read_text() if path.exists() else ""
    assert committed == rendered, (
        f"{path.relative_to(REPO)} is stale: run `python docs/generate_reference.py` "
        "and commit the result")


def test_the_check_names_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "operators.md"
    stale.write_text("# Operators\n")
    fresh = tmp_path / "cli.md"
    fresh.write_text(GENERATE.render_cli())
    monkeypatch.setattr(GENERATE, "RENDERERS", {stale: GENERATE.render_operators,
                                                fresh: GENERATE.render_cli})
    assert GENERATE.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "operators.md is stale" in err and "cli.md" not in err
    stale.write_text(GENERATE.render_operators())
    assert GENERATE.main(["--check"]) == 0


def test_every_operator_and_every_option_is_listed() -> None:
    from codegen import ops
    from codegen.cli import build_parser

    operators = GENERATE.render_operators()
    for opdef in ops.registered():
        assert f"| {opdef.op_type} |" in operators, opdef.op_type
    cli = GENERATE.render_cli()
    for name, _, sub in GENERATE._subcommands(build_parser()):
        assert f"## onnx2mcu {name}" in cli
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in cli, (name, option)
