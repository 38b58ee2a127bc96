"""Hostile and broken models: a bounded fuzz campaign over structural mutations of real
models (tests/fuzz_models.py), with every mutator accounted for (one that raises or stops
changing models fails the campaign; a deliberately broken one shows it), the command line
on a sample of them, and the resource limits and external-data rules the campaign relies
on, each checked directly.

The campaign: ONNX2MCU_FUZZ_COUNT models (default 2500, about 30 s alone on one core),
seed ONNX2MCU_FUZZ_SEED (default 0), stopped after ONNX2MCU_FUZZ_SECONDS (default 120)
if the machine is slow; `make fuzz` runs a longer one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import fuzz_models
import numpy as np
import onnx
import pytest
from fuzz_models import (
    EXAMPLE,
    MIN_CALLS_JUDGED,
    Context,
    MutatorStats,
    Report,
    build_case,
    drop_initializer,
    mutator_problems,
    run_campaign,
    seed_models,
    unjudged_mutators,
)
from onnx import TensorProto, numpy_helper

from codegen.core.limits import Limits, format_bytes, parse_size
from codegen.errors import LimitError, ModelError
from codegen.options import Options
from codegen.pipeline import generate_sources

COUNT = int(os.environ.get("ONNX2MCU_FUZZ_COUNT", "2500"))
SEED = int(os.environ.get("ONNX2MCU_FUZZ_SEED", "0"))
TIME_BUDGET_S = float(os.environ.get("ONNX2MCU_FUZZ_SECONDS", "120"))
MIN_MODELS = 2000  # below this the campaign proves too little: a slow machine is a failure


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    return seed_models()


@pytest.fixture(scope="module")
def campaign(seeds: dict[str, bytes]) -> Report:
    return run_campaign(COUNT, SEED, TIME_BUDGET_S, seeds)


def test_campaign_has_no_crashes(campaign: Report) -> None:
    print(f"\nfuzz campaign (seed {SEED}): {campaign.summary()}")
    crashes = "\n".join(
        f"case {c.case} ({c.seed_model}: {'; '.join(c.steps)}): {c.outcome.detail}: "
        f"{c.outcome.message[:200]}" for c in campaign.crashes[:20])
    assert not campaign.crashes, f"{len(campaign.crashes)} crashes (replay one with " \
        f"python tests/fuzz_models.py --seed {SEED} --case N):\n{crashes}"
    assert campaign.tried >= min(COUNT, MIN_MODELS), campaign.summary()
    # The mutations must reach past the file checks, and some models must survive them.
    assert campaign.accepted > 0 and len(campaign.refused) >= 3, campaign.summary()
    # Every mutator was called often enough to judge it, and none is broken: a mutator
    # that raises is not allowed to shrink the campaign unnoticed.
    table = campaign.mutator_table()
    assert not unjudged_mutators(campaign.mutators), table
    assert not campaign.mutator_problems, "\n".join([*campaign.mutator_problems, table])


# --------------------------------------------------------------------------------------
# A broken mutator fails the campaign
# --------------------------------------------------------------------------------------

def always_raises(m: onnx.ModelProto, ctx: Context) -> str | None:
    raise KeyError("a mutator with a bug")


def never_applies(m: onnx.ModelProto, ctx: Context) -> str | None:
    return None


BROKEN_REGISTRY = (drop_initializer, always_raises, never_applies)
TINY_SEEDS = {"tiny_cnn_qop": EXAMPLE.read_bytes()}


def test_a_broken_mutator_fails_the_campaign() -> None:
    report = run_campaign(160, 0, seeds=TINY_SEEDS, mutators=BROKEN_REGISTRY)
    assert not report.crashes and not report.ok
    assert [p.split()[0] for p in report.mutator_problems] == ["always_raises",
                                                               "never_applies"]
    raised = report.mutators["always_raises"]
    assert raised.raised == raised.calls >= MIN_CALLS_JUDGED
    assert "KeyError: 'a mutator with a bug'" in raised.first_error
    assert report.mutators["never_applies"].applied == 0
    assert report.mutators["drop_initializer"].applied > 0
    assert "2 broken" in report.summary()


def test_make_fuzz_exits_non_zero_for_a_broken_mutator(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """tests/fuzz_models.py's exit code (what `make fuzz` returns); a short campaign, in
    which raising on a seed model is judged already, and a rarely called mutator noted."""
    monkeypatch.setattr(fuzz_models, "PROTO_MUTATORS", BROKEN_REGISTRY)
    monkeypatch.setattr(fuzz_models, "seed_models", lambda: TINY_SEEDS)
    assert fuzz_models.main(["--count", "20"]) == 1
    out = capsys.readouterr().out
    assert "BROKEN MUTATOR always_raises raised on" in out
    assert f"note: fewer than {MIN_CALLS_JUDGED} calls, not judged: " in out
    monkeypatch.setattr(fuzz_models, "PROTO_MUTATORS", (drop_initializer, never_applies))
    assert fuzz_models.main(["--count", "20"]) == 0


def test_mutator_rules() -> None:
    """Raising after an earlier step broke the model is tolerated up to a small share;
    on an intact seed model never; a mutator that changes no model fails once judged."""
    def stats(calls: int, applied: int, raised: int = 0, on_seed: int = 0) -> MutatorStats:
        return MutatorStats(calls, applied, raised, on_seed, "case 1: ValueError: x")

    assert mutator_problems({"m": stats(200, 198, raised=2)}) == []
    assert mutator_problems({"m": stats(200, 194, raised=6)}) == []
    assert mutator_problems({"m": stats(200, 193, raised=7)}) == [
        "m raised in 7 of 200 calls, over 3% (first error case 1: ValueError: x)"]
    assert mutator_problems({"m": stats(20, 17, raised=3)})  # more than 2, short campaign
    assert mutator_problems({"m": stats(200, 199, raised=1, on_seed=1)}) == [
        "m raised on 1 intact seed models (first error case 1: ValueError: x)"]
    assert mutator_problems({"m": stats(MIN_CALLS_JUDGED, 0)}) == [
        f"m produced no model in {MIN_CALLS_JUDGED} calls"]
    assert mutator_problems({"m": stats(MIN_CALLS_JUDGED - 1, 0)}) == []
    assert unjudged_mutators({"m": stats(MIN_CALLS_JUDGED - 1, 0)}) == ["m"]


# --------------------------------------------------------------------------------------
# The command line on a sample of the refused models
# --------------------------------------------------------------------------------------

def onnx2mcu_command() -> list[str]:
    script = Path(sys.executable).parent / "onnx2mcu"
    return [str(script)] if script.exists() else [sys.executable, "-m", "codegen.cli"]


def assert_clean_refusal(model: Path, out: Path, *extra: str) -> str:
    result = subprocess.run([*onnx2mcu_command(), "generate", str(model), "-o", str(out),
                             *extra], capture_output=True, text=True, timeout=120,
                            check=False)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("onnx2mcu: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not out.exists(), f"{out} was written for a refused model"
    return lines[0]


def test_cli_refuses_mutated_models_in_one_line(campaign: Report, seeds: dict[str, bytes],
                                                tmp_path: Path) -> None:
    # A spread of error classes, a few models each; a subprocess costs about a second.
    sample: dict[str, list[int]] = {}
    for case, error in campaign.refused_samples:
        if len(sample.setdefault(error, [])) < 2:
            sample[error].append(case)
    cases = sorted(c for group in sample.values() for c in group)[:8]
    assert cases
    for case in cases:
        _, mutated, _ = build_case(seeds, SEED, case, tmp_path / f"case{case}")
        bad = tmp_path / f"case{case}.onnx"
        bad.write_bytes(mutated.data)
        assert_clean_refusal(bad, tmp_path / f"out{case}")


# --------------------------------------------------------------------------------------
# External data and resource limits, checked directly
# --------------------------------------------------------------------------------------

def example_with_external(folder: Path, location: str, offset: int = 0,
                          length: int | None = None, payload: bytes | None = None) -> Path:
    """The example model with its first weight moved to external data at `location`."""
    model = onnx.load(str(EXAMPLE))
    init = next(t for t in model.graph.initializer if t.dims and len(t.raw_data) > 8)
    data = payload if payload is not None else init.raw_data
    onnx.external_data_helper.set_external_data(init, location, offset,
                                                len(data) if length is None else length)
    init.data_location = TensorProto.EXTERNAL
    init.ClearField("raw_data")
    folder.mkdir(parents=True, exist_ok=True)
    (folder.parent / "secret.bin").write_bytes(data)
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_external_data_inside_the_folder_is_read(tmp_path: Path) -> None:
    model = onnx.load(str(EXAMPLE))
    init = next(t for t in model.graph.initializer if t.dims and len(t.raw_data) > 8)
    path = example_with_external(tmp_path / "m", "weights.bin")
    (tmp_path / "m" / "weights.bin").write_bytes(init.raw_data)
    reference = generate_sources(EXAMPLE.read_bytes(), Options(name="tiny_cnn_qop"))
    external = generate_sources(path, Options(name="tiny_cnn_qop"))
    assert external.files == reference.files


@pytest.mark.parametrize("location", ["../secret.bin", "../../etc/passwd", "/etc/passwd",
                                      "sub/../../secret.bin", "link.bin", "linkdir/secret.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    folder = tmp_path / "m"
    path = example_with_external(folder, location)
    if location == "link.bin":
        (folder / "link.bin").symlink_to(tmp_path / "secret.bin")
    if location.startswith("linkdir/"):
        (folder / "linkdir").symlink_to(tmp_path)
    with pytest.raises(ModelError, match="only files in the model's folder are read"):
        generate_sources(path, Options())


def test_external_data_past_the_end_of_its_file_is_refused(tmp_path: Path) -> None:
    path = example_with_external(tmp_path / "m", "w.bin", offset=100)
    (tmp_path / "m" / "w.bin").write_bytes(b"\0" * 120)
    with pytest.raises(ModelError, match=r"needs bytes 100 to \d+ of 'w.bin', which has 120"):
        generate_sources(path, Options())


def test_a_3_gb_external_tensor_is_refused_before_reading(tmp_path: Path) -> None:
    size = 3 * 2**30
    folder = tmp_path / "m"
    path = example_with_external(folder, "big.bin", length=size, payload=b"")
    model = onnx.load(str(path), load_external_data=False)
    init = next(t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL)
    init.data_type, init.dims[:] = TensorProto.INT8, [size]
    path.write_bytes(model.SerializeToString())
    with open(folder / "big.bin", "wb") as f:
        f.truncate(size)  # sparse: no disk space, but reading it would take 3 GB
    start = time.monotonic()
    with pytest.raises(LimitError, match=r"declares 3221225472 int8 elements \(3.0 GB\), over "
                                         r"the limit of 256.0 MB; raise it with "
                                         r"--max-tensor-bytes"):
        generate_sources(path, Options())
    assert time.monotonic() - start < 5


def test_2_pow_40_declared_elements_are_refused_with_numbers() -> None:
    model = onnx.load(str(EXAMPLE))
    init = next(t for t in model.graph.initializer if t.dims and len(t.raw_data) > 8)
    init.dims[:] = [2**20, 2**20]
    with pytest.raises(LimitError, match=r"declares 1099511627776 int8 elements \(1.0 TB\), "
                                         r"over the limit of 256.0 MB"):
        generate_sources(model.SerializeToString(), Options())


def test_declared_and_stored_sizes_must_agree() -> None:
    model = onnx.load(str(EXAMPLE))
    init = next(t for t in model.graph.initializer if t.dims and len(t.raw_data) > 8)
    size = len(init.raw_data)
    init.raw_data = init.raw_data[:-1]
    with pytest.raises(ModelError, match=rf"{init.name}.*\b{size - 1} bytes.*\b{size} bytes"):
        generate_sources(model.SerializeToString(), Options())


def test_limits_on_tensors_arena_and_sources() -> None:
    data = EXAMPLE.read_bytes()
    with pytest.raises(LimitError, match=r"activation arena needs .* --max-arena-bytes"):
        generate_sources(data, Options(limits=Limits(max_arena_bytes=1024)))
    with pytest.raises(LimitError, match=r"generated C would take .* --max-source-bytes"):
        generate_sources(data, Options(limits=Limits(max_source_bytes=10_000)))
    with pytest.raises(LimitError, match="--max-tensor-bytes"):
        generate_sources(data, Options(limits=Limits(max_tensor_bytes=100)))


def test_graph_input_over_the_tensor_limit_is_refused() -> None:
    model = onnx.load(str(EXAMPLE))
    for d in model.graph.input[0].type.tensor_type.shape.dim[2:]:
        d.dim_value = 2**14
    with pytest.raises(LimitError, match=r"graph input .* float32 elements .* over the limit"):
        generate_sources(model.SerializeToString(), Options())


def test_cli_limit_option_and_message(tmp_path: Path) -> None:
    line = assert_clean_refusal(EXAMPLE, tmp_path / "out", "--max-arena-bytes", "4K")
    assert "over the limit of 4.0 KB; raise it with --max-arena-bytes" in line


def test_cli_refuses_external_data_escape(tmp_path: Path) -> None:
    path = example_with_external(tmp_path / "m", "../../etc/passwd")
    line = assert_clean_refusal(path, tmp_path / "out")
    assert "leads out of the model's folder" in line


def test_sizes_parse_and_print() -> None:
    assert parse_size("256M") == 256 * 2**20
    assert parse_size("1g") == 2**30
    assert parse_size("4096") == 4096
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
    assert format_bytes(100) == "100 bytes"
    assert format_bytes(2**43) == "8.0 TB"


def test_weights_with_negative_dims_are_refused() -> None:
    model = onnx.load(str(EXAMPLE))
    init = next(t for t in model.graph.initializer if t.dims)
    init.CopyFrom(numpy_helper.from_array(np.zeros(4, np.int8), init.name))
    init.dims[:] = [-4]
    with pytest.raises(ModelError):
        generate_sources(model.SerializeToString(), Options())


def test_a_model_file_over_2_gb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as f:
        f.truncate(5 * 2**29)  # sparse 2.5 GB
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"2684354560 bytes \(2.5 GB\); an ONNX file over 2 GB"):
        generate_sources(path, Options())
    assert time.monotonic() - start < 5


# --------------------------------------------------------------------------------------
# Board files and data files: random mutations of their own (issue 35), each read by the
# loader the commands use. Every case is read or refused with an onnx2mcu error, at once.
# --------------------------------------------------------------------------------------

BOARD_TEXT = (Path(__file__).resolve().parents[2] / "boards" / "cortex-m4f.toml").read_text()


def mutated_board(rng: np.random.Generator) -> str:
    """A shipped board file with nesting bombs, garbage, truncation or huge values."""
    text = BOARD_TEXT
    kind = int(rng.integers(6))
    depth = int(rng.choice([10, 1000, 5000, 50_000]))
    if kind == 0:
        text = f"x = {'[' * depth}{']' * depth}\n" + text
    elif kind == 1:
        text = f"x = {'{ a = ' * depth}1{' }' * depth}\n" + text
    elif kind == 2:
        text = text[:int(rng.integers(len(text)))]
    elif kind == 3:
        text = text.replace("=", "= " + str(int(rng.choice([-1, 2**63, 10**30]))) + " #", 1)
    elif kind == 4:
        spot = int(rng.integers(len(text)))
        text = text[:spot] + bytes(rng.integers(0, 256, 8, dtype=np.uint8)).decode(
            "latin-1") + text[spot:]
    else:
        text = "[" * depth + text
    return text


def test_mutated_board_files_are_read_or_refused(tmp_path: Path) -> None:
    from codegen.core.boards import load_board_file
    from codegen.errors import Onnx2McuError

    rng = np.random.default_rng(SEED)
    start = time.monotonic()
    for case in range(150):
        board = tmp_path / f"b{case}.toml"
        board.write_text(mutated_board(rng), encoding="latin-1")
        try:
            load_board_file(board)
        except Onnx2McuError as error:
            assert "\n" not in str(error), case
    assert time.monotonic() - start < 60


def mutated_npz(rng: np.random.Generator, path: Path) -> None:
    """An .npz with an array header declaring a random shape and dtype (huge, negative,
    object, structured), its data short, or an archive cut short."""
    import io
    import zipfile

    shape = tuple(int(d) for d in rng.choice([0, 1, 3, 2**20, 2**31, 2**40, -1],
                                             size=int(rng.integers(0, 4))))
    descr = str(rng.choice(["<f4", "|u1", "<i8", "|O", "<c16", "|V7"]))
    header = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(
            header, {"descr": descr, "fortran_order": bool(rng.integers(2)),
                     "shape": shape})
    except ValueError:
        header = io.BytesIO(b"\x93NUMPY\x01\x00" + bytes(rng.integers(0, 256, 40,
                                                                       dtype=np.uint8)))
    data = header.getvalue() + bytes(int(rng.integers(0, 64)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(str(rng.choice(["x.npy", "input.npy", "../up.npy"])), data)
    raw = buffer.getvalue()
    if rng.integers(4) == 0:
        raw = raw[:int(rng.integers(len(raw)))]
    path.write_bytes(raw)


def test_mutated_data_files_are_read_or_refused(tmp_path: Path) -> None:
    from codegen.core.dataset import load_arrays, load_npz
    from codegen.errors import Onnx2McuError

    rng = np.random.default_rng(SEED + 1)
    start = time.monotonic()
    for case in range(300):
        path = tmp_path / f"d{case}.npz"
        mutated_npz(rng, path)
        for load in (load_npz, load_arrays):
            try:
                arrays = load(str(path))
            except Onnx2McuError as error:
                assert "\n" not in str(error), case
            else:
                assert sum(a.nbytes for a in arrays.values()) <= Limits().max_data_bytes
    assert time.monotonic() - start < 60
