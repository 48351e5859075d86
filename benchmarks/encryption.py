"""The cost of encryption at rest: MW-1 on a plain store against an encrypted one
(``Config(encryption_key=...)``), in one run, with ratios.

usage: python benchmarks/encryption.py [--size N] [--smoke] [--out DIR]

Each store is measured in its own subprocesses: a load phase (ingest in
``save_many`` calls of 1,000, then single saves and queries on the warm handle),
then a cold phase in a new process (open and first query, then the query p50
again). An encrypted store's index files are sealed: opening it reads and
decrypts them into memory, where a plain store maps its index from disk.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import Workload, everywhere, generate

KEY = "benchmark key: not a secret"
BATCH = 1_000


def config(path: Path, encrypted: bool) -> Any:
    from contextforge import Config

    return Config(path=str(path), encryption_key=KEY if encrypted else None)


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def load(path: Path, encrypted: bool, work: Workload) -> dict[str, float]:
    from contextforge import ContextForge

    cf = await ContextForge.open(config(path, encrypted))
    start = time.perf_counter()
    for first in range(0, len(work.entries), BATCH):
        await cf.save_many(
            {"content": e.content, "scope": e.scope, "timestamp": e.timestamp}
            for e in work.entries[first : first + BATCH]
        )
    # Ends when the last entry can be found: the last bulk is indexed after it returns.
    last = work.entries[-1]
    await cf.query(last.content, last.scope, 2048, now=work.now)
    ingest = len(work.entries) / (time.perf_counter() - start)
    saves = []
    for e in work.saves:
        begun = time.perf_counter()
        await cf.save(e.content, scope=e.scope, timestamp=e.timestamp)
        saves.append(time.perf_counter() - begun)
    queries = await timed_queries(cf, work)
    await cf.close()
    return {"ingest_per_s": ingest, "save_p50_ms": p50(saves), "query_p50_ms": p50(queries)}


async def timed_queries(cf: Any, work: Workload) -> list[float]:
    lat = []
    for q in work.queries:
        begun = time.perf_counter()
        await cf.query(q.text, everywhere(q.scope), work.budget, now=work.now)
        lat.append(time.perf_counter() - begun)
    return lat


async def cold(path: Path, encrypted: bool, work: Workload) -> dict[str, float]:
    from contextforge import ContextForge

    begun = time.perf_counter()
    cf = await ContextForge.open(config(path, encrypted))
    first = work.queries[0]
    await cf.query(first.text, everywhere(first.scope), work.budget, now=work.now)
    opened = time.perf_counter() - begun
    queries = await timed_queries(cf, work)
    await cf.close()
    return {"cold_open_s": opened, "cold_query_p50_ms": p50(queries)}


def phase(name: str, path: Path, encrypted: bool, size: int, queries: int) -> dict[str, float]:
    """One phase in a fresh process, so no page or allocator state is shared."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--path", str(path), "--size", str(size)]
        + ["--queries", str(queries)]
        + (["--encrypted"] if encrypted else []),
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="2,000 entries: checks it runs")
    parser.add_argument("--out", type=Path, default=None, help="write encryption.json here")
    parser.add_argument("--phase", choices=["load", "cold"], help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--encrypted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    size, queries = (2_000, 100) if args.smoke else (args.size, args.queries)
    if args.phase:
        work = generate(size, queries=queries)
        run = load if args.phase == "load" else cold
        print(json.dumps(asyncio.run(run(args.path, args.encrypted, work))))
        return 0

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for encrypted in (False, True):
            folder = Path(tmp) / ("encrypted" if encrypted else "plain")
            folder.mkdir()
            path = folder / "memory.db"
            measured = phase("load", path, encrypted, size, queries)
            measured.update(phase("cold", path, encrypted, size, queries))
            measured["files_mb"] = folder_mb(folder)
            results["encrypted" if encrypted else "plain"] = measured

    plain, locked = results["plain"], results["encrypted"]
    rows = [
        ("ingest, entries/s (save_many of 1,000)", "ingest_per_s", "{:,.0f}"),
        ("save p50, ms", "save_p50_ms", "{:.3f}"),
        ("query p50, ms (warm handle)", "query_p50_ms", "{:.3f}"),
        ("cold open + first query, s", "cold_open_s", "{:.2f}"),
        ("query p50 after a cold open, ms", "cold_query_p50_ms", "{:.3f}"),
        ("files on disk, MB", "files_mb", "{:.1f}"),
    ]
    print(
        f"MW-1, {size:,} entries, {queries} queries; encrypted / plain (os: {os.uname().sysname})"
    )
    print("| measure | plain | encrypted | ratio |\n|---|---|---|---|")
    for label, key, shape in rows:
        ratio = locked[key] / plain[key] if plain[key] else float("nan")
        print(
            f"| {label} | {shape.format(plain[key])} | {shape.format(locked[key])} | {ratio:.2f}x |"
        )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "encryption.json").write_text(
            json.dumps({"size": size, "queries": queries, **results}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
