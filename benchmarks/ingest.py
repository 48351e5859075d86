"""Ingest batch-size sweep: entries/s and peak RSS growth at every batch size.

    python benchmarks/ingest.py --total 100000 --batches 1,10,100,1000,10000,100000
    python benchmarks/ingest.py --total 1000000 --batches 100000,1000000   # the 1M memory check
    python benchmarks/ingest.py --smoke          # CI: batches 1,100,1000, 2,000 entries, 2 s a cell

For every (batch size, system) cell a fresh subprocess on a fresh store
generates the MW-1 entries (workload.py, same seed), opens the store, loads
the peers' token counter (contextforge loads its own vocabulary at open), lets
RSS settle, takes VmRSS as the baseline and resets the peak (VmHWM, by writing
"5" to /proc/self/clear_refs), then calls the system's `ingest` (one save_many,
one commit) with `batch` entries at a time until `--total` entries are in or
`--seconds` have passed, then makes one query that must find the last entry
saved (contextforge indexes a bulk save after the call returns, and a query
waits for that). It reports entries/s over what ran, that query included, and the peak RSS
growth: VmHWM after the ingest minus the baseline. Where clear_refs does not
reset VmHWM, a thread samples RSS every 5 ms instead. Systems run in an order
that rotates from one batch size to the next.

A cell stopped by --seconds ingested fewer entries than a faster system's, so
its whole growth is not comparable with theirs. Each cell therefore also notes
its peak so far whenever its count of entries passes a mark (ten marks a
decade from 100), and the report compares the systems at the largest mark
every one of them passed at that batch size: the growth over the same entries.
A last memory table counts that peak from the process's RSS before the store
opened: everything each system adds to do the job (its open, the peers' token
counter, the ingest) over the same entries.

Writes ingest.json, ingest.md and ingest.png to --out. Exits non-zero if any
cell fails (in --smoke mode also if a system cannot be imported). Nothing checks
a time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import report
import run
import systems
import workload
from measure import disk_bytes, percentile

HERE = Path(__file__).resolve().parent
SYSTEMS = ["contextforge", "tantivy", "sqlite_fts5"]
BASE = "contextforge"  # ratio columns are contextforge / peer
SAMPLE_SECONDS = 0.005
PAGE = os.sysconf("SC_PAGE_SIZE")
# Entry counts at which a cell notes its peak RSS so far: ten a decade from 100.
MARKS = sorted({round(100 * 10 ** (k / 10)) for k in range(61)})


# --- inside one cell's subprocess -------------------------------------------


def status_kib(*keys: str) -> dict[str, int]:
    """Fields of /proc/self/status, in KiB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in keys:
                out[key] = int(rest.split()[0])
    return out


def rss_kib() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE // 1024


def reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def clear_refs_works() -> bool:
    """Touches then frees 64 MiB, and checks that clear_refs brings VmHWM back down."""
    block = b"\x01" * (64 << 20)
    del block
    before = status_kib("VmHWM", "VmRSS")
    if before["VmHWM"] - before["VmRSS"] < 32 << 10 or not reset_hwm():
        return False
    after = status_kib("VmHWM", "VmRSS")
    return after["VmHWM"] - after["VmRSS"] < 8 << 10


def release_freed_memory() -> None:
    """Collects garbage and hands freed heap back to the OS, so that memory the
    generation freed is not reused unseen by the ingest (glibc only)."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def settle(limit: float = 3.0, quiet: float = 0.25) -> float:
    """Waits until RSS has stayed within 256 KiB for `quiet` seconds (a background
    load finishing), at most `limit` seconds; returns the seconds waited."""
    start = time.perf_counter()
    last, calm_since = rss_kib(), start
    while time.perf_counter() - start < limit:
        time.sleep(0.02)
        now, current = time.perf_counter(), rss_kib()
        if abs(current - last) > 256:
            calm_since = now
        last = current
        if now - calm_since >= quiet:
            break
    return time.perf_counter() - start


class Sampler(threading.Thread):
    """The fallback peak tracker: the largest RSS seen every SAMPLE_SECONDS."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = rss_kib()
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(SAMPLE_SECONDS):
            self.peak = max(self.peak, rss_kib())

    def stop(self) -> int:
        self.halt.set()
        self.join()
        self.peak = max(self.peak, rss_kib())
        return self.peak


async def cell(spec: dict[str, Any]) -> dict[str, Any]:
    name, batch, total = spec["system"], spec["batch"], spec["total"]
    store = Path(spec["store"])
    method = spec["rss_method"]
    if method == "auto":
        method = "clear_refs" if clear_refs_works() else "sampler"

    started = time.perf_counter()
    entries = workload.generate(total, queries=0, saves=0, seed=spec["seed"]).entries
    generate_s = time.perf_counter() - started
    system = systems.create(name)
    release_freed_memory()
    rss_before_open = rss_kib()

    started = time.perf_counter()
    await system.open(store)
    open_ms = (time.perf_counter() - started) * 1000.0
    counter: dict[str, Any] = {}
    if not name.startswith("contextforge"):
        # The peers load tiktoken on their first save; contextforge starts loading
        # its vocabulary at open. Load it here so that neither pays inside the ingest.
        import tokens

        before, started = rss_kib(), time.perf_counter()
        counter = {
            "token_counter": tokens.counter()[0],
            "counter_load_s": time.perf_counter() - started,
            "counter_rss_mb": (rss_kib() - before) / 1024.0,
        }
    release_freed_memory()
    settle_s = settle()

    hwm_before_reset = status_kib("VmHWM")["VmHWM"]
    sampler = None
    if method == "clear_refs":
        if not reset_hwm():
            raise RuntimeError("cannot write /proc/self/clear_refs: use --rss-method sampler")
    else:
        sampler = Sampler()
        sampler.start()
    before = status_kib("VmRSS", "RssAnon", "RssFile")
    baseline = before["VmRSS"]

    def peak_kib() -> int:
        return max(sampler.peak, rss_kib()) if sampler else status_kib("VmHWM")["VmHWM"]

    # [mark, entries when it was passed, peak RSS growth so far in MB]
    marks: list[list[float]] = []
    pending = iter(MARKS)
    mark = next(pending)
    done, calls, latencies = 0, 0, []
    started = time.perf_counter()
    while done < total:
        chunk = entries if done == 0 and batch >= total else entries[done : done + batch]
        t = time.perf_counter()
        ids = await system.ingest(chunk)
        latencies.append(time.perf_counter() - t)
        if len(ids) != len(chunk):
            raise RuntimeError(f"ingest returned {len(ids)} ids for {len(chunk)} entries")
        done += len(chunk)
        calls += 1
        if done >= mark:
            growth = (peak_kib() - baseline) / 1024.0
            while done >= mark:
                marks.append([mark, done, growth])
                mark = next(pending, 1 << 62)
        last, last_id = chunk[-1], ids[-1]
        del ids, chunk
        if time.perf_counter() - started >= spec["seconds"]:
            break
    # The ingest ends when what it saved can be found: contextforge indexes a
    # bulk save after the call returns (a query waits for that), the peers
    # before. So one query for the last entry is timed with the ingest.
    t = time.perf_counter()
    hits = await system.query(last.content, None, workload.BUDGET, last.timestamp)
    first_query_s = time.perf_counter() - t
    if last_id not in {h.id for h in hits}:
        raise RuntimeError(
            f"the first query after the ingest did not find the last entry saved ({last_id})"
        )
    ingest_s = time.perf_counter() - started

    after = status_kib("VmRSS", "VmHWM", "RssAnon", "RssFile")
    peak = max(sampler.peak, after["VmRSS"]) if sampler else after["VmHWM"]
    # Both sides leave work to background threads (contextforge's tail flusher,
    # tantivy's merges) that close waits for: timed, and its peak kept, apart.
    started = time.perf_counter()
    await system.close()
    close_s = time.perf_counter() - started
    peak_closed = sampler.stop() if sampler else status_kib("VmHWM")["VmHWM"]
    mb = 1 / 1024.0
    return {
        "rss_method": method,
        "entries": done,
        "calls": calls,
        "capped": done < total,
        "ingest_s": ingest_s,
        "first_query_s": first_query_s,
        "entries_per_s": done / ingest_s,
        "close_s": close_s,
        "entries_per_s_incl_close": done / (ingest_s + close_s),
        **call_times(latencies),
        "rss_growth_mb": (peak - baseline) * mb,
        "rss_peak_mb": peak * mb,
        "rss_baseline_mb": baseline * mb,
        "rss_before_open_mb": rss_before_open * mb,
        "rss_after_ingest_mb": after["VmRSS"] * mb,
        # The file-backed part (mapped files: libraries, SQLite mmap, tantivy segments).
        "rss_file_baseline_mb": before.get("RssFile", 0) * mb,
        "rss_file_after_ingest_mb": after.get("RssFile", 0) * mb,
        "rss_anon_baseline_mb": before.get("RssAnon", 0) * mb,
        "rss_anon_after_ingest_mb": after.get("RssAnon", 0) * mb,
        "hwm_before_reset_mb": hwm_before_reset * mb,
        "rss_growth_incl_close_mb": (peak_closed - baseline) * mb,
        "marks": marks,
        "generate_s": generate_s,
        "open_ms": open_ms,
        "settle_s": settle_s,
        "disk_mb": disk_bytes(store) / 1e6,
        **counter,
    }


def call_times(latencies: list[float]) -> dict[str, float]:
    ms = [s * 1000.0 for s in latencies]
    return {"call_p50_ms": percentile(ms, 50), "call_p99_ms": percentile(ms, 99)}


# --- the driver ----------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--batches", default="1,10,100,1000,10000,100000", help="entries per call")
    p.add_argument("--total", type=int, default=100_000, help="entries per cell at most")
    p.add_argument("--seconds", type=float, default=30.0, help="stop a cell's calls after this")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    p.add_argument("--seed", type=int, default=workload.SEED)
    p.add_argument(
        "--rss-method",
        choices=("auto", "clear_refs", "sampler"),
        default="auto",
        help="peak tracker: auto uses clear_refs when it resets VmHWM here, else the sampler",
    )
    p.add_argument("--out", default=str(HERE / "results"), help="folder for ingest.{json,md,png}")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per cell subprocess")
    p.add_argument("--smoke", action="store_true", help="batches 1,100,1000; 2,000 entries; 2 s")
    p.add_argument("--cell", help=argparse.SUPPRESS)  # internal: run one cell, print JSON
    args = p.parse_args(argv)
    if args.smoke:
        args.batches, args.total, args.seconds, args.timeout = "1,100,1000", 2000, 2.0, 300.0
    return args


def run_cell(name: str, batch: int, store: Path, args: argparse.Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {"system": name, "batch": batch}
    reason, fatal = run.skip_reason(name, args.total, args.smoke)
    if reason:
        return {**row, "status": "failed" if fatal else "skipped", "reason": reason}
    spec = {
        "system": name,
        "batch": batch,
        "total": args.total,
        "seconds": args.seconds,
        "seed": args.seed,
        "store": str(store),
        "rss_method": args.rss_method,
    }
    cmd = [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)]
    try:
        result, error = run.run_process(cmd, args.timeout)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    if result is None:
        return {**row, "status": "failed", "reason": error}
    return {**row, "status": "ok", **result}


def metadata(args: argparse.Namespace, names: list[str], batches: list[int]) -> dict[str, Any]:
    import sqlite3
    from importlib import metadata as md

    import tokens

    versions: dict[str, str | None] = {}
    # contextforge's distribution is contextforge-memory ("contextforge" on PyPI is another).
    for key, package in (
        ("contextforge", "contextforge-memory"),
        ("tantivy", "tantivy"),
        ("tiktoken", "tiktoken"),
    ):
        try:
            versions[key] = md.version(package)
        except md.PackageNotFoundError:
            versions[key] = None
    if versions["contextforge"] is None:
        try:
            from contextforge import __version__

            versions["contextforge"] = f"{__version__} (source tree)"
        except ImportError:
            pass
    versions["sqlite"] = sqlite3.sqlite_version
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "versions": versions,
        "contextforge_build": run.contextforge_build(),
        "token_counter": tokens.counter()[0],
        "systems": names,
        "batches": batches,
        "total": args.total,
        "seconds": args.seconds,
        "seed": args.seed,
        "rss_method": args.rss_method,
        "workload": "MW-1 (benchmarks/workload.py), entries only",
    }


def same_entries(cells: list[dict[str, Any]]) -> None:
    """Sets `same_entries` and `rss_growth_same_mb` on every ok cell: the growth
    over the entries every system at that batch size ingested. When they all
    ingested the same number, that is the whole ingest's growth (the final
    query included); otherwise each cell's peak so far when it passed the
    largest mark that every one of them passed.

    Also `rss_added_same_mb`: that peak above the process's RSS before the
    store opened, so everything the system adds to do the job (its open, its
    token counter, the ingest) over the same entries."""
    for batch in sorted({c["batch"] for c in cells}):
        ok = [c for c in cells if c["batch"] == batch and c["status"] == "ok"]
        if not ok:
            continue
        if len({c["entries"] for c in ok}) == 1:
            for c in ok:
                c["same_entries"], c["rss_growth_same_mb"] = c["entries"], c["rss_growth_mb"]
                c["same_at_mark"] = False
        else:
            common = set.intersection(*({m[0] for m in c["marks"]} for c in ok))
            if not common:
                continue
            top = max(common)
            for c in ok:
                _, entries, growth = next(m for m in c["marks"] if m[0] == top)
                c["same_entries"], c["rss_growth_same_mb"] = entries, growth
                c["same_at_mark"] = True
        for c in ok:
            opened = c["rss_baseline_mb"] - c["rss_before_open_mb"]
            c["rss_added_same_mb"] = c["rss_growth_same_mb"] + opened


def _ratio(a: Any, b: Any) -> str:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or b <= 0:
        return "n/a"
    return f"{a / b:.2f}×"


# (key, title, whether the table gets ratio columns)
TABLES = [
    ("entries_per_s", "Ingest throughput (entries/s; ratio > 1: contextforge is faster)", True),
    (
        "rss_growth_mb",
        "Peak RSS growth during the ingest (MB; ratio > 1: contextforge uses more)",
        True,
    ),
    (
        "rss_growth_incl_close_mb",
        "Peak RSS growth through the close, which runs deferred index work (MB)",
        True,
    ),
    (
        "rss_growth_same_mb",
        (
            "Peak RSS growth over the same entries: the whole ingest where every system "
            "ingested as many, else the peak between calls at the largest mark every system "
            "passed (MB; ratio > 1: contextforge uses more)"
        ),
        True,
    ),
    ("same_entries", "Entries the row above compares over", False),
    (
        "rss_added_same_mb",
        (
            "Memory each system adds over the same entries: the peak of the growth table "
            "over the same entries, counted from "
            "the process's RSS before the store opened, so its open and the peers' token "
            "counter are in (MB; ratio > 1: contextforge uses more)"
        ),
        True,
    ),
    ("rss_peak_mb", "Whole-process peak RSS, VmHWM (MB; ratio > 1: contextforge uses more)", True),
    (
        "entries_per_s_incl_close",
        "Throughput counting the close, which waits for background index work (entries/s)",
        True,
    ),
    ("entries", "Entries ingested (* = stopped by --seconds)", False),
    ("call_p50_ms", "Median time of one ingest call (ms)", False),
]


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    names = meta["systems"]
    peers = [n for n in names if n != BASE] if BASE in names else []
    cells = {(c["batch"], c["system"]): c for c in results["cells"]}
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    used = ", ".join(sorted({c["rss_method"] for c in results["cells"] if "rss_method" in c}))
    lines = [
        "# Ingest batch-size sweep",
        "",
        (
            f"`{meta['command']}` on {meta['date_utc']}, {meta['cpus']} CPUs, "
            f"{meta['platform']}, Python {meta['python']}."
        ),
        (
            f"Versions: {versions}. **contextforge build: {meta['contextforge_build']}.** "
            f"Peer token counter: {meta['token_counter']}. RSS peak tracker: {used}."
        ),
        "",
        (
            f"Up to {meta['total']:,} MW-1 entries per cell, each cell in a fresh process on a "
            f"fresh store, calls stopped after {meta['seconds']:g} s. One call = one `ingest` "
            "(save_many, one commit); the ingest ends with one query that finds the last entry "
            "saved (contextforge indexes a bulk save after the call returns), timed with it. "
            "Peak RSS growth = VmHWM after the ingest minus VmRSS just "
            "before it (after opening the store and loading the peers' token counter). "
            "Cells stopped by the time limit ingested different numbers of entries: the table "
            "of growth over the same entries compares them where every system had ingested "
            "as many (the peak so far, noted between calls when a count passed a mark). "
            "The table of memory added counts that peak from before the store opened: what each "
            "system adds to the process to do the job, its own open and the peers' token "
            "counter included."
        ),
    ]
    if any(c.get("rss_method") == "sampler" for c in results["cells"]):
        lines += [
            "",
            (
                "**The RSS peak was sampled by a thread every 5 ms** (clear_refs was not used): "
                "it can miss short peaks, and it takes the GIL, which slows the Python-bound peers."
            ),
        ]
    for key, title, ratios in TABLES:
        header = ["batch", *names] + ([f"{BASE} / {p}" for p in peers] if ratios else [])
        rows = []
        for batch in meta["batches"]:
            row = [f"{batch:,}"]
            for name in names:
                c = cells.get((batch, name), {})
                if c.get("status") != "ok":
                    row.append(c.get("status", "-"))
                    continue
                if key not in c:
                    row.append("-")
                    continue
                row.append(report.fmt(c[key]) + ("*" if key == "entries" and c["capped"] else ""))
            if ratios:
                base = cells.get((batch, BASE), {})
                for peer in peers:
                    other = cells.get((batch, peer), {})
                    ok = base.get("status") == other.get("status") == "ok"
                    row.append(_ratio(base.get(key), other.get(key)) if ok else "n/a")
            rows.append(row)
        lines += ["", f"## {title}", "", *report._table(header, rows)]
    others = [c for c in results["cells"] if c["status"] != "ok"]
    if others:
        lines += ["", "## Skipped and failed", ""]
        for c in others:
            reason = c["reason"].replace("\n", " / ")
            lines.append(f"- **{c['system']}** at batch {c['batch']:,}: {c['status']}: {reason}")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    meta = results["meta"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for i, name in enumerate(meta["systems"]):
        ok = sorted(
            (c for c in results["cells"] if c["system"] == name and c["status"] == "ok"),
            key=lambda c: c["batch"],
        )
        if not ok:
            continue
        for axis, key, style in (
            (left, "entries_per_s", "-"),
            (right, "rss_growth_same_mb", "-"),
            (right, "rss_added_same_mb", "--"),
        ):
            shown = [c for c in ok if key in c]
            label = name if style == "-" else None
            axis.plot(
                [c["batch"] for c in shown],
                [c[key] for c in shown],
                style,
                color=f"C{i}",
                label=label,
            )
            for c in shown:
                # Hollow: stopped by --seconds (throughput); read at a mark, between
                # calls, over fewer entries than the whole ingest (memory).
                hollow = c["same_at_mark"] if axis is right else c["capped"]
                axis.plot(
                    c["batch"],
                    c[key],
                    "o",
                    color=f"C{i}",
                    markerfacecolor="none" if hollow else f"C{i}",
                )
    left.set(
        xscale="log",
        yscale="log",
        xlabel="entries per ingest call",
        ylabel="entries/s",
        title="Ingest throughput",
    )
    right.set(
        xscale="log",
        xlabel="entries per ingest call",
        ylabel="MB",
        title="Memory over the same entries (solid: growth during the ingest;\n"
        "dashed: all the system adds, its open and token counter included)",
    )
    right.set_yscale("symlog", linthresh=1.0)
    growth = [
        c[key]
        for c in results["cells"]
        for key in ("rss_growth_same_mb", "rss_added_same_mb")
        if key in c
    ]
    right.set_ylim(0, max([1.0, *growth]) * 2)
    for axis in (left, right):
        axis.grid(True, which="both", alpha=0.3)
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        axis.yaxis.set_major_formatter(
            FuncFormatter(lambda y, _: f"{y:,.0f}" if y >= 1 else f"{y:g}")
        )
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    fig.suptitle(
        f"{meta['date_utc']}, {meta['cpus']} CPUs, contextforge build {meta['contextforge_build']}, "
        f"up to {meta['total']:,} entries or {meta['seconds']:g} s a cell "
        "(hollow: stopped by time; memory read at a mark, between calls)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.cell:
        print(json.dumps(asyncio.run(cell(json.loads(args.cell)))))
        return 0
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = sorted(set(names) - set(systems.PYTHON_SYSTEMS))
    if unknown:
        sys.exit(f"unknown systems: {', '.join(unknown)}")
    batches = [int(b) for b in args.batches.split(",")]
    if "contextforge" in names and run.contextforge_build() == "dev":
        print("warning: contextforge is a dev build; its numbers say little", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cf-ingest-"))
    cells: list[dict[str, Any]] = []
    try:
        for i, batch in enumerate(batches):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                started = time.perf_counter()
                c = run_cell(name, batch, work / f"{name}-{batch}", args)
                cells.append(c)
                note = (
                    c["reason"].splitlines()[0]
                    if c["status"] != "ok"
                    else f"{c['entries']:,} entries, {c['entries_per_s']:,.0f}/s, "
                    f"peak RSS +{c['rss_growth_mb']:.1f} MB ({c['rss_method']})"
                )
                print(
                    f"batch {batch:>9,} {name:<13} {c['status']:<7} "
                    f"{time.perf_counter() - started:6.1f} s  {note}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    same_entries(cells)
    results = {"meta": metadata(args, names, batches), "cells": cells}
    paths = [out / "ingest.json", out / "ingest.md", out / "ingest.png"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    paths[1].write_text(markdown(results))
    plot(results, paths[2])
    print("wrote " + ", ".join(str(p) for p in paths))
    failed = [c for c in cells if c["status"] == "failed"]
    for c in failed:
        print(f"FAILED {c['system']} at batch {c['batch']:,}: {c['reason']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
