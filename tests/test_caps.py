"""Per-scope caps with eviction, and explain=True."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from contextforge import Config, ContextForge, Hits

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


async def test_oldest_entries_are_evicted_within_their_scope_only() -> None:
    async with await ContextForge.open(Config(max_entries_per_scope=3)) as cf:
        other = await cf.save_many(
            [
                {"content": f"other {i}", "scope": "b", "timestamp": NOW - timedelta(days=90)}
                for i in range(3)
            ]
        )
        ids = [
            await cf.save(f"fact {i}", scope="a", timestamp=NOW - timedelta(days=10 - i))
            for i in range(5)
        ]
        assert await cf.count("a") == 3
        assert [h.id async for h in cf.list(scope="a")] == ids[:1:-1]
        assert [h.id async for h in cf.list(scope="b")] == other[::-1]  # untouched
        assert await cf.query("fact", "a") and all(
            h.id in ids[2:] for h in await cf.query("fact", "a")
        )
        # An old entry saved into a full scope is itself the oldest: it goes.
        await cf.save("ancient fact", scope="a", timestamp=NOW - timedelta(days=400))
        assert await cf.count("a") == 3
        assert await cf.query("ancient", "a") == []


async def test_least_recently_returned_is_tracked_for_real(db_path: str) -> None:
    config = Config(path=db_path, max_entries_per_scope=3, eviction="least_recently_returned")
    async with await ContextForge.open(config) as cf:
        a, b, c = [await cf.save(f"{w} note", scope="s") for w in ("apple", "banana", "cherry")]
        assert [h.id for h in await cf.query("apple", "s")] == [a]  # a was returned: keep it
        await cf.save("durian note", scope="s")  # evicts b, the least recently returned
        assert await cf.get(b) is None
        assert await cf.get(a) is not None and await cf.get(c) is not None
    # The returned-at times survive a restart.
    async with await ContextForge.open(config) as cf:
        assert [h.id for h in await cf.query("cherry", "s")] == [c]
        await cf.save("elderberry note", scope="s")
        # apple was returned before durian was saved; cherry was returned just now.
        remaining = {h.content async for h in cf.list(scope="s")}
        assert remaining == {"cherry note", "durian note", "elderberry note"}


async def test_explain_reports_score_parts_and_timings(mem: ContextForge) -> None:
    await mem.save("rust tantivy search engine", timestamp=NOW)
    await mem.save("rust tantivy", timestamp=NOW - timedelta(days=300), dedupe=False)
    hits = await mem.query("rust tantivy search", now=NOW, explain=True)
    assert isinstance(hits, Hits) and isinstance(hits, list)
    assert hits.timings is not None
    assert set(hits.timings) == {"sync_us", "search_us", "pack_us", "total_us"}
    assert hits.timings["total_us"] >= hits.timings["search_us"] >= 0
    for rank, hit in enumerate(hits):
        parts = hit.explain
        assert parts is not None and parts["rank"] == rank
        assert abs(parts["relevance"] * parts["recency"] - parts["final"]) < 1e-3 * parts["final"]
        assert 1.0 <= parts["recency"] <= 1.2 + 1e-6
    assert hits[0].explain is not None and hits[1].explain is not None
    assert hits[0].explain["recency"] > hits[1].explain["recency"]
    plain = await mem.query("rust", now=NOW)
    assert plain.timings is None and all(h.explain is None for h in plain)
