"""A process killed at any instant loses no acknowledged save, and on reopen the
index agrees with the database."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from contextforge import ALL_SCOPES, Config, ContextForge

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from contextforge import Config, ContextForge

    async def main(path, start):
        # Small batches and a short interval: kills land inside index commits too.
        cf = await ContextForge.open(Config(path=path, flush_entries=16, flush_ms=5))
        i = start
        while True:
            entry_id = await cf.save(f"crashprobe{i} payload words", scope=f"s{i % 3}")
            # One write: under PYTHONUNBUFFERED, print() writes each piece
            # separately, and a kill between them cuts the line.
            sys.stdout.write(f"{i} {entry_id}\\n")
            sys.stdout.flush()
            i += 1

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def run_and_kill(path: str, start: int, after: float) -> dict[int, int]:
    """Runs the writer, SIGKILLs it after `after` seconds, returns acked {i: id}."""
    acked: dict[int, int] = {}

    def take(line: str) -> bool:
        """Records an acknowledgement; false for a line the kill cut short."""
        if not line.endswith("\n"):
            return False
        fields = line.split()
        assert len(fields) == 2, f"unexpected output from the writer: {line!r}"
        acked[int(fields[0])] = int(fields[1])
        return True

    with subprocess.Popen(
        [sys.executable, "-c", WRITER, path, str(start)], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        deadline = time.monotonic() + after
        while time.monotonic() < deadline and take(proc.stdout.readline()):
            pass
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # Lines printed before the kill were acknowledged too.
        for line in proc.stdout:
            take(line)
    return acked


async def probe_ids(cf: ContextForge, scope: str) -> list[int]:
    return sorted(h.id for h in await cf.query("payload", scope, 10**9, depth=10_000))


async def test_sigkill_mid_stream_loses_no_acknowledged_save(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    acked: dict[int, int] = {}
    for round_no, after in enumerate([1.5, 0.7, 1.1]):
        acked.update(run_and_kill(path, start=len(acked) * 10 + round_no * 100_000, after=after))
        assert acked, "the writer acknowledged nothing"

        async with await ContextForge.open(path) as cf:
            assert await cf.count() >= len(acked)
            for i, entry_id in list(acked.items())[-50:]:
                hits = await cf.query(f"crashprobe{i}", ALL_SCOPES, 1000)
                assert [h.id for h in hits] == [entry_id]
            seen = {s: await probe_ids(cf, s) for s in ("s0", "s1", "s2")}
        assert set(acked.values()) <= set().union(*map(set, seen.values()))

        # The incrementally maintained index equals one rebuilt from scratch.
        rebuilt_dir = str(tmp_path / f"rebuilt{round_no}")
        async with await ContextForge.open(Config(path=path, index_dir=rebuilt_dir)) as fresh:
            assert {s: await probe_ids(fresh, s) for s in seen} == seen
        shutil.rmtree(rebuilt_dir)
