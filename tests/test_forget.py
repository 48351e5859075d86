"""forget: no byte of forgotten content stays in any file the library writes
(docs/forgetting.md), proven by reading every byte of every file in the
store's folder, and by the index's own record of deleted documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from contextforge import (
    ALL_SCOPES,
    Config,
    ContextForge,
    Forgotten,
    InvalidInputError,
)

MARKER = "zqxjvkw"  # lowercase and unstemmable: the index keeps it as typed


def files_holding(folder: Path, needle: str) -> list[str]:
    """Every file under ``folder`` whose bytes contain ``needle``."""
    raw = needle.encode()
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and raw in p.read_bytes()
    )


def segments_with_deletes(index_dir: Path) -> list[str]:
    meta = json.loads((index_dir / "meta.json").read_text())
    return [s["segment_id"] for s in meta["segments"] if s.get("deletes")]


async def seed(cf: ContextForge, marker: str) -> list[int]:
    """A conversation that mentions the marker, and turns after it whose index
    context holds its words; other scopes and sessions beside it."""
    ids = []
    for n in range(3):
        await cf.save(f"unrelated note {n} about gardening", scope="other", session_id="s9")
    turns = [
        f"my account number is {marker}{marker} please remember",
        "ok, noted your account details",
        "thanks, what time is the meeting",
        "the meeting is at noon",
    ]
    for turn in turns:
        ids.append(int(await cf.save(turn, scope="u", session_id="chat-1")))
    await cf.save_many([{"content": f"filler entry {n}", "scope": "u"} for n in range(40)])
    return ids


async def test_forget_leaves_no_byte_of_the_content_on_disk(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    path = str(folder / "memory.db")
    async with await ContextForge.open(Config(path=path, flush_entries=4)) as cf:
        ids = await seed(cf, MARKER)
        await cf.flush()
    # Before: the marker is on disk, where the test can see it. (The index's
    # term dictionary is compressed: what it holds is read from its own record
    # of deleted documents below.)
    assert files_holding(folder, MARKER), "the marker was never written: the test proves nothing"
    async with await ContextForge.open(path) as cf:
        receipt = await cf.forget(ids=[ids[0]])
        assert isinstance(receipt, Forgotten)
        assert receipt.ids == (ids[0],) and receipt.entries == 1 and len(receipt.id) == 32
        assert receipt.reindexed == 2  # the next two turns held its words as context
        assert await cf.query(MARKER, ALL_SCOPES, 4096) == []
        assert await cf.get(ids[0]) is None
        # The turns after it are still found, by their own words.
        [first, *_] = await cf.query("noted account details", "u", 4096)
        assert first.id == ids[1]
        assert files_holding(folder, MARKER) == [], "forgotten while open"
        assert segments_with_deletes(Path(path + ".index")) == []
    assert files_holding(folder, MARKER) == []
    async with await ContextForge.open(path) as cf:
        assert await cf.count(ALL_SCOPES) == 3 + 3 + 40


async def test_forget_by_session_scope_key_and_metadata(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    async with await ContextForge.open(path) as cf:
        ids = await seed(cf, MARKER)
        by_session = await cf.forget(session_id="chat-1", scope="u")
        assert sorted(by_session.ids) == sorted(ids) and by_session.reindexed == 0
        a = await cf.save("Alice lives in Berlin", scope="u", key="city")
        b = await cf.save("Alice lives in Paris", scope="u", key="city")
        assert (await cf.forget(key="city", scope="u")).ids == (a, b)
        assert await cf.history("city", "u") == []
        x = await cf.save("ticket 1 for u-42", scope="u", metadata={"user": "u-42", "n": 1})
        await cf.save("ticket 2 for u-43", scope="u", metadata={"user": "u-43", "n": 1})
        await cf.save("ticket 3, n as text", scope="u", metadata={"user": "u-42", "n": "1"})
        gone = await cf.forget(metadata={"user": "u-42", "n": 1})
        assert gone.ids == (x,)
        assert (await cf.forget(scope="other")).entries == 3
        assert await cf.scopes() == {"u": 42}


async def test_forget_refuses_what_would_match_everything(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        await cf.save("keep me", scope="u")
        with pytest.raises(InvalidInputError, match="at least one"):
            await cf.forget()
        with pytest.raises(InvalidInputError, match="empty metadata"):
            await cf.forget(metadata={})
        with pytest.raises(InvalidInputError):
            await cf.forget(metadata={"nested": {"a": 1}})
        assert await cf.count("u") == 1
        assert (await cf.forget(ids=[999])).entries == 0


async def test_what_delete_and_clear_scope_leave_behind(tmp_path: Path) -> None:
    """``delete`` and ``clear_scope`` remove the rows (their bytes zeroed in the
    database file); the search index keeps the deleted documents, words and
    all, in its segments until a background merge takes them, which ``forget``
    does not wait for: it rewrites every segment that still holds one."""
    for how in ("delete", "clear_scope"):
        folder = tmp_path / how
        path = str(folder / "memory.db")
        index = Path(path + ".index")
        async with await ContextForge.open(Config(path=path, flush_entries=4)) as cf:
            ids = await seed(cf, MARKER)
            await cf.flush()
            if how == "delete":
                await cf.delete(ids[0])
            else:
                await cf.clear_scope("u")
            await cf.flush()
            assert await cf.query(MARKER, ALL_SCOPES, 4096) == []
            # Whether the deleted documents are still in a segment now depends
            # on the background merges: delete makes no promise about it.
            receipt = await cf.forget(scope="other")
            assert receipt.entries == 3
            assert segments_with_deletes(index) == []
        assert files_holding(folder, MARKER) == []


def segment_files(index_dir: Path) -> dict[str, set[str]]:
    """The index's segment files by segment id (tantivy names them ``<id>.<ext>``)."""
    out: dict[str, set[str]] = {}
    for p in index_dir.iterdir():
        stem, _, ext = p.name.partition(".")
        if len(stem) == 32 and ext:
            out.setdefault(stem, set()).add(p.name)
    return out


def live_segments(index_dir: Path) -> dict[str, int]:
    meta = json.loads((index_dir / "meta.json").read_text())
    return {s["segment_id"].replace("-", ""): s["max_doc"] for s in meta["segments"]}


@pytest.mark.slow
async def test_forgetting_one_entry_rewrites_its_segment_not_the_index(tmp_path: Path) -> None:
    """A bulk save larger than the segment cap (docs/performance.md, "Segments")
    ends in several segments, leaves no merged-away files behind, and a forget
    of one entry rewrites the one segment that held it: the others' files are
    the same files, untouched."""
    path = str(tmp_path / "memory.db")
    index = Path(path + ".index")
    size = 270_000
    async with await ContextForge.open(path) as cf:
        ids = await cf.save_many(
            [
                {"content": f"note {n} on item {n % 977}", "scope": "u", "dedupe": False}
                for n in range(size)
            ]
        )
        await cf.flush()
    live = live_segments(index)
    assert len(live) >= 2
    assert sum(live.values()) == size
    assert max(live.values()) <= 1 << 18
    # Nothing but the live segments' files: a bulk save's merges collect theirs.
    assert set(segment_files(index)) == set(live)
    before = segment_files(index)
    async with await ContextForge.open(path) as cf:
        receipt = await cf.forget(ids=[int(ids[size // 2])])
        assert (receipt.entries, receipt.segments) == (1, 1)
        assert receipt.storage_scrubbed
        assert await cf.count("u") == size - 1
    after = live_segments(index)
    assert segments_with_deletes(index) == []
    kept = set(before) & set(after)
    assert len(kept) == len(live) - 1
    for segment in kept:
        assert segment_files(index)[segment] == before[segment]
