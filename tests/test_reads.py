"""The read audit (``Config(audit_reads=True)``): what each query and context
returned, when, in which scopes, for a keyed hash of the text."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from contextforge import ALL_SCOPES, Config, ContextForge, ContextForgeSync, InvalidInputError, Read


async def test_off_by_default(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        await cf.save("deploy notes", scope="u")
        await cf.query("deploy", "u")
        assert [r async for r in cf.reads()] == []


async def test_every_query_and_context_is_recorded(tmp_path: Path) -> None:
    started = datetime.now(timezone.utc) - timedelta(seconds=1)
    path = str(tmp_path / "m.db")
    async with await ContextForge.open(Config(path=path, audit_reads=True)) as cf:
        a = await cf.save("deploy notes for friday", scope="u")
        b = await cf.save("deploy checklist", scope="u")
        await cf.save("someone else's deploy", scope="v")
        hits = await cf.query("deploy", "u")
        await cf.context("deploy checklist", ["u", None], 512)
        await cf.query("nothing matches this", ALL_SCOPES)
        again = await cf.query("deploy", "u")
        reads = [r async for r in cf.reads()]
    assert all(isinstance(r, Read) for r in reads)
    assert reads[0].ids == tuple(h.id for h in hits)
    assert set(reads[0].ids) == {a, b}
    assert [r.scopes for r in reads] == [("u",), ("u", None), None, ("u",)]
    assert reads[2].ids == ()
    assert reads[0].query_hash == reads[3].query_hash != reads[1].query_hash
    assert all(r.query is None and r.at >= started for r in reads)
    assert [r.seq for r in reads] == sorted(r.seq for r in reads)
    assert [h.id for h in again] == list(reads[3].ids)
    # Kept in the database, without the text: nothing but the hash says what was asked.
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT query, query_hash FROM reads").fetchall()
    assert len(rows) == 4 and all(q is None and len(h) == 16 for q, h in rows)


def test_text_on_request_resume_and_retention(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    config = Config(path=path, audit_reads=True, audit_query_text=True, audit_retention_days=1)
    with ContextForgeSync.open(config) as cf:
        cf.save("alpha beta", scope="u")
        for n in range(70):  # past one batch: written while querying
            cf.query(f"alpha {n}", "u")
        first = list(cf.reads(page_size=16))
        assert [r.query for r in first[:2]] == ["alpha 0", "alpha 1"] and len(first) == 70
        assert list(cf.reads(since=first[59].seq)) == first[60:]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE reads SET at = at - 2 * 86400000000 WHERE seq <= 10")
    with ContextForgeSync.open(config) as cf:
        cf.query("alpha", "u")
        assert len(list(cf.reads())) == 61  # ten older than a day dropped, one added
    with pytest.raises(InvalidInputError):
        ContextForgeSync.open(Config(path=path, audit_retention_days=0))
