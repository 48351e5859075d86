"""Issue 19's trust findings that live in the core API: dedupe never loses a
save, ``None`` never widens a query, eviction and counts respect expiry and caps,
and context fences are keyed and checked against what is rendered."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import pytest
from contextforge import (
    ALL_SCOPES,
    Config,
    ContextForge,
    InvalidInputError,
    InvalidTypeError,
    Saved,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NOW = datetime.now(timezone.utc)


# --- dedupe: never match an expired entry, never change a retention ----------


async def test_a_save_identical_to_an_expired_entry_is_stored_and_visible(
    mem: ContextForge,
) -> None:
    old = await mem.save("the door code is 4711", scope="s", expires_at=NOW - timedelta(seconds=1))
    new = await mem.save("the door code is 4711", scope="s")
    assert new != old and new.created
    assert [h.id for h in await mem.query("door code", "s")] == [new]


async def test_a_permanent_save_never_lands_on_an_expiring_entry(mem: ContextForge) -> None:
    soon = await mem.save("ship on friday", scope="s", ttl=3600)
    forever = await mem.save("ship on friday", scope="s")
    assert forever != soon and forever.created
    hit = await mem.get(forever)
    assert hit is not None and hit.expires_at is None
    # once the TTL'd copy is gone, the permanent one is still there
    await mem.purge_expired(now=NOW + timedelta(hours=2))
    assert await mem.get(soon) is None
    assert [h.id for h in await mem.query("ship friday", "s")] == [forever]


async def test_a_ttl_given_to_a_duplicate_of_a_permanent_entry_is_kept(mem: ContextForge) -> None:
    forever = await mem.save("ship on friday", scope="s")
    soon = await mem.save("ship on friday", scope="s", ttl=3600)
    assert soon != forever and soon.created
    hit = await mem.get(soon)
    assert hit is not None and hit.expires_at is not None


async def test_the_same_expiry_is_a_duplicate(mem: ContextForge) -> None:
    at = NOW + timedelta(days=1)
    a = await mem.save("ship on friday", scope="s", expires_at=at)
    b = await mem.save("ship  on friday", scope="s", expires_at=at)
    assert b == a and not b.created


# --- dedupe: safe for conversations (issue 20) --------------------------------


async def test_the_same_turn_in_another_session_is_stored(mem: ContextForge) -> None:
    s1 = await mem.save("ok", kind="message", scope="user:1", session_id="s1")
    s2 = await mem.save("ok", kind="message", scope="user:1", session_id="s2")
    assert s1.created and s2.created and s1 != s2
    again = await mem.save("ok", kind="message", scope="user:1", session_id="s2")
    assert again == s2 and not again.created
    listed = [h.id async for h in mem.list(scope="user:1", session_id="s2")]
    assert listed == [s2]


async def test_other_metadata_or_kind_is_stored_metadata_order_is_not(mem: ContextForge) -> None:
    a = await mem.save("deploy done", scope="s", metadata={"a": 1, "b": 2})
    b = await mem.save("deploy done", scope="s", metadata={"b": 2, "a": 1})
    c = await mem.save("deploy done", scope="s", metadata={"a": 1, "b": 3})
    d = await mem.save("deploy done", scope="s", kind="fact", metadata={"a": 1, "b": 2})
    assert b == a and not b.created
    assert c.created and d.created and len({a, c, d}) == 3
    hit = await mem.get(c)
    assert hit is not None and hit.metadata == {"a": 1, "b": 3}


async def test_save_many_reports_created_and_repeats_within_the_call(mem: ContextForge) -> None:
    first = await mem.save("hello", scope="s", session_id="x")
    saved = await mem.save_many(
        [
            {"content": "hello", "scope": "s", "session_id": "x"},
            {"content": "hello", "scope": "s", "session_id": "y"},
            {"content": "hello", "scope": "s", "session_id": "y"},
            {"content": "hello", "scope": "s", "session_id": "y", "metadata": {"n": 1}},
        ]
    )
    assert [s.created for s in saved] == [False, True, False, True]
    assert saved[0] == first and saved[2] == saved[1]
    assert len({int(s) for s in saved}) == 3


# Batches shorter than a group (64), and what a batch leaves after its groups.
@pytest.mark.parametrize("n", [2, 5, 11, 63])
async def test_a_short_batch_gives_each_item_its_entry(mem: ContextForge, n: int) -> None:
    stored = await mem.save("item 3", scope="s")
    contents = [f"item {i}" for i in range(n - 1)] + ["item 0"]
    saved = await mem.save_many([{"content": c, "scope": "s"} for c in contents])
    assert len(saved) == n
    assert saved[-1] == saved[0] and saved[0].created and not saved[-1].created
    if n > 3:
        assert saved[3] == stored and not saved[3].created
    new = [s for s in saved if s.created]
    assert new == sorted(new) and len(set(new)) == len(new)
    for content, entry_id in zip(contents, saved):
        entry = await mem.get(entry_id)
        assert entry is not None and entry.content == content
    assert await mem.count("s") == len(new) + 1


# A batch big enough for the grouped insert path (64 entries a group).
async def test_grouped_saves_follow_the_same_rule(mem: ContextForge) -> None:
    items = [
        {"content": f"turn {i % 10}", "scope": "s", "session_id": f"s{i % 3}"} for i in range(200)
    ]
    saved = await mem.save_many(items)
    created = {(i % 10, i % 3) for i in range(200)}
    assert sum(s.created for s in saved) == len(created)
    assert await mem.count("s") == len(created)


_entries = st.fixed_dictionaries(
    {
        "content": st.sampled_from(["ok", "OK ", "thanks", "ok!"]),
        "kind": st.sampled_from(["message", "note"]),
        "session_id": st.sampled_from([None, "a", "b"]),
        "metadata": st.sampled_from([None, {}, {"k": 1}, {"k": 2}]),
        "expiry": st.sampled_from([None, "past", "day", "week"]),
    }
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_entries, min_size=1, max_size=12))
async def test_dedupe_never_loses_a_save(items: list[dict[str, object]]) -> None:
    """Whatever is saved, each save's entry is afterwards readable with exactly
    the fields that save asked for (or, for an already-expired save, nothing is
    returned by queries)."""
    expiries = {
        None: None,
        "past": NOW - timedelta(days=1),
        "day": NOW + timedelta(days=1),
        "week": NOW + timedelta(days=7),
    }
    async with await ContextForge.open() as cf:
        for item in items:
            expires = expiries[item["expiry"]]  # type: ignore[index]
            saved = await cf.save(
                str(item["content"]),
                str(item["kind"]),
                scope="s",
                session_id=item["session_id"],  # type: ignore[arg-type]
                metadata=item["metadata"],  # type: ignore[arg-type]
                expires_at=expires,
            )
            hit = await cf.get(saved)
            if item["expiry"] == "past":
                assert hit is None  # expired on arrival: never returned
                continue
            assert hit is not None
            assert (
                " ".join(hit.content.lower().split())
                == " ".join(str(item["content"]).lower().split())
                or hit.content.strip() == str(item["content"]).strip()
            )
            assert hit.kind == item["kind"]
            assert hit.session_id == item["session_id"]
            assert hit.metadata == (item["metadata"] or {})
            assert hit.expires_at == expires


# --- Saved ---------------------------------------------------------------------


def test_saved_is_an_int_with_a_flag() -> None:
    s = Saved(12, True)
    assert s == 12 and isinstance(s, int) and s.id == 12 and type(s.id) is int
    assert f"[mem:{s}]" == "[mem:12]" and str(s) == "12" and f"{s:>4}" == "  12"
    assert repr(s) == "Saved(id=12, created=True)"
    back = pickle.loads(pickle.dumps(s))
    assert back == 12 and back.created is True
    with pytest.raises(AttributeError):
        s.created = False


# --- None means global only; ALL_SCOPES means every scope ----------------------


async def test_none_is_global_only_everywhere(mem: ContextForge) -> None:
    await mem.save_many(
        [
            {"content": "alice likes apples", "scope": "user:alice"},
            {"content": "bob likes apples", "scope": "user:bob"},
            {"content": "everyone likes apples"},
        ]
    )
    scope: str | None = None  # a variable that happens to be None
    assert [h.content for h in await mem.query("apples", scope)] == ["everyone likes apples"]
    assert [h.content for h in await mem.query("apples")] == ["everyone likes apples"]
    block = await mem.context("apples", scope, 512)
    assert "alice" not in block.text and "bob" not in block.text
    assert await mem.count(None) == 1
    assert [h.content async for h in mem.list(scope=None)] == ["everyone likes apples"]
    assert len(await mem.query("apples", ALL_SCOPES)) == 3
    assert await mem.count(ALL_SCOPES) == 3 == await mem.count()
    assert len([h async for h in mem.list(scope=ALL_SCOPES)]) == 3
    assert len(await mem.query("apples", ["user:bob", None])) == 2


async def test_ambiguous_scopes_are_refused(mem: ContextForge) -> None:
    with pytest.raises(InvalidInputError):
        await mem.query("x", [])
    with pytest.raises(InvalidInputError):
        await mem.query("x", ["user:1", ALL_SCOPES])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError):
        await mem.count(["user:1"])  # type: ignore[arg-type]
    assert repr(ALL_SCOPES) == "contextforge.ALL_SCOPES"


# --- counts, caps ----------------------------------------------------------------


async def test_scopes_do_not_count_expired_entries(mem: ContextForge) -> None:
    await mem.save("gone", scope="old", expires_at=NOW - timedelta(seconds=1))
    await mem.save("also gone", scope="mixed", expires_at=NOW - timedelta(seconds=1))
    await mem.save("here", scope="mixed")
    assert await mem.scopes() == {"mixed": 1}


async def test_update_into_a_full_scope_keeps_its_cap(db_path: str) -> None:
    async with await ContextForge.open(Config(path=db_path, max_entries_per_scope=3)) as cf:
        full = await cf.save_many(
            [
                {"content": f"full {i}", "scope": "full", "timestamp": NOW - timedelta(days=10 - i)}
                for i in range(3)
            ]
        )
        mover = await cf.save("moving in", scope="other", timestamp=NOW - timedelta(days=30))
        moved = await cf.update(mover, scope="full")
        assert moved.scope == "full"
        assert await cf.count("full") == 3
        # the oldest of the others made room; the moved entry stays
        assert await cf.get(full[0]) is None
        assert await cf.get(mover) is not None
        assert sorted(h.id for h in await cf.query("full moving", "full")) == sorted(
            [full[1], full[2], mover]
        )


# --- context fences ------------------------------------------------------------


async def test_the_fence_is_64_bits_stable_and_keyed_per_store(tmp_path: object) -> None:
    import re
    from pathlib import Path

    base = Path(str(tmp_path))
    texts = []
    for name in ("a.db", "b.db"):
        async with await ContextForge.open(str(base / name)) as cf:
            await cf.save("the office wifi password rotates monthly", scope="s")
            first = (await cf.context("wifi", "s", 512)).text
            second = (await cf.context("wifi", "s", 512)).text
            assert first == second  # the same hits give the same block
            texts.append(first)
        async with await ContextForge.open(str(base / name)) as cf:
            assert (await cf.context("wifi", "s", 512)).text == texts[-1]  # and after reopening
    nonces = [re.match(r"<data(\d{20})>\n", t) for t in texts]
    assert all(n is not None for n in nonces)
    a, b = (n.group(1) for n in nonces if n is not None)
    assert len(a) == len(b) == 20
    assert a != b  # same hits, another store: another key


# --- read-only stores, missing directories --------------------------------------


async def test_a_read_only_store_answers_queries_and_refuses_writes(tmp_path: object) -> None:
    import os
    from pathlib import Path

    from contextforge import StorageError

    db = str(Path(str(tmp_path)) / "memory.db")
    async with await ContextForge.open(db) as cf:
        kept = await cf.save("the backup runs at night", scope="ops")
    before = Path(db).read_bytes()
    index_files = sorted(p.name for p in Path(f"{db}.index").iterdir())
    async with await ContextForge.open(Config(path=db, read_only=True)) as ro:
        assert [h.id for h in await ro.query("backup", "ops")] == [kept]
        assert (await ro.context("backup", "ops", 512)).hits[0].id == kept
        assert await ro.count() == 1 and await ro.scopes() == {"ops": 1}
        with pytest.raises(StorageError, match="read-only") as info:
            await ro.save("a new entry", scope="ops")
        assert not info.value.__class__.__name__.startswith("Retryable")
        with pytest.raises(StorageError, match="read-only"):
            await ro.delete(kept)
        with pytest.raises(StorageError, match="read-only"):
            await ro.update(kept, content="changed")
    assert Path(db).read_bytes() == before
    assert sorted(p.name for p in Path(f"{db}.index").iterdir()) == index_files
    assert os.path.exists(db)


async def test_read_only_needs_an_existing_file(tmp_path: object) -> None:
    from pathlib import Path

    from contextforge import StorageError

    missing = str(Path(str(tmp_path)) / "none.db")
    with pytest.raises(StorageError, match="does not exist"):
        await ContextForge.open(Config(path=missing, read_only=True))
    assert not Path(missing).exists()


async def test_a_missing_directory_is_created_and_a_directory_is_refused(tmp_path: object) -> None:
    from pathlib import Path

    from contextforge import RetryableStorageError, StorageError

    nested = Path(str(tmp_path)) / "a" / "b" / "memory.db"
    async with await ContextForge.open(str(nested)) as cf:
        await cf.save("hello")
    assert nested.is_file()
    with pytest.raises(StorageError, match="is a directory") as info:
        await ContextForge.open(str(tmp_path))
    assert not isinstance(info.value, RetryableStorageError)


async def test_tools_honour_the_store_s_pii_setting(tmp_path: object) -> None:
    """An application that always scrubs PII records it in the store; a tool that
    opens the store without a PII setting of its own (``scrub_pii=None``, the
    default: the CLI and the MCP server without ``--scrub-pii``) keeps to it."""
    from pathlib import Path

    db = str(Path(str(tmp_path)) / "m.db")
    async with ContextForge.open(Config(path=db, scrub_pii=True)) as app:
        await app.save("first contact: ann@example.com", scope="s")
    async with ContextForge.open(db) as tool:  # no setting of its own: no warning either
        saved = await tool.save("write to bob@example.com", scope="s")
        hit = await tool.get(saved)
        assert hit is not None and "bob@example.com" not in hit.content
    fresh = str(Path(str(tmp_path)) / "fresh.db")
    async with ContextForge.open(fresh) as cf:  # a new store: PII is not scrubbed
        saved = await cf.save("write to bob@example.com")
        hit = await cf.get(saved)
        assert hit is not None and "bob@example.com" in hit.content
