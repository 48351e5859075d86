"""save and query through the public API, on a real libSQL file."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from contextforge import ALL_SCOPES, ClosedError, Config, ContextForge

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


async def test_default_store_is_in_memory() -> None:
    cf = await ContextForge.open()
    assert cf.config.path == ":memory:"
    await cf.save("remember the milk")
    assert [h.content for h in await cf.query("milk")] == ["remember the milk"]
    await cf.close()


async def test_async_with_closes_and_a_closed_store_refuses_work(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        await cf.save("hello there")
    assert cf.closed
    with pytest.raises(ClosedError):
        await cf.save("again")
    with pytest.raises(ClosedError):
        await cf.query("hello")
    with pytest.raises(RuntimeError):  # ClosedError is also a RuntimeError
        await cf.count()
    await cf.close()  # closing twice is harmless


async def test_hit_carries_every_field(cf: ContextForge) -> None:
    meta = {"source": "ci", "n": 3, "ratio": 0.1, "big": 2**70, "nested": {"a": [1, None, True]}}
    entry_id = await cf.save(
        "the deploy failed: missing env var",
        kind="incident",
        scope="project:demo",
        session_id="run-7",
        metadata=meta,
        timestamp=NOW,
    )
    [hit] = await cf.query("deploy failure", "project:demo", 2048, now=NOW)
    assert hit.id == entry_id
    assert hit.content == "the deploy failed: missing env var"
    assert hit.kind == "incident"
    assert hit.scope == "project:demo"
    assert hit.session_id == "run-7"
    assert hit.timestamp == NOW
    assert hit.metadata == meta
    assert list(hit.metadata) == list(meta)
    assert hit.tokens > 0
    assert hit.score is not None and hit.score > 0
    assert "deploy" in repr(hit)


async def test_timestamps_round_trip_exactly(mem: ContextForge) -> None:
    cases = [
        datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=timezone.utc),
        datetime(1969, 7, 20, 20, 17, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1, 1, 1, tzinfo=timezone.utc),
    ]
    for i, ts in enumerate(cases):
        await mem.save(f"moment{i}", timestamp=ts)
        [hit] = await mem.query(f"moment{i}")
        assert hit.timestamp == ts
    await mem.save("unix seconds", timestamp=1_700_000_000.25)
    [hit] = await mem.query("unix seconds")
    assert hit.timestamp == datetime.fromtimestamp(1_700_000_000.25, tz=timezone.utc)


async def test_saves_persist_across_reopen(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        ids = [await cf.save(f"fact number {i} about gardening", scope="u") for i in range(50)]
    async with await ContextForge.open(db_path) as cf:
        assert await cf.count() == 50
        hits = await cf.query("gardening", "u", 100_000)
        assert sorted(h.id for h in hits) == ids


async def test_read_your_writes_across_concurrent_tasks(cf: ContextForge) -> None:
    async def writer(n: int) -> list[int]:
        return [await cf.save(f"token{n}x{i} shared", scope="rw") for i in range(20)]

    async def reader(n: int) -> None:
        for i in range(20):
            entry_id = await cf.save(f"probe{n}y{i}", scope="rw")
            hits = await cf.query(f"probe{n}y{i}", "rw", 100)
            assert [h.id for h in hits] == [entry_id]

    results = await asyncio.gather(*(writer(n) for n in range(4)), *(reader(n) for n in range(4)))
    written = [i for ids in results if ids for i in ids]
    hits = await cf.query("shared", "rw", 1_000_000, depth=10_000)
    assert sorted(h.id for h in hits) == sorted(written)


async def test_budget_packs_greedily_and_skips_what_does_not_fit(mem: ContextForge) -> None:
    long_id = await mem.save("apples " * 400, timestamp=NOW)
    short_ids = [await mem.save(f"apples note {i}", timestamp=NOW) for i in range(3)]
    hits = await mem.query("apples", ALL_SCOPES, 100, now=NOW)
    assert long_id not in [h.id for h in hits]
    assert sorted(h.id for h in hits) == short_ids
    assert sum(h.tokens for h in hits) <= 100
    hits = await mem.query("apples", ALL_SCOPES, 10_000, now=NOW)
    assert hits[0].id == long_id  # the strongest match comes first when it fits


async def test_newer_of_two_equal_matches_ranks_first(mem: ContextForge) -> None:
    # Equally relevant (same length, same matched words), but not near duplicates.
    old = await mem.save("quarterly planning notes from alice", timestamp=NOW - timedelta(days=200))
    new = await mem.save("quarterly planning notes from bruno", timestamp=NOW - timedelta(days=2))
    hits = await mem.query("quarterly planning", now=NOW, explain=True)
    assert [h.id for h in hits] == [new, old]
    relevance = [h.explain["relevance"] for h in hits if h.explain]
    assert relevance[0] == pytest.approx(relevance[1])


async def test_an_identical_copy_does_not_fill_the_budget_twice(mem: ContextForge) -> None:
    first = await mem.save("quarterly planning notes", timestamp=NOW - timedelta(days=200))
    copy = await mem.save("quarterly planning notes", timestamp=NOW, dedupe=False)
    assert first != copy
    assert [h.id for h in await mem.query("quarterly planning", now=NOW)] == [copy]


async def test_save_many_is_one_transaction(cf: ContextForge) -> None:
    ids = await cf.save_many(
        [{"content": f"batch item {i}", "scope": "b", "timestamp": NOW} for i in range(10)]
    )
    assert len(ids) == 10 and ids == sorted(ids)
    assert len(await cf.query("batch item", "b", 10_000)) == 10
    assert await cf.save_many([]) == []


async def test_index_catches_up_when_opened_after_a_crash_without_flush(db_path: str) -> None:
    config = Config(path=db_path, flush_ms=3_600_000)
    cf = await ContextForge.open(config)
    for i in range(30):
        await cf.save(f"unflushed entry {i}", scope="c")
    # Drop the instance without close(): nothing was committed to the index.
    del cf
    async with await ContextForge.open(Config(path=db_path)) as again:
        assert len(await again.query("unflushed", "c", 100_000)) == 30
