"""Host speed of the generated C against ONNX Runtime, measured in one run.

For each MLPerf Tiny model of the test zoo (quantized by ORT in QOperator format, uint8
activations, per-channel int8 weights), this builds the generated sources with a small
timing harness (cc -O2, the generated project's flags) and times NAME_run; then it times
ORT (CPUExecutionProvider, one thread, ORT_ENABLE_ALL) on the same input, in five rounds
taken in turn. It prints the median time per inference of each and their ratio
(generated C / ORT).

    .venv/bin/python bench/host_vs_ort.py [--repeats 200] [--models resnet8,dscnn]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import zoo  # noqa: E402

from codegen.backend.emitter import STRICT_CFLAGS  # noqa: E402
from codegen.backend.project import write_files  # noqa: E402
from codegen.core.boards import load_board  # noqa: E402
from codegen.options import Options, with_native  # noqa: E402
from codegen.oracle.verify import _session, ort_version  # noqa: E402
from codegen.pipeline import generate_sources  # noqa: E402
from codegen.target.build import encode_samples, host_compiler  # noqa: E402

MLPERF_TINY = ("resnet8", "dscnn", "mobilenet_v1_025", "ad_autoencoder")
# The runs of each side are split into rounds taken in turn.
ROUNDS = 5

TIMER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "NAME.h"

static float input0[PREFIX_INPUT0_SIZE];
static float output0[PREFIX_OUTPUT0_SIZE];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    FILE *f;
    int repeats, i;
    if (argc != 3) {
        return 2;
    }
    f = fopen(argv[1], "rb");
    repeats = atoi(argv[2]);
    if (!f || fread(input0, sizeof input0, 1, f) != 1) {
        return 2;
    }
    fclose(f);
    NAME_run(input0, output0); /* warm-up */
    for (i = 0; i < repeats; i++) {
        double t0 = now();
        NAME_run(input0, output0);
        printf("%.9f\n", now() - t0);
    }
    return 0;
}
"""


def host_vectors() -> str:
    """The instruction set the host kernels choose on this CPU (runtime_c/q8_pix.h's
    q8_pix_isa), from /proc/cpuinfo."""
    cpuinfo = Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
    for name, needs in (("AVX-512 VNNI", {"avx512bw", "avx512vl", "avx512_vnni"}),
                        ("AVX-512BW", {"avx512bw", "avx512vl"}), ("AVX-VNNI", {"avx_vnni"}),
                        ("AVX2", {"avx2"}), ("SSE2", {"sse2"})):
        if needs <= flags:
            return name
    return "plain C"


def build_timer(model: object, x: np.ndarray, work: Path, native: bool) -> Path:
    """The generated C with the timing harness, built in `work`; returns the program."""
    gen = generate_sources(model, Options(name="net", native=native))  # type: ignore[arg-type]
    write_files(work, gen.files)
    (work / "timer.c").write_text(TIMER.replace("PREFIX", "NET").replace("NAME", "net"))
    sources = ["timer.c", "net.c", *sorted(f for f in gen.files if f.startswith("runtime/")
                                           and f.endswith(".c"))]
    subprocess.run([host_compiler(), *STRICT_CFLAGS, *gen.board.cflags, "-I.", "-Iruntime",
                    "-o", "timer", *sources, "-lm"], cwd=work, check=True)
    (work / "in.bin").write_bytes(encode_samples(gen.program.inputs,
                                                 [{gen.program.inputs[0].name: x}]))
    return work / "timer"


def time_generated_c(timer: Path, repeats: int) -> list[float]:
    out = subprocess.run([str(timer), str(timer.parent / "in.bin"), str(repeats)],
                         capture_output=True, text=True, check=True).stdout
    return [float(v) for v in out.split()]


def time_ort(model: object, x: np.ndarray, repeats: int) -> list[float]:
    session = _session(model)  # type: ignore[arg-type]
    feed = {session.get_inputs()[0].name: x}
    session.run(None, feed)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--models", default=",".join(MLPERF_TINY))
    parser.add_argument("--variant", default="u8-pc")
    parser.add_argument("--native", action="store_true", help="add -march=native")
    args = parser.parse_args()
    flags = " ".join(with_native(load_board("host"), args.native).cflags)
    print(f"onnxruntime {ort_version()}, 1 thread; generated C: {host_compiler()} {flags} "
          f"(kernels choose {host_vectors()}); {args.repeats} runs each in {ROUNDS} rounds, "
          "median")
    print(f"{'model':<20} {'C (ms)':>10} {'ORT (ms)':>10} {'C / ORT':>8}")
    for name in args.models.split(","):
        model = zoo.quantized_model(name, args.variant)
        x = zoo.sample_inputs(name, 1)[0]
        c_times: list[float] = []
        ort_times: list[float] = []
        with tempfile.TemporaryDirectory() as tmp:
            timer = build_timer(model, x, Path(tmp), args.native)
            # Rounds of each in turn, so that a slow spell of the machine falls on both.
            for _ in range(ROUNDS):
                c_times += time_generated_c(timer, max(1, args.repeats // ROUNDS))
                ort_times += time_ort(model, x, max(1, args.repeats // ROUNDS))
        c_ms, ort_ms = statistics.median(c_times) * 1e3, statistics.median(ort_times) * 1e3
        print(f"{name:<20} {c_ms:>10.3f} {ort_ms:>10.3f} {c_ms / ort_ms:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
