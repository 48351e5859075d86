"""Benchmarks contextforge against its peers on one generated workload.

    python benchmarks/run.py --sizes 10000,100000 --out benchmarks/results
    python benchmarks/run.py --smoke          # CI: N=2000, 50 queries, < 1 minute

Every system runs in its own subprocesses (a load phase, then a cold-open
phase), one after another, in an order that rotates per size. Writes
results.json, results.md and latency.png to --out. Exits non-zero if any system
fails; in --smoke mode also if a Python system cannot be imported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import report
import systems
import workload
from systems import crate_harness

HERE = Path(__file__).resolve().parent
MIN_RECALL = 0.5  # below this a system did not do the job (the workload's targets are easy)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", default="10000,100000", help="store sizes, comma-separated")
    p.add_argument(
        "--out", default=str(HERE / "results"), help="folder for results.{json,md} and latency.png"
    )
    p.add_argument(
        "--systems",
        default=",".join(systems.ALL),
        help="comma-separated, from: " + ", ".join(systems.ALL),
    )
    p.add_argument("--baseline", default="contextforge", help="ratios are system / this system")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--saves", type=int, default=200)
    p.add_argument(
        "--save-seconds",
        type=float,
        default=30.0,
        help="stop a system's single saves after this long (slow re-indexing peers)",
    )
    p.add_argument("--seed", type=int, default=workload.SEED)
    p.add_argument(
        "--smoke", action="store_true", help="N=2000, 50 queries, 20 saves; fail on any failure"
    )
    p.add_argument(
        "--build-harness",
        action="store_true",
        help="cargo build the context-forge crate harness first",
    )
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per subprocess")
    p.add_argument("--keep-stores", action="store_true", help="keep the stores in the work folder")
    args = p.parse_args(argv)
    if args.smoke:
        args.sizes, args.queries, args.saves, args.save_seconds, args.timeout = (
            "2000",
            50,
            20,
            5.0,
            120.0,
        )
    return args


def run_process(cmd: list[str], timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Runs one measuring process; returns (its JSON, "") or (None, why it failed)."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        return None, f"exit code {done.returncode}:\n{tail}"
    return json.loads(lines[-1]), ""


def skip_reason(name: str, size: int, smoke: bool) -> tuple[str | None, bool]:
    """(why `name` cannot run at `size`, whether that counts as a failure)."""
    if name == systems.CRATE:
        return crate_harness.unavailable_reason(), False
    spec = systems.PYTHON_SYSTEMS[name]
    if spec.max_size is not None and size > spec.max_size:
        return f"runs only at N <= {spec.max_size:,}", False
    if find_spec(spec.requires) is None:
        return f"`import {spec.requires}` fails: not installed in {sys.executable}", smoke
    return None, False


def run_system(
    name: str, size: int, wl_path: Path, store: Path, args: argparse.Namespace
) -> dict[str, Any]:
    row: dict[str, Any] = {"system": name, "size": size}
    reason, fatal = skip_reason(name, size, args.smoke)
    if reason:
        return {**row, "status": "failed" if fatal else "skipped", "reason": reason}
    for phase in ("load", "cold"):
        if name == systems.CRATE:
            cmd = crate_harness.command(wl_path, store, phase, args.save_seconds)
        else:
            cmd = [
                sys.executable,
                str(HERE / "worker.py"),
                name,
                str(wl_path),
                str(store),
                phase,
                str(args.save_seconds),
            ]
        result, error = run_process(cmd, args.timeout)
        if result is None:
            return {**row, "status": "failed", "reason": f"{phase} phase: {error}"}
        row.update(result)
    problems = []
    if not row.get("save_visible"):
        problems.append("a single save was not visible to the next query")
    if row.get("target_recall", 0.0) < MIN_RECALL:
        problems.append(f"found the target entry in only {row['target_recall']:.0%} of queries")
    if problems:
        return {**row, "status": "failed", "reason": "; ".join(problems)}
    return {**row, "status": "ok"}


def contextforge_build() -> str | None:
    """ "release" or "dev" for the installed extension (the profile it was built with), or None."""
    try:
        from contextforge import _core
    except ImportError:
        return None
    return str(getattr(_core, "__build__", "unknown"))


def metadata(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    import os
    import platform
    import sqlite3
    from importlib import metadata as md

    import tokens

    versions: dict[str, str | None] = {}
    for package in ("contextforge", "tantivy", "bm25s", "rank-bm25", "numpy", "tiktoken"):
        try:
            versions[package] = md.version(package)
        except md.PackageNotFoundError:
            versions[package] = None
    versions["sqlite"] = sqlite3.sqlite_version
    versions["context-forge (crate)"] = "0.9.0"
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "versions": versions,
        "token_counter": tokens.counter()[0],
        "contextforge_build": contextforge_build(),
        "baseline": args.baseline,
        "systems": names,
        "queries": args.queries,
        "saves": args.saves,
        "save_seconds": args.save_seconds,
        "seed": args.seed,
    }


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = sorted(set(names) - set(systems.ALL))
    if unknown:
        sys.exit(f"unknown systems: {', '.join(unknown)}")
    if args.build_harness and systems.CRATE in names:
        print("building the context-forge crate harness (cargo build --release) ...", flush=True)
        failure = crate_harness.build()
        if failure:
            print(f"  harness build failed; the crate will be skipped:\n{failure}", flush=True)
    if "contextforge" in names and contextforge_build() == "dev":
        print(
            "warning: contextforge is a dev build; build it with `maturin develop --release` "
            "for numbers that mean something",
            flush=True,
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    runs: list[dict[str, Any]] = []
    workloads: dict[str, Any] = {}
    try:
        for i, size in enumerate(int(s) for s in args.sizes.split(",")):
            wl = workload.generate(size, queries=args.queries, saves=args.saves, seed=args.seed)
            wl_path = work / f"workload-{size}.json"
            workload.save(wl, wl_path)
            workloads[str(size)] = workload.describe(wl)
            del wl
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                started = time.perf_counter()
                row = run_system(name, size, wl_path, work / f"{name}-{size}", args)
                runs.append(row)
                note = (
                    row.get("reason", "").splitlines()[0]
                    if row["status"] != "ok"
                    else (
                        f"query p50 {row['query_p50_ms']:.3f} ms, recall {row['target_recall']:.2f}"
                    )
                )
                print(
                    f"N={size:>7,} {name:<20} {row['status']:<8} {time.perf_counter() - started:6.1f} s  {note}",
                    flush=True,
                )
    finally:
        if not args.keep_stores:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"stores kept in {work}")
    results = {"meta": metadata(args, names), "workloads": workloads, "runs": runs}
    paths = report.write(results, out)
    print(report.ratio_summary(results))
    print("wrote " + ", ".join(str(p) for p in paths))
    failed = [r for r in runs if r["status"] == "failed"]
    for r in failed:
        print(f"FAILED {r['system']} at N={r['size']}: {r['reason']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
