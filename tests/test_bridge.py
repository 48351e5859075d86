"""The hand-over from the engine's threads to asyncio: every event loop gets its
results, including loops created one after another (a new loop may live where a
collected one did), cancelled calls leave nothing behind, and results keep
arriving while the loop's thread is busy running Python."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from contextforge import ContextForge, NotFound, _convert


def test_results_reach_each_new_event_loop(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    for i in range(30):

        async def main() -> list[str]:
            async with await ContextForge.open(path) as cf:
                await cf.save(f"note number {i}", scope="s", dedupe=False)
                return [h.content for h in await cf.query("note", "s", 10_000)]

        assert len(asyncio.run(main())) == i + 1
        gc.collect()


async def test_a_cancelled_call_does_not_disturb_the_next(mem: ContextForge) -> None:
    await mem.save("the deploy failed: missing env var", scope="s")
    for _ in range(20):
        task = asyncio.create_task(mem.query("deploy", "s", 100))
        await asyncio.sleep(0)
        task.cancel()
    hits = await mem.query("deploy", "s", 100)
    assert [h.content for h in hits] == ["the deploy failed: missing env var"]


async def test_many_calls_in_flight_while_the_loop_runs_python(mem: ContextForge) -> None:
    ids = await mem.save_many([{"content": f"entry {i} about kiwis", "scope": "s"} for i in range(50)])

    async def busy() -> int:
        total = 0
        for i in range(200_000):  # holds the GIL on the loop's thread
            total += i
            if i % 20_000 == 0:
                await asyncio.sleep(0)
        return total

    total, entries, found = await asyncio.gather(
        busy(),
        asyncio.gather(*(mem.get(i) for i in ids)),
        asyncio.gather(*(mem.query("kiwis", "s", 10_000) for _ in range(20))),
    )
    assert total == sum(range(200_000))
    assert [h.id for h in entries if h is not None] == ids
    assert all(len(hits) == 50 for hits in found)


async def test_an_error_arrives_typed_whichever_way_the_result_comes(mem: ContextForge) -> None:
    # Awaited alone, a result is taken straight from the worker; beside other
    # calls, it comes through the loop. An error must survive both.
    with pytest.raises(NotFound):
        await mem.update(12345, content="x")
    results = await asyncio.gather(
        mem.update(12345, content="x"), mem.save("beside it"), return_exceptions=True
    )
    assert isinstance(results[0], NotFound) and isinstance(results[1], int)


async def test_a_call_never_awaited_leaves_nothing_behind(mem: ContextForge) -> None:
    await mem.save("kept note", scope="s")
    for _ in range(50):
        mem._engine.count(_convert.list_filter(True, "s", None, None, None, None))
    gc.collect()
    await asyncio.sleep(0.05)
    assert await mem.count("s") == 1
    assert [h.content for h in await mem.query("kept", "s", 100)] == ["kept note"]
