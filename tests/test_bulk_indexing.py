"""A bulk save returns before its entries are indexed (the flusher indexes them
while the caller prepares its next batch): nothing that reads the index may
ever see the store without them, or see them applied out of order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from contextforge import ContextForge

BULK = 1500  # at least a bulk (1,000 changes): indexed after the call returns


def items(prefix: str, n: int, scope: str = "bulk") -> list[dict[str, str]]:
    return [{"content": f"{prefix} item{i} shared", "scope": scope} for i in range(n)]


async def ids_matching(cf: ContextForge, text: str, scope: str = "bulk") -> set[int]:
    hits = await cf.query(text, scope, 10_000_000, depth=10_000)
    return {h.id for h in hits}


@pytest.mark.parametrize("path", ["file", "memory"])
async def test_every_entry_of_back_to_back_bulk_saves_is_found_by_the_next_query(
    tmp_path: Path, path: str
) -> None:
    cf = await (
        ContextForge.open(str(tmp_path / "m.db")) if path == "file" else ContextForge.open()
    )
    try:
        saved: set[int] = set()
        for round_ in range(4):
            saved |= {s.id for s in await cf.save_many(items(f"round{round_}", BULK))}
        # The last call's entries are the first thing asked for.
        last = await cf.query("round3 item1499", "bulk", 2048)
        assert last and last[0].content == "round3 item1499 shared"
        assert await ids_matching(cf, "shared") == saved
    finally:
        await cf.close()


async def test_a_query_running_beside_a_bulk_save_sees_every_earlier_one(tmp_path: Path) -> None:
    cf = await ContextForge.open(str(tmp_path / "m.db"))
    try:
        first = {s.id for s in await cf.save_many(items("first", BULK))}
        second, seen = await asyncio.gather(
            cf.save_many(items("second", BULK)), ids_matching(cf, "shared")
        )
        second_ids = {s.id for s in second}
        # The query saw all of the first bulk, and of the second all or nothing.
        assert first <= seen
        assert seen - first in (set(), second_ids)
        assert await ids_matching(cf, "shared") == first | second_ids
    finally:
        await cf.close()


async def test_an_update_and_a_delete_right_after_a_bulk_save_are_not_undone(
    tmp_path: Path,
) -> None:
    cf = await ContextForge.open(str(tmp_path / "m.db"))
    try:
        saved = [s.id for s in await cf.save_many(items("old", BULK))]
        # Both change entries the index has not taken in yet: applied before
        # the bulk, or the bulk applied after them, the old text would return.
        await cf.update(saved[10], content="replaced text for ten")
        assert await cf.delete(saved[20])
        assert await ids_matching(cf, "item10") == set()
        assert await ids_matching(cf, "item11") == {saved[11]}
        assert await ids_matching(cf, "replaced") == {saved[10]}
        assert await ids_matching(cf, "item20") == set()
        assert len(await ids_matching(cf, "shared")) == BULK - 2
    finally:
        await cf.close()


async def test_a_bulk_save_closed_at_once_is_found_after_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    cf = await ContextForge.open(path)
    saved = {s.id for s in await cf.save_many(items("closing", BULK))}
    await cf.close()
    cf = await ContextForge.open(path)
    try:
        assert await ids_matching(cf, "shared") == saved
    finally:
        await cf.close()


async def test_another_handle_sees_a_bulk_save_once_it_returns(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    writer = await ContextForge.open(path)
    reader = await ContextForge.open(path)
    try:
        saved = {s.id for s in await writer.save_many(items("shared-store", BULK))}
        assert await ids_matching(reader, "shared") == saved
        assert await ids_matching(writer, "shared") == saved
    finally:
        await reader.close()
        await writer.close()
