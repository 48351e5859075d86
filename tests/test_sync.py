"""``ContextForgeSync``: the blocking twin of ``ContextForge``."""

from __future__ import annotations

import asyncio
import gc
import inspect
import itertools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import (
    ALL_SCOPES,
    ClosedError,
    Config,
    ContextForge,
    InvalidInputError,
    InvalidTypeError,
    NotFound,
)
from contextforge.sync import ContextForgeSync

from .conftest import REPO

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def loop_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "contextforge-sync"}


@pytest.fixture
def sync_cf(db_path: str) -> Iterator[ContextForgeSync]:
    with ContextForgeSync.open(db_path) as store:
        yield store


# The twin cannot drift -------------------------------------------------------------


def public_members(cls: type) -> dict[str, Any]:
    """The public attributes a class defines or inherits (ContextForge's come
    partly from its mixins), nearest definition first."""
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        members.update((n, m) for n, m in vars(klass).items() if not n.startswith("_"))
    return members


def test_every_public_member_has_a_twin_with_the_same_parameters_and_docstring() -> None:
    async_members = public_members(ContextForge)
    # What only a twin has: a twin of an open store, and the store behind it.
    assert set(public_members(ContextForgeSync)) == set(async_members) | {"sharing", "aio"}
    for name, member in async_members.items():
        twin = vars(ContextForgeSync)[name]
        assert type(twin) is type(member), name  # function, classmethod or property
        if isinstance(member, property):
            assert member.__doc__ == twin.__doc__, name
            continue
        theirs = inspect.signature(getattr(ContextForge, name)).parameters
        ours = inspect.signature(getattr(ContextForgeSync, name)).parameters
        # Names, kinds, defaults (the same "left out" sentinel) and annotations.
        assert list(ours.values()) == list(theirs.values()), name
        assert getattr(ContextForgeSync, name).__doc__ == getattr(ContextForge, name).__doc__
        assert getattr(ContextForge, name).__doc__, name
    assert (
        inspect.signature(ContextForgeSync.__exit__).parameters
        == inspect.signature(ContextForge.__aexit__).parameters
    )


def test_no_method_is_a_coroutine_or_async_generator() -> None:
    for name in public_members(ContextForgeSync):
        func = getattr(ContextForgeSync, name)
        if callable(func):
            assert not inspect.iscoroutinefunction(func), name
            assert not inspect.isasyncgenfunction(func), name
    with ContextForgeSync.open() as cf:
        entries = cf.list()
        assert inspect.isgenerator(entries)  # a plain iterator
        assert list(entries) == []


def test_twins_are_named_and_typed_after_the_async_methods() -> None:
    """Help, tracebacks and ``inspect`` show each twin as a member of ContextForgeSync, with
    the async method's signature and docstring; the return type is what the call returns."""
    returns = {
        "list": "Iterator[_core.Hit]",
        "changes": "Iterator[Change]",
        "reads": "Iterator[Read]",
        "open": "ContextForgeSync",
    }
    for name, member in public_members(ContextForge).items():
        if isinstance(member, property):
            continue
        twin = getattr(ContextForgeSync, name)
        assert (twin.__name__, twin.__qualname__) == (name, f"ContextForgeSync.{name}")
        assert twin.__module__ == "contextforge.sync"
        assert twin.__doc__ == getattr(ContextForge, name).__doc__
        theirs = inspect.signature(getattr(ContextForge, name))
        if name in returns:
            theirs = theirs.replace(return_annotation=returns[name])
        assert inspect.signature(twin) == theirs, name
    # The async methods themselves are left as they were.
    assert inspect.signature(ContextForge.list).return_annotation == "AsyncIterator[_core.Hit]"
    assert ContextForge.save.__qualname__ == "ContextForge.save"


def test_mypy_sees_the_exact_signatures(tmp_path: Path) -> None:
    """Through the ParamSpec wrappers, mypy sees each twin with the async method's
    parameters and the awaited result, and rejects a wrong argument."""
    names = [n for n, m in public_members(ContextForge).items() if not isinstance(m, property)]
    code = [
        "from contextforge import ContextForge, ContextForgeSync",
        "async def check(acf: ContextForge, scf: ContextForgeSync) -> None:",
    ]
    revealed: dict[int, tuple[str, str]] = {}
    for name in names:
        for side in ("acf", "scf"):
            code.append(f"    reveal_type({side}.{name})")
            revealed[len(code)] = (side, name)
    wrong = [
        "    scf.save(3)",
        '    scf.query("q", budget="all")',
        "    scf.update(1, colour='red')",
        "    scf.list(scope=['a', 'b'])",
        "    scf.get_many(1)",
        "    ContextForgeSync.open(reembed=1.5)",
        "    scf.clear_all()",
    ]
    code += wrong
    wrong_lines = set(range(len(code) - len(wrong) + 1, len(code) + 1))
    (tmp_path / "snippet.py").write_text("\n".join(code) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--show-error-codes"]
        + ["--cache-dir", str(REPO / ".mypy_cache"), "snippet.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO / "python")},  # this checkout's package
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    types: dict[tuple[str, str], str] = {}
    errors = set()
    for line in result.stdout.splitlines():
        found = re.match(r'snippet\.py:(\d+): (note|error): (?:Revealed type is "(.*)")?', line)
        assert found, result.stdout + result.stderr
        number = int(found[1])
        if found[2] == "error":
            errors.add(number)
        elif found[3] is not None:
            types[revealed[number]] = found[3]
    assert errors == wrong_lines, result.stdout
    for name in names:
        expected = types["acf", name]
        expected = re.sub(r"-> typing\.Coroutine\[Any, Any, (.*)\]$", r"-> \1", expected)
        expected = re.sub(r"-> typing\.AsyncIterator\[(.*)\]$", r"-> typing.Iterator[\1]", expected)
        expected = expected.replace(
            "-> contextforge.opening.Opening[contextforge.memory.ContextForge]",
            "-> contextforge.sync.ContextForgeSync",
        ).removesuffix(" -> None")  # mypy leaves out "-> None"
        assert expected != types["acf", name], name  # the result type was rewritten
        assert types["scf", name] == expected, name


# The API round trip ----------------------------------------------------------------


def test_round_trip_on_a_file(sync_cf: ContextForgeSync, db_path: str) -> None:
    cf = sync_cf
    assert cf.config == Config(path=db_path, scrub_pii=False)  # the setting in force
    assert not cf.closed
    assert repr(cf) == f"<ContextForgeSync {db_path!r} (open)>"

    a = cf.save(
        "the deploy failed: missing env var",
        kind="incident",
        scope="project:demo",
        session_id="run-7",
        metadata={"n": 1},
        timestamp=NOW,
    )
    again = cf.save(
        "the deploy failed:  missing env var",
        kind="incident",
        scope="project:demo",
        session_id="run-7",
        metadata={"n": 1},
        timestamp=NOW,
    )
    assert again == a and not again.created  # dedupe
    b, c = cf.save_many(
        [
            {"content": "prefers short answers", "kind": "fact", "scope": "user:42"},
            {"content": "a global note about deploys", "timestamp": NOW - timedelta(days=1)},
        ]
    )
    assert cf.save_many([]) == []

    [hit] = cf.query("deploy failure", "project:demo", 2048, now=NOW)
    assert (hit.id, hit.kind, hit.session_id, hit.metadata) == (a, "incident", "run-7", {"n": 1})
    assert hit.timestamp == NOW
    assert {h.id for h in cf.query("deploy", ["project:demo", None])} == {a, c}
    assert cf.query("deploy", ALL_SCOPES, kinds=["fact"]) == []
    ctx = cf.context("deploy failure", "project:demo", 2048, now=NOW)
    assert [h.id for h in ctx.hits] == [a] and 0 < ctx.tokens <= 2048

    got = cf.get(b)
    assert got is not None and got.content == "prefers short answers"
    assert cf.get(12345) is None
    assert [h.id if h else None for h in cf.get_many([c, 999, a])] == [c, None, a]

    updated = cf.update(b, content="prefers long answers", metadata={"v": 2})
    assert (updated.content, updated.scope) == ("prefers long answers", "user:42")
    assert updated.metadata == {"v": 2}
    assert cf.update(b, scope=None, metadata=None).scope is None  # None is a value, not "left out"
    assert cf.update(b, scope="user:42").metadata == {}

    assert cf.count() == 3
    assert cf.count("user:42") == 1
    assert cf.count(None) == 1  # global entries
    assert cf.scopes() == {"project:demo": 1, "user:42": 1, None: 1}
    assert {h.id for h in cf.list()} == {a, b, c}
    assert [h.id for h in cf.list(scope=None)] == [c]
    assert [h.id for h in cf.list(kind="incident")] == [a]
    assert [h.id for h in cf.list(since=NOW - timedelta(hours=1), scope="project:demo")] == [a]

    cf.flush()
    assert cf.delete(c) is True
    assert cf.delete(c) is False
    assert cf.delete_many([b, 777]) == [True, False]
    assert [h.id for h in cf.query("deploy", ALL_SCOPES)] == [a]
    assert cf.clear_scope("project:demo") == 1
    cf.save("one more", scope="x")
    cf.save("and a global one")
    assert cf.clear_all(confirm=True) == 2
    assert cf.count() == 0 and cf.scopes() == {}


def test_saves_persist_across_reopen(db_path: str) -> None:
    with ContextForgeSync.open(db_path) as cf:
        ids = [cf.save(f"fact number {i} about gardening", scope="u") for i in range(30)]
    with ContextForgeSync.open(Path(db_path)) as cf:
        assert cf.count() == 30
        assert {h.id for h in cf.query("gardening", "u", 100_000)} == set(ids)
    with ContextForgeSync.open(Config(path=db_path)) as cf:
        assert [h.id for h in cf.list(scope="u")] == ids[::-1]


def test_in_memory_by_default() -> None:
    with ContextForgeSync.open() as cf:
        assert cf.config.path == ":memory:"
        cf.save("remember the milk")
        assert [h.content for h in cf.query("milk")] == ["remember the milk"]


def test_list_is_a_lazy_iterator_fetching_pages(sync_cf: ContextForgeSync) -> None:
    ids = sync_cf.save_many(
        {"content": f"entry {i}", "timestamp": NOW + timedelta(seconds=i)} for i in range(23)
    )
    newest_first = ids[::-1]
    for page_size in (1, 5, 23, 500):
        assert [h.id for h in sync_cf.list(page_size=page_size)] == newest_first
    entries = sync_cf.list(page_size=4)
    assert iter(entries) is entries
    assert [h.id for h in itertools.islice(entries, 6)] == newest_first[:6]
    assert [h.id for h in entries] == newest_first[6:]  # resumes where it stopped
    abandoned = sync_cf.list(page_size=3)
    next(abandoned)  # dropped half-way: nothing leaks, nothing warns
    del abandoned
    assert [h.id for h in sync_cf.list(scope="nowhere")] == []


def test_a_wrong_argument_is_a_type_error_at_the_call(sync_cf: ContextForgeSync) -> None:
    with pytest.raises(TypeError, match="colour"):
        sync_cf.list(colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="colour"):
        sync_cf.save("x", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="colour"):
        ContextForgeSync.open(colour="red")  # type: ignore[call-arg]
    assert sync_cf.count() == 0


def test_list_arguments_are_checked_on_first_pull(sync_cf: ContextForgeSync) -> None:
    with pytest.raises(InvalidInputError, match="page_size"):
        next(sync_cf.list(page_size=0))
    with pytest.raises(InvalidTypeError, match="page_size"):
        next(sync_cf.list(page_size="10"))  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="kind"):
        next(sync_cf.list(kind=3))  # type: ignore[arg-type]


# Errors -----------------------------------------------------------------------------


def test_errors_keep_their_types(sync_cf: ContextForgeSync) -> None:
    with pytest.raises(InvalidTypeError) as info:
        sync_cf.save(123)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)
    with pytest.raises(InvalidInputError) as bad:
        sync_cf.save("   ")
    assert isinstance(bad.value, ValueError)
    with pytest.raises(InvalidInputError, match="item 1"):
        sync_cf.save_many([{"content": "fine"}, {"content": "x", "colour": "red"}])
    assert sync_cf.count() == 0  # all or nothing
    with pytest.raises(InvalidInputError, match="confirm=True"):
        sync_cf.clear_all(confirm=False)
    with pytest.raises(InvalidInputError):
        sync_cf.query("x", budget=0)
    with pytest.raises(InvalidTypeError):
        sync_cf.get_many("12")  # type: ignore[arg-type]
    with pytest.raises(NotFound) as missing:
        sync_cf.update(999, content="x")
    assert isinstance(missing.value, KeyError)
    with pytest.raises(InvalidTypeError):
        ContextForgeSync.open(42)  # type: ignore[arg-type]


async def test_errors_match_the_async_layer() -> None:
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("save", lambda cf: cf.save("")),
        ("update", lambda cf: cf.update(5, kind=7)),
        ("update", lambda cf: cf.update(5, content="x")),
        ("clear_scope", lambda cf: cf.clear_scope("")),
        ("get_many", lambda cf: cf.get_many([True])),
    ]
    async with await ContextForge.open() as acf:
        expected = []
        for _, call in calls:
            with pytest.raises(Exception) as info:
                await call(acf)
            expected.append((type(info.value), str(info.value)))
    with ContextForgeSync.open() as scf:
        for (name, call), want in zip(calls, expected):
            with pytest.raises(Exception) as info:
                call(scf)
            assert (type(info.value), str(info.value)) == want, name


# Closing ----------------------------------------------------------------------------


def test_closed_store_refuses_work_like_the_async_one(db_path: str) -> None:
    before = loop_threads()
    with ContextForgeSync.open(db_path) as cf:
        cf.save("hello there")
        [thread] = loop_threads() - before
        assert thread.daemon
    assert cf.closed
    assert not thread.is_alive()
    assert repr(cf).endswith("(closed)>")
    calls: list[Callable[[], object]] = [
        lambda: cf.save("again"),
        lambda: cf.save_many([{"content": "x"}]),
        lambda: cf.query("hello"),
        lambda: cf.context("hello"),
        lambda: cf.get(1),
        lambda: cf.get_many([1]),
        lambda: cf.update(1, content="x"),
        lambda: cf.delete(1),
        lambda: cf.delete_many([1]),
        lambda: cf.clear_scope("s"),
        lambda: cf.clear_all(confirm=True),
        lambda: cf.scopes(),
        lambda: next(cf.list()),
        lambda: cf.count(),
        lambda: cf.flush(),
    ]
    for call in calls:
        with pytest.raises(ClosedError, match="is closed"):
            call()
    # As in the async layer, argument checks still come first.
    with pytest.raises(InvalidTypeError):
        cf.save(5)  # type: ignore[arg-type]
    assert cf.save_many([]) == []
    cf.close()  # closing twice is harmless
    assert cf.closed


def test_an_iterator_outliving_its_store_raises_closed(sync_cf: ContextForgeSync) -> None:
    sync_cf.save_many([{"content": f"n{i}"} for i in range(10)])
    entries = sync_cf.list(page_size=2)
    next(entries)
    next(entries)
    sync_cf.close()
    with pytest.raises(ClosedError):
        list(entries)


def test_with_closes_on_error(db_path: str) -> None:
    before = loop_threads()
    with pytest.raises(RuntimeError, match="boom"), ContextForgeSync.open(db_path) as cf:
        cf.save("kept")
        raise RuntimeError("boom")
    assert cf.closed
    assert loop_threads() == before
    with ContextForgeSync.open(db_path) as cf:
        assert cf.count() == 1


def test_a_failed_open_stops_its_thread(tmp_path: Path) -> None:
    before = loop_threads()
    with pytest.raises(InvalidTypeError):
        ContextForgeSync.open(b"bytes")  # type: ignore[arg-type]
    assert loop_threads() == before


def test_garbage_collection_closes_the_store(db_path: str) -> None:
    before = loop_threads()
    cf = ContextForgeSync.open(db_path)
    cf.save("not closed by hand")
    [thread] = loop_threads() - before
    del cf
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    with ContextForgeSync.open(db_path) as cf:
        assert cf.count() == 1


def test_interpreter_exit_closes_open_stores_quietly(tmp_path: Path) -> None:
    db = str(tmp_path / "exit.db")
    script = (
        "from contextforge.sync import ContextForgeSync\n"
        f"cf = ContextForgeSync.open({db!r})\n"
        "cf.save('left open at exit')\n"
        "it = cf.list(page_size=1)\n"
        "next(it)\n"
        "other = ContextForgeSync.open()\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # Development mode also reports any loop callback slower than 100 ms, which
    # says how loaded the machine was, not whether the exit was quiet.
    slow = re.compile(r"Executing <.*> took \d+\.\d+ seconds")
    stderr = [line for line in done.stderr.splitlines() if not slow.fullmatch(line)]
    assert (done.returncode, stderr) == (0, [])
    with ContextForgeSync.open(db) as cf:
        assert [h.content for h in cf.list()] == ["left open at exit"]


# Threads and event loops ------------------------------------------------------------


async def test_works_inside_a_running_event_loop(db_path: str) -> None:
    running = asyncio.get_running_loop()  # as in Jupyter: a loop runs in this thread
    with ContextForgeSync.open(db_path) as cf:
        entry = cf.save("called from a coroutine", scope="nb")
        assert [h.id for h in cf.query("coroutine", "nb")] == [entry]
        assert [h.id for h in cf.list()] == [entry]
        with pytest.raises(NotFound):
            cf.update(entry + 1, content="x")
    assert asyncio.get_running_loop() is running
    # The caller's loop still works, and the async API beside it too.
    async with await ContextForge.open(db_path) as acf:
        assert await acf.count() == 1


def test_one_store_serves_many_threads(sync_cf: ContextForgeSync) -> None:
    def work(i: int) -> int:
        entry = sync_cf.save(f"thread note {i}", scope=f"t{i % 4}")
        assert sync_cf.get(entry) is not None
        return entry

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(work, range(64)))
    assert len(set(ids)) == 64
    assert sync_cf.count() == 64
    assert sum(sync_cf.scopes().values()) == 64


def test_iterators_are_consumed_in_the_callers_thread(sync_cf: ContextForgeSync) -> None:
    seen: set[threading.Thread] = set()

    def items() -> Iterator[dict[str, str]]:
        for i in range(3):
            seen.add(threading.current_thread())
            yield {"content": f"generated {i}"}

    def ids(values: Sequence[int]) -> Iterator[int]:
        for v in values:
            seen.add(threading.current_thread())
            yield v

    saved = sync_cf.save_many(items())
    assert [h.id if h else None for h in sync_cf.get_many(ids(saved))] == saved
    assert sync_cf.delete_many(ids(saved)) == [True, True, True]
    assert seen == {threading.current_thread()}
