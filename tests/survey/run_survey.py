"""Run the fresh-model survey: `onnx2mcu verify MODEL --requant float` and `--requant int`
on every model make_models.py wrote, and count what a new user would meet. Not part of
`make test`.

    /work/main/.venv/bin/python tests/survey/run_survey.py [MODELS]
        [--worktree DIR | --commit REV | --snapshot] [--label NAME] [--out DIR]
        [--jobs 2] [--timeout 300] [--samples 2] [--only SUBSTR]

MODELS defaults to /tmp/survey/models. The onnx2mcu under test is, by default, the
console script of /work/main/.venv (the live work tree). --worktree DIR tests another
checkout: DIR/.venv/bin/onnx2mcu if present, else `python -m codegen.cli` with
PYTHONPATH=DIR and /work/main/.venv/bin/python. --commit REV exports that commit of
/work/main with `git archive` (read only: no worktree is registered) to
/tmp/survey/src-REV and tests it as --worktree. --snapshot copies /work/main's current
files (uncommitted edits included) once and tests that copy, so that edits made while
the survey runs do not reach it.

Each model is one of: pass (exit 0 in both modes: bit-exact), mismatch (exit 1: verify
found differences), refused (exit 2: the one-line error kept), crash (exit 3, a
traceback or any other status), timeout. A model's status is its worse mode's, in the
order crash, timeout, mismatch, refused, pass. Writes OUT/results_LABEL.json and
OUT/RESULTS_LABEL.md (OUT defaults to /tmp/survey/results).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

MAIN = Path("/work/main")
MAIN_PYTHON = MAIN / ".venv" / "bin" / "python"
MAIN_SCRIPT = MAIN / ".venv" / "bin" / "onnx2mcu"
MODES = ("float", "int")
ORDER = ("crash", "timeout", "mismatch", "refused", "pass")
FAMILIES = (("QDQ 8-bit", ("ort_qdq_u8s8", "ort_qdq_s8s8")),
            ("A16W8", ("ort_qdq_a16w8_u16", "ort_qdq_a16w8_s16")),
            ("QOperator", ("ort_qop_u8s8",)),
            ("dynamic", ("ort_dynamic_s8", "ort_dynamic_u8")),
            ("NNCF", ("nncf_default", "nncf_transformer")),
            ("Quark", ("quark_xint8", "quark_s8s8", "quark_u8s8", "quark_a16w8",
                       "quark_u16s8")))


def family_of(quantizer: str) -> str:
    return next((name for name, configs in FAMILIES if quantizer in configs), "other")


def command_for(args: argparse.Namespace) -> tuple[list[str], dict[str, str], str]:
    """The onnx2mcu command line prefix, its environment, and a description."""
    env = dict(os.environ)
    worktree = args.worktree
    if args.commit:
        rev = subprocess.run(["git", "-C", str(MAIN), "rev-parse", "--short", args.commit],
                             check=True, capture_output=True, text=True).stdout.strip()
        worktree = f"/tmp/survey/src-{rev}"
        if not Path(worktree, "codegen").exists():
            Path(worktree).mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", "-C", str(MAIN), "archive", rev],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", worktree], input=archive, check=True)
    if args.snapshot:
        worktree = snapshot()
    if worktree:
        tree = Path(worktree).resolve()
        script = tree / ".venv" / "bin" / "onnx2mcu"
        if script.exists():
            return [str(script)], env, f"{script}"
        env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
        module = "codegen" if (tree / "codegen" / "__main__.py").exists() else "codegen.cli"
        probe = [str(MAIN_PYTHON), "-c", "import codegen; print(codegen.__file__)"]
        imported = subprocess.run(probe, env=env, cwd="/", capture_output=True,
                                  text=True).stdout.strip()
        if not imported.startswith(str(tree)):
            sys.exit(f"PYTHONPATH={tree} imports codegen from {imported or 'nowhere'}")
        return ([str(MAIN_PYTHON), "-m", module], env,
                f"PYTHONPATH={tree} {MAIN_PYTHON} -m {module}")
    return [args.onnx2mcu], env, args.onnx2mcu


SNAPSHOT_PARTS = ("codegen", "templates", "runtime_c", "boards", "qemu", "pyproject.toml")


def snapshot() -> str:
    """The work tree's files as they are now (tracked and untracked, not ignored), copied
    once, so that edits made while the survey runs do not reach it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = Path(f"/tmp/survey/src-snapshot-{stamp}")
    files = subprocess.run(["git", "-C", str(MAIN), "ls-files", "--cached", "--others",
                            "--exclude-standard", "-z", "--", *SNAPSHOT_PARTS],
                           check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        src = MAIN / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return str(dest)


def describe_revision(args: argparse.Namespace) -> str:
    tree = MAIN if not args.worktree else Path(args.worktree)
    if args.commit:
        tree = MAIN
    try:
        rev = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short",
                              args.commit or "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = "" if args.commit else subprocess.run(
            ["git", "-C", str(tree), "status", "--porcelain", "--", "codegen", "templates",
             "runtime_c"], capture_output=True, text=True).stdout.strip()
        return rev + (" + uncommitted changes in codegen/templates/runtime_c" if dirty else "") \
            + (f" (copied at {time.strftime('%H:%M')})" if args.snapshot else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown (not a git checkout)"


def last_line(text: str, prefix: str = "") -> str:
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    if prefix:
        picked = [x for x in lines if x.startswith(prefix)]
        if picked:
            return picked[-1]
    return lines[-1] if lines else ""


def run_mode(cmd: list[str], env: dict[str, str], model: Path, mode: str,
             args: argparse.Namespace) -> dict[str, Any]:
    argv = [*cmd, "verify", str(model), "--requant", mode, "--samples", str(args.samples)]
    t0 = time.time()
    try:
        # cwd: not a checkout, whose codegen/ `python -m` would import before PYTHONPATH's.
        run = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout,
                             env=env, stdin=subprocess.DEVNULL, cwd=model.parent)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": args.timeout,
                "message": f"no answer in {args.timeout} s"}
    out = {"exit": run.returncode, "seconds": round(time.time() - t0, 1)}
    traceback_seen = "Traceback (most recent call last)" in run.stderr
    if run.returncode == 0 and not traceback_seen:
        out["status"] = "pass"
        out["message"] = last_line(run.stdout, "result:")
    elif run.returncode == 1 and not traceback_seen:
        out["status"] = "mismatch"
        table = [x for x in run.stdout.splitlines()
                 if re.match(r"^\S+\s+\S+\s+\d+\s+[1-9]\d*\s", x)]
        out["message"] = last_line(run.stdout, "result:")
        out["differing_outputs"] = table
        out["stdout_tail"] = run.stdout.splitlines()[-12:]
    elif run.returncode == 2 and not traceback_seen:
        out["status"] = "refused"
        out["message"] = last_line(run.stderr, "onnx2mcu: error:")
    else:
        out["status"] = "crash"
        out["message"] = (last_line(run.stderr, "onnx2mcu: internal error:")
                          or last_line(run.stdout) or f"exit {run.returncode}")
        out["stderr_tail"] = run.stderr.splitlines()[-15:]
    return out


def normalize(message: str) -> str:
    """A refusal's reason without the model's own names: quoted names, number lists and
    the file path go."""
    text = message.removeprefix("onnx2mcu: error: ")
    text = re.sub(r"/tmp/\S+\.onnx", "MODEL", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\[[-\d, ]*\]", "[…]", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    return text


def verify_model(entry: dict[str, Any], models: Path, cmd: list[str], env: dict[str, str],
                 args: argparse.Namespace) -> dict[str, Any]:
    model = models / entry["file"]
    modes = {mode: run_mode(cmd, env, model, mode, args) for mode in MODES}
    status = min((m["status"] for m in modes.values()), key=ORDER.index)
    worst = next(m for m in modes.values() if m["status"] == status)
    result = {"name": entry["name"], "file": entry["file"], "arch": entry["arch"],
              "exporter": entry["exporter"], "quantizer": entry["quantizer"],
              "family": family_of(entry["quantizer"]), "status": status,
              "message": worst.get("message", ""),
              "modes_differ": len({m["status"] for m in modes.values()}) > 1,
              "modes": modes}
    print(f"{status:9s} {entry['name']}  {result['message'][:150]}", flush=True)
    return result


def pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.0f}%" if total else "-"


def markdown(results: list[dict[str, Any]], unmade: list[dict[str, Any]], meta: dict[str, Any]
             ) -> str:
    total = len(results)
    counts = Counter(r["status"] for r in results)
    accepted = counts["pass"] + counts["mismatch"]
    lines = [f"# Fresh-model survey: {meta['label']}", "",
             f"- onnx2mcu: {meta['onnx2mcu']} (revision {meta['revision']})",
             f"- models: {meta['models']} ({total} quantized models verified; "
             f"{sum(1 for e in unmade if e.get('kind') != 'float')} planned models failed "
             "to make, listed in models.json and below)",
             f"- `verify --requant float` and `--requant int`, `--samples {meta['samples']}`, "
             f"timeout {meta['timeout']} s, {meta['jobs']} at a time; "
             f"{meta['seconds']:.0f} s in all; {meta['date']}", "",
             "## Totals", "",
             "| status | models | share |", "| --- | ---: | ---: |"]
    for status in ("pass", "mismatch", "refused", "crash", "timeout"):
        lines.append(f"| {status} | {counts[status]} | {pct(counts[status], total)} |")
    lines += ["", f"Accepted (pass + mismatch): {accepted} of {total} ({pct(accepted, total)}); "
              f"bit-exact in both modes: {counts['pass']} ({pct(counts['pass'], total)}).", "",
              "## By quantizer family", "",
              "| family | models | pass | mismatch | refused | crash | timeout | accepted |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for fam in [f for f, _ in FAMILIES] + ["other"]:
        rs = [r for r in results if r["family"] == fam]
        if not rs:
            continue
        c = Counter(r["status"] for r in rs)
        lines.append(f"| {fam} | {len(rs)} | {c['pass']} | {c['mismatch']} | {c['refused']} | "
                     f"{c['crash']} | {c['timeout']} | {pct(c['pass'] + c['mismatch'], len(rs))} |")
    for title, key in (("By quantizer configuration", "quantizer"), ("By exporter", "exporter"),
                       ("By architecture", "arch")):
        lines += ["", f"## {title}", "", f"| {key} | models | pass | mismatch | refused | crash "
                  "| timeout |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for value in sorted({r[key] for r in results}):
            rs = [r for r in results if r[key] == value]
            c = Counter(r["status"] for r in rs)
            lines.append(f"| {value} | {len(rs)} | {c['pass']} | {c['mismatch']} | "
                         f"{c['refused']} | {c['crash']} | {c['timeout']} |")
    refusals: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r["status"] == "refused":
            refusals[normalize(r["message"])].append(r["name"])
    lines += ["", "## Refusals by reason", ""]
    for reason, names in sorted(refusals.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- **{len(names)}** × {reason}")
        lines.append(f"  - {', '.join(sorted(names))}")
    for status in ("mismatch", "crash", "timeout"):
        rs = [r for r in results if r["status"] == status]
        lines += ["", f"## Every {status} ({len(rs)})", ""]
        for r in rs:
            per_mode = "; ".join(f"{mode}: {m['status']}" for mode, m in r["modes"].items())
            lines.append(f"- `{r['name']}` ({per_mode}): {r['message']}")
            for mode, m in r["modes"].items():
                for row in m.get("differing_outputs", []):
                    lines.append(f"  - {mode}: `{' '.join(row.split())}`")
    mixed = [r for r in results if r["modes_differ"]]
    if mixed:
        lines += ["", f"## Models whose two modes differ ({len(mixed)})", ""]
        for r in mixed:
            per_mode = "; ".join(f"{mode}: {m['status']}" for mode, m in r["modes"].items())
            lines.append(f"- `{r['name']}`: {per_mode}")
    if unmade:
        lines += ["", f"## Failed to make ({len(unmade)})", ""]
        reasons: dict[str, list[str]] = defaultdict(list)
        for e in unmade:
            what = "float export" if e.get("kind") == "float" else e.get("error_stage", "?")
            reasons[f"{what}: {normalize(e['error'])[:200]}"].append(e["name"])
        for reason, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- **{len(names)}** × {reason}")
            lines.append(f"  - {', '.join(sorted(names))}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="?", default="/tmp/survey/models")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--worktree", help="a checkout of onnx2mcu to test")
    where.add_argument("--commit", help="a commit of /work/main to test (git archive)")
    where.add_argument("--snapshot", action="store_true",
                       help="copy /work/main's current files (uncommitted edits included) "
                       "to /tmp/survey/src-snapshot-TIME and test that copy")
    where.add_argument("--onnx2mcu", default=str(MAIN_SCRIPT), help="the onnx2mcu script")
    parser.add_argument("--label", help="results_LABEL.json (default: the revision)")
    parser.add_argument("--out", default="/tmp/survey/results")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--only", default="", help="only models whose name contains this")
    parser.add_argument("--render", metavar="JSON",
                        help="only rewrite RESULTS_LABEL.md from an earlier results_LABEL.json")
    args = parser.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        target = Path(args.render).with_name(f"RESULTS_{saved['meta']['label']}.md")
        target.write_text(markdown(saved["results"], saved["unmade"], saved["meta"]))
        print(f"wrote {target}")
        return
    models = Path(args.models)
    listing = json.loads((models / "models.json").read_text())
    todo = [e for e in listing if e["kind"] == "quantized" and "error" not in e
            and args.only in e["name"]]
    # What failed to make: the exports (their reason) and the quantizations.
    unmade = [e for e in listing if "error" in e and args.only in e["name"]]
    cmd, env, described = command_for(args)
    revision = describe_revision(args)
    label = args.label or re.sub(r"[^\w.-]+", "_", revision.split()[0] +
                                 ("-dirty" if "uncommitted" in revision else ""))
    env.setdefault("ONNX2MCU_CACHE_DIR", f"/tmp/survey/cache-{label}")
    print(f"{len(todo)} models, onnx2mcu: {described} ({revision}), label {label}", flush=True)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda e: verify_model(e, models, cmd, env, args), todo))
    meta = {"label": label, "onnx2mcu": described, "revision": revision,
            "models": str(models.resolve()), "samples": args.samples, "timeout": args.timeout,
            "jobs": args.jobs, "seconds": time.time() - t0,
            "date": time.strftime("%Y-%m-%d %H:%M")}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"results_{label}.json").write_text(json.dumps(
        {"meta": meta, "results": results, "unmade": unmade}, indent=1) + "\n")
    (out / f"RESULTS_{label}.md").write_text(markdown(results, unmade, meta))
    counts = Counter(r["status"] for r in results)
    print(f"{len(results)} models: " + ", ".join(f"{counts[s]} {s}" for s in ORDER[::-1]) +
          f"; {time.time() - t0:.0f} s; wrote {out}/RESULTS_{label}.md", flush=True)


if __name__ == "__main__":
    sys.exit(main())
