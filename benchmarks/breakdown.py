"""Where a query's and a bulk save's time goes, for contextforge and for the
tantivy-py peer, on the benchmark's own workload (`workload.py`).

    .venv/bin/python benchmarks/breakdown.py --n 100000

For contextforge: the query latency an asyncio caller sees, the engine's own
time, and its search and pack parts (`explain=True` timings), for scoped and
unscoped queries; and the wall and CPU seconds of the bulk save (CPU over both
cores: what two cores could at best bring the wall time down to). For
tantivy-py: the same queries taken apart into the steps
`systems/tantivy_sqlite.py` runs them in: parsing, tantivy's search call, reading
fast fields, ranking and packing in Python, reading the contents from SQLite.
Medians over `--rounds` passes of every query. Build the extension with
`make release` first for meaningful numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from contextforge import ContextForge
from systems.base import rank_and_pack
from systems.tantivy_sqlite import TantivySqlite
from workload import Workload, everywhere, generate


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def medians(samples: dict[str, list[float]]) -> str:
    return ", ".join(f"{name} {statistics.median(xs):.0f}" for name, xs in samples.items())


async def ours(workload: Workload, folder: Path, rounds: int) -> None:
    async with await ContextForge.open(str(folder / "memory.db")) as cf:
        items = [
            {"content": e.content, "scope": e.scope, "timestamp": e.timestamp}
            for e in workload.entries
        ]
        wall, cpu = time.perf_counter(), cpu_seconds()
        await cf.save_many(items)
        # Indexed after the call returns: the first query waits for that.
        first = workload.queries[0]
        await cf.query(first.text, everywhere(first.scope), workload.budget, now=workload.now)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        print(
            f"contextforge bulk save: {wall:.2f} s wall, {cpu:.2f} CPU-s "
            f"({len(items) / wall:,.0f} entries/s; {cpu / 2:.2f} s if both cores did nothing else)"
        )
        del items
        for q in workload.queries[:100]:
            await cf.query(q.text, everywhere(q.scope), workload.budget, now=workload.now)
        parts: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for _ in range(rounds):
            for q in workload.queries:
                start = time.perf_counter()
                hits = await cf.query(
                    q.text, everywhere(q.scope), workload.budget, now=workload.now, explain=True
                )
                seen = (time.perf_counter() - start) * 1e6
                assert hits.timings is not None
                for group in ("all", "scoped" if q.scope is not None else "unscoped"):
                    parts[group]["seen"].append(seen)
                    parts[group]["engine"].append(hits.timings["total_us"])
                    parts[group]["search"].append(hits.timings["search_us"])
                    parts[group]["pack"].append(hits.timings["pack_us"])
        for group, samples in parts.items():
            print(
                f"contextforge query µs, {group} ({len(samples['seen']) // rounds}): {medians(samples)}"
            )


def theirs(workload: Workload, folder: Path, rounds: int) -> None:
    system = TantivySqlite()
    system._open(folder)
    wall, cpu = time.perf_counter(), cpu_seconds()
    system._ingest(workload.entries)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    print(
        f"tantivy-py bulk save: {wall:.2f} s wall, {cpu:.2f} CPU-s ({len(workload.entries) / wall:,.0f} entries/s)"
    )
    steps: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for q in workload.queries:
            t0 = time.perf_counter()
            query = system.parse(q.text, q.scope)
            t1 = time.perf_counter()
            hits = system.search(query)
            t2 = time.perf_counter()
            candidates = system.candidates(hits)
            t3 = time.perf_counter()
            packed = rank_and_pack(candidates, workload.now, workload.budget)
            t4 = time.perf_counter()
            system.store.contents([int(c.id) for c, _ in packed])
            t5 = time.perf_counter()
            for name, (a, b) in {
                "parse": (t0, t1),
                "search": (t1, t2),
                "fast fields": (t2, t3),
                "rank+pack": (t3, t4),
                "contents": (t4, t5),
                "all": (t0, t5),
            }.items():
                steps[name].append((b - a) * 1e6)
    system._close()
    print(f"tantivy-py query µs: {medians(steps)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    workload = generate(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "ours").mkdir()
        asyncio.run(ours(workload, Path(tmp) / "ours", args.rounds))
        theirs(workload, Path(tmp) / "theirs", args.rounds)


if __name__ == "__main__":
    main()
