"""The generated project itself: byte-identical regeneration, the Makefile and CMake
builds, the host harness's raw I/O format, the documented header API, the build cache,
and the templates/runtime/boards shipped inside the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import SANITIZE
from modelgen import conv_model

import codegen
from codegen.options import Options
from codegen.oracle.verify import run_ort
from codegen.pipeline import generate_sources
from codegen.target.build import build_host, cache_root

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "small-net.onnx"
    path.write_bytes(conv_model().SerializeToString())
    return path


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_regeneration_is_byte_identical(model_path: Path, tmp_path: Path) -> None:
    outs = []
    for i, env_extra in enumerate([{"PYTHONHASHSEED": "1", "LANG": "C", "TZ": "UTC"},
                                   {"PYTHONHASHSEED": "987", "LANG": "de_DE.UTF-8",
                                    "TZ": "Asia/Tokyo"}]):
        out = tmp_path / f"gen{i}" / "nested"
        env = {**os.environ, **env_extra}
        subprocess.run([sys.executable, "-m", "codegen.cli", "generate", str(model_path), "-o",
                        str(out), "--requant", "int"], check=True, env=env, cwd=tmp_path,
                       capture_output=True)
        outs.append(tree(out))
    assert outs[0] == outs[1]
    assert "small_net.c" in outs[0] and "runtime/conv_u8_im2col_w16p_ireq.c" in outs[0]


def test_makefile_build_and_raw_io(model_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    result = codegen.generate(model_path, out, name="net")
    assert result.name == "net"
    make = subprocess.run(["make", "-C", str(out), f"CFLAGS={' '.join(SANITIZE)}",
                           f"LDFLAGS={' '.join(SANITIZE)}"], capture_output=True, text=True)
    assert make.returncode == 0, make.stdout + make.stderr
    exe = out / "build" / "net_main"
    assert exe.is_file()

    rng = np.random.default_rng(3)
    samples = [{"x": rng.uniform(-7, 7, (1, 2, 6, 6)).astype(np.float32)} for _ in range(3)]
    raw = b"".join(s["x"].astype("<f4").tobytes() for s in samples)
    (tmp_path / "in.bin").write_bytes(raw)
    subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], check=True)
    want = run_ort(conv_model(), samples)
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="<f4").reshape(
        3, *want[0]["y"].shape)
    for i in range(3):
        assert np.array_equal(got[i].view(np.uint32), want[i]["y"].view(np.uint32))

    (tmp_path / "short.bin").write_bytes(raw[:-5])
    short = subprocess.run([str(exe), str(tmp_path / "short.bin"), str(tmp_path / "o2.bin")],
                           capture_output=True, text=True)
    assert short.returncode != 0 and "ends inside sample 2" in short.stderr


def test_header_api_links_into_a_user_program(model_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    codegen.generate(model_path, out, name="net", requant="int")
    subprocess.run(["make", "-C", str(out), "lib"], check=True, capture_output=True)
    user = tmp_path / "app.c"
    user.write_text("""
#include <stdio.h>
#include "net.h"
static float in[NET_INPUT0_SIZE];
static float out[NET_OUTPUT0_SIZE];
int main(void) {
    static const int shape[NET_INPUT0_RANK] = NET_INPUT0_SHAPE;
    int i;
    for (i = 0; i < NET_INPUT0_SIZE; i++) in[i] = (float)(i % 17) * NET_INPUT0_SCALE;
    net_run(in, out);
    printf("%s %d %d %d\\n", NET_INPUT0_NAME, shape[1], NET_NUM_OUTPUTS, NET_ARENA_BYTES > 0);
    return 0;
}
""")
    exe = tmp_path / "app"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *SANITIZE,
                    f"-I{out}", "-o", str(exe), str(user), str(out / "build" / "libnet.a"),
                    "-lm"], check=True)
    assert subprocess.run([str(exe)], capture_output=True, text=True,
                          check=True).stdout == "x 2 1 1\n"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_build(model_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "proj"
    codegen.generate(model_path, out, name="net")
    build = tmp_path / "cbuild"
    subprocess.run(["cmake", "-S", str(out), "-B", str(build)], check=True, capture_output=True)
    result = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (build / "net_main").is_file()


def test_build_cache_compiles_once(model_path: Path) -> None:
    gen = generate_sources(model_path, Options())
    first = build_host(gen.files, gen.name, ["-O1"])
    second = build_host(gen.files, gen.name, ["-O1"])
    assert second.cached and second.binary == first.binary
    entry = first.binary.parent.parent
    assert entry.parent == cache_root()
    assert not list(cache_root().glob(f".{entry.name}.tmp-*"))


def test_run_cli_writes_outputs_by_name(model_path: Path, tmp_path: Path) -> None:
    x = np.random.default_rng(0).uniform(-5, 5, (1, 2, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    for force in ([], ["--force"]):  # the second run reuses the cached build
        result = subprocess.run([sys.executable, "-m", "codegen.cli", "run", str(model_path),
                                 "--inputs", str(tmp_path / "in.npz"), "--output",
                                 str(tmp_path / "out.npz"), *force], capture_output=True,
                                text=True)
        assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as data:
        assert list(data.files) == ["y"]
        want = run_ort(conv_model(), [{"x": x}])[0]["y"]
        assert np.array_equal(data["y"].view(np.uint32), want.view(np.uint32))


def test_wheel_ships_templates_runtime_and_boards(tmp_path: Path, model_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                             str(tmp_path / "dist"), str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    wheel = next((tmp_path / "dist").glob("onnx2mcu-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for required in ("codegen/_data/templates/model.c.j2", "codegen/_data/runtime_c/q8_arith.h",
                     "codegen/_data/runtime_c/qlinear_conv.c", "codegen/_data/boards/host.toml",
                     "codegen/_data/boards/cortex-m4f.toml", "codegen/_data/qemu/insncount.c",
                     "codegen/_data/templates/startup.c.j2"):
        assert required in names
    assert any(n.endswith("entry_points.txt") for n in names)
    # The installed package generates from its own data, away from the checkout.
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    script = (f"import codegen, sys; assert codegen.__file__.startswith({str(target)!r}); "
              f"codegen.generate({str(model_path)!r}, {str(tmp_path / 'o')!r})")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(target)})
    assert (tmp_path / "o" / "small_net.h").is_file()


def test_runtime_objects_are_shared_between_projects(model_path: Path) -> None:
    """A second model using the same kernels recompiles only its own sources: the
    runtime objects come from the cache, keyed by their source, headers and flags."""
    gen = generate_sources(model_path, Options())
    other = generate_sources(model_path, Options(name="other"))
    flags = ["-O1", "-DQ8_TEST_SHARED_OBJECTS"]
    build_host(gen.files, gen.name, flags)
    before = {p: p.stat().st_mtime_ns for p in cache_root().glob("*/build/*.o")
              if not p.parent.parent.name.startswith(".")}  # not another worker's build
    assert before
    second = build_host(other.files, other.name, flags)
    assert not second.cached
    after = {p: p.stat().st_mtime_ns for p in cache_root().glob("*/build/*.o")}
    # Other test workers may add objects meanwhile; none of these may be rebuilt.
    assert {p: after.get(p) for p in before} == before
