"""Keyed facts, supersession and validity time through the public API
(docs/keyed-facts.md): current truth by default, as-of reads, history, and the
timeline rule checked against a model with random operations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, ContextForge, ContextForgeSync, Hit, InvalidInputError
from hypothesis import given, settings
from hypothesis import strategies as st

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


@pytest.fixture
def cf(tmp_path: Path) -> Iterator[ContextForgeSync]:
    with ContextForgeSync.open(str(tmp_path / "memory.db")) as store:
        yield store


def contents(hits: Iterable[Hit]) -> list[str]:
    return [h.content for h in hits]


def test_the_current_version_answers_and_the_old_one_is_kept(cf: ContextForgeSync) -> None:
    berlin = cf.save("Alice lives in Berlin", "fact", scope="u", key="city", timestamp=day(0))
    paris = cf.save("Alice lives in Paris", "fact", scope="u", key="city", timestamp=day(30))
    assert berlin.created and paris.created and berlin != paris
    assert contents(cf.query("where does Alice live", "u", 512)) == ["Alice lives in Paris"]
    assert contents(cf.query("where does Alice live", "u", 512, as_of=day(10))) == [
        "Alice lives in Berlin"
    ]
    both = cf.query("where does Alice live", "u", 512, include_superseded=True)
    assert sorted(contents(both)) == ["Alice lives in Berlin", "Alice lives in Paris"]
    assert {h.content: h.current for h in both} == {
        "Alice lives in Berlin": False,
        "Alice lives in Paris": True,
    }
    old = cf.get(berlin, include_superseded=True)
    assert old is not None
    assert (old.key, old.valid_from, old.valid_to, old.superseded_by) == (
        "city",
        day(0),
        day(30),
        paris,
    )
    # Current truth by default everywhere: get, get_many, list, count.
    assert cf.get(berlin) is None
    assert cf.get_many([berlin, paris])[1] is not None
    assert contents(cf.list(scope="u")) == ["Alice lives in Paris"]
    assert cf.count("u") == 1 and cf.count("u", include_superseded=True) == 2
    assert cf.count("u", as_of=day(10)) == 1
    assert contents(cf.context("where does Alice live", "u", 512).hits) == ["Alice lives in Paris"]
    history = cf.history("city", "u")
    assert [(h.content, h.valid_from, h.valid_to) for h in history] == [
        ("Alice lives in Berlin", day(0), day(30)),
        ("Alice lives in Paris", day(30), None),
    ]
    assert [h.id for h in cf.versions(berlin)] == [berlin, paris]


def test_a_superseded_version_never_takes_budget_from_current_ones(cf: ContextForgeSync) -> None:
    """The filter is inside the index: a budget with room for one hit gets the
    current version even when many stale versions rank above it."""
    for n in range(30):
        cf.save(
            f"the deploy target is cluster {n} deploy deploy",
            scope="u",
            key="target",
            timestamp=day(n),
        )
    cf.save("deploy target: cluster final", scope="u", key="target", timestamp=day(40))
    hits = cf.query("deploy target cluster", "u", 64, limit=1, now=NOW)
    assert contents(hits) == ["deploy target: cluster final"]


def test_the_same_content_under_a_key_adds_no_version(cf: ContextForgeSync) -> None:
    first = cf.save("Alice lives in Berlin", scope="u", key="city", timestamp=day(0))
    again = cf.save("Alice   lives in Berlin", scope="u", key="city", timestamp=day(5))
    assert again == first and not again.created
    # A plain save of the same words is not a version of the key.
    plain = cf.save("Alice lives in Berlin", scope="u", timestamp=day(6))
    assert plain.created and plain != first
    assert len(cf.history("city", "u")) == 1


def test_keys_are_labels_normalised_to_nfc(cf: ContextForgeSync) -> None:
    composed = cf.save("the café is open", scope="u", key="caf\u00e9.hours", timestamp=day(0))
    cf.save("the café is closed", scope="u", key="cafe\u0301.hours", timestamp=day(1))
    assert cf.history("caf\u00e9.hours", "u")[0].id == composed
    assert len(cf.history("cafe\u0301.hours", "u")) == 2
    for bad in ("", "a\nb", "x" * 600):
        with pytest.raises(InvalidInputError):
            cf.save("x", scope="u", key=bad)
    with pytest.raises(InvalidInputError):
        cf.save("x", scope="u", key="k", valid_from=day(5), valid_to=day(5))
    assert cf.count(ALL_SCOPES, include_superseded=True) == 2


def test_keys_and_corrections_stay_in_their_scope(cf: ContextForgeSync) -> None:
    mine = cf.save("Alice lives in Berlin", scope="user:a", key="city", timestamp=day(0))
    cf.save("Bob lives in Oslo", scope="user:b", key="city", timestamp=day(1))
    got = cf.get(mine)
    assert got is not None and got.current and got.superseded_by is None
    with pytest.raises(InvalidInputError, match="no entry"):
        cf.save("hijack", scope="user:b", supersedes=int(mine))
    assert cf.history("city", "user:a")[0].valid_to is None


def test_supersede_corrects_an_entry_without_a_key(cf: ContextForgeSync) -> None:
    wrong = cf.save("standup is at 9", "fact", scope="u", timestamp=day(0))
    right = cf.supersede(wrong, "standup is at 10", timestamp=day(1))
    hit = cf.get(right)
    assert hit is not None and hit.kind == "fact" and hit.scope == "u"
    assert contents(cf.query("standup", "u", 256)) == ["standup is at 10"]
    with pytest.raises(InvalidInputError, match="already superseded"):
        cf.supersede(wrong, "standup is at 11")
    assert [h.id for h in cf.versions(right)] == [wrong, right]
    # A keyed entry's correction is a new version of its key.
    city = cf.save("Alice lives in Berlin", scope="u", key="city", timestamp=day(0))
    moved = cf.supersede(city, "Alice lives in Rome", timestamp=day(3))
    assert [h.id for h in cf.history("city", "u")] == [city, moved]


def test_a_fact_for_a_period(cf: ContextForgeSync) -> None:
    cf.save(
        "the office is closed", scope="u", valid_from=day(10), valid_to=day(24), timestamp=day(0)
    )
    assert cf.query("office closed", "u", 256, as_of=day(5)) == []
    assert len(cf.query("office closed", "u", 256, as_of=day(12))) == 1
    assert cf.query("office closed", "u", 256, as_of=day(24)) == []


def test_export_keeps_what_the_store_says(tmp_path: Path) -> None:
    """Reopening keeps keys, intervals and links: they live in the database."""
    path = str(tmp_path / "m.db")

    async def run() -> None:
        async with await ContextForge.open(path) as cf:
            await cf.save("v1", scope="u", key="k", timestamp=day(0))
            await cf.save("v2", scope="u", key="k", timestamp=day(1))
        async with await ContextForge.open(path) as cf:
            history = await cf.history("k", "u")
            assert [(h.content, h.valid_to, h.current) for h in history] == [
                ("v1", day(1), False),
                ("v2", None, True),
            ]
            assert [h.content for h in await cf.query("v1 v2", "u", 256)] == ["v2"]

    asyncio.run(run())


# The model: a key's versions sorted by (valid_from, id); each holds until the
# next starts. Corrections without a key form chains the same way.
_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("save"), st.sampled_from(["k1", "k2"]), st.integers(0, 40), st.integers(0, 3)
        ),
        st.tuples(st.just("delete"), st.integers(0, 30)),
        st.tuples(st.just("correct"), st.integers(0, 30), st.integers(0, 40)),
        st.tuples(st.just("update"), st.integers(0, 30)),
        st.tuples(st.just("adopt"), st.sampled_from(["k1", "k2"]), st.integers(0, 40)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(ops=_ops)
def test_random_operations_keep_every_timeline_consistent(ops: list[tuple[Any, ...]]) -> None:
    model: dict[str, list[tuple[int, int, str]]] = {
        "k1": [],
        "k2": [],
    }  # key -> [(from, id, content)]
    ids: list[int] = []
    corrections = 0
    with ContextForgeSync.open(":memory:") as cf:
        for op in ops:
            if op[0] == "save":
                _, key, start, value = op
                content = f"{key} is value{value}"
                versions = sorted(model[key])
                before = [v for v in versions if v[0] <= start]
                saved = cf.save(content, scope="u", key=key, timestamp=day(start))
                if before and before[-1][2] == content:
                    assert saved == before[-1][1] and not saved.created
                else:
                    assert saved.created
                    model[key].append((start, int(saved), content))
                    ids.append(int(saved))
            elif op[0] == "delete" and ids:
                victim = ids.pop(op[1] % len(ids))
                assert cf.delete(victim)
                for key, versions in model.items():
                    versions[:] = [v for v in versions if v[1] != victim]
            elif op[0] == "correct" and ids:
                target = ids[op[1] % len(ids)]
                hit = cf.get(target, include_superseded=True)
                assert hit is not None and hit.key is not None
                start = int(op[2])
                corrections += 1
                text = f"correction {corrections} at {start}"
                saved = cf.supersede(target, text, timestamp=day(start))
                assert saved.created
                model[hit.key].append((start, int(saved), text))
                ids.append(int(saved))
            elif op[0] == "update" and ids:
                target = ids[op[1] % len(ids)]
                corrections += 1
                text = f"edited {corrections}"
                edited = cf.update(target, content=text)
                assert edited.key is not None
                versions = model[edited.key]
                model[edited.key] = [(f, i, text if i == target else c) for f, i, c in versions]
            elif op[0] == "adopt":
                _, key, start = op
                corrections += 1
                plain = cf.save(f"adopted {corrections}", scope="u", timestamp=day(start))
                adopted = cf.update(plain, key=key)
                assert adopted.key == key and adopted.valid_from == day(start)
                model[key].append((start, int(plain), f"adopted {corrections}"))
                ids.append(int(plain))
        for key, versions in model.items():
            versions.sort()
            history = cf.history(key, "u")
            assert [h.id for h in history] == [v[1] for v in versions]
            assert [h.content for h in history] == [v[2] for v in versions]
            for i, (h, v) in enumerate(zip(history, versions, strict=True)):
                ends = day(versions[i + 1][0]) if i + 1 < len(versions) else None
                assert (h.valid_from, h.valid_to) == (day(v[0]), ends), (key, i)
                assert h.superseded_by == (versions[i + 1][1] if i + 1 < len(versions) else None)
            # At every time at most one version holds, and it is the model's.
            for t in range(-1, 43, 3):
                holding = [v for v in versions if v[0] <= t]
                want = holding[-1] if holding else None
                hits = cf.query(
                    f"{key} value correction edited adopted", "u", 4096, as_of=day(t + 0.5)
                )
                of_key = [h.id for h in hits if h.key == key]
                assert of_key == ([] if want is None else [want[1]]), (key, t)


def test_plain_entries_read_as_before_whatever_the_clock(cf: ContextForgeSync) -> None:
    """An entry without a key or an interval holds at every time: a query's
    ``now=`` (its recency clock) or ``as_of`` never hides it."""
    plain = cf.save("the wiki lives on the intranet", scope="u")
    assert [h.id for h in cf.query("wiki intranet", "u", 256, now=day(0))] == [plain]
    assert [h.id for h in cf.query("wiki intranet", "u", 256, as_of=day(0))] == [plain]
    assert cf.count("u", as_of=day(0)) == 1
    hit = cf.get(plain)
    assert hit is not None and hit.current and hit.valid_from == hit.timestamp


def test_current_follows_the_query_clock(cf: ContextForgeSync) -> None:
    cf.save("the plan is A", scope="u", key="plan", timestamp=day(0))
    cf.save("the plan is B", scope="u", key="plan", timestamp=day(10))
    [then] = cf.query("plan", "u", 256, now=day(5))
    assert then.content == "the plan is A" and then.current
    both = cf.query("plan", "u", 256, now=day(5), include_superseded=True)
    assert {h.content: h.current for h in both} == {"the plan is A": True, "the plan is B": False}


def test_a_plain_save_never_lands_on_a_superseded_entry(cf: ContextForgeSync) -> None:
    old = cf.save("standup is at 9", scope="u", timestamp=day(0))
    cf.supersede(old, "standup is at 10", timestamp=day(1))
    again = cf.save("standup is at 9", scope="u", timestamp=day(2))
    assert again.created and again != old
    assert cf.get(again) is not None


def test_update_gives_a_plain_entry_a_key(cf: ContextForgeSync) -> None:
    old = cf.save("Alice lives in Berlin", scope="u", timestamp=day(0))
    new = cf.save("Alice lives in Paris", scope="u", key="city", timestamp=day(10))
    hit = cf.update(old, key="city")
    assert (hit.key, hit.valid_to, hit.superseded_by) == ("city", day(10), new)
    assert [h.id for h in cf.history("city", "u")] == [old, new]
    assert contents(cf.query("where does Alice live", "u", 256)) == ["Alice lives in Paris"]
    with pytest.raises(InvalidInputError, match="already a version"):
        cf.update(new, key="town")
    with pytest.raises(InvalidInputError, match="another scope"):
        cf.update(new, scope="elsewhere")
    assert cf.history("town", "u") == []


def test_a_current_fact_saved_long_ago_beats_a_superseded_one_saved_yesterday(
    cf: ContextForgeSync,
) -> None:
    """Validity before recency: a version that no longer holds never competes,
    however recent its timestamp."""
    cf.save("Alice's city is Paris", scope="u", key="city", timestamp=NOW - timedelta(days=300))
    late = cf.save(
        "Alice's city is Berlin",
        scope="u",
        key="city",
        timestamp=NOW - timedelta(days=1),
        valid_from=NOW - timedelta(days=400),
    )
    assert contents(cf.query("Alice city", "u", 256, now=NOW)) == ["Alice's city is Paris"]
    stale = cf.get(late, include_superseded=True)
    assert stale is not None and stale.valid_to == NOW - timedelta(days=300)


def test_as_of_and_every_version_are_refused_together(cf: ContextForgeSync) -> None:
    cf.save("v1", scope="u", key="k", timestamp=day(0))
    for call in (
        lambda: cf.query("v1", "u", 256, as_of=day(1), include_superseded=True),
        lambda: cf.count("u", as_of=day(1), include_superseded=True),
        lambda: cf.get_many([1], as_of=day(1), include_superseded=True),
    ):
        with pytest.raises(InvalidInputError, match="not both"):
            call()
