"""Forget latency: how long ``forget`` takes for 1, 1,000 and more entries in a
store of N, and how much of the index it rewrites.

    .venv/bin/python benchmarks/forget.py [--size 1000000] [--counts 1,1000,100000]

One process, a fresh file store of ``--size`` entries (the MW-1 generator's
text, one bulk save, flushed and closed), then for each count a new open, a
forget of that many entries spread over the store (by ids), and a close. The
store's index directory is measured before and after, to show that a small
forget rewrites a segment, not the index. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from pathlib import Path

from contextforge import Config, ContextForge
from workload import generate


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def build(path: str, size: int) -> list[int]:
    workload = generate(size, queries=1, saves=1)
    async with await ContextForge.open(Config(path=path)) as cf:
        saved = await cf.save_many(
            [
                {"content": e.content, "scope": e.scope, "timestamp": e.timestamp, "dedupe": False}
                for e in workload.entries
            ]
        )
        await cf.flush()
    return [int(i) for i in saved]


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
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    work = Path(tempfile.mkdtemp(prefix="cf-forget-"))
    try:
        path = str(work / "memory.db")
        started = time.perf_counter()
        ids = await build(path, args.size)
        print(f"built a store of {len(ids):,} entries in {time.perf_counter() - started:.1f} s")
        rng = random.Random(7)
        alive = list(ids)
        print(
            "| entries forgotten | forget | index segments rewritten | index size before | after |"
        )
        print("|---:|---:|---:|---:|---:|")
        for count in counts:
            chosen = rng.sample(alive, min(count, len(alive)))
            gone = set(chosen)
            alive = [i for i in alive if i not in gone]
            index = Path(path + ".index")
            before = folder_bytes(index)
            elapsed, entries, segments = await forget_some(path, chosen)
            after = folder_bytes(index)
            print(
                f"| {entries:,} | {elapsed * 1000:,.0f} ms | {segments} | "
                f"{before / 1e6:,.1f} MB | {after / 1e6:,.1f} MB |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
