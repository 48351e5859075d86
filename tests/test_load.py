"""Load: several processes and tasks on one database file; and a short soak."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from contextforge import ALL_SCOPES, ContextForge

from .conftest import REPO

PROCESSES = 2
TASKS = 8
OPS_PER_TASK = 150

# One process: TASKS tasks, each OPS_PER_TASK operations mixing saves and queries.
# Waits for "go" on stdin so both processes start together; prints one JSON line.
WORKER = textwrap.dedent(
    """
    import asyncio, json, random, sys, time
    from contextforge import ALL_SCOPES, ContextForge

    async def task(cf, proc, t, ops, out):
        rng = random.Random(proc * 1000 + t)
        mine = []
        for k in range(ops):
            roll = rng.random()
            try:
                if roll < 0.5:
                    content = f"loadmark{proc}x{t}x{k} shared words about load"
                    entry_id = await cf.save(content, scope=f"tenant{t % 4}", dedupe=bool(k % 2))
                    out["acked"].append([entry_id, content])
                    mine.append((entry_id, f"loadmark{proc}x{t}x{k}"))
                else:
                    q = rng.choice(["shared words", "load about"])
                    if mine and roll < 0.75:
                        entry_id, q = rng.choice(mine)
                    started = time.perf_counter()
                    hits = await cf.query(q, f"tenant{t % 4}" if rng.random() < 0.5 else ALL_SCOPES, 4096)
                    out["latency_ms"].append((time.perf_counter() - started) * 1000)
                    if q.startswith("loadmark") and [h.id for h in hits] != [entry_id]:
                        out["errors"].append(f"read-your-write miss: {q} -> {[h.id for h in hits]}")
            except BaseException as err:
                out["errors"].append(f"{type(err).__name__}: {err}")

    async def main(path, proc, ops):
        cf = await ContextForge.open(path)
        out = {"acked": [], "latency_ms": [], "errors": []}
        print("ready", flush=True)
        sys.stdin.readline()
        await asyncio.gather(*(task(cf, proc, t, ops, out) for t in range(TASKS)))
        await cf.close()
        print(json.dumps(out), flush=True)

    TASKS = int(sys.argv[4])
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    """
)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def test_processes_and_tasks_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    async with await ContextForge.open(path) as cf:  # created before the race
        await cf.save("seed entry")
    procs = [
        subprocess.Popen(  # noqa: ASYNC220 (started, then awaited in threads)
            [sys.executable, "-c", WORKER, path, str(p), str(OPS_PER_TASK), str(TASKS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(PROCESSES)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=100)
            assert proc.returncode == 0, stderr[-3000:]
            results.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    errors = [e for r in results for e in r["errors"]]
    assert errors == [], errors[:10]  # no "database is locked", no miss
    acked = {entry_id: content for r in results for entry_id, content in r["acked"]}
    assert len(acked) == sum(len(r["acked"]) for r in results), "two saves got one id"
    latencies = [ms for r in results for ms in r["latency_ms"]]
    print(
        f"\nload: {PROCESSES} processes x {TASKS} tasks, {len(acked)} saves, "
        f"{len(latencies)} queries; query p50 {percentile(latencies, 50):.2f} ms, "
        f"p99 {percentile(latencies, 99):.2f} ms"
    )
    async with await ContextForge.open(path) as cf:
        ids = sorted(acked)
        got = await cf.get_many(ids)
        assert [g.content if g else None for g in got] == [acked[i] for i in ids], (
            "a write was lost"
        )
        assert await cf.count() == len(acked) + 1
        hits = await cf.query("shared words", ALL_SCOPES, 10**9, depth=10_000)
        assert sorted(h.id for h in hits) == ids


@pytest.mark.slow
def test_soak_short_memory_is_flat(tmp_path: Path) -> None:
    """A 20k-operation soak: RSS after warm-up stays within a loose bound."""
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "soak.py"),
            "--ops",
            "20000",
            "--path",
            str(tmp_path / "soak.db"),
            "--report-every",
            "5000",
            "--max-growth-mb",
            "96",
        ],
        capture_output=True,
        check=False,
        text=True,
        timeout=115,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
