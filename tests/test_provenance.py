"""Provenance: what each entry rests on, stored relationally and followed both
ways; forgetting by source, with cascade."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, ContextForgeSync, InvalidInputError, InvalidTypeError, Link


@pytest.fixture
def cf(tmp_path: Path) -> Iterator[ContextForgeSync]:
    with ContextForgeSync.open(str(tmp_path / "m.db")) as store:
        yield store


def test_sources_and_derived_follow_links_both_ways(cf: ContextForgeSync) -> None:
    msg = cf.save("I moved to Lisbon last week", "message", scope="u")
    url = "https://example.com/relocation"
    fact = cf.save("user lives in Lisbon", "fact", scope="u", sources=[(msg, 0, 27), url])
    summary = cf.save("the user relocated", "summary", scope="u", sources=[fact])
    up = cf.sources(summary)
    assert up == [
        Link(entry_id=summary, source_id=fact, ref=None, span=None, depth=1),
        Link(entry_id=fact, source_id=msg, ref=None, span=(0, 27), depth=2),
        Link(entry_id=fact, source_id=None, ref=url, span=None, depth=2),
    ]
    assert cf.sources(summary, depth=1) == up[:1]
    down = cf.derived(msg)
    assert [(d.entry_id, d.depth) for d in down] == [(fact, 1), (summary, 2)]
    # Deleting a source keeps what was derived from it, and says where it came from.
    assert cf.delete(msg)
    assert cf.get(fact) is not None
    assert [link.source_id for link in cf.sources(fact) if link.source_id] == [msg]


def test_bad_sources_are_refused_and_change_nothing(cf: ContextForgeSync) -> None:
    mine = cf.save("a message", scope="u")
    theirs = cf.save("their message", scope="other")
    cases: list[tuple[list[Any], str]] = [
        ([theirs], "no entry"),  # another scope: not found, as a missing id
        ([9999], "no entry"),
        ([""], "empty"),
        ([(mine, 5, 2)], "span"),
        ([("x", 0)], "span"),
    ]
    for bad, error in cases:
        with pytest.raises(InvalidInputError, match=error):
            cf.save("derived", scope="u", sources=bad)
    for bad_type in ([1.5], "not-a-list", [True]):
        with pytest.raises(InvalidTypeError):
            cf.save("derived", scope="u", sources=bad_type)  # type: ignore[arg-type]
    assert cf.count(ALL_SCOPES) == 2
    # Opting in allows another scope's entry; its content is not shown.
    linked = cf.save("derived", scope="u", sources=[theirs], cross_scope_sources=True)
    assert cf.sources(linked) == [Link(linked, theirs, None, None, 1)]


def test_a_restored_entry_cannot_close_a_cycle(cf: ContextForgeSync) -> None:
    a = cf.save("a", scope="u")
    b = cf.save("b", scope="u", sources=[a])
    cf.delete(a)
    with pytest.raises(InvalidInputError, match="cycle"):
        cf.save_many([{"content": "a again", "scope": "u", "id": int(a), "sources": [int(b)]}])
    assert cf.get(a) is None


def test_forget_by_source_and_cascade(cf: ContextForgeSync) -> None:
    msg = cf.save("my card is 4242", "message", scope="u")
    fact = cf.save("user's card ends 4242", "fact", scope="u", sources=[msg])
    summary = cf.save("card details shared", "summary", scope="u", sources=[fact])
    ext = cf.save("from slack", "fact", scope="u", sources=["slack:C1/17.1"])
    other = cf.save("unrelated", scope="u")
    assert cf.forget(source="slack:C1/17.1").ids == (ext,)
    receipt = cf.forget(ids=[msg], cascade=True)
    assert receipt.ids == (msg, fact, summary)
    assert cf.get(other) is not None and cf.count("u") == 1


def test_hits_carry_their_sources_on_request(cf: ContextForgeSync) -> None:
    msg = cf.save("we ship on friday", "message", scope="u")
    fact = cf.save("the release ships on friday", "fact", scope="u", sources=[msg, "jira:REL-7"])
    hits = cf.query("ships friday", "u", 512, with_sources=True)
    assert hits.sources is not None
    assert {h.id for h in hits} == {msg, fact}
    assert hits.sources[fact] == [
        Link(fact, msg, None, None, 1),
        Link(fact, None, "jira:REL-7", None, 1),
    ]
    assert hits.sources[msg] == []
    assert cf.query("ships friday", "u", 512).sources is None
