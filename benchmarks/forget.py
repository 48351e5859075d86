"""Forget latency: how long ``forget`` takes for 1, 1,000 and more entries in a
store of N, and how much of the index it rewrites.

    .venv/bin/python benchmarks/forget.py [--size 1000000] [--counts 1,1000,100000]

One process, a fresh file store of ``--size`` entries (the MW-1 generator's
text, one bulk save, flushed and closed), then for each count a new open, a
forget of that many entries spread over the store (by ids), and a close. The
store's index directory is measured before and after, to show that a small
forget rewrites a segment, not the index: the share of the index's bytes in
files the forget wrote. Before the forgets, the median time of a query over the
store is reported too (``--queries`` of the MW-1 workload, scoped as it
scopes them), with the number of segments it searches (the segment cap's
price: docs/performance.md, "Segments"). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from contextforge import Config, ContextForge
from workload import everywhere, generate


def files(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


def segments(index: Path) -> int:
    return len(json.loads((index / "meta.json").read_text())["segments"])


async def query_p50(path: str, queries: list[tuple[str, str | None]]) -> float:
    async with await ContextForge.open(Config(path=path)) as cf:
        for text, scope in queries[:50]:
            await cf.query(text, everywhere(scope), 2048)
        times = []
        for text, scope in queries:
            started = time.perf_counter()
            await cf.query(text, everywhere(scope), 2048)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


async def build(
    path: str, size: int, queries: int
) -> tuple[list[int], list[tuple[str, str | None]]]:
    workload = generate(size, queries=queries, saves=1)
    async with await ContextForge.open(Config(path=path)) as cf:
        saved = await cf.save_many(
            [
                {"content": e.content, "scope": e.scope, "timestamp": e.timestamp, "dedupe": False}
                for e in workload.entries
            ]
        )
        await cf.flush()
    return [int(i) for i in saved], [(q.text, q.scope) for q in workload.queries]


async def forget_some(path: str, ids: list[int]) -> tuple[float, int, int]:
    async with await ContextForge.open(Config(path=path)) as cf:
        started = time.perf_counter()
        receipt = await cf.forget(ids=ids)
        elapsed = time.perf_counter() - started
    return elapsed, receipt.entries, receipt.segments


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--counts", default="1,1000,10000")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    work = Path(tempfile.mkdtemp(prefix="cf-forget-"))
    try:
        path = str(work / "memory.db")
        started = time.perf_counter()
        ids, queries = await build(path, args.size, args.queries)
        print(f"built a store of {len(ids):,} entries in {time.perf_counter() - started:.1f} s")
        index = Path(path + ".index")
        p50 = await query_p50(path, queries)
        print(f"query p50: {p50 * 1000:.3f} ms, {segments(index)} segments")
        rng = random.Random(7)
        alive = list(ids)
        print(
            "| entries forgotten | forget | segments rewritten | of the index's bytes "
            "| index size before | after |"
        )
        print("|---:|---:|---:|---:|---:|---:|")
        for count in counts:
            chosen = rng.sample(alive, min(count, len(alive)))
            gone = set(chosen)
            alive = [i for i in alive if i not in gone]
            before = files(index)
            elapsed, entries, rewritten = await forget_some(path, chosen)
            after = files(index)
            written = sum(size for name, size in after.items() if name not in before)
            print(
                f"| {entries:,} | {elapsed * 1000:,.0f} ms | {rewritten} | "
                f"{written / sum(after.values()):.0%} | "
                f"{sum(before.values()) / 1e6:,.1f} MB | {sum(after.values()) / 1e6:,.1f} MB |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
