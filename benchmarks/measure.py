"""The measuring protocol, the same for every Python system (the Rust harness
mirrors it in context_forge_harness/src/main.rs).

load phase, on a fresh store: bulk ingest of all entries in one call; 20 warm-up
queries; every query timed one at a time; the same queries split over two
concurrent tasks; single saves (up to the workload's count or `save_seconds`,
whichever ends first), the first one checked for visibility to a query; close.
cold phase, in a new process on the store the load phase left: open plus the
first query.
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from systems.base import Hit, System
from workload import Entry, Query, Workload

WARMUP = 20
CONCURRENT_TASKS = 2


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def memory_kib() -> dict[str, int]:
    """Current (VmRSS) and peak (VmHWM) resident memory of this process, in KiB."""
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = {"VmRSS": peak, "VmHWM": peak}
    return out


def reset_peak() -> None:
    """Restarts VmHWM from the current RSS, so that the peak excludes parsing the workload."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def disk_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def latency_summary(prefix: str, seconds: Sequence[float]) -> dict[str, float]:
    ms = [s * 1000.0 for s in seconds]
    return {
        f"{prefix}_p50_ms": percentile(ms, 50),
        f"{prefix}_p99_ms": percentile(ms, 99),
        f"{prefix}_mean_ms": sum(ms) / max(1, len(ms)),
    }


async def _ask(system: System, query: Query, workload: Workload) -> list[Hit]:
    return await system.query(query.text, query.scope, workload.budget, workload.now)


async def _concurrent(system: System, queries: Sequence[Query], workload: Workload) -> float:
    """Seconds for CONCURRENT_TASKS tasks to answer `queries` between them."""
    parts = [list(queries[i::CONCURRENT_TASKS]) for i in range(CONCURRENT_TASKS)]
    budget, now = workload.budget, workload.now

    def in_thread(part: list[Query]) -> None:
        for q in part:
            system.query_sync(q.text, q.scope, budget, now)

    async def in_task(part: list[Query]) -> None:
        for q in part:
            await system.query(q.text, q.scope, budget, now)

    start = time.perf_counter()
    if system.concurrency == "threads":
        await asyncio.gather(*(asyncio.to_thread(in_thread, part) for part in parts))
    else:
        await asyncio.gather(*(in_task(part) for part in parts))
    return time.perf_counter() - start


async def _saves(
    system: System, saves: Sequence[Entry], workload: Workload, save_seconds: float
) -> dict[str, Any]:
    latencies: list[float] = []
    visible = None
    started = time.perf_counter()
    for entry in saves:
        t = time.perf_counter()
        entry_id = await system.save(entry)
        latencies.append(time.perf_counter() - t)
        if visible is None:  # checked once, outside the timing
            hits = await system.query(entry.content, entry.scope, workload.budget, workload.now)
            visible = any(h.id == entry_id for h in hits)
        if time.perf_counter() - started > save_seconds:
            break
    return {
        **latency_summary("save", latencies),
        "saves": len(latencies),
        "save_visible": bool(visible),
    }


async def load_phase(
    system: System, workload: Workload, store: Path, save_seconds: float
) -> dict[str, Any]:
    reset_peak()
    baseline = memory_kib()["VmRSS"]
    t = time.perf_counter()
    await system.open(store)
    opened = time.perf_counter() - t

    t = time.perf_counter()
    ids = await system.ingest(workload.entries)
    # The ingest ends when what it saved can be searched: contextforge indexes
    # a bulk save after the call returns, and a query waits for that, the peers
    # index before. So the first query is timed with the ingest (and again below).
    await _ask(system, workload.queries[0], workload)
    ingest = time.perf_counter() - t
    if len(ids) != len(workload.entries):
        raise RuntimeError(f"ingest returned {len(ids)} ids for {len(workload.entries)} entries")

    for q in workload.queries[:WARMUP]:
        await _ask(system, q, workload)
    latencies: list[float] = []
    found = hits_total = tokens_total = 0
    for q in workload.queries:
        t = time.perf_counter()
        hits = await _ask(system, q, workload)
        latencies.append(time.perf_counter() - t)
        found += any(h.id == ids[q.target] for h in hits)
        hits_total += len(hits)
        tokens_total += sum(h.tokens for h in hits)
        if any(not h.content for h in hits):
            raise RuntimeError("a hit came back without its content")

    n = len(workload.queries)
    concurrent = await _concurrent(system, workload.queries, workload)
    saves = await _saves(system, workload.saves, workload, save_seconds)
    await system.close()
    peak = memory_kib()["VmHWM"]
    return {
        "open_empty_ms": opened * 1000.0,
        "ingest_s": ingest,
        "ingest_per_s": len(ids) / ingest,
        **latency_summary("query", latencies),
        "qps_1": n / sum(latencies),
        "qps_2": n / concurrent,
        "target_recall": found / n,
        "hits_per_query": hits_total / n,
        "tokens_per_query": tokens_total / n,
        **saves,
        "rss_baseline_mb": baseline / 1024.0,
        "rss_peak_mb": peak / 1024.0,
        "rss_delta_mb": (peak - baseline) / 1024.0,
        "disk_mb": disk_bytes(store) / 1e6,
    }


async def cold_phase(system: System, workload: Workload, store: Path) -> dict[str, Any]:
    first = workload.queries[0]
    t = time.perf_counter()
    await system.open(store)
    opened = time.perf_counter() - t
    t = time.perf_counter()
    hits = await _ask(system, first, workload)
    queried = time.perf_counter() - t
    await system.close()
    if not hits:
        raise RuntimeError("the first query after a cold open found nothing")
    return {
        "cold_open_ms": opened * 1000.0,
        "cold_first_query_ms": queried * 1000.0,
        "cold_total_ms": (opened + queried) * 1000.0,
    }
