"""Bad input gets a clear, typed error and changes nothing; query text is data."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import pytest
from contextforge import (
    ContextForge,
    ContextForgeError,
    InvalidInputError,
    InvalidTypeError,
)

BAD_SAVES: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"content": 42}, TypeError),
    ({"content": b"bytes"}, TypeError),
    ({"content": None}, TypeError),
    ({"content": ""}, ValueError),
    ({"content": "   \n\t"}, ValueError),
    ({"content": "x", "kind": ""}, ValueError),
    ({"content": "x", "kind": 3}, TypeError),
    ({"content": "x", "scope": ""}, ValueError),
    ({"content": "x", "scope": "a\x00b"}, ValueError),
    ({"content": "x", "scope": 7}, TypeError),
    ({"content": "x", "session_id": ["s"]}, TypeError),
    ({"content": "x", "metadata": [1, 2]}, TypeError),
    ({"content": "x", "metadata": {"f": math.nan}}, ValueError),
    ({"content": "x", "metadata": {"f": math.inf}}, ValueError),
    ({"content": "x", "metadata": {1: "int key"}}, TypeError),
    ({"content": "x", "metadata": {"t": (1, 2)}}, TypeError),
    ({"content": "x", "metadata": {"s": {1, 2}}}, TypeError),
    ({"content": "x", "metadata": {"d": datetime(2020, 1, 1)}}, TypeError),
    ({"content": "x", "timestamp": datetime(2020, 1, 1)}, ValueError),  # naive
    ({"content": "x", "timestamp": math.nan}, ValueError),
    ({"content": "x", "timestamp": -math.inf}, ValueError),
    ({"content": "x", "timestamp": 1e20}, ValueError),
    ({"content": "x", "timestamp": True}, TypeError),
    ({"content": "x", "timestamp": "2020-01-01"}, TypeError),
    ({"content": "lone \ud800 surrogate"}, ValueError),
]


@pytest.mark.parametrize(("kwargs", "builtin"), BAD_SAVES)
async def test_bad_saves_raise_typed_errors_and_save_nothing(
    mem: ContextForge, kwargs: dict[str, Any], builtin: type[Exception]
) -> None:
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError) as info:
        await mem.save(content, **kwargs)
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, ContextForgeError)
    assert str(info.value)
    assert await mem.count() == 0


async def test_deeply_nested_metadata_is_refused(mem: ContextForge) -> None:
    nested: dict[str, Any] = {}
    node = nested
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(InvalidInputError, match="nested"):
        await mem.save("x", metadata=nested)


async def test_save_many_names_the_bad_item_and_saves_nothing(mem: ContextForge) -> None:
    items: list[Any] = [{"content": "good"}, {"content": "also good"}, {"content": 5}]
    with pytest.raises(InvalidTypeError, match="item 2"):
        await mem.save_many(items)
    with pytest.raises(InvalidInputError, match="item 1"):
        await mem.save_many([{"content": "good"}, {"content": "x", "colour": "red"}])
    with pytest.raises(InvalidInputError, match="item 0"):
        await mem.save_many([{"kind": "note"}])
    with pytest.raises(InvalidTypeError, match="item 0"):
        await mem.save_many(["just a string"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="item 1"):
        await mem.save_many([{"content": "fine"}, {"content": " "}])  # refused by the engine
    assert await mem.count() == 0


@pytest.mark.parametrize(
    ("args", "builtin"),
    [
        (("q", None, 0), ValueError),
        (("q", None, -5), ValueError),
        (("q", None, 2**64), ValueError),
        (("q", None, 1.5), TypeError),
        (("q", None, True), TypeError),
        ((None, None, 100), TypeError),
        ((b"q", None, 100), TypeError),
        (("q", 5, 100), TypeError),
        (("q", [], 100), ValueError),
        (("q", [""], 100), ValueError),
    ],
)
async def test_bad_queries_raise_typed_errors(
    mem: ContextForge, args: tuple[Any, ...], builtin: type[Exception]
) -> None:
    with pytest.raises(InvalidInputError) as info:
        await mem.query(*args)
    assert isinstance(info.value, builtin)


async def test_bad_query_clock_is_refused(mem: ContextForge) -> None:
    with pytest.raises(InvalidInputError):
        await mem.query("q", now=math.nan)
    with pytest.raises(InvalidInputError):
        await mem.query("q", now=datetime(2020, 1, 1))


HOSTILE = [
    "AND",
    "OR",
    "NOT",
    "-x",
    "+x",
    "field:x",
    "content:deploy",
    '"unterminated',
    '"deploy failed"',
    "(deploy OR",
    "[a TO z]",
    "{x}",
    "*",
    "dep*",
    "deploy~2",
    "deploy^10",
    "\\",
    "🚀🔥",
    "",
    "   \n\t ",
    "\x00",
    "a" * 100_000,
    "deploy " * 15_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:20]))
async def test_query_text_is_data_not_syntax(mem: ContextForge, text: str) -> None:
    # Entries are searchable by their date's words too: a fixed date whose words
    # (15 March 2024) are none of the queries', so that "deploy~2" saved on the
    # 2nd of a month does not find the gardening notes by their day.
    when = datetime(2024, 3, 15, 9, tzinfo=timezone.utc)
    target = await mem.save("the deploy failed: field x AND y OR not", scope="s", timestamp=when)
    other = await mem.save("unrelated gardening notes", scope="s", timestamp=when)
    hits = await mem.query(text, "s", 2048)
    if text.strip():
        assert all(h.id == target for h in hits)
    else:
        # No words: the scope's entries, newest first (docs/filters.md), unscored.
        assert [h.id for h in hits] == [other, target]
        assert all(h.score is None for h in hits)


async def test_operators_are_plain_words(mem: ContextForge) -> None:
    target = await mem.save("remember: NOT the red one", scope="s")
    other = await mem.save("the red one", scope="s")
    # "-red" must not exclude the entries that mention red.
    ids = {h.id for h in await mem.query("-red", "s")}
    assert ids == {target, other}
    # "NOT" is a word that only the first entry contains.
    assert [h.id for h in await mem.query("NOT", "s")] == [target]
