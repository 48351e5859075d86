"""A save_many larger than one chunk is converted and handed to the engine a
chunk at a time, in one transaction: the whole batch is saved, or none of it,
whatever goes wrong midway, and neither side ever holds the whole batch."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from contextforge import Config, ContextForge, InvalidInputError, InvalidTypeError, bulk

from .sqld import Sqld, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)

CHUNK = bulk.CHUNK
MANY = CHUNK * 3 + 17  # four chunks, the last a short one


def items(n: int, prefix: str = "row", **extra: Any) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"content": f"{prefix} item{i} shared words", "scope": "bulk", **extra}


async def open_store(tmp_path: Path, where: str) -> ContextForge:
    return await (
        ContextForge.open(str(tmp_path / "m.db")) if where == "file" else ContextForge.open()
    )


async def still_writable(cf: ContextForge) -> None:
    """The failed bulk save let the store's writer go."""
    saved = await asyncio.wait_for(cf.save("written after the failure", scope="after"), 30)
    assert (await cf.get(saved)) is not None


@pytest.mark.parametrize("where", ["file", "memory"])
async def test_a_generator_of_many_chunks_is_saved_whole_and_in_order(
    tmp_path: Path, where: str
) -> None:
    cf = await open_store(tmp_path, where)
    try:
        saved = await cf.save_many(items(MANY))
        assert len(saved) == MANY
        assert all(s.created for s in saved)
        assert list(saved) == sorted(saved)  # ids rise in the order given
        assert await cf.count("bulk") == MANY
        for i in (0, CHUNK - 1, CHUNK, 2 * CHUNK + 5, MANY - 1):
            entry = await cf.get(saved[i])
            assert entry is not None and entry.content == f"row item{i} shared words"
            hits = await cf.query(f"item{i}", "bulk", 2048)
            assert hits and hits[0].id == saved[i]
        # One call, one default timestamp.
        first, last = await cf.get(saved[0]), await cf.get(saved[-1])
        assert first is not None and last is not None and first.timestamp == last.timestamp
    finally:
        await cf.close()


async def test_duplicates_across_chunks_get_the_first_id(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        before = await cf.save("row item3 shared words", scope="bulk")

        def with_repeats() -> Iterator[dict[str, Any]]:
            yield from items(CHUNK * 2)
            yield {"content": "row item1 shared words", "scope": "bulk"}  # chunk 1's

        saved = await cf.save_many(with_repeats())
        assert saved[3] == before and not saved[3].created
        assert saved[-1] == saved[1] and not saved[-1].created and saved[1].created
        assert await cf.count("bulk") == CHUNK * 2


@pytest.mark.parametrize("where", ["file", "memory"])
@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ({"content": "  "}, InvalidInputError, "item 9000: content must not be empty"),
        ({"content": 7}, InvalidTypeError, "item 9000"),
        ({"content": "x", "colour": "red"}, InvalidInputError, "item 9000: unknown keys"),
        ("not a mapping", InvalidTypeError, "item 9000: expected a mapping"),
    ],
)
async def test_a_bad_item_in_a_late_chunk_saves_nothing(
    tmp_path: Path, where: str, bad: Any, error: type[Exception], message: str
) -> None:
    assert 9000 > CHUNK * 2  # two chunks were handed over before it

    def batch() -> Iterator[Any]:
        yield from items(9000)
        yield bad
        yield from items(10, prefix="after")

    cf = await open_store(tmp_path, where)
    try:
        with pytest.raises(error, match=message):
            await cf.save_many(batch())
        assert await cf.count() == 0
        await still_writable(cf)
        assert await cf.count("bulk") == 0
    finally:
        await cf.close()


async def test_an_id_already_taken_in_a_late_chunk_saves_nothing(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        taken = await cf.save("already here", scope="other")

        def batch() -> Iterator[dict[str, Any]]:
            yield from items(CHUNK * 2 + 3)
            yield {"content": "restored", "id": int(taken)}

        with pytest.raises(InvalidInputError):
            await cf.save_many(batch())
        assert await cf.count() == 1
        await still_writable(cf)


async def test_an_error_raised_by_the_items_themselves_saves_nothing(tmp_path: Path) -> None:
    class Broken(RuntimeError):
        pass

    def batch() -> Iterator[dict[str, Any]]:
        yield from items(CHUNK * 2 + 100)
        raise Broken("the source of the items failed")

    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        with pytest.raises(Broken):
            await cf.save_many(batch())
        assert await cf.count() == 0
        await still_writable(cf)


async def test_a_bulk_save_cancelled_midway_saves_nothing(tmp_path: Path) -> None:
    pulled = 0

    def batch() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for item in items(CHUNK * 40):
            pulled += 1
            yield item

    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        task = asyncio.ensure_future(cf.save_many(batch()))
        while pulled < CHUNK * 3 and not task.done():
            await asyncio.sleep(0.001)
        assert not task.done(), "the whole batch was saved before the test could cancel it"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await still_writable(cf)
        assert await cf.count("bulk") == 0
        assert await cf.query("shared words", "bulk", 2048) == []


async def test_vectors_given_for_some_chunks_only_save_nothing(tmp_path: Path) -> None:
    vector = np.ones(8, dtype=np.float32)

    def batch() -> Iterator[dict[str, Any]]:
        yield from items(CHUNK, embedding=vector)
        yield from items(CHUNK)

    def lengths() -> Iterator[dict[str, Any]]:
        yield from items(CHUNK, embedding=vector)
        yield from items(CHUNK, embedding=np.ones(9, dtype=np.float32))

    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        with pytest.raises(InvalidInputError, match=f"item {CHUNK}: no embedding"):
            await cf.save_many(batch())
        with pytest.raises(InvalidInputError, match="different lengths"):
            await cf.save_many(lengths())
        assert await cf.count() == 0
        saved = await cf.save_many(items(CHUNK * 2 + 1, embedding=vector))
        assert len(saved) == CHUNK * 2 + 1
        assert await cf.count() == CHUNK * 2 + 1


async def test_an_embedder_runs_before_a_bulk_save_takes_the_writer(tmp_path: Path) -> None:
    """Embedding inside the transaction would lock every other writer (another
    process, with its busy timeout) out for as long as the embedder takes."""
    path = tmp_path / "m.db"
    writer_free: list[bool] = []
    # Another process asks for the write lock (in this one, a second SQLite
    # library's close would drop the engine's own POSIX locks).
    probe = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], timeout=0)\n"
        "try:\n"
        "    c.execute('BEGIN IMMEDIATE')\n"
        "except sqlite3.OperationalError:\n"
        "    sys.exit(3)\n"
        "c.rollback()\n"
    )

    def embedder(texts: list[str]) -> Any:
        done = subprocess.run([sys.executable, "-c", probe, str(path)], check=False)
        assert done.returncode in (0, 3), done
        writer_free.append(done.returncode == 0)
        return np.ones((len(texts), 4), dtype=np.float32)

    config = Config(path=str(path), embedder=embedder, embed_batch_size=1024)
    async with await ContextForge.open(config) as cf:
        writer_free.clear()
        saved = await cf.save_many(items(CHUNK * 3 + 5))
        assert len(saved) == CHUNK * 3 + 5
        assert len(writer_free) >= 12 and all(writer_free), writer_free
        hits = await cf.query("item9000", "bulk", 2048)
        assert hits and hits[0].id == saved[9000]


async def test_a_bulk_save_never_holds_the_whole_batch_in_python(tmp_path: Path) -> None:
    """Python's own allocations while saving a generator stay near those of a
    few chunks, plus the ids returned: converted items are let go a chunk at
    a time. (About 100 bytes an item here; holding every item's record at
    once costs about 400, and keeping the first chunks for the whole save
    about 160.)"""
    n = CHUNK * 12
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        await cf.save_many(items(CHUNK * 2, prefix="warm"))  # first-use allocations
        gc.collect()
        tracemalloc.start()
        try:
            saved = await cf.save_many(items(n))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(saved) == n
    per_item = peak / n
    assert per_item < 140, f"{per_item:.0f} bytes an item at the peak"


async def test_a_bulk_save_of_many_chunks_on_a_server_is_one_transaction(sqld: Sqld) -> None:
    async with await ContextForge.open(sqld.url) as cf:
        saved = await cf.save_many(items(CHUNK * 2 + 9))
        assert len(saved) == CHUNK * 2 + 9
        assert await cf.count("bulk") == CHUNK * 2 + 9

        def bad() -> Iterator[Any]:
            yield from items(CHUNK * 2 + 9, prefix="second")
            yield {"content": ""}

        with pytest.raises(InvalidInputError):
            await cf.save_many(bad())
        assert await cf.count("bulk") == CHUNK * 2 + 9
        hits = await cf.query("item8200", "bulk", 2048)
        assert hits and hits[0].id == saved[8200]


@pytest.mark.parametrize("n", [3, CHUNK * 2 + 1])
async def test_an_item_whose_embedding_is_none_has_no_vector(tmp_path: Path, n: int) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        saved = await cf.save_many(items(n, embedding=None))
        assert len(saved) == n
        assert await cf.count("bulk") == n


async def test_with_an_embedder_a_bad_item_is_found_before_anything_is_embedded(
    tmp_path: Path,
) -> None:
    embedded: list[int] = []

    def embedder(texts: list[str]) -> Any:
        embedded.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

    def batch() -> Iterator[Any]:
        yield from items(CHUNK * 3)
        yield {"content": "x", "colour": "red"}

    config = Config(path=str(tmp_path / "m.db"), embedder=embedder, embed_batch_size=1024)
    async with await ContextForge.open(config) as cf:
        embedded.clear()
        with pytest.raises(InvalidInputError, match=f"item {CHUNK * 3}: unknown keys"):
            await cf.save_many(batch())
        assert embedded == []
        assert await cf.count() == 0
