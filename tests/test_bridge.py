"""The hand-over from the engine's threads to asyncio: every event loop gets its
results, including loops created one after another (a new loop may live where a
collected one did), cancelled calls leave nothing behind, and results keep
arriving while the loop's thread is busy running Python. Queries that run on the
loop's own thread get their own answers, give the loop turns, and never hold it
while they would wait. With ``CONTEXTFORGE_PLAIN_CALLS=1`` every call takes the
plain path, and all of this still holds."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from contextforge import ContextForge, InvalidInputError, NotFound, _convert

REPO = Path(__file__).resolve().parent.parent
PLAIN = os.environ.get("CONTEXTFORGE_PLAIN_CALLS", "") not in ("", "0")


def test_results_reach_each_new_event_loop(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    for i in range(30):

        async def main(i: int = i) -> list[str]:
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
    ids = await mem.save_many(
        [{"content": f"entry {i} about kiwis", "scope": "s"} for i in range(50)]
    )

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
        mem._engine.count(_convert.list_record("s"))
    gc.collect()
    await asyncio.sleep(0.05)
    assert await mem.count("s") == 1
    assert [h.content for h in await mem.query("kept", "s", 100)] == ["kept note"]


async def test_concurrent_queries_each_get_their_own_answer(cf: ContextForge) -> None:
    # Awaited while the loop is free, a query on a file store runs on the loop's
    # own thread; beside other calls, on a worker. Each gets its own answer.
    words = ["apple", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron"]
    for w in words:
        await cf.save_many([{"content": f"{w} note {i}", "scope": w} for i in range(5)])
    alone = {w: [h.id for h in await cf.query(w, w, 10_000)] for w in words}
    assert all(len(ids) == 5 for ids in alone.values())

    async def asker(w: str) -> list[list[int]]:
        return [[h.id for h in await cf.query(w, w, 10_000)] for _ in range(25)]

    answers = await asyncio.gather(*(asker(w) for w in words))
    for w, got in zip(words, answers):
        assert all(ids == alone[w] for ids in got), w


async def test_a_context_block_is_the_same_from_the_loops_thread_and_a_worker(
    cf: ContextForge,
) -> None:
    await cf.save_many([{"content": f"kiwi note {i}", "scope": "s"} for i in range(20)])
    alone = await cf.context("kiwi", "s", 400)
    assert "kiwi note" in alone.text
    beside = await asyncio.gather(*(cf.context("kiwi", "s", 400) for _ in range(4)))
    assert all(c.text == alone.text for c in beside)


async def test_a_query_error_arrives_typed_from_the_loops_thread_and_a_worker(
    cf: ContextForge,
) -> None:
    await cf.save("a note", scope="s")
    # The engine refuses the depth: alone, on the loop's thread...
    with pytest.raises(InvalidInputError, match="depth"):
        await cf.query("note", "s", 100, depth=20_000)
    # ...and beside other calls, on workers.
    results = await asyncio.gather(
        *(cf.query("note", "s", 100, depth=20_000) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, InvalidInputError) for r in results), results
    assert [h.content for h in await cf.query("note", "s", 100)] == ["a note"]


async def ticks_while(body: Callable[[], Awaitable[object]]) -> int:
    """How often a 1 ms timer fired on the loop while `body` ran."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    before = ticks
    await body()
    during = ticks - before
    task.cancel()
    return during


FREE_LOOP_QUERY = """
import asyncio, os, sys
os.sched_setaffinity(0, {0})
from contextforge import ContextForge

async def main():
    cf = await ContextForge.open(sys.argv[1])
    await cf.save("a note about the deploy", scope="s")
    # A call answered inline gives the loop a turn once the calls since its
    # last turn have held it for 2 ms: on a loaded machine one query can take
    # that long. Each try starts after a turn of the loop; one answer is enough.
    for _ in range(20):
        await asyncio.sleep(0)
        query = cf.query("deploy", "s", 100)
        try:
            query.send(None)  # what awaiting it does first
        except StopIteration as done:
            print("answered", [h.content for h in done.value])
            break
        else:
            query.close()
    else:
        print("suspended")
    await cf.close()

asyncio.run(main())
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_a_query_on_a_free_loop_runs_on_the_loops_own_thread(tmp_path: Path) -> None:
    # On one CPU nothing waits awake for a worker, so a call sent to one always
    # suspends the task: answering without suspending means the loop's own
    # thread ran the query. The plain path (inherited by the child) never does.
    inline = os.environ.get("CONTEXTFORGE_PLAIN_CALLS", "") in ("", "0", "awake")
    done = subprocess.run(
        [sys.executable, "-c", FREE_LOOP_QUERY, str(tmp_path / "m.db")],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    expected = "answered ['a note about the deploy']" if inline else "suspended"
    assert done.stdout.strip() == expected


@pytest_asyncio.fixture(params=["file", "memory"])
async def file_or_memory(
    request: pytest.FixtureRequest, db_path: str
) -> AsyncIterator[ContextForge]:
    """A file store (queries run on the loop's thread) or an in-memory one (on workers)."""
    store = await ContextForge.open(db_path if request.param == "file" else ":memory:")
    yield store
    await store.close()


@pytest.mark.parametrize("python_ms", [0.0, 1.5])
async def test_queries_back_to_back_still_give_the_loop_turns(
    file_or_memory: ContextForge, python_ms: float
) -> None:
    cf = file_or_memory
    await cf.save_many([{"content": f"note {i} about deploys", "scope": "s"} for i in range(200)])
    loop = asyncio.get_running_loop()
    done = 0

    async def query_for_300_ms() -> None:
        nonlocal done
        until = loop.time() + 0.3
        while loop.time() < until:
            busy_until = time.perf_counter() + python_ms / 1000
            while time.perf_counter() < busy_until:  # Python work, as building a prompt
                pass
            assert len(await cf.query("deploys", "s", 2048)) > 0
            done += 1

    # Each query here may complete without suspending (run on the loop's
    # thread, or taken straight from a worker); the loop still gets a turn
    # every few milliseconds, so the timer keeps firing.
    assert await ticks_while(query_for_300_ms) >= 10
    assert done > 10


async def test_a_query_catching_up_on_a_bulk_save_leaves_the_loop_running(db_path: str) -> None:
    reader = await ContextForge.open(db_path)
    writer = await ContextForge.open(db_path)  # as another process would write
    try:
        assert await reader.query("marker9999", "s", 100) == []
        await writer.save_many(
            [{"content": f"bulk note {i} marker{i}", "scope": "s"} for i in range(10_000)]
        )
        loop = asyncio.get_running_loop()
        callback_ran: list[float] = []

        def from_another_thread() -> None:
            time.sleep(0.005)
            loop.call_soon_threadsafe(lambda: callback_ran.append(time.monotonic()))

        # The reader's index must first take in 10,000 changes. That runs on a
        # worker, and the loop runs the callback meanwhile; run on the loop's
        # thread, it would hold the callback until the answer came.
        started = time.monotonic()
        threading.Thread(target=from_another_thread).start()
        hits = await reader.query("marker9999", "s", 100)
        answered = time.monotonic()
        assert [h.content for h in hits] == ["bulk note 9999 marker9999"]
        await asyncio.sleep(0.05)
        assert callback_ran and callback_ran[0] - started < (answered - started) / 2
    finally:
        await writer.close()
        await reader.close()


PLAIN_CALLS = """
import asyncio, sys
from pathlib import Path
from contextforge import ContextForge, NotFound

async def main():
    cf = await ContextForge.open(sys.argv[1])
    await cf.save_many([{"content": f"note {i} about the deploy", "scope": "s"} for i in range(50)])
    for _ in range(200):
        query = cf.query("deploy", "s", 100)
        try:
            query.send(None)  # what awaiting it does first
        except StopIteration:
            print("answered without suspending")
            return
        query.close()
    hits, counted = await asyncio.gather(cf.query("deploy", "s", 10_000), cf.count("s"))
    try:
        await cf.update(12345, content="x")
    except NotFound:
        print("typed error")
    print(len(hits), counted)
    names = {p.read_text().strip() for p in Path("/proc/self/task").glob("*/comm")}
    print(sorted(n for n in names if n.startswith("contextforge")))
    await cf.close()

asyncio.run(main())
"""


def test_the_plain_switch_sends_every_call_down_the_plain_path(tmp_path: Path) -> None:
    env = {**os.environ, "CONTEXTFORGE_PLAIN_CALLS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_CALLS, str(tmp_path / "m.db")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["typed error", "50 50"], done.stdout
    if Path("/proc/self/task").is_dir():
        # Linux keeps 15 characters of a thread's name.
        assert "'contextforge-wo'" in lines[2] and "'contextforge-ru'" in lines[2], lines[2]


@pytest.mark.skipif(PLAIN, reason="already running under the switch")
@pytest.mark.timeout(600)
def test_the_bridge_tests_pass_with_the_plain_switch() -> None:
    env = {**os.environ, "CONTEXTFORGE_PLAIN_CALLS": "1"}
    pytest_args = ["-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider", __file__]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
