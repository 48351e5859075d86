"""How much the Python layer adds to a query: the latency an asyncio caller sees
against the engine's own time for the same queries (reported by the engine
through ``explain=True``), in one run; the round trip of an empty call; and the
throughput of the same queries from one asyncio task and split over two, with
the engine's own time per query in each (two queries answered at once each take
longer than one alone).

    .venv/bin/python benchmarks/overhead.py --n 100000

Build the extension with `make release` first for meaningful numbers. The
engine-only time without Python at all is `cargo bench --bench query`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from contextforge import Config, ContextForge


def corpus(n: int, seed: int = 42) -> tuple[list[dict[str, object]], list[tuple[str, str]]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(50_000)]
    weights = [1 / (i + 1) ** 1.1 for i in range(50_000)]
    items: list[dict[str, object]] = []
    queries: list[tuple[str, str]] = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=30)
        scope = f"s{i % 1000}"
        items.append({"content": " ".join(words), "scope": scope, "dedupe": False})
        if i % max(1, n // 1000) == 0:
            queries.append((f"{words[0]} {words[5]} {words[9]} w1", scope))
    return items, queries


async def throughput(
    cf: ContextForge, queries: list[tuple[str, str]], tasks: int
) -> tuple[float, float]:
    """Queries per second with `queries` split over `tasks` tasks, and the
    engine's median time per query meanwhile (µs)."""
    engine: list[float] = []

    async def run(part: list[tuple[str, str]]) -> None:
        for text, scope in part:
            hits = await cf.query(text, scope, 2048, explain=True)
            assert hits.timings is not None
            engine.append(hits.timings["total_us"])

    start = time.perf_counter()
    await asyncio.gather(*(run(queries[i::tasks]) for i in range(tasks)))
    return len(queries) / (time.perf_counter() - start), statistics.median(engine)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    items, queries = corpus(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        async with await ContextForge.open(Config(path=str(Path(tmp) / "o.db"))) as cf:
            for k in range(0, len(items), 10_000):
                await cf.save_many(items[k : k + 10_000])
            await cf.flush()
            for text, scope in queries[:100]:  # warm up
                await cf.query(text, scope, 2048)
            seen: list[float] = []
            engine: list[float] = []
            for text, scope in queries:
                start = time.perf_counter()
                hits = await cf.query(text, scope, 2048, explain=True)
                seen.append((time.perf_counter() - start) * 1e6)
                assert hits.timings is not None
                engine.append(hits.timings["total_us"])
            # An empty call: the hand-off to the engine's threads and back, around
            # an index lookup of a scope that holds nothing.
            empty: list[float] = []
            for _ in range(1000):
                start = time.perf_counter()
                await cf.count("no such scope")
                empty.append((time.perf_counter() - start) * 1e6)
            rounds = [await throughput(cf, queries * 3, tasks) for tasks in (1, 2, 1, 2)]
    p50_seen, p50_engine = statistics.median(seen), statistics.median(engine)
    print(f"N={args.n:,} queries={len(queries)}")
    print(
        f"python-visible p50 {p50_seen:.0f} us, engine p50 {p50_engine:.0f} us, "
        f"ratio {p50_seen / p50_engine:.2f}x"
    )
    print(f"empty call (count of an empty scope) p50 {statistics.median(empty):.0f} us")
    for (one, one_engine), (two, two_engine) in (rounds[0:2], rounds[2:4]):
        print(
            f"1 task {one:,.0f} queries/s (engine p50 {one_engine:.0f} us) | "
            f"2 tasks {two:,.0f} queries/s, {two / one:.2f}x (engine p50 {two_engine:.0f} us)"
        )


if __name__ == "__main__":
    asyncio.run(main())
