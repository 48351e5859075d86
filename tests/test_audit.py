"""The audit trail: ``changes()`` reads the change log, every write in order,
with when and in which scope it was made, never content."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from contextforge import ALL_SCOPES, Change, ContextForge, ContextForgeSync

DATA = Path(__file__).resolve().parent / "data"


async def test_every_write_is_in_the_trail_in_order(tmp_path: Path) -> None:
    started = datetime.now(timezone.utc) - timedelta(seconds=1)
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        a = await cf.save("v1 of the plan", scope="u", key="plan")
        b = await cf.save("v2 of the plan", scope="u", key="plan")
        c = await cf.save("a note elsewhere", scope="other")
        await cf.update(c, content="a note, edited")
        await cf.delete(c)
        receipt = await cf.forget(ids=[a])
        trail = [x async for x in cf.changes()]
    ops = [(x.op, x.entry_id, x.scope) for x in trail]
    assert ops == [
        ("insert", a, "u"),
        ("update", a, "u"),  # closed by v2, logged before it
        ("insert", b, "u"),
        ("insert", c, "other"),
        ("update", c, "other"),
        ("delete", c, "other"),
        ("forget", a, "u"),
    ]
    assert [x.seq for x in trail] == sorted({x.seq for x in trail})
    assert all(x.at is not None and x.at >= started for x in trail)
    assert trail[-1].forget == receipt.id and trail[-1].key is None
    assert trail[2].key == "plan"
    assert all(isinstance(x, Change) for x in trail)
    # Nothing of the content is in a change.
    assert not any("plan" in str(v) for x in trail for k, v in vars(x).items() if k != "key")


async def test_the_trail_resumes_and_filters_by_scope(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        for n in range(7):
            await cf.save(f"entry {n}", scope="u" if n % 2 else "v")
        await cf.save("global entry")
        first = [x async for x in cf.changes(page_size=3)]
        assert len(first) == 8
        after = [x async for x in cf.changes(since=first[4].seq)]
        assert after == first[5:]
        assert {x.scope for x in [x async for x in cf.changes(scope="u")]} == {"u"}
        assert len([x async for x in cf.changes(scope="u")]) == 3
        assert [x.entry_id async for x in cf.changes(scope=None)] == [first[-1].entry_id]


def test_the_sync_twin_iterates_the_trail(tmp_path: Path) -> None:
    with ContextForgeSync.open(str(tmp_path / "m.db")) as cf:
        saved = cf.save("hello", scope="u")
        assert [(x.op, x.entry_id) for x in cf.changes()] == [("insert", saved)]


async def test_changes_logged_before_the_upgrade_are_in_the_full_trail_only(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copyfile(DATA / "store_v6.db", path)
    async with await ContextForge.open(str(path)) as cf:
        old = [x async for x in cf.changes()]
        assert old and all(x.at is None and x.scope is None for x in old)
        scopes = [s for s in await cf.scopes() if s is not None]
        assert [x async for x in cf.changes(scope=scopes[0])] == []
        assert [x async for x in cf.changes(scope=None)] == []
        new = await cf.save("after the upgrade", scope=scopes[0])
        [logged] = [x async for x in cf.changes(scope=scopes[0])]
        assert logged.entry_id == new and logged.at is not None
        assert [x async for x in cf.changes(scope=ALL_SCOPES)][-1] == logged
