"""The memory API beyond save and query: read, update, delete, list, filters."""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import datetime, timedelta, timezone

import pytest
from contextforge import ALL_SCOPES, Config, ContextForge, InvalidInputError, NotFound
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


async def test_get_and_get_many_keep_order(mem: ContextForge) -> None:
    a = await mem.save("first", metadata={"k": 1})
    b = await mem.save("second")
    got = await mem.get_many([b, 999, a])
    assert [h.id if h else None for h in got] == [b, None, a]
    hit = await mem.get(a)
    assert hit is not None and hit.metadata == {"k": 1}
    assert await mem.get(12345) is None


async def test_update_reindexes_and_keeps_what_is_not_given(cf: ContextForge) -> None:
    entry_id = await cf.save("the cache uses redis", scope="s", metadata={"v": 1})
    updated = await cf.update(entry_id, content="the cache uses memcached")
    assert updated.content == "the cache uses memcached"
    assert updated.scope == "s" and updated.metadata == {"v": 1}
    assert await cf.query("redis", "s") == []
    assert [h.id for h in await cf.query("memcached", "s")] == [entry_id]
    moved = await cf.update(entry_id, scope="t", metadata=None, kind="fact")
    assert (moved.scope, moved.kind, moved.metadata) == ("t", "fact", {})
    assert await cf.query("memcached", "s") == []
    assert [h.id for h in await cf.query("memcached", "t")] == [entry_id]
    with pytest.raises(NotFound) as info:
        await cf.update(999, content="x")
    assert isinstance(info.value, KeyError)
    with pytest.raises(InvalidInputError):
        await cf.update(entry_id, content="   ")


async def test_delete_is_invisible_to_the_next_query_and_after_restart(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        keep = await cf.save("rotate keys monthly", scope="s")
        gone = await cf.save("rotate keys weekly", scope="s")
        await cf.flush()
        assert await cf.delete(gone) is True
        assert await cf.delete(gone) is False
        assert [h.id for h in await cf.query("rotate keys", "s")] == [keep]
        assert await cf.delete_many([keep, 77]) == [True, False]
        assert await cf.query("rotate", "s") == []
    async with await ContextForge.open(db_path) as cf:
        assert await cf.query("rotate", "s") == []
        assert await cf.count() == 0


async def test_clear_scope_is_exact_and_clear_all_needs_confirmation(mem: ContextForge) -> None:
    await mem.save("a note", scope="user:1")
    await mem.save("a note", scope="user:10")
    await mem.save("a note", scope="user:1:thread")
    await mem.save("a global note")
    assert await mem.clear_scope("user:1") == 1
    assert await mem.scopes() == {None: 1, "user:10": 1, "user:1:thread": 1}
    with pytest.raises(InvalidInputError):
        await mem.clear_scope("")
    with pytest.raises(TypeError):
        await mem.clear_scope(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await mem.clear_all(confirm=False)
    assert await mem.count() == 3
    assert await mem.clear_all(confirm=True) == 3
    assert await mem.count() == 0


async def test_count_and_scopes(mem: ContextForge) -> None:
    for i in range(3):
        await mem.save(f"a{i}", scope="a")
    await mem.save("g")
    assert await mem.count() == 4
    assert await mem.count("a") == 3
    assert await mem.count(None) == 1
    assert await mem.count("zzz") == 0
    assert await mem.scopes() == {"a": 3, None: 1}


async def test_duplicates_return_the_existing_id(mem: ContextForge) -> None:
    first = await mem.save("Deploy  failed\n", scope="s")
    assert await mem.save(" Deploy failed", scope="s") == first
    assert await mem.save("Deploy failed", scope="other") != first
    assert await mem.save("Deploy failed", scope="s", dedupe=False) != first
    assert await mem.save_many([{"content": "x y"}, {"content": "x  y"}]) == [first + 3] * 2


async def test_list_pages_newest_first_with_filters(mem: ContextForge) -> None:
    ids = await mem.save_many(
        [
            {
                "content": f"entry {i}",
                "scope": "s" if i % 2 else None,
                "kind": "fact" if i % 3 == 0 else "note",
                "timestamp": NOW + timedelta(minutes=i),
            }
            for i in range(30)
        ]
    )
    listed = [h.id async for h in mem.list(page_size=7)]
    assert listed == ids[::-1]
    scoped = [h.id async for h in mem.list(scope="s", kind="fact", page_size=2)]
    assert scoped == [ids[i] for i in reversed(range(30)) if i % 2 and i % 3 == 0]
    glob = [h.id async for h in mem.list(scope=None, since=NOW + timedelta(minutes=20))]
    assert glob == [ids[i] for i in reversed(range(20, 30)) if i % 2 == 0]


async def test_query_filters(mem: ContextForge) -> None:
    a = await mem.save("shared words", kind="fact", session_id="x", timestamp=NOW)
    b = await mem.save(
        "shared words", kind="note", session_id="y", timestamp=NOW - timedelta(days=3), dedupe=False
    )
    assert [h.id for h in await mem.query("shared", kinds=["fact"])] == [a]
    assert [h.id for h in await mem.query("shared", session_id="y")] == [b]
    assert [h.id for h in await mem.query("shared", until=NOW - timedelta(days=1))] == [b]
    assert [h.id for h in await mem.query("shared", since=NOW)] == [a]


ITEMS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]),
        st.sampled_from(["fact", "note"]),
        st.lists(st.sampled_from(["red", "green", "blue", "teal"]), min_size=1, max_size=3),
        st.integers(0, 10),
    ),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=ITEMS, scope=st.sampled_from(["a", "b"]), kind=st.sampled_from(["fact", "note"]))
async def test_a_filtered_query_equals_the_query_on_a_filtered_store(
    items: list[tuple[str | None, str, list[str], int]], scope: str, kind: str
) -> None:
    def to_save(it: tuple[str | None, str, list[str], int]) -> dict[str, object]:
        s, k, words, day = it
        return {
            "content": " ".join(words),
            "scope": s,
            "kind": k,
            "timestamp": NOW - timedelta(days=day),
            "dedupe": False,
        }

    # The relevance floor off: its relative part compares with the best hit,
    # whose BM25 statistics are the whole store's.
    unfloored = Config(min_relative_relevance=0.0)
    async with (
        await ContextForge.open(unfloored) as full,
        await ContextForge.open(unfloored) as filtered,
    ):
        await full.save_many([to_save(it) for it in items])
        matching = [it for it in items if it[0] == scope and it[1] == kind]
        if matching:
            await filtered.save_many([to_save(it) for it in matching])
        a = await full.query("red blue teal", scope, 10**6, now=NOW, kinds=[kind])
        b = await filtered.query("red blue teal", scope, 10**6, now=NOW)
        # Nothing outside the filter comes back.
        assert all(h.scope == scope and h.kind == kind for h in a)
        # The same hits, up to near-duplicates: of two entries with the same
        # words ("blue teal", "blue blue teal") a query keeps the better scored,
        # and BM25's term statistics (so scores and order) come from the whole
        # store. So the same sets of words come back.
        assert {frozenset(h.content.split()) for h in a} == {
            frozenset(h.content.split()) for h in b
        }


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=ITEMS, victim=st.sampled_from(["a", "b"]))
async def test_deleting_in_one_scope_never_touches_another(
    items: list[tuple[str | None, str, list[str], int]], victim: str
) -> None:
    async with await ContextForge.open() as cf:
        ids = await cf.save_many(
            [{"content": " ".join(w), "scope": s, "dedupe": False} for s, _, w, _ in items]
        )
        before = {s: await cf.count(s) for s in ("a", "b", None)}
        victims = [i for i, it in zip(ids, items) if it[0] == victim]
        await cf.delete_many(victims)
        await cf.clear_scope(victim)
        after = {s: await cf.count(s) for s in ("a", "b", None)}
        assert after[victim] == 0
        assert {s: n for s, n in after.items() if s != victim} == {
            s: n for s, n in before.items() if s != victim
        }
        survivors = {h.id for h in await cf.query("red green blue teal", ALL_SCOPES, 10**6)}
        assert not survivors & set(victims)


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow
async def test_listing_100k_entries_pages_in_bounded_memory(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        for start in range(0, 100_000, 10_000):
            await cf.save_many(
                [
                    {
                        "content": f"entry {i} " + "padding words " * 20,
                        "dedupe": False,
                        "timestamp": NOW + timedelta(seconds=i),
                    }
                    for i in range(start, start + 10_000)
                ]
            )
        # Settle the index's background work first: its merges are not the listing's.
        await cf.flush()
        before = rss_kib()
        seen = 0
        last = None
        async for entry in cf.list(page_size=500):
            assert last is None or entry.timestamp <= last
            last = entry.timestamp
            seen += 1
        grown_mib = (rss_kib() - before) / 1024
    assert seen == 100_000
    # The entries alone are about 30 MB of text: holding them all would show.
    assert grown_mib < 20, f"listing grew RSS by {grown_mib:.1f} MiB"


async def _save_and_query(path: str, text: str) -> list[str]:
    async with await ContextForge.open(path) as cf:
        await cf.save(text, scope="s")
        return [h.content for h in await cf.query("forked", "s")]


def _in_forked_child(path: str, out: multiprocessing.Queue[list[str]]) -> None:
    out.put(asyncio.run(_save_and_query(path, "written by the forked child")))


def test_a_forked_child_opens_and_uses_a_store(db_path: str) -> None:
    # The parent has used its worker threads before forking; the child has none
    # of them and must start its own rather than wait on the parent's.
    assert asyncio.run(_save_and_query(db_path, "written before forked")) == [
        "written before forked"
    ]
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[list[str]] = ctx.Queue()
    child = ctx.Process(target=_in_forked_child, args=(db_path, out))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert sorted(out.get(timeout=5)) == ["written before forked", "written by the forked child"]


def test_a_subclass_of_saved_keeps_its_class_and_created() -> None:
    from contextforge import Saved

    class Mine(Saved):
        pass

    kept, found = Mine(5, True), Mine(6, False)
    assert type(kept) is Mine and type(found) is Mine
    assert kept.created and not found.created
    assert (int(kept), int(found)) == (5, 6)
    assert not Saved(7, False).created and isinstance(Saved(7, False), Saved)
