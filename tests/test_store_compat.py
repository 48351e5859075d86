"""A store written by an older version of the library opens, upgrades in place
and answers as before. ``tests/data/store_v6.db`` was written at schema 6 by
``tests/data/make_store_v6.py``; ``store_v6.json`` is what it holds."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, ContextForge

DATA = Path(__file__).resolve().parent / "data"
MANIFEST: dict[str, Any] = json.loads((DATA / "store_v6.json").read_text())
ENTRIES: list[dict[str, Any]] = MANIFEST["entries"]


@pytest.fixture
def old_store(tmp_path: Path) -> str:
    """A copy of the old file: the test data itself is never opened for writing."""
    path = tmp_path / "memory.db"
    shutil.copyfile(DATA / "store_v6.db", path)
    return str(path)


def test_the_test_data_is_a_schema_6_store() -> None:
    with sqlite3.connect(f"file:{DATA / 'store_v6.db'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 6
        assert db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == len(ENTRIES)
    assert MANIFEST["schema_version"] == 6


async def test_every_entry_reads_back_as_saved(old_store: str) -> None:
    async with await ContextForge.open(old_store) as cf:
        hits = await cf.get_many([e["id"] for e in ENTRIES])
        assert await cf.count(ALL_SCOPES) == len(ENTRIES)
    assert len(hits) == len(ENTRIES)
    for hit, want in zip(hits, ENTRIES, strict=True):
        assert hit is not None, want
        assert hit.id == want["id"]
        assert hit.content == want["content"]
        assert hit.scope == want.get("scope")
        assert hit.kind == want.get("kind", "note")
        assert hit.session_id == want.get("session_id")
        assert hit.metadata == want.get("metadata", {})
        assert hit.timestamp == datetime.fromisoformat(want["timestamp"])
        expires = want.get("expires_at")
        assert hit.expires_at == (None if expires is None else datetime.fromisoformat(expires))


async def test_an_old_store_is_searchable_in_its_scopes_only(old_store: str) -> None:
    async with await ContextForge.open(old_store) as cf:
        hits = await cf.query("deploy env var", "project:demo", 1000)
        elsewhere = await cf.query("deploy env var", "user:alice", 1000)
        lisbon = await cf.query("where did Alice move", "user:alice", 1000)
    assert [h.content for h in hits][:1] == ["Bob's deploy failed: missing env var DATABASE_URL"]
    assert elsewhere == []
    assert lisbon and lisbon[0].content == "Alice moved to Lisbon in March"


async def test_an_old_stores_vectors_still_rank(old_store: str) -> None:
    carol = next(e for e in ENTRIES if e.get("scope") == "user:carol")
    async with await ContextForge.open(old_store) as cf:
        hits = await cf.query("no shared words", "user:carol", 1000, embedding=carol["embedding"])
    assert [h.id for h in hits] == [carol["id"]]


async def test_an_old_store_takes_new_writes_and_keeps_them(old_store: str) -> None:
    async with await ContextForge.open(old_store) as cf:
        new = await cf.save("Alice now lives in Porto", scope="user:alice", embedding=[0.5] * 6)
    async with await ContextForge.open(old_store) as cf:
        assert await cf.count(ALL_SCOPES) == len(ENTRIES) + 1
        hits = await cf.query("Porto", "user:alice", 1000)
    assert [h.id for h in hits] == [new]


async def test_the_upgrade_adds_keys_and_leaves_every_entry_current(old_store: str) -> None:
    """Schema 7 (keys and validity time): old entries hold from their timestamp,
    forever, and the upgraded store takes keyed versions."""
    async with await ContextForge.open(old_store) as cf:
        hits = await cf.get_many([e["id"] for e in ENTRIES])
        for hit in hits:
            assert hit is not None
            assert (hit.key, hit.valid_to, hit.superseded_by) == (None, None, None)
            assert hit.valid_from == hit.timestamp and hit.current
        scope = next(e["scope"] for e in ENTRIES if e.get("scope"))
        first = await cf.save("the build server is ci-1", scope=scope, key="build.server")
        second = await cf.save("the build server is ci-2", scope=scope, key="build.server")
        history = await cf.history("build.server", scope)
        assert [h.id for h in history] == [first, second]
        assert history[0].superseded_by == second
    with sqlite3.connect(old_store) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 9


async def test_one_open_version_per_key_and_scope_holds_after_the_upgrade(old_store: str) -> None:
    """Schema 9 rebuilt the index that allows one open version of a key per
    scope; it holds as before, in a named scope and in the global one."""
    async with await ContextForge.open(old_store) as cf:
        await cf.save("the build server is ci-1", scope="user:alice", key="build.server")
        await cf.save("the build server is ci-1", key="build.server")
    insert = (
        "INSERT INTO entries (scope, kind, content, ts, tokens, created_at, content_key, key)"
        " VALUES (?, 'note', 'the build server is ci-9', 1, 1, 1, 1, 'build.server')"
    )
    db = sqlite3.connect(old_store)
    try:
        for scope in ("user:alice", None):
            with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
                db.execute(insert, (scope,))
        db.execute(insert, ("user:bob",))  # another scope has a version of its own
        [(sql,)] = db.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'entries_key_open'"
        ).fetchall()
        assert "x'00'" in sql and "char(0)" not in sql
    finally:
        db.rollback()
        db.close()
