"""Issue 20's API rough edges: what an agent builder meets in the first hour."""

from __future__ import annotations

import copy
import json
import pickle
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from contextforge import Config, ContextForge, Hit, InvalidInputError, StorageError

NOW = datetime.now(timezone.utc)
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


# --- Hit is a value ----------------------------------------------------------


async def test_hits_are_values(mem: ContextForge) -> None:
    saved = await mem.save("the deploy failed", scope="s", metadata={"b": 1, "a": [1, 2]})
    got = await mem.get(saved)
    again = await mem.get(saved)
    assert got is not None and again is not None
    assert got == again and hash(got) == hash(again) and got is not again
    assert got.score is None  # a lookup has no score
    [hit] = await mem.query("deploy", "s")
    assert hit.score is not None and hit.score > 0 and hit != got
    assert pickle.loads(pickle.dumps(hit)) == hit
    assert copy.copy(got) == got and copy.deepcopy(got) == got
    d = got.to_dict()
    assert d["id"] == saved and d["metadata"] == {"b": 1, "a": [1, 2]} and d["score"] is None
    assert list(d) == [
        "id",
        "content",
        "kind",
        "scope",
        "session_id",
        "timestamp",
        "tokens",
        "metadata",
        "score",
        "expires_at",
        "updated_at",
        "risks",
        "key",
        "valid_from",
        "valid_to",
        "superseded_by",
    ]
    assert json.loads(json.dumps(d, default=str))["content"] == "the deploy failed"
    assert (
        repr(got)
        == f"Hit(id={saved}, score=None, scope='s', kind='note', content='the deploy failed')"
    )
    listed = [h async for h in mem.list(scope="s")]
    assert listed[0].score is None


def test_a_hit_can_be_built_by_hand() -> None:
    ts = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    fake = Hit(7, "a fact", "fact", scope="user:1", timestamp=ts, metadata={"k": "v"}, score=0.5)
    assert (fake.id, fake.kind, fake.scope, fake.timestamp, fake.metadata) == (
        7,
        "fact",
        "user:1",
        ts,
        {"k": "v"},
    )
    assert fake.score == 0.5 and fake.expires_at is None
    assert pickle.loads(pickle.dumps(fake)) == fake
    with pytest.raises(InvalidInputError):
        Hit(1, "x", timestamp=datetime(2026, 1, 1))  # naive


# --- update: expiry, updated_at, scrub -----------------------------------------


async def test_update_sets_and_clears_expiry_and_records_when(mem: ContextForge) -> None:
    saved = await mem.save("rotating note", scope="s")
    first = await mem.get(saved)
    assert first is not None and first.updated_at is None
    before = datetime.now(timezone.utc)
    hit = await mem.update(saved, ttl=3600)
    after = datetime.now(timezone.utc)
    assert hit.expires_at is not None and hit.updated_at is not None
    assert before + timedelta(hours=1) <= hit.expires_at <= after + timedelta(hours=1)
    assert before <= hit.updated_at <= after
    permanent = await mem.update(saved, expires_at=None)
    assert permanent.expires_at is None
    gone = await mem.update(saved, expires_at=NOW - timedelta(seconds=1))
    assert gone.expires_at is not None
    assert await mem.get(saved) is None and await mem.query("rotating", "s") == []
    with pytest.raises(InvalidInputError):
        await mem.update(saved, ttl=5, expires_at=NOW)


async def test_scrub_false_stores_values_as_given(mem: ContextForge) -> None:
    scrubbed = await mem.save(f"token {SECRET}", scope="s", metadata={"arg": SECRET})
    kept = await mem.save(f"token {SECRET}", scope="s", metadata={"arg": SECRET}, scrub=False)
    a, b = await mem.get(scrubbed), await mem.get(kept)
    assert a is not None and SECRET not in a.content and SECRET not in json.dumps(a.metadata)
    assert b is not None and b.content == f"token {SECRET}" and b.metadata == {"arg": SECRET}
    updated = await mem.update(scrubbed, content=f"now {SECRET}", scrub=False)
    assert updated.content == f"now {SECRET}"
    again = await mem.update(scrubbed, content=f"now {SECRET}")
    assert SECRET not in again.content


# --- explicit ids (restoring a backup) ----------------------------------------


async def test_save_many_keeps_given_ids(db_path: str) -> None:
    async with ContextForge.open(db_path) as cf:
        saved = await cf.save_many(
            [
                {"id": 5, "content": "five", "scope": "s"},
                {"id": 2, "content": "two", "scope": "s"},
                {"id": 9, "content": "five", "scope": "s"},  # never deduplicated
            ]
        )
        assert [int(s) for s in saved] == [5, 2, 9] and all(s.created for s in saved)
        fresh = await cf.save("after the restore", scope="s")
        assert fresh == 10  # ids go on after the highest
        with pytest.raises(InvalidInputError, match="taken"):
            await cf.save_many([{"id": 11, "content": "eleven"}, {"id": 2, "content": "again"}])
        assert await cf.get(11) is None  # all or nothing
        with pytest.raises(InvalidInputError):
            await cf.save_many([{"id": 0, "content": "zero"}])
        assert [h.id if h else None for h in await cf.get_many([2, 5, 9])] == [2, 5, 9]
        assert sorted(h.id for h in await cf.query("two", "s")) == [2]


# --- opening --------------------------------------------------------------------


async def test_open_is_an_async_context_manager_without_await(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    async with ContextForge.open(db) as cf:
        await cf.save("hello")
        assert not cf.closed
    assert cf.closed
    async with await ContextForge.open(db) as again:  # the old spelling still works
        assert await again.count() == 1


# --- ordering ---------------------------------------------------------------------


async def test_a_batch_shares_a_timestamp_and_lists_newest_id_first(mem: ContextForge) -> None:
    saved = await mem.save_many([{"content": f"item {i}", "scope": "s"} for i in range(5)])
    assert [int(s) for s in saved] == sorted(int(s) for s in saved)  # ids rise in item order
    listed = [h async for h in mem.list(scope="s")]
    assert len({h.timestamp for h in listed}) == 1
    assert [h.id for h in listed] == [int(s) for s in reversed(saved)]


# --- opening a store scrubbed before without scrubbing ----------------------------


async def test_read_only_open_of_a_file_changes_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    async with ContextForge.open(db) as cf:
        await cf.save("x")
    async with ContextForge.open(Config(path=db, read_only=True)) as ro:
        with pytest.raises(StorageError):
            await ro.save_many([{"content": "y"}])


async def test_opening_a_scrubbed_store_without_scrubbing_warns(tmp_path: Path) -> None:
    from contextforge import ScrubbingWeakenedWarning

    db = str(tmp_path / "m.db")
    async with ContextForge.open(Config(path=db, scrub_pii=True)) as cf:
        await cf.save("x")
    async with ContextForge.open(db) as cf:  # no PII setting: the store's is kept, silently
        await cf.save("y")
    with pytest.warns(ScrubbingWeakenedWarning, match="pii"):
        async with ContextForge.open(Config(path=db, scrub_pii=False)) as cf:
            await cf.save("z")
    with pytest.warns(ScrubbingWeakenedWarning, match="secrets"):
        async with ContextForge.open(Config(path=db, scrub=False)):
            pass
    async with ContextForge.open(Config(path=db, scrub_pii=True)):  # stronger: no warning
        pass


# --- the offline distiller ------------------------------------------------------


async def test_a_one_message_transcript_saves_its_fact(mem: ContextForge) -> None:
    """The summary and the fact of a one-message transcript are different
    entries (kinds differ): the fact is saved, not reported as skipped with the
    summary's id."""
    result = await mem.distill_and_save(
        [{"role": "user", "content": "I decided to move the launch to Friday."}], scope="s"
    )
    kinds = sorted(item.kind for item in result.saved)
    assert "fact" in kinds and "summary" in kinds
    assert result.skipped == ()
    assert len({item.id for item in result.saved}) == len(result.saved)


def test_speaker_lines_in_a_text_transcript() -> None:
    from contextforge.distill.transcript import coerce_transcript

    assert coerce_transcript("Alice: I prefer dark mode\n\nMary Ann: noted, dark it is\n") == [
        ("Alice", "I prefer dark mode"),
        ("Mary Ann", "noted, dark it is"),
    ]
    # A lone label-like line in prose is not a speaker.
    assert coerce_transcript("Note: the deploy failed\nretry tomorrow\ncheck the logs") == [
        (None, "Note: the deploy failed"),
        (None, "retry tomorrow"),
        (None, "check the logs"),
    ]


async def test_citations_are_checked_however_they_are_written(mem: ContextForge) -> None:
    from contextforge import verify_citations

    saved = await mem.save("the launch moved to Friday", scope="s")
    block = await mem.context("launch", "s", 512)
    assert (
        verify_citations(
            f"It moved [mem:{saved}] [MEM:{saved}] [mem: {saved}] [mem:0{saved}]", block
        )
        == []
    )
    assert verify_citations("See [MEM:999] and [mem: 998].", block) == ["mem:999", "mem:998"]
