"""A libSQL server (sqld) as the shared source of truth, and several processes on
one store: nothing lost, everyone sees everyone's writes, a restart is a typed
retryable error and then recovers, an offline index catches up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from contextforge import Config, ContextForge, RetryableStorageError

from .sqld import Sqld, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from contextforge import ContextForge, RetryableStorageError

    async def retrying(call):
        # Contention and lost connections are retryable; a retried save of the same
        # content in the same scope returns the existing id (duplicates are merged).
        deadline = time.monotonic() + 60
        while True:
            try:
                return await call()
            except RetryableStorageError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def main(path, me, other, n):
        cf = await retrying(lambda: ContextForge.open(path))
        ids = []
        for i in range(n):
            ids.append(await retrying(lambda: cf.save(f"shared note {i} from {me}", scope="team")))
            if i == n // 4:
                print("writing", flush=True)
            if i % 5 == 0:
                await retrying(lambda: cf.query(other, "team", 10**6))
        seen = 0
        deadline = time.monotonic() + 60
        while other and seen < n and time.monotonic() < deadline:
            hits = await retrying(lambda: cf.query(other, "team", 10**9, depth=10_000))
            seen = len(hits)
            await asyncio.sleep(0.02)
        print(json.dumps({"ids": ids, "seen": seen}), flush=True)
        await cf.close()

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    """
)

N = 40


def start_worker(path: str, me: str, other: str, n: int = N) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, path, me, other, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=110)
    assert proc.returncode == 0, err
    parsed: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return parsed


async def two_writers(path: str) -> None:
    procs = [start_worker(path, "alpha", "bravo"), start_worker(path, "bravo", "alpha")]
    results = [result(p) for p in procs]
    ids = [set(r["ids"]) for r in results]  # type: ignore[call-overload]
    assert all(len(s) == N for s in ids)
    assert not ids[0] & ids[1]
    assert [r["seen"] for r in results] == [N, N]
    async with await ContextForge.open(path) as cf:
        assert await cf.count("team") == 2 * N
        for word, mine in (("alpha", ids[0]), ("bravo", ids[1])):
            hits = await cf.query(word, "team", 10**9, depth=10_000)
            assert {h.id for h in hits} == mine


async def test_two_processes_share_a_server(sqld: Sqld) -> None:
    await two_writers(sqld.url)


async def test_two_processes_share_a_local_file(tmp_path: Path) -> None:
    await two_writers(str(tmp_path / "shared.db"))


async def test_updates_and_deletes_propagate(sqld: Sqld) -> None:
    async with (
        await ContextForge.open(sqld.url) as a,
        await ContextForge.open(sqld.url) as b,
    ):
        first = await a.save("the deploy key rotates on mondays", scope="ops")
        second = await a.save("the backup runs on mondays", scope="ops")
        assert {h.id for h in await b.query("mondays", "ops")} == {first, second}

        await a.update(first, content="the deploy key rotates on fridays")
        assert [h.id for h in await b.query("fridays", "ops")] == [first]
        assert [h.id for h in await b.query("mondays", "ops")] == [second]
        got = await b.get(first)
        assert got is not None and "fridays" in got.content

        assert await b.delete(second)
        assert list(await a.query("mondays", "ops")) == []
        assert await a.get(second) is None
        assert await a.count("ops") == 1


async def test_get_many_past_one_statement_reads_the_server(sqld: Sqld) -> None:
    # More ids than one statement takes: several statements in one read
    # transaction on the server's stream.
    async with await ContextForge.open(sqld.url) as cf:
        ids = await cf.save_many(
            [{"content": f"remote item {i}", "scope": "m"} for i in range(300)]
        )
        got = await cf.get_many([*reversed(ids), 10**9])
    assert [h.content if h else None for h in got] == [
        *(f"remote item {i}" for i in reversed(range(300))),
        None,
    ]


async def test_restart_is_retryable_then_recovers(sqld: Sqld) -> None:
    async with await ContextForge.open(sqld.url) as cf:
        before = await cf.save("written before the restart", scope="r")
        sqld.stop()
        for call in (
            lambda: cf.save("written while down", scope="r"),
            lambda: cf.query("written", "r"),
            lambda: cf.count("r"),
        ):
            try:
                await call()
            except RetryableStorageError as err:
                assert isinstance(err, OSError)
            else:
                raise AssertionError("a call to a stopped server succeeded")
        sqld.start()
        after = await cf.save("written after the restart", scope="r")
        assert {h.id for h in await cf.query("written", "r")} == {before, after}
    async with await ContextForge.open(sqld.url) as fresh:
        assert await fresh.count("r") == 2


async def test_restart_mid_run_loses_nothing(sqld: Sqld) -> None:
    proc = start_worker(sqld.url, "charlie", "", n=120)
    assert proc.stdout is not None
    # Restart while the worker is writing; it retries through the outage.
    assert proc.stdout.readline().strip() == "writing"
    sqld.restart()
    out = result(proc)
    ids = set(out["ids"])  # type: ignore[call-overload]
    assert len(ids) == 120
    async with await ContextForge.open(sqld.url) as cf:
        assert await cf.count("team") == 120
        entries = await cf.get_many(sorted(ids))
        assert all(e is not None for e in entries)


async def test_offline_index_catches_up(sqld: Sqld, tmp_path: Path) -> None:
    cache = tmp_path / "index-cache"
    config = Config(path=sqld.url, index_dir=str(cache))
    async with await ContextForge.open(config) as cf:
        kept = await cf.save("kiwi orchard kept", scope="s")
        doomed = await cf.save("kiwi orchard doomed", scope="s")
        changed = await cf.save("kiwi orchard original", scope="s")
    (index,) = cache.iterdir()
    assert index.name.startswith("remote-")

    # Others write while this process is away.
    async with await ContextForge.open(sqld.url) as other:
        newcomer = await other.save("kiwi orchard newcomer", scope="s")
        assert await other.delete(doomed)
        await other.update(changed, content="kiwi orchard revised mango")

    async with await ContextForge.open(config) as cf:
        assert {h.id for h in await cf.query("kiwi", "s")} == {kept, newcomer, changed}
        assert [h.id for h in await cf.query("mango", "s")] == [changed]
        assert list(await cf.query("original doomed", "s")) == []


def test_auth_token_stays_out_of_repr() -> None:
    config = Config(path="libsql://db.example.com", auth_token="secret-token")
    assert "secret-token" not in repr(config)


async def test_vectors_travel_through_the_server(sqld: Sqld, tmp_path: Path) -> None:
    pet, deploy = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    async with (
        await ContextForge.open(sqld.url) as a,
        await ContextForge.open(sqld.url) as b,
    ):
        rex = await a.save("Rex chased the mailman", scope="s", embedding=pet)
        rollout = await a.save("the rollout broke staging", scope="s", embedding=deploy)
        hits = await b.query("no shared words", "s", 1000, embedding=[0.9, 0.1, 0.0])
        assert next(h.id for h in hits) == rex
        # New content without a vector drops the old one, on the other handle too.
        await a.update(rex, content="Rex sleeps all day")
        hits = await b.query("no shared words", "s", 1000, embedding=[0.9, 0.1, 0.0])
        assert [h.id for h in hits] == [rollout]
    # A fresh index (in RAM) loads the server's vectors on open.
    async with await ContextForge.open(sqld.url) as c:
        assert [h.id for h in await c.query("zzz", "s", 1000, embedding=deploy)] == [rollout]
