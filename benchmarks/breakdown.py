"""Where a query's and a bulk save's time goes, for contextforge and for the
tantivy-py peer, on the benchmark's own workload (`workload.py`).

    .venv/bin/python benchmarks/breakdown.py --n 100000

For contextforge: the query latency an asyncio caller sees, the engine's own
time, and its search and pack parts (`explain=True` timings), for scoped and
unscoped queries; and the wall and CPU seconds of the bulk save (CPU over both
cores: what two cores could at best bring the wall time down to), with the
CPU seconds of each kind of thread for the save and for the indexing the first
query after it waits for (Linux: read from ``/proc/self/task``). For
tantivy-py: the same queries taken apart into the steps
`systems/tantivy_sqlite.py` runs them in: parsing, tantivy's search call, reading
fast fields, ranking and packing in Python, reading the contents from SQLite.
Medians over `--rounds` passes of every query. Build the extension with
`make release` first for meaningful numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import statistics
import tempfile
import threading
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


#: What each of contextforge's threads does in a bulk save (the kernel keeps
#: 15 characters of a thread's name).
ROLES = {
    "python": "the caller's Python thread",
    "contextforge-bu": "bulk writer (SQLite)",
    "contextforge-sa": "chunk preparer",
    "contextforge-pr": "chunk preparer",
    "contextforge-fl": "flusher (log read back)",
    "contextforge-wo": "query worker",
    "contextforge-ru": "runtime",
    "thrd-tantivy-in": "tantivy indexing",
    "merge_thread": "tantivy merge",
    "segment_updater": "tantivy segments",
    "breakdown-poll": "this script's poller",
}
TASKS = Path("/proc/self/task")
Snapshot = tuple[dict[tuple[str, str], float], float]


class ThreadCpu:
    """CPU seconds of each thread, by (thread id, name). A poller reads them
    every 25 ms, so that a thread which ends before a snapshot (a bulk save's
    writer and preparer end with it; a wide bulk's tantivy threads with their
    writer) keeps what it had used at the last poll; the process's own total
    (which keeps everything ended threads used) gives the rest, so the
    figures add up exactly. The poller's own reads are shown apart."""

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK")
        self.seen: dict[tuple[str, str], float] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.poller = threading.Thread(target=self._poll, name="breakdown-poll", daemon=True)
        self._read()
        self.poller.start()

    def _read(self) -> None:
        for task in TASKS.iterdir():
            try:
                stat = (task / "stat").read_text()
                name = (task / "comm").read_text().strip()
            except OSError:
                continue  # the thread ended: its last poll stands
            fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is field 3, the state
            used = (int(fields[11]) + int(fields[12])) / self.tick  # utime, stime
            with self.lock:
                self.seen[(task.name, name)] = used

    def _poll(self) -> None:
        while not self.done.wait(0.025):
            self._read()

    def snapshot(self) -> Snapshot:
        self._read()
        with self.lock:
            return dict(self.seen), cpu_seconds()

    def stop(self) -> None:
        self.done.set()
        self.poller.join()


def spent(before: Snapshot, after: Snapshot) -> str:
    """The CPU seconds between two snapshots, by role."""
    groups: dict[str, float] = defaultdict(float)
    for key, used in after[0].items():
        name = re.sub(r"[-_]?\d+$", "", key[1])
        groups[ROLES.get(name, name)] += used - before[0].get(key, 0.0)
    total = after[1] - before[1]
    groups["ended threads' last 25 ms"] += total - sum(groups.values())
    shown = sorted(((s, n) for n, s in groups.items() if s >= 0.01), reverse=True)
    return f"{total:.2f} CPU-s: " + ", ".join(f"{n} {s:.2f}" for s, n in shown)


def medians(samples: dict[str, list[float]]) -> str:
    return ", ".join(f"{name} {statistics.median(xs):.0f}" for name, xs in samples.items())


async def ours(workload: Workload, folder: Path, rounds: int) -> None:
    async with await ContextForge.open(str(folder / "memory.db")) as cf:
        items = [
            {"content": e.content, "scope": e.scope, "timestamp": e.timestamp}
            for e in workload.entries
        ]
        threads = ThreadCpu() if TASKS.is_dir() else None
        at_start = threads.snapshot() if threads else None
        wall, cpu = time.perf_counter(), cpu_seconds()
        await cf.save_many(items)
        saved_s = time.perf_counter() - wall
        at_saved = threads.snapshot() if threads else None
        # Indexed after the call returns: the first query waits for that.
        first = workload.queries[0]
        await cf.query(first.text, everywhere(first.scope), workload.budget, now=workload.now)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        print(
            f"contextforge bulk save: {wall:.2f} s wall, {cpu:.2f} CPU-s "
            f"({len(items) / wall:,.0f} entries/s; {cpu / 2:.2f} s if both cores did nothing else)"
        )
        if threads and at_start and at_saved:
            at_found = threads.snapshot()
            threads.stop()
            print(f"  the save call, {saved_s:.2f} s: {spent(at_start, at_saved)}")
            print(f"  the first query's wait, {wall - saved_s:.2f} s: {spent(at_saved, at_found)}")
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
