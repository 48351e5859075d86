"""One scope never sees another's entries."""

from __future__ import annotations

from contextforge import ALL_SCOPES, Config, ContextForge
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

SCOPES = ["user:1", "user:2", "user:10", "team:a", None]
WORDS = ["apple", "banana", "cherry", "deploy", "error", "failure"]


async def test_scope_filters_and_global_entries(mem: ContextForge) -> None:
    a = await mem.save("apple pie", scope="user:1")
    b = await mem.save("apple tart", scope="user:2")
    g = await mem.save("apple juice")
    assert [h.id for h in await mem.query("apple", "user:1")] == [a]
    assert [h.id for h in await mem.query("apple", "user:2")] == [b]
    assert {h.id for h in await mem.query("apple", ["user:1", None])} == {a, g}
    assert {h.id for h in await mem.query("apple", None)} == {g}  # None: global entries only
    assert {h.id for h in await mem.query("apple", ALL_SCOPES)} == {a, b, g}
    assert await mem.query("apple", "user") == []  # no prefix matching
    assert await mem.query("apple", "USER:1") == []  # scopes are exact


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(
    entries=[
        ("user:1", ["banana"]),
        ("user:1", ["banana"]),
        ("user:1", ["banana"]),
        ("user:1", ["apple", "apple", "banana"]),
    ],
    query=["apple", "banana"],
    scope="user:1",
    flush_midway=False,
)
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(SCOPES), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)
        ),
        min_size=1,
        max_size=25,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    scope=st.sampled_from(SCOPES[:-1]),
    flush_midway=st.booleans(),
)
async def test_queries_in_a_scope_only_return_that_scope(
    entries: list[tuple[str | None, list[str]]],
    query: list[str],
    scope: str,
    flush_midway: bool,
) -> None:
    # Identical entries are kept apart (near duplicates are otherwise returned once),
    # and the relevance floor is off: a word in every entry of the scope scores under
    # a tenth of a rarer one (four entries of "banana" and "apple apple banana",
    # queried for "apple banana", found by Hypothesis), and completeness is the claim.
    config = Config(duplicate_similarity=1.5, min_relative_relevance=0.0)
    async with await ContextForge.open(config) as cf:
        owner: dict[int, str | None] = {}
        for i, (s, words) in enumerate(entries):
            owner[await cf.save(" ".join(words), scope=s, dedupe=False)] = s
            if flush_midway and i == len(entries) // 2:
                await cf.flush()
        hits = await cf.query(" ".join(query), scope, 1_000_000)
        assert all(owner[h.id] == scope for h in hits)
        # ...and it finds every entry of that scope that shares a word with the query.
        expected = {
            i for i, (s, (words)) in zip(owner, entries) if s == scope and set(words) & set(query)
        }
        assert {h.id for h in hits} == expected
