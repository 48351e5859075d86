"""Soak: a long mixed workload on one store, checking that memory stays flat.

    python benchmarks/soak.py --ops 1000000          # the long profile (make soak)
    python benchmarks/soak.py --ops 20000            # a quick look

Keeps a bounded working set (saves, then deletes of the oldest beyond
--live entries; updates and queries in between), prints RSS every
--report-every operations, and exits 1 if RSS after warm-up grows by more than
--max-growth-mb over its post-warm-up baseline (the first report after
--warmup of the operations).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections import deque

from contextforge import Config, ContextForge


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


WORDS = [
    "deploy",
    "failed",
    "missing",
    "env",
    "var",
    "billing",
    "postgres",
    "quarter",
    "deadline",
    "user",
    "prefers",
    "dark",
    "mode",
    "rate",
    "limit",
    "tuesday",
    "release",
    "wheel",
    "token",
    "cache",
    "latency",
    "budget",
    "memory",
    "scope",
]


async def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    cf = await ContextForge.open(Config(path=args.path))
    live: deque[int] = deque()
    baseline: float | None = None
    peak = 0.0
    warmup_ops = int(args.ops * args.warmup)
    started = time.perf_counter()
    try:
        for op in range(1, args.ops + 1):
            roll = rng.random()
            scope = f"tenant{rng.randrange(8)}"
            if roll < 0.40 or not live:
                text = " ".join(rng.choices(WORDS, k=12)) + f" soak{op}"
                live.append(await cf.save(text, scope=scope, metadata={"op": op}))
                while len(live) > args.live:
                    await cf.delete(live.popleft())
            elif roll < 0.50:
                entry_id = live[rng.randrange(len(live))]
                await cf.update(entry_id, content=" ".join(rng.choices(WORDS, k=10)) + f" upd{op}")
            elif roll < 0.95:
                await cf.query(
                    " ".join(rng.choices(WORDS, k=3)), scope if roll < 0.8 else None, 1024
                )
            else:
                await cf.get(live[rng.randrange(len(live))])
            if op % args.report_every == 0:
                rss = rss_mb()
                rate = op / (time.perf_counter() - started)
                note = ""
                if op >= warmup_ops:
                    if baseline is None:
                        baseline = rss
                        note = " (baseline)"
                    peak = max(peak, rss)
                print(f"ops {op:>9}  rss {rss:8.1f} MB  {rate:7.0f} ops/s{note}", flush=True)
    finally:
        await cf.close()
    if baseline is None:
        print("no report after warm-up: raise --ops or lower --report-every", file=sys.stderr)
        return 2
    growth = peak - baseline
    print(
        f"baseline {baseline:.1f} MB, peak {peak:.1f} MB, growth {growth:.1f} MB "
        f"(bound {args.max_growth_mb} MB)"
    )
    if growth > args.max_growth_mb:
        print("FAIL: memory grew after warm-up", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--path", help="database file (default: a temporary directory)")
    parser.add_argument("--live", type=int, default=5000, help="entries kept alive")
    parser.add_argument("--report-every", type=int, default=50_000)
    parser.add_argument("--warmup", type=float, default=0.2, help="fraction of --ops")
    parser.add_argument("--max-growth-mb", type=float, default=64.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.path:
        return asyncio.run(soak(args))
    with tempfile.TemporaryDirectory() as tmp:
        args.path = os.path.join(tmp, "soak.db")
        return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())
