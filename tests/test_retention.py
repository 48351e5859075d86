"""Expiry, metadata filters and schema migrations."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from contextforge import ContextForge, InvalidInputError, InvalidTypeError

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


async def test_expired_entries_are_never_returned(mem: ContextForge) -> None:
    soon = await mem.save("coupon code for lunch", scope="s", expires_at=NOW + timedelta(hours=1))
    keep = await mem.save("lunch is at noon", scope="s")
    for flushed in (False, True):
        if flushed:
            await mem.flush()
        before = await mem.query("lunch", "s", now=NOW)
        after = await mem.query("lunch", "s", now=NOW + timedelta(hours=2))
        assert {h.id for h in before} == {soon, keep}
        assert [h.id for h in after] == [keep]


async def test_ttl_counts_from_now_and_purge_reclaims(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        gone = await cf.save("short lived", ttl=0.05)
        stays = await cf.save("long lived", ttl=timedelta(days=1))
        assert await cf.get(gone) is not None
        far = datetime.now(timezone.utc) + timedelta(hours=1)
        assert await cf.purge_expired(now=far) == 1
        assert await cf.get(gone) is None and await cf.get(stays) is not None
        assert await cf.count() == 1
        assert await cf.purge_expired(now=far) == 0


async def test_expired_entries_vanish_from_get_list_and_count(mem: ContextForge) -> None:
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    dead = await mem.save("already expired", expires_at=past)
    live = await mem.save("alive")
    assert await mem.get(dead) is None
    assert [h.id async for h in mem.list()] == [live]
    assert await mem.count() == 1
    await mem.save("expired in a scope", scope="s", expires_at=past)
    await mem.save("alive in a scope", scope="s", ttl=3600)
    assert (await mem.count("s"), await mem.count(None), await mem.count()) == (1, 1, 2)


async def test_bad_expiry_is_refused(mem: ContextForge) -> None:
    with pytest.raises(InvalidInputError):
        await mem.save("x", ttl=-5)
    with pytest.raises(InvalidInputError):
        await mem.save("x", ttl=5, expires_at=NOW)
    with pytest.raises(InvalidTypeError):
        await mem.save("x", ttl="1h")  # type: ignore[arg-type]
    assert await mem.count() == 0


async def test_metadata_equality_filters(mem: ContextForge) -> None:
    a = await mem.save("deploy note", metadata={"source": "slack", "priority": 2, "ok": True})
    b = await mem.save("deploy plan", metadata={"source": "email", "priority": 2})
    await mem.save("deploy doc", metadata={"nested": {"source": "slack"}})
    for flushed in (False, True):
        if flushed:
            await mem.flush()
        assert [h.id for h in await mem.query("deploy", metadata={"source": "slack"})] == [a]
        assert {h.id for h in await mem.query("deploy", metadata={"priority": 2})} == {a, b}
        assert await mem.query("deploy", metadata={"priority": 2.5}) == []
        assert [h.id for h in await mem.query("deploy", metadata={"ok": True})] == [a]
    with pytest.raises(InvalidInputError):
        await mem.query("deploy", metadata={"nested": {"source": "slack"}})


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT, kind TEXT NOT NULL, session_id TEXT,
    content TEXT NOT NULL, metadata TEXT, ts INTEGER NOT NULL, tokens INTEGER NOT NULL,
    created_at INTEGER NOT NULL, content_key INTEGER NOT NULL);
CREATE INDEX entries_scope_ts ON entries (scope, ts);
CREATE INDEX entries_ts ON entries (ts, id);
CREATE INDEX entries_dedup ON entries (content_key, scope);
CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry_id INTEGER NOT NULL,
    op INTEGER NOT NULL);
INSERT INTO entries VALUES (1, 'old', 'note', NULL, 'written by schema one', '{"v":1}',
    1700000000000000, 5, 1700000000000000, 42);
INSERT INTO changes (entry_id, op) VALUES (1, 1);
PRAGMA user_version = 1;
"""


async def test_a_version_one_store_opens_through_migrations(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(V1_SCHEMA)
    conn.close()
    async with await ContextForge.open(str(db)) as cf:
        [hit] = await cf.query("schema one", "old")
        assert hit.id == 1 and hit.metadata == {"v": 1}
        await cf.save("expiring", scope="old", ttl=60)
    conn = sqlite3.connect(db)
    [(version,)] = conn.execute("PRAGMA user_version").fetchall()
    columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    conn.close()
    assert version == 9
    assert {"expires_at", "last_returned", "risks", "updated_at", "key", "valid_to"} <= columns


async def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    from contextforge import IncompatibleStoreError

    db = tmp_path / "new.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(IncompatibleStoreError):
        await ContextForge.open(str(db))
