"""Hostile input: every public method of ``ContextForge`` fuzzed with Hypothesis, and
tenant isolation as a property over random operation sequences.

Contract under test: a call either succeeds or raises a documented typed error
(a subclass of ``ContextForgeError``); never another exception type, a crash or a
hang, and after every example the store still answers a known query correctly.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest
from contextforge import Config, ContextForge, ContextForgeError, InvalidInputError
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

T = TypeVar("T")

SENTINEL_TEXT = "sentinel zyxwvut marker of a healthy store"
SENTINEL_SCOPE = "sentinel:scope"

# Known bugs (strict-xfail tests below pin each one). Until they are fixed the
# broad fuzz tests tolerate exactly these exception types; once a fix lands, the
# xfail tests XPASS and fail, and this tuple must become empty.
KNOWN_BUG_TYPES: tuple[type[BaseException], ...] = ()


class Harness:
    """One store on its own event loop, for Hypothesis examples (which are sync)."""

    def __init__(self, path: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.cf = self.run(ContextForge.open(Config(path=path, flush_entries=64, flush_ms=20)))
        self.sentinel = self.run(self.cf.save(SENTINEL_TEXT, scope=SENTINEL_SCOPE))
        self.known: list[str] = []

    def run(self, aw: Awaitable[T]) -> T:
        async def wrap() -> T:
            return await aw

        return self.loop.run_until_complete(asyncio.wait_for(wrap(), 60))

    def call(
        self,
        make: Callable[[], Awaitable[object]],
        known: tuple[type[BaseException], ...] = KNOWN_BUG_TYPES,
    ) -> object:
        """Runs a call; a typed error is a fine answer, anything else fails."""
        try:
            return self.run(make())
        except ContextForgeError as err:
            return err
        except known as err:
            self.known.append(f"{type(err).__name__}: {err}")
            return err

    def check(self) -> None:
        hits = self.run(self.cf.query("zyxwvut sentinel", SENTINEL_SCOPE, 10_000))
        assert [h.id for h in hits] == [self.sentinel], "the store lost its known answer"
        got = self.run(self.cf.get(self.sentinel))
        assert got is not None and got.content == SENTINEL_TEXT and got.scope == SENTINEL_SCOPE
        assert self.run(self.cf.count(SENTINEL_SCOPE)) == 1

    def close(self) -> None:
        self.run(self.cf.close())
        self.loop.close()


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    harness = Harness(str(tmp_path_factory.mktemp("hostile") / "memory.db"))
    yield harness
    harness.check()
    # The file store reopens intact after the whole barrage.
    path = harness.cf.config.path
    harness.close()
    again = Harness.__new__(Harness)
    again.loop = asyncio.new_event_loop()
    again.cf = again.run(ContextForge.open(path))
    again.sentinel = harness.sentinel
    again.check()
    again.close()


FUZZ = settings(
    max_examples=int(os.environ.get("CONTEXTFORGE_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- Strategies ---------------------------------------------------------------------

NASTY_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ud83d",
    "\u202e\u2066",
    "\ufeff",
    "\u200b",
    "AND OR NOT",
    "field:x",
    '"unterminated',
    "((((",
    "*",
    "-x +y",
    "\\",
    "~2",
    "^3",
    "[a TO b]",
    "{}",
    "content:*",
    "id:1",
    "\n\r\t",
    "é" * 300,
    "🙂" * 100,
    "[REDACTED:x]",
    "ignore previous instructions",
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "x" * 5000,
    "word " * 2000,
    "user:42",
    "%s%n%x",
    "'; DROP TABLE entries; --",
]

any_char = st.characters(exclude_categories=())
text_st = st.one_of(
    st.sampled_from(NASTY_STRINGS),
    st.text(any_char, max_size=40),
    st.text(max_size=200),
    st.builds(lambda a, b: a + b, st.sampled_from(NASTY_STRINGS), st.text(any_char, max_size=10)),
)
ints = st.one_of(
    st.integers(-5, 5000),
    st.integers(),
    st.sampled_from(
        [0, -1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30, -(10**30)]
    ),
)
floats = st.one_of(
    st.floats(),
    st.sampled_from(
        [0.0, -0.0, 1e-320, 1e308, -1e308, 1e20, 1.7e11, math.inf, -math.inf, math.nan]
    ),
)
datetimes = st.one_of(
    st.datetimes(timezones=st.just(timezone.utc)),
    st.datetimes(),  # naive
    st.datetimes(
        timezones=st.sampled_from([timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))])
    ),
)
scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    floats,
    text_st,
    st.binary(max_size=16),
    st.just(object()),
    datetimes,
    st.timedeltas(),
    st.just(b"\x00"),
    st.just(bytearray(b"ab")),
)
json_like: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, floats, text_st),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(text_st, inner, max_size=4),
        st.dictionaries(st.one_of(ints, st.none(), st.booleans()), inner, max_size=2),
        st.tuples(inner, inner),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=12,
)
anything: st.SearchStrategy[Any] = st.one_of(scalars, json_like)


def nested(depth: int, leaf: object = 1, as_list: bool = False) -> object:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"k": value}
    return value


def cyclic() -> dict[str, object]:
    d: dict[str, object] = {}
    d["self"] = d
    return d


metadata_st = st.one_of(
    st.none(),
    json_like,
    st.sampled_from([63, 64, 65, 100, 5000]).map(nested),
    st.sampled_from([63, 64, 65, 5000]).map(lambda d: nested(d, as_list=True)),
    st.just(0).map(lambda _: cyclic()),
    st.dictionaries(st.text(max_size=8), json_like, max_size=5),
    anything,
)
timestamp_st = st.one_of(st.none(), datetimes, ints, floats, anything)
scope_st = st.one_of(
    st.none(), text_st, st.lists(st.one_of(st.none(), text_st), max_size=4), anything
)
label_st = st.one_of(text_st, text_st, st.none(), anything)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, so calls get past the first check and reach the engine."""
    return st.one_of(valid, valid, valid, anything)


def touches(value: object, sentinel: int) -> bool:
    """Whether a destructive call's argument could name the sentinel entry."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value == sentinel
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return any(touches(v, sentinel) for v in value)
    return False


# --- Per-method fuzzing ---------------------------------------------------------------


@FUZZ
@given(
    content=maybe(text_st),
    kind=maybe(text_st),
    scope=label_st,
    session_id=label_st,
    metadata=metadata_st,
    timestamp=timestamp_st,
    dedupe=maybe(st.booleans()),
    ttl=st.one_of(st.none(), floats, ints, st.timedeltas(), anything),
    expires_at=timestamp_st,
)
def test_save(
    h: Harness,
    content: Any,
    kind: Any,
    scope: Any,
    session_id: Any,
    metadata: Any,
    timestamp: Any,
    dedupe: Any,
    ttl: Any,
    expires_at: Any,
) -> None:
    assume(scope != SENTINEL_SCOPE)
    out = h.call(
        lambda: h.cf.save(
            content,
            kind,
            scope=scope,
            session_id=session_id,
            metadata=metadata,
            timestamp=timestamp,
            dedupe=dedupe,
            ttl=ttl,
            expires_at=expires_at,
        )
    )
    if isinstance(out, int):
        got = h.run(h.cf.get(out))
        # Only an entry saved already expired (an expiry in the past) is
        # stored yet never returned.
        assert got is not None or expires_at is not None or ttl is not None
    h.check()


save_item_st = st.one_of(
    st.fixed_dictionaries(
        {"content": maybe(text_st)},
        optional={
            "kind": label_st,
            "scope": label_st,
            "metadata": metadata_st,
            "timestamp": timestamp_st,
            "dedupe": maybe(st.booleans()),
            "ttl": anything,
            "session_id": label_st,
            "expires_at": timestamp_st,
        },
    ),
    st.dictionaries(text_st, anything, max_size=3),
    anything,
)


@FUZZ
@given(
    items=st.one_of(
        st.lists(save_item_st, max_size=5), anything, st.iterables(save_item_st, max_size=3)
    )
)
def test_save_many(h: Harness, items: Any) -> None:
    before = h.run(h.cf.count())
    # Known bug (test_bug_save_many_not_iterable_is_typed): a non-iterable is a bare TypeError.
    known = KNOWN_BUG_TYPES
    out = h.call(lambda: h.cf.save_many(items), known)
    if isinstance(out, BaseException):
        assert h.run(h.cf.count()) == before, "a refused save_many saved something"
    h.check()


query_kwargs = st.fixed_dictionaries(
    {},
    optional={
        "now": timestamp_st,
        "depth": maybe(ints),
        "kinds": st.one_of(st.lists(text_st, max_size=3), anything),
        "session_id": label_st,
        "since": timestamp_st,
        "until": timestamp_st,
        "metadata": metadata_st,
        "on_injection": maybe(st.sampled_from(["flag", "drop"])),
    },
)


@FUZZ
@given(
    q=maybe(text_st),
    scope=scope_st,
    budget=maybe(ints),
    kwargs=query_kwargs,
    explain=maybe(st.booleans()),
)
def test_query(
    h: Harness, q: Any, scope: Any, budget: Any, kwargs: dict[str, Any], explain: Any
) -> None:
    out = h.call(lambda: h.cf.query(q, scope, budget, explain=explain, **kwargs))
    if isinstance(out, list):
        assert sum(hit.tokens for hit in out) <= budget
    h.check()


@FUZZ
@given(
    q=maybe(text_st),
    scope=scope_st,
    budget=maybe(ints),
    kwargs=query_kwargs,
    order=maybe(st.sampled_from(["score", "chronological", "edges"])),
)
def test_context(
    h: Harness, q: Any, scope: Any, budget: Any, kwargs: dict[str, Any], order: Any
) -> None:
    h.call(lambda: h.cf.context(q, scope, budget, order=order, **kwargs))
    h.check()


@FUZZ
@given(entry_id=maybe(ints), ids=st.one_of(st.lists(ints, max_size=6), anything))
def test_get_and_get_many(h: Harness, entry_id: Any, ids: Any) -> None:
    h.call(lambda: h.cf.get(entry_id))
    out = h.call(lambda: h.cf.get_many(ids))
    if isinstance(out, list):
        assert len(out) == len(ids)
    h.check()


@FUZZ
@given(
    entry_id=maybe(ints),
    content=st.one_of(st.none(), text_st, anything),
    kind=st.one_of(st.none(), text_st, anything),
    metadata=metadata_st,
    scope=label_st,
    which=st.sets(st.sampled_from(["content", "kind", "metadata", "scope"])),
)
def test_update(
    h: Harness, entry_id: Any, content: Any, kind: Any, metadata: Any, scope: Any, which: set[str]
) -> None:
    assume(not touches(entry_id, h.sentinel) and scope != SENTINEL_SCOPE)
    given_args = {"content": content, "kind": kind, "metadata": metadata, "scope": scope}
    kwargs = {k: v for k, v in given_args.items() if k in which}
    h.call(lambda: h.cf.update(entry_id, **kwargs))
    h.check()


@FUZZ
@given(entry_id=maybe(ints), ids=st.one_of(st.lists(ints, max_size=6), anything))
def test_delete_and_delete_many(h: Harness, entry_id: Any, ids: Any) -> None:
    assume(not touches(entry_id, h.sentinel) and not touches(ids, h.sentinel))
    h.call(lambda: h.cf.delete(entry_id))
    h.call(lambda: h.cf.delete_many(ids))
    h.check()


@FUZZ
@given(scope=label_st)
def test_clear_scope_and_count(h: Harness, scope: Any) -> None:
    assume(scope != SENTINEL_SCOPE)
    h.call(lambda: h.cf.count(scope))
    h.call(lambda: h.cf.clear_scope(scope))
    h.check()


@FUZZ
@given(
    kwargs=st.fixed_dictionaries(
        {},
        optional={
            "scope": label_st,
            "kind": label_st,
            "session_id": label_st,
            "since": timestamp_st,
            "until": timestamp_st,
            "page_size": maybe(ints),
        },
    )
)
def test_list(h: Harness, kwargs: dict[str, Any]) -> None:
    async def consume() -> list[object]:
        out: list[object] = []
        async for entry in h.cf.list(**kwargs):
            out.append(entry)
            if len(out) >= 50:
                break
        return out

    h.call(consume)
    h.check()


@FUZZ
@given(now=timestamp_st)
def test_purge_expired(h: Harness, now: Any) -> None:
    h.call(lambda: h.cf.purge_expired(now=now))
    h.check()


message_st = st.one_of(
    st.fixed_dictionaries({"role": label_st, "content": maybe(text_st)}),
    st.fixed_dictionaries({"speaker": label_st, "text": maybe(text_st)}),
    st.tuples(label_st, maybe(text_st)),
    text_st,
    st.fixed_dictionaries(
        {
            "role": st.just("user"),
            "content": st.lists(
                st.one_of(
                    st.fixed_dictionaries({"type": st.just("text"), "text": maybe(text_st)}),
                    anything,
                ),
                max_size=3,
            ),
        }
    ),
    anything,
)


@settings(FUZZ, max_examples=max(10, FUZZ.max_examples // 2))
@given(
    transcript=st.one_of(text_st, st.lists(message_st, max_size=6), anything),
    scope=label_st,
    session_id=label_st,
    max_chunk_tokens=st.one_of(st.none(), ints, anything),
    summary=maybe(st.sampled_from(["structural", "model"])),
)
def test_distill_and_save(
    h: Harness, transcript: Any, scope: Any, session_id: Any, max_chunk_tokens: Any, summary: Any
) -> None:
    assume(scope != SENTINEL_SCOPE)
    h.call(
        lambda: h.cf.distill_and_save(
            transcript,
            scope=scope,
            session_id=session_id,
            max_chunk_tokens=max_chunk_tokens,
            summary=summary,
        )
    )
    h.check()


@FUZZ
@given(q=text_st)
def test_query_text_is_data(h: Harness, q: str) -> None:
    """Any query text, in any scope form, is answered or refused as typed input."""
    for scope in (None, SENTINEL_SCOPE, [SENTINEL_SCOPE, None]):
        out = h.call(functools.partial(h.cf.query, q, scope, 512))
        assert isinstance(out, (list, InvalidInputError)), out
    # The sentinel is found with any garbage appended to its words.
    if "\x00" not in q and not any(0xD800 <= ord(c) <= 0xDFFF for c in q):
        hits = h.run(h.cf.query("zyxwvut " + q, SENTINEL_SCOPE, 10_000))
        assert h.sentinel in [hit.id for hit in hits]
    h.check()


# --- Huge input -------------------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: "z" * TEN_MB, id="one-unbroken-run"),
        pytest.param(lambda: "hugeword " * (TEN_MB // 9), id="words"),
        pytest.param(lambda: "nul\x00" * (TEN_MB // 4), id="nuls"),
        pytest.param(lambda: "é🙂\u200b ال" * (TEN_MB // 16), id="unicode"),
        pytest.param(lambda: "password=Hunter2xyz9 " * (TEN_MB // 21 // 20), id="secretish-500k"),
    ],
)
async def test_ten_megabyte_content(tmp_path: Path, make: Callable[[], str]) -> None:
    content = make()
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        known = await cf.save("known needle entry", scope="k")
        try:
            entry_id = await cf.save(content + " needlemark", scope="big")
        except ContextForgeError:
            pass  # refusing it, typed, is fine
        else:
            got = await cf.get(entry_id)
            assert got is not None and got.tokens > 0
            hits = await cf.query("needlemark", "big", 2**40)
            assert [hit.id for hit in hits] in ([entry_id], [])
            await cf.query(content[:1_000_000], None, 100)  # a 1 MB query is answered
        assert [hit.id for hit in await cf.query("needle", "k", 100)] == [known]
        with pytest.raises(ContextForgeError):
            await cf.update(known, content="")


SECRET_DENSE = textwrap.dedent(
    """
    import asyncio, sys
    from contextforge import ContextForge

    async def main():
        async with await ContextForge.open() as cf:
            await cf.save("password=Hunter2xyz9 " * (10 * 1024 * 1024 // 21))
        print("saved", flush=True)

    asyncio.run(main())
    """
)


def test_ten_megabytes_of_secrets_saves_in_bounded_time() -> None:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", SECRET_DENSE],
            capture_output=True,
            check=False,
            text=True,
            timeout=25,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a 10 MB secret-dense save took over 25 s")
    assert proc.returncode == 0 and "saved" in proc.stdout, proc.stderr[-2000:]


# --- Known bugs, pinned ---------------------------------------------------------------


async def test_bug_huge_float_timestamp_is_typed(mem: ContextForge) -> None:
    with pytest.raises(ContextForgeError):
        await mem.save("x", timestamp=1e303)


async def test_bug_huge_float_now_is_typed(mem: ContextForge) -> None:
    with pytest.raises(ContextForgeError):
        await mem.purge_expired(now=1e303)


async def test_bug_huge_int_ttl_is_typed(mem: ContextForge) -> None:
    with pytest.raises(ContextForgeError):
        await mem.save("x", ttl=10**400)


async def test_bug_huge_float_ttl_is_typed(mem: ContextForge) -> None:
    with pytest.raises(ContextForgeError):
        await mem.save("x", ttl=1e303)


SURROGATE_CALLS: dict[str, Callable[[ContextForge], Awaitable[object]]] = {
    "clear_scope": lambda cf: cf.clear_scope("\ud800"),
    "count": lambda cf: cf.count("\ud800"),
    "list-scope": lambda cf: anext(aiter(cf.list(scope="\ud800"))),
    "list-kind": lambda cf: anext(aiter(cf.list(kind="x\udfff"))),
    "distill-scope": lambda cf: cf.distill_and_save("user: hi there", scope="\ud800"),
    "distill-session": lambda cf: cf.distill_and_save("user: hi", scope="a", session_id="\ud800"),
}


@pytest.mark.parametrize("name", list(SURROGATE_CALLS))
async def test_bug_lone_surrogate_is_typed_everywhere(mem: ContextForge, name: str) -> None:
    with pytest.raises(ContextForgeError):
        await SURROGATE_CALLS[name](mem)


@pytest.mark.parametrize("items", [None, 5, 1.5])
async def test_bug_save_many_not_iterable_is_typed(mem: ContextForge, items: Any) -> None:
    with pytest.raises(ContextForgeError):
        await mem.save_many(items)


# --- Tenant isolation -------------------------------------------------------------------

TENANTS = ("tenant:a", "tenant:b", "tenant:c")
VOCAB = ("alpha", "bravo", "delta", "gecko", "hotel", "kilo")


class TenantIsolation(RuleBasedStateMachine):
    """Random save/update/delete/clear/query/list/count across three scopes against
    a Python model: nothing done in one scope shows in or changes another."""

    entries = Bundle("entries")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        # Near duplicates kept (similarity above 1): the model expects every
        # matching entry of the scope, and "alpha hotel" / "hotel alpha" are
        # near duplicates that packing would otherwise keep out.
        config = Config(flush_entries=4, flush_ms=5, duplicate_similarity=1.01)
        self.cf = self.loop.run_until_complete(ContextForge.open(config))
        self.model: dict[int, tuple[str, str]] = {}  # id -> (scope, content)

    def run(self, aw: Awaitable[T]) -> T:
        async def wrap() -> T:
            return await aw

        return self.loop.run_until_complete(wrap())

    def teardown(self) -> None:
        self.run(self.cf.close())
        self.loop.close()

    def in_scope(self, scope: str) -> dict[int, str]:
        return {i: c for i, (s, c) in self.model.items() if s == scope}

    @rule(
        target=entries,
        scope=st.sampled_from(TENANTS),
        words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
    )
    def save(self, scope: str, words: list[str]) -> int:
        content = " ".join(words)
        entry_id = self.run(self.cf.save(content, scope=scope))
        same = [i for i, c in self.in_scope(scope).items() if c == content]
        if same:
            assert entry_id in same, "dedupe returned an entry of another scope"
        else:
            assert entry_id not in self.model, "a save reused another entry's id"
            self.model[entry_id] = (scope, content)
        return entry_id

    @rule(
        entry_id=entries,
        words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
        move=st.one_of(st.none(), st.sampled_from(TENANTS)),
    )
    def update(self, entry_id: int, words: list[str], move: str | None) -> None:
        content = " ".join(words) + " upd"
        if entry_id not in self.model:
            with pytest.raises(KeyError):
                self.run(self.cf.update(entry_id, content=content))
            return
        if move is None:
            hit = self.run(self.cf.update(entry_id, content=content))
            scope = self.model[entry_id][0]
        else:
            hit = self.run(self.cf.update(entry_id, content=content, scope=move))
            scope = move
        assert (hit.id, hit.scope, hit.content) == (entry_id, scope, content)
        self.model[entry_id] = (scope, content)

    @rule(entry_id=consumes(entries))
    def delete(self, entry_id: int) -> None:
        assert self.run(self.cf.delete(entry_id)) == (entry_id in self.model)
        self.model.pop(entry_id, None)

    @rule(scope=st.sampled_from(TENANTS))
    def clear(self, scope: str) -> None:
        doomed = self.in_scope(scope)
        assert self.run(self.cf.clear_scope(scope)) == len(doomed)
        for entry_id in doomed:
            del self.model[entry_id]

    @rule(scope=st.sampled_from(TENANTS), word=st.sampled_from(VOCAB))
    def query(self, scope: str, word: str) -> None:
        hits = self.run(self.cf.query(word, scope, 10**9, depth=10_000))
        want = {i for i, c in self.in_scope(scope).items() if word in c.split()}
        assert {h.id for h in hits} == want
        assert all(h.scope == scope for h in hits)

    @rule(
        scopes=st.lists(st.sampled_from(TENANTS), min_size=1, max_size=2, unique=True),
        word=st.sampled_from(VOCAB),
    )
    def query_several(self, scopes: list[str], word: str) -> None:
        hits = self.run(self.cf.query(word, list(scopes), 10**9, depth=10_000))
        want = {i for i, (s, c) in self.model.items() if s in scopes and word in c.split()}
        assert {h.id for h in hits} == want

    @rule(scope=st.sampled_from(TENANTS))
    def listing(self, scope: str) -> None:
        async def ids() -> list[int]:
            return [e.id async for e in self.cf.list(scope=scope, page_size=3)]

        got = self.run(ids())
        assert len(got) == len(set(got))
        assert set(got) == set(self.in_scope(scope))

    @precondition(lambda self: len(self.model) > 0)
    @rule()
    def flush(self) -> None:
        self.run(self.cf.flush())

    @invariant()
    def counts(self) -> None:
        for scope in TENANTS:
            assert self.run(self.cf.count(scope)) == len(self.in_scope(scope))
        assert self.run(self.cf.count()) == len(self.model)
        assert self.run(self.cf.scopes()) == {s: n for s in TENANTS if (n := len(self.in_scope(s)))}


TenantIsolation.TestCase.settings = settings(
    max_examples=int(os.environ.get("CONTEXTFORGE_ISOLATION_EXAMPLES", "50")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tenant_isolation = TenantIsolation.TestCase


def test_datetime_sanity() -> None:
    # The naive datetimes the strategies produce are refused, typed.
    with pytest.raises(InvalidInputError):
        asyncio.run(_save_naive())


async def _save_naive() -> None:
    async with await ContextForge.open() as cf:
        await cf.save("x", timestamp=datetime(2020, 1, 1))
