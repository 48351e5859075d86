"""Metadata filter operators, scope prefixes, offsets and queries without words
(docs/filters.md), checked against a reference model of the documented rules.

A filter is evaluated three ways inside the library: as SQL (count, list,
delete_where, a query without words, and the ids a ranked query may return),
by the search index's terms, and in Rust against each row (the in-memory tail
and the final check of every hit). The property test holds them all to one
Python model, on stores whose entries are partly committed to the index and
partly still in its tail.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from contextforge import Config, ContextForge, InvalidInputError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_MISSING = object()

# --- the reference model -------------------------------------------------------


def lookup(meta: dict[str, Any], path: str) -> Any:
    value: Any = meta
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def equal(v: Any, x: Any) -> bool:
    if isinstance(x, list):
        return isinstance(v, list) and len(v) == len(x) and all(map(equal, v, x))
    if isinstance(v, list):
        return False
    if v is None or x is None:
        return v is None and x is None
    if isinstance(v, bool) or isinstance(x, bool):
        return isinstance(v, bool) and isinstance(x, bool) and v == x
    if is_num(v) and is_num(x):
        return bool(v == x)
    if isinstance(v, str) and isinstance(x, str):
        return v == x
    return False


def order(v: Any, x: Any) -> int | None:
    if is_num(v) and is_num(x):
        return int(v > x) - int(v < x)
    if isinstance(v, str) and isinstance(x, str):
        a, b = v.encode(), x.encode()
        return (a > b) - (a < b)
    return None


def holds(meta: dict[str, Any], f: dict[str, Any]) -> bool:
    for key, cond in f.items():
        if key == "$and":
            ok = all(holds(meta, sub) for sub in cond)
        elif key == "$or":
            ok = any(holds(meta, sub) for sub in cond)
        else:
            v = lookup(meta, key)
            ops = cond if isinstance(cond, dict) else {"$eq": cond}
            ok = all(op_holds(v, op, arg) for op, arg in ops.items())
        if not ok:
            return False
    return True


def op_holds(v: Any, op: str, arg: Any) -> bool:
    found = v is not _MISSING
    if op == "$eq":
        return found and equal(v, arg)
    if op == "$ne":
        return not (found and equal(v, arg))
    if op == "$in":
        return found and any(equal(v, x) for x in arg)
    if op == "$nin":
        return not (found and any(equal(v, x) for x in arg))
    if op == "$exists":
        return found == bool(arg)
    c = order(v, arg) if found else None
    if c is None:
        return False
    return {"$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0}[op]


# --- strategies ----------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, -2.5]),
    st.sampled_from(["a", "b", "ab", "B", "é"]),
)
lists = st.lists(scalars, max_size=2)
metadata_values = st.fixed_dictionaries(
    {},
    optional={
        "a": scalars | lists,
        "b": scalars,
        "c": st.fixed_dictionaries({}, optional={"d": scalars, "e": scalars}) | scalars,
    },
)
paths = st.sampled_from(["a", "b", "c.d", "c.e", "c", "z"])
ordered_args = st.one_of(
    st.integers(-3, 3), st.sampled_from([0.5, 1.0]), st.sampled_from(["a", "b"])
)
conditions = st.one_of(
    scalars,
    lists,
    st.fixed_dictionaries({"$ne": lists}),
    st.fixed_dictionaries({"$eq": scalars}),
    st.fixed_dictionaries({"$ne": scalars}),
    st.builds(lambda op, x: {op: x}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), ordered_args),
    st.builds(
        lambda op, xs: {op: xs}, st.sampled_from(["$in", "$nin"]), st.lists(scalars, max_size=3)
    ),
    st.fixed_dictionaries({"$exists": st.booleans()}),
    st.fixed_dictionaries({"$gt": st.integers(-3, 0), "$lt": st.integers(0, 3)}),
)
leaf_filters = st.dictionaries(paths, conditions, min_size=1, max_size=2)
filters = st.one_of(
    leaf_filters,
    st.builds(
        lambda op, subs: {op: subs},
        st.sampled_from(["$and", "$or"]),
        st.lists(leaf_filters, min_size=1, max_size=3),
    ),
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    metas=st.lists(metadata_values, min_size=1, max_size=14),
    f=filters,
    committed=st.integers(0, 14),
)
def test_every_path_agrees_with_the_documented_rules(
    tmp_path_factory: pytest.TempPathFactory,
    metas: list[dict[str, Any]],
    f: dict[str, Any],
    committed: int,
) -> None:
    folder = tmp_path_factory.mktemp("filters")

    async def check() -> None:
        config = Config(path=str(folder / "m.db"), flush_entries=10_000, flush_ms=3_600_000)
        async with await ContextForge.open(config) as cf:
            ids = []
            for n, meta in enumerate(metas):
                ids.append(int(await cf.save(f"common word entry {n}", scope="s", metadata=meta)))
                if n + 1 == committed:
                    await cf.flush()  # these in index segments, the rest in the tail
            want = {i for i, m in zip(ids, metas) if holds(m, f)}
            assert await cf.count("s", metadata=f) == len(want)
            assert {h.id async for h in cf.list(scope="s", metadata=f)} == want
            listed = await cf.query("", "s", 100_000, metadata=f)
            assert {h.id for h in listed} == want
            assert all(h.score is None for h in listed)
            ranked = await cf.query("common word", "s", 100_000, metadata=f)
            assert {h.id for h in ranked} == want
            assert all(h.score is not None and not math.isnan(h.score) for h in ranked)

    run(check())


@pytest.mark.parametrize(
    "bad",
    [
        {"n": {"$regex": "x"}},
        {"$nor": [{"n": 1}]},
        {"n": [1, [2]]},
        {"n": {"a": 1}},
        {"n": {"$gt": True}},
        {"n": {"$in": 3}},
        {"n": {"$exists": 1}},
        {"a..b": 1},
        {"$or": []},
    ],
)
async def test_a_bad_filter_is_refused_and_changes_nothing(
    tmp_path: Path, bad: dict[str, Any]
) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        await cf.save("keep me", scope="s", metadata={"n": 1})
        for call in (
            cf.query("keep", "s", 512, metadata=bad),
            cf.query("", "s", 512, metadata=bad),
            cf.count("s", metadata=bad),
            cf.delete_where(scope="s", metadata=bad),
        ):
            with pytest.raises(InvalidInputError, match="metadata filter"):
                await call
        assert await cf.count("s") == 1


SCOPES = ["team:a", "team:a/x", "team:a/x/y", "team:ab", "team:a_x", "team:a%", "team:[a]", "other"]


@pytest.mark.parametrize("flushed", [True, False])
async def test_a_scope_prefix_stops_at_level_boundaries(tmp_path: Path, flushed: bool) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        ids = {s: int(await cf.save(f"deploy note in {s}", scope=s)) for s in SCOPES}
        await cf.save("deploy note, global")
        if flushed:
            await cf.flush()
        cases = {
            "team:a": {"team:a", "team:a/x", "team:a/x/y"},
            "team:a/": {"team:a", "team:a/x", "team:a/x/y"},
            "team:a/x": {"team:a/x", "team:a/x/y"},
            "team:a_x": {"team:a_x"},
            "team:a%": {"team:a%"},
            "team:[a]": {"team:[a]"},
            "team": set(),
        }
        for prefix, scopes in cases.items():
            want = {ids[s] for s in scopes}
            assert {h.id for h in await cf.query("deploy note", scope_prefix=prefix)} == want, (
                prefix
            )
            assert {h.id for h in await cf.query("", scope_prefix=prefix)} == want, prefix
            assert {h.id async for h in cf.list(scope_prefix=prefix)} == want, prefix
            assert await cf.count(scope_prefix=prefix) == len(want)
            assert await cf.scopes(prefix=prefix) == {s: 1 for s in sorted(scopes)}
        with pytest.raises(InvalidInputError, match="scope or scope_prefix"):
            await cf.query("deploy", "team:a", scope_prefix="team:a")
        for bad in ("", "/", "a//"):
            with pytest.raises(InvalidInputError):
                await cf.query("deploy", scope_prefix=bad)
        assert await cf.delete_where(scope_prefix="team:a/x") == 2
        assert set(await cf.scopes()) == {None, *SCOPES} - {"team:a/x", "team:a/x/y"}


async def test_offsets_page_through_the_ranking(tmp_path: Path) -> None:
    async with await ContextForge.open(Config(path=str(tmp_path / "m.db"), flush_entries=7)) as cf:
        for n in range(30):
            await cf.save(f"release notes item {n} " + "release " * (n % 5), scope="s")
        whole = [h.id for h in await cf.query("release notes", "s", 100_000, limit=30)]
        assert len(whole) == 30
        pages = [
            [h.id for h in await cf.query("release notes", "s", 100_000, limit=7, offset=o)]
            for o in range(0, 30, 7)
        ]
        assert [i for page in pages for i in page] == whole
        listed = [h.id for h in await cf.query("", "s", 100_000, limit=30)]
        paged = [
            h.id
            for o in range(0, 30, 10)
            for h in await cf.query("", "s", 100_000, limit=10, offset=o)
        ]
        assert paged == listed
        # Newest first, whatever the words.
        newest = [h.id async for h in cf.list(scope="s")]
        assert listed == newest
        # The budget applies after the offset.
        [first] = await cf.query("", "s", 100_000, limit=1, offset=3)
        tight = await cf.query("", "s", first.tokens, offset=3)
        assert [h.id for h in tight][:1] == [first.id]


async def test_delete_where_selects_by_session_kind_and_metadata(tmp_path: Path) -> None:
    async with await ContextForge.open(str(tmp_path / "m.db")) as cf:
        for n in range(4):
            await cf.save(f"turn {n}", scope="u", session_id="chat-1")
        keep = int(await cf.save("turn in another chat", scope="u", session_id="chat-2"))
        other = int(await cf.save("turn 0", scope="v", session_id="chat-1"))
        tagged = int(await cf.save("tagged", scope="u", metadata={"user": "u-42", "age": 40}))
        with pytest.raises(InvalidInputError, match="needs a scope"):
            await cf.delete_where()
        with pytest.raises(InvalidInputError, match="needs a scope"):
            await cf.delete_where(metadata={})
        assert await cf.delete_where(scope="u", session_id="chat-1") == 4
        assert await cf.delete_where(metadata={"age": {"$gt": 50}}) == 0
        assert await cf.delete_where(metadata={"age": {"$gte": 40}}) == 1
        assert await cf.get(tagged) is None
        assert {h.id async for h in cf.list()} == {keep, other}
        assert await cf.query("turn", "u", 512) != []
