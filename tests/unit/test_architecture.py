"""The shape of the house, checked: which stage of codegen may import which, no import
cycle anywhere, only the oracle knows ONNX Runtime, only `ops/` knows an operator's
internals, and no module or C file outgrows what a reader can hold.

The stages, in the order data flows through them (docs/architecture.md):

    core, arith -> ops -> frontend -> transform -> backend -> pipeline -> target -> oracle
    -> views -> api -> cli, onnx_backend

A stage imports only the stages before it (STAGE_IMPORTS); every stage may import
`errors` and `version`. Outside `ops/`, the operators are reached through the registry
(`codegen.ops`), never through a family's module. Every import counts: at module level,
inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "codegen"

# Stage -> the stages it may import (besides itself, `errors` and `version`).
STAGE_IMPORTS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "arith": frozenset({"core"}),
    "ops": frozenset({"core", "arith"}),
    "frontend": frozenset({"core", "arith", "ops"}),
    "transform": frozenset({"core", "arith", "ops"}),
    "backend": frozenset({"core", "ops"}),
    "options": frozenset({"core", "ops", "frontend", "transform", "backend"}),
    "pipeline": frozenset({"core", "ops", "frontend", "transform", "backend", "options"}),
    "target": frozenset({"core", "backend"}),
    "oracle": frozenset({"core", "arith", "ops", "frontend", "transform", "backend",
                         "options", "pipeline", "target"}),
    "views": frozenset({"core", "arith", "ops", "frontend", "transform", "backend",
                        "options", "pipeline", "target", "oracle"}),
    "api": frozenset({"core", "arith", "ops", "frontend", "transform", "backend", "options",
                      "pipeline", "target", "oracle", "views"}),
    "cli": frozenset({"core", "arith", "ops", "frontend", "transform", "backend", "options",
                      "pipeline", "target", "oracle", "views", "api"}),
    # onnx's backend test runner's adapter, around the API.
    "onnx_backend": frozenset({"core", "ops", "frontend", "api"}),
    # the package's public names, and the console script's entry (codegen.main), which
    # imports the command line inside it, to take Ctrl-C during the imports
    "codegen": frozenset({"api", "backend", "core", "cli"}),
}
EVERYONE_MAY_IMPORT = frozenset({"errors", "version"})
# The stages that may import ONNX Runtime.
ORT_STAGES = frozenset({"oracle"})
MAX_PYTHON_LINES = 800
MAX_C_LINES = 800
MAX_TOP_LEVEL_MODULES = 12


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int

    def __str__(self) -> str:
        return f"{self.source} imports {self.target} (line {self.line})"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


MODULES = {module_name(p): p for p in python_files()}


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path) -> Iterator[Import]:
    """Every import of the module at `path`, wherever it stands; `from pkg import mod`
    counts as importing `pkg.mod`."""
    module = module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield Import(module, sub if sub in MODULES else target, node.lineno)


ALL_IMPORTS = [i for p in python_files() for i in imports_of(p)]
INTERNAL = [i for i in ALL_IMPORTS if i.target.split(".")[0] == "codegen"]


def stage_of(module: str) -> str:
    """The stage a dotted module belongs to: its folder, or a top-level module's name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_module_has_a_stage() -> None:
    stages = set(STAGE_IMPORTS) | EVERYONE_MAY_IMPORT
    assert sorted({stage_of(m) for m in MODULES} - stages) == []


def test_imports_follow_the_stages() -> None:
    wrong = [str(i) for i in INTERNAL
             if stage_of(i.target) != stage_of(i.source)
             and stage_of(i.target) not in EVERYONE_MAY_IMPORT
             and stage_of(i.target) not in STAGE_IMPORTS[stage_of(i.source)]]
    assert wrong == []


def test_operators_are_reached_through_the_registry() -> None:
    """Outside ops/, `codegen.ops` (the registry) only: an operator's module is its own."""
    wrong = [str(i) for i in INTERNAL
             if i.target.startswith("codegen.ops.") and stage_of(i.source) != "ops"]
    assert wrong == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    """A package's __init__ that imports its own modules is not a cycle (Python imports
    the package first); any other loop is."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in INTERNAL:
        if i.target in MODULES and not i.target.startswith(i.source + "."):
            edges[i.source].add(i.target)
    assert _cycles(edges) == []


def test_only_the_oracle_knows_onnxruntime() -> None:
    wrong = [str(i) for i in ALL_IMPORTS if i.target.split(".")[0] == "onnxruntime"
             and stage_of(i.source) not in ORT_STAGES]
    assert wrong == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_python_module_size(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_PYTHON_LINES, f"{lines} lines"


def c_files() -> list[Path]:
    return sorted(p for p in (REPO / "runtime_c").rglob("*") if p.suffix in (".c", ".h"))


@pytest.mark.parametrize("path", c_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_c_file_size(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_C_LINES


def test_top_level_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


# Where an operator may be named in a comparison with a node's op_type: its own family
# (ops/), the matcher rewrites use (core/pattern.py), the importer, which reads ONNX
# before the registry (Constant and shape nodes folded away), and the oracle, which reads
# models as ONNX Runtime runs them. Everywhere else, a fact about an operator is a field
# of its OpDef, asked through the registry.
OP_NAMES_ALLOWED = ("codegen/ops/", "codegen/core/pattern.py", "codegen/frontend/",
                    "codegen/oracle/")


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def op_type_comparisons(path: Path, operators: frozenset[str], root: Path = REPO) -> list[str]:
    """Comparisons of an `.op_type` with the name of a registered operator."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "op_type" for s in sides):
            continue
        named = sorted({s for side in sides for s in _strings(side)} & operators)
        if named:
            found.append(f"{path.relative_to(root)}:{node.lineno} {', '.join(named)}")
    return found


def test_operators_are_named_only_where_they_are_known() -> None:
    from codegen import ops

    operators = frozenset(op.op_type for op in ops.registered())
    wrong = [c for p in python_files()
             if not str(p.relative_to(REPO)).startswith(OP_NAMES_ALLOWED)
             for c in op_type_comparisons(p, operators)]
    assert wrong == []


def test_the_op_type_check_finds_comparisons(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('if node.op_type in ("QLinearConv", "Other"):\n    pass\n'
                      'if node.op_type == "(copy)":\n    pass\n')
    assert op_type_comparisons(sample, frozenset({"QLinearConv"}), tmp_path) == [
        "sample.py:1 QLinearConv"]
