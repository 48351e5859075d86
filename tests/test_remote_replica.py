"""Embedded replicas (`Config(path=URL, replica=FILE)`) against a real sqld: reads
come from the local replica (they work while the server is down), writes go to
the server and the writer reads them at once, other processes' writes arrive
on `sync()` or every `sync_interval`, one process per replica file, and a
SIGKILL in the middle of a sync loses nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from contextforge import (
    ALL_SCOPES,
    Config,
    ContextForge,
    InvalidInputError,
    RetryableStorageError,
    StorageError,
)

from .sqld import Sqld, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)


async def contents(cf: ContextForge, q: str, scope: str = "s") -> list[str]:
    return sorted(h.content for h in await cf.query(q, scope, 10**9, depth=10_000))


async def test_reads_are_local_writes_reach_the_server(sqld: Sqld, tmp_path: Path) -> None:
    replica = tmp_path / "replica.db"
    async with (
        await ContextForge.open(Config(path=sqld.url, replica=str(replica))) as local,
        await ContextForge.open(sqld.url) as other,
    ):
        saved = await local.save("the deploy failed: missing env var", scope="s")
        # Its own write, read at once.
        assert await contents(local, "deploy") == ["the deploy failed: missing env var"]
        got = await local.get(saved)
        assert got is not None and got.scope == "s"
        # The write is on the server.
        assert await contents(other, "deploy") == ["the deploy failed: missing env var"]
        # Another process's write arrives with the next sync.
        await other.save("the deploy was rolled back", scope="s")
        assert await contents(local, "deploy") == ["the deploy failed: missing env var"]
        assert await local.sync() is not None
        assert await contents(local, "deploy") == [
            "the deploy failed: missing env var",
            "the deploy was rolled back",
        ]
        # Deletions and updates travel the same way.
        await other.delete(saved)
        await local.sync()
        assert await contents(local, "deploy") == ["the deploy was rolled back"]
        assert await local.get(saved) is None
    assert replica.exists()


async def test_kept_entries_follow_every_change_on_a_replica(sqld: Sqld, tmp_path: Path) -> None:
    """A replica keeps the entries its queries packed beside the index (its
    connections keep no prepared statement, so reading them again each query
    was as dear as the rest of the query). Every change after that, by this
    handle or by another process once synced, is answered as it now is."""
    config = Config(path=sqld.url, replica=str(tmp_path / "replica.db"))
    async with await ContextForge.open(config) as local, await ContextForge.open(sqld.url) as other:
        ids = [await local.save(f"rollout step {i} for the gateway", scope="ops") for i in range(6)]
        for _ in range(2):  # the second answer comes from the kept entries
            assert len(await local.query("gateway rollout", "ops", 4096)) == 6
        # This handle's own changes, read at once.
        await local.update(ids[0], content="rollout step 0 for the gateway, revised")
        await local.update(ids[1], metadata={"stage": "canary"})
        by_id = {h.id: h for h in await local.query("gateway rollout", "ops", 4096)}
        assert by_id[ids[0]].content == "rollout step 0 for the gateway, revised"
        assert by_id[ids[1]].metadata == {"stage": "canary"}
        # Another process's, once synced: not before.
        await other.update(ids[2], content="rollout step 2 for the gateway, by another")
        await other.update(ids[3], scope="elsewhere")
        await other.delete(ids[4])
        stale = {h.id: h.content for h in await local.query("gateway rollout", "ops", 4096)}
        assert stale[ids[2]] == "rollout step 2 for the gateway" and ids[4] in stale
        await local.sync()
        by_id = {h.id: h for h in await local.query("gateway rollout", "ops", 4096)}
        assert by_id[ids[2]].content == "rollout step 2 for the gateway, by another"
        assert ids[3] not in by_id and ids[4] not in by_id and len(by_id) == 4
        moved = await local.query("gateway rollout", "elsewhere", 4096)
        assert [(h.id, h.scope) for h in moved] == [(ids[3], "elsewhere")]
        await local.delete(ids[5])
        assert ids[5] not in {h.id for h in await local.query("gateway rollout", "ops", 4096)}


async def test_reads_work_while_the_server_is_down(sqld: Sqld, tmp_path: Path) -> None:
    config = Config(path=sqld.url, replica=str(tmp_path / "replica.db"))
    async with await ContextForge.open(config) as cf:
        await cf.save_many([{"content": f"note {i} about lunch", "scope": "s"} for i in range(20)])
        assert len(await contents(cf, "lunch")) == 20
        sqld.stop()
        try:
            assert len(await contents(cf, "lunch")) == 20
            assert await cf.count(scope="s") == 20
            with pytest.raises(RetryableStorageError):
                await cf.save("written while the server is down", scope="s")
        finally:
            sqld.start()
        saved = await cf.save("written after the restart", scope="s")
        assert (await cf.get(saved)).content == "written after the restart"  # type: ignore[union-attr]


async def test_background_sync_bounds_staleness(sqld: Sqld, tmp_path: Path) -> None:
    config = Config(path=sqld.url, replica=str(tmp_path / "replica.db"), sync_interval=0.2)
    async with await ContextForge.open(config) as local, await ContextForge.open(sqld.url) as other:
        await other.save("arrives by itself", scope="s")
        deadline = time.monotonic() + 30
        while await contents(local, "arrives") == [] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await contents(local, "arrives") == ["arrives by itself"]


async def test_one_process_per_replica_file(sqld: Sqld, tmp_path: Path) -> None:
    config = Config(path=sqld.url, replica=str(tmp_path / "replica.db"))
    async with await ContextForge.open(config) as first:
        await first.save("kept", scope="s")
        with pytest.raises(StorageError, match="in use by another process"):
            await ContextForge.open(config)
    async with await ContextForge.open(config) as again:
        assert await contents(again, "kept") == ["kept"]


async def test_bad_replica_settings_are_refused(sqld: Sqld, tmp_path: Path) -> None:
    for bad in (
        Config(path=str(tmp_path / "file.db"), replica=str(tmp_path / "r.db")),
        Config(path=sqld.url, replica=sqld.url),
        Config(path=sqld.url, sync_interval=1.0),
        Config(path=sqld.url, replica=str(tmp_path / "r.db"), sync_interval=0.0),
        Config(path=sqld.url, replica=str(tmp_path / "r.db"), sync_interval=-1.0),
    ):
        with pytest.raises(InvalidInputError):
            await ContextForge.open(bad)
    assert not (tmp_path / "r.db").exists()


SYNCER = textwrap.dedent(
    """
    import asyncio, sys
    from contextforge import Config, ContextForge

    async def main():
        cf = await ContextForge.open(Config(path=sys.argv[1], replica=sys.argv[2]))
        print("opened", flush=True)
        while True:
            await cf.sync()

    asyncio.run(main())
    """
)


async def test_a_sigkill_during_a_sync_loses_nothing(sqld: Sqld, tmp_path: Path) -> None:
    replica = tmp_path / "replica.db"
    async with await ContextForge.open(sqld.url) as writer:
        await writer.save_many(
            [{"content": f"first batch {i} " + "x" * 400, "scope": "s"} for i in range(2000)]
        )
        for attempt in range(3):
            # A process syncing the replica while the server takes a large batch
            # is killed mid-way, at a different moment each time.
            child = subprocess.Popen(  # noqa: ASYNC220 (killed below, never awaited)
                [sys.executable, "-c", SYNCER, sqld.url, str(replica)],
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            assert child.stdout is not None and child.stdout.readline().strip() == "opened"
            await writer.save_many(
                [
                    {"content": f"batch a{attempt}n{i} " + "y" * 400, "scope": "s"}
                    for i in range(2000)
                ]
            )
            await asyncio.sleep(0.05 * attempt)
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
    async with await ContextForge.open(Config(path=sqld.url, replica=str(replica))) as cf:
        await cf.sync()
        assert await cf.count(scope=ALL_SCOPES) == 8000
        assert len(await contents(cf, "batch")) == 8000
