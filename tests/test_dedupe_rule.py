"""One duplicate rule: an item repeated within one `save_many` lands where a
second `save` would, whatever the batch's size or its place in the batch, on a
file and on a server."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from contextforge import Config, ContextForge

from .sqld import Sqld, sqld_shared_fixture  # noqa: F401  (provides the `sqld_shared` fixture)

NOW = datetime.now(timezone.utc)
LATER = NOW + timedelta(days=300)
MUCH_LATER = NOW + timedelta(days=600)
BEFORE = NOW - timedelta(days=300)
LONG_BEFORE = NOW - timedelta(days=600)

# (earlier item, later item, whether the later lands on the earlier)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    "plain": ({}, {}, True),
    "same end": ({"valid_to": LATER}, {"valid_to": LATER}, True),
    "only the earlier ends": ({"valid_to": LATER}, {}, False),
    "only the later ends": ({}, {"valid_to": LATER}, False),
    "different ends": ({"valid_to": LATER}, {"valid_to": MUCH_LATER}, False),
    "both ended": (
        {"valid_from": LONG_BEFORE, "valid_to": BEFORE},
        {"valid_from": LONG_BEFORE, "valid_to": BEFORE},
        False,
    ),
    "different starts": ({"valid_from": LONG_BEFORE}, {"valid_from": BEFORE}, True),
    "same expiry": ({"expires_at": LATER}, {"expires_at": LATER}, True),
    "both expired": ({"expires_at": BEFORE}, {"expires_at": BEFORE}, False),
    "only the earlier expires": ({"expires_at": LATER}, {}, False),
    "only the later expires": ({}, {"expires_at": LATER}, False),
    "different expiries": ({"expires_at": LATER}, {"expires_at": MUCH_LATER}, False),
    "other metadata": ({"metadata": {"a": 1}}, {"metadata": {"a": 2}}, False),
    "the later not deduplicated": ({}, {"dedupe": False}, False),
    "the earlier not deduplicated": ({"dedupe": False}, {}, True),
}

# (batch size, place of the earlier item, place of the later), covering a pair
# inside a group of 64, inside a short group, and the later item saved alone
# after the groups.
LAYOUTS = [(2, 0, 1), (64, 0, 63), (5, 1, 3), (5, 0, 4), (70, 10, 69)]


def item(fields: dict[str, Any], scope: str) -> dict[str, Any]:
    return {"content": "the same words", "scope": scope, **fields}


async def one_by_one(cf: ContextForge, case: str, scope: str) -> bool:
    a, b, _ = CASES[case]
    first = await cf.save(**item(a, scope))
    second = await cf.save(**item(b, scope))
    assert first.created
    return second == first and not second.created


async def in_one_call(
    cf: ContextForge, case: str, scope: str, layout: tuple[int, int, int]
) -> bool:
    a, b, _ = CASES[case]
    n, i, j = layout
    items = [{"content": f"filler {k}", "scope": scope} for k in range(n)]
    items[i], items[j] = item(a, scope), item(b, scope)
    saved = await cf.save_many(items)
    assert len(saved) == n and saved[i].created
    assert all(s.created for k, s in enumerate(saved) if k not in (i, j))
    assert len({int(s) for s in saved}) == n - (saved[j] == saved[i])
    return saved[j] == saved[i] and not saved[j].created


@pytest.mark.parametrize("case", CASES)
async def test_a_repeat_in_one_call_lands_where_a_second_save_would(case: str) -> None:
    expected = CASES[case][2]
    async with await ContextForge.open() as cf:
        assert await one_by_one(cf, case, "one") is expected
        for layout in LAYOUTS:
            merged = await in_one_call(cf, case, f"batch {layout}", layout)
            assert merged is expected, layout


# A server saves a call of plain entries in one plan (`insert_many`), every
# layout alike; a cap on a scope's entries sends it through the grouped
# transaction instead, as on a file.
@pytest.mark.parametrize(
    "case", ["same end", "only the later ends", "both expired", "different starts"]
)
@pytest.mark.parametrize("capped", [False, True])
async def test_the_same_rule_on_a_server(sqld_shared: Sqld, case: str, capped: bool) -> None:
    expected = CASES[case][2]
    config = Config(path=sqld_shared.url, max_entries_per_scope=1000 if capped else None)
    async with await ContextForge.open(config) as cf:
        prefix = f"{case} {'capped' if capped else 'plain'}"
        assert await one_by_one(cf, case, f"{prefix} one") is expected
        for layout in LAYOUTS:
            merged = await in_one_call(cf, case, f"{prefix} {layout}", layout)
            assert merged is expected, layout
