"""Queries from several processes sharing one machine and one store: the total
throughput of P processes, each running one query task, against one process.

    .venv/bin/python benchmarks/processes.py --n 100000 --processes 2

Each process opens the same store file, warms up, waits for the others at a
barrier, then runs every query of the workload `--rounds` times. A library that
waits for its own work by holding a core would starve the other processes here;
the machine's cores set the ceiling. Build the extension with `make release`
first for meaningful numbers. Uses the `fork` start method (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import tempfile
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from contextforge import ContextForge
from overhead import corpus


def child(path: str, queries: list[tuple[str, str]], rounds: int, start: Barrier, out: Any) -> None:
    async def run() -> float:
        async with await ContextForge.open(path) as cf:
            for text, scope in queries[:200]:  # warm up
                await cf.query(text, scope, 2048)
            start.wait()
            began = time.perf_counter()
            for _ in range(rounds):
                for text, scope in queries:
                    await cf.query(text, scope, 2048)
            return rounds * len(queries) / (time.perf_counter() - began)

    out.put(asyncio.run(run()))


def throughput(
    path: str, queries: list[tuple[str, str]], rounds: int, processes: int
) -> list[float]:
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(processes), ctx.Queue()
    workers = [
        ctx.Process(target=child, args=(path, queries, rounds, start, out))
        for _ in range(processes)
    ]
    for w in workers:
        w.start()
    rates = [out.get() for _ in workers]
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise SystemExit(f"a query process failed with exit code {w.exitcode}")
    return rates


async def build(path: str, n: int) -> list[tuple[str, str]]:
    items, queries = corpus(n)
    async with await ContextForge.open(path) as cf:
        for k in range(0, len(items), 10_000):
            await cf.save_many(items[k : k + 10_000])
        await cf.flush()
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--repeats", type=int, default=2, help="alternate one and P processes this many times"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "p.db")
        queries = asyncio.run(build(path, args.n))
        for _ in range(args.repeats):
            one = sum(throughput(path, queries, args.rounds, 1))
            many = throughput(path, queries, args.rounds, args.processes)
            print(
                f"1 process: {one:,.0f} queries/s | {args.processes} processes: "
                f"{' + '.join(f'{r:,.0f}' for r in many)} = {sum(many):,.0f} queries/s "
                f"({sum(many) / one:.2f}x)"
            )


if __name__ == "__main__":
    main()
