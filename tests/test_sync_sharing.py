"""One store, two kinds of caller: ``ContextForgeSync.sharing(cf)`` and
``twin.aio`` reach the same engine, as a framework with a sync and an async path
needs (LangGraph's ``batch``/``abatch``, say)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from contextforge import ClosedError, ContextForge, ContextForgeSync, InvalidTypeError


async def test_a_shared_twin_reads_and_writes_the_same_store(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        twin = ContextForgeSync.sharing(cf)
        assert twin.aio is cf
        # Called from inside this running loop: the twin runs on its own.
        from_twin = int(twin.save("written through the twin", scope="s"))
        assert (await cf.get(from_twin)) is not None
        from_async = int(await cf.save("written through the async handle", scope="s"))
        assert {h.id for h in twin.query("written", "s", 512)} == {from_twin, from_async}
        # From other threads at once.
        saved: list[int] = []
        threads = [
            threading.Thread(
                target=lambda n=n: saved.append(int(twin.save(f"thread {n}", scope="t")))
            )
            for n in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert await cf.count("t") == 4 and len(set(saved)) == 4
        # Closing the twin leaves the store open.
        twin.close()
        assert not cf.closed and await cf.count("s") == 2
        with pytest.raises(ClosedError):
            twin.count("s")
    # Closing the store closes it for a twin still open.
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf2:
        twin2 = ContextForgeSync.sharing(cf2)
    with pytest.raises(ClosedError):
        twin2.count("s")
    twin2.close()


def test_the_async_handle_of_a_twin_serves_another_loop(tmp_path: Path) -> None:
    with ContextForgeSync.open(str(tmp_path / "m.db")) as twin:
        twin.save("saved blocking", scope="s")

        async def elsewhere() -> int:
            await twin.aio.save("saved from another loop", scope="s")
            return await twin.aio.count("s")

        assert asyncio.run(elsewhere()) == 2
        assert twin.count("s") == 2


def test_sharing_takes_an_open_store() -> None:
    with pytest.raises(InvalidTypeError):
        ContextForgeSync.sharing("memory.db")  # type: ignore[arg-type]
