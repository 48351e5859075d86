"""Provenance in distillation (issue 23): each fact and summary that
``distill_and_save`` and ``distill_session`` save is linked to the messages it
came from (``sources()``), so that forgetting a message with ``cascade=True``
takes what was distilled from it. The model is a real HTTP server on 127.0.0.1
(``test_distill_client.ChatServer``) that reads the numbered messages of the
prompt and answers with their numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from contextforge import ContextForge, InvalidInputError, InvalidTypeError
from contextforge.distill import (
    Distillation,
    Fact,
    SavedItem,
    accepts_messages,
    distill_all,
    merge,
    message_ids,
)

from .test_distill_client import ChatServer, Reply, answer, distiller, server

__all__ = ["server"]  # the fixture, imported for use here

SCOPE = "user:ann"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
_LINE = re.compile(r"^\[(\d+)\] (.*)$")

#: A word the model turns into a fact, with the fact.
FACTS = {
    "Berlin": ("state", "Ann lives in Berlin."),
    "tea": ("preference", "Ann prefers tea to coffee."),
    "Friday": ("decision", "The launch is on Friday."),
}


def numbered(body: dict[str, Any]) -> dict[int, str]:
    """The numbered messages of a request's transcript."""
    user = body["messages"][1]["content"]
    inner = user.split("<transcript>\n", 1)[1].rsplit("\n</transcript>", 1)[0]
    out: dict[int, str] = {}
    for line in inner.split("\n"):
        m = _LINE.match(line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def reader(body: dict[str, Any]) -> Reply:
    """A model that knows which message says what: one fact per word of
    ``FACTS`` found, resting on the messages that say it."""
    found: dict[str, list[int]] = {}
    for n, text in numbered(body).items():
        for word in FACTS:
            if word in text:
                found.setdefault(word, []).append(n)
    facts = [
        {"kind": FACTS[w][0], "text": FACTS[w][1], "key": None, "sources": ns}
        for w, ns in found.items()
    ]
    return answer("Ann talked about her week.", facts)


def fact_items(result: Any) -> dict[str, SavedItem]:
    return {item.text: item for item in result.saved if item.kind == "fact"}


def summary_item(result: Any) -> SavedItem:
    [item] = [item for item in result.saved if item.kind == "summary"]
    assert isinstance(item, SavedItem)
    return item


async def refs(mem: ContextForge, entry_id: int) -> list[str]:
    return sorted(str(link.ref) for link in await mem.sources(entry_id, depth=1))


async def source_ids(mem: ContextForge, entry_id: int) -> list[int]:
    links = await mem.sources(entry_id, depth=1)
    assert all(link.ref is None for link in links)
    return sorted(link.source_id for link in links if link.source_id is not None)


CHAT: list[dict[str, Any]] = [
    {"id": "msg-1", "role": "user", "content": "Hi, I just moved to Berlin."},
    {"id": "msg-2", "role": "assistant", "content": "Welcome! How is it going?"},
    {"id": "msg-3", "role": "user", "content": "Good. I drink tea every morning."},
    {"id": 4, "role": "user", "content": "And we ship the launch on Friday."},
]


# ---------------------------------------------------------------------------
# The model distiller over a raw transcript
# ---------------------------------------------------------------------------


async def test_facts_are_linked_to_the_ids_of_their_messages(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = reader
    async with distiller(server) as model:
        result = await mem.distill_and_save(CHAT, scope=SCOPE, distiller=model)
    [request] = server.requests
    assert numbered(request.body) == {
        0: "user: Hi, I just moved to Berlin.",
        1: "assistant: Welcome! How is it going?",
        2: "user: Good. I drink tea every morning.",
        3: "user: And we ship the launch on Friday.",
    }
    assert '"sources"' in request.body["messages"][0]["content"]
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["facts"]["items"]["properties"]["sources"] == {
        "type": "array",
        "items": {"type": "integer"},
    }
    facts = fact_items(result)
    assert facts["Ann lives in Berlin."].sources == ("msg-1",)
    assert facts["Ann prefers tea to coffee."].sources == ("msg-3",)
    assert facts["The launch is on Friday."].sources == ("4",)  # an int id, as a reference
    for text, ref in [
        ("Ann lives in Berlin.", "msg-1"),
        ("Ann prefers tea to coffee.", "msg-3"),
        ("The launch is on Friday.", "4"),
    ]:
        assert await refs(mem, facts[text].id) == [ref]
    summary = summary_item(result)
    assert summary.sources == ("msg-1", "msg-2", "msg-3", "4")
    assert await refs(mem, summary.id) == sorted(["msg-1", "msg-2", "msg-3", "4"])
    # The facts are found from a message id too.
    [link] = [
        link for link in await mem.sources(facts["Ann lives in Berlin."].id) if link.ref == "msg-1"
    ]
    assert link.entry_id == facts["Ann lives in Berlin."].id and link.depth == 1


async def test_chunks_number_their_own_messages_and_map_to_the_transcript(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = reader
    filler = [
        {"id": f"pad-{i}", "role": "assistant", "content": f"Filler sentence number {i} here."}
        for i in range(12)
    ]
    chat = [*filler[:6], CHAT[0], *filler[6:], CHAT[2], {**CHAT[0], "id": "again"}]
    async with distiller(server) as model:
        result = await mem.distill_and_save(chat, scope=SCOPE, distiller=model, max_chunk_tokens=40)
    assert result.chunks > 2 and len(server.requests) == result.chunks
    for request in server.requests:  # every chunk numbers from 0
        assert min(numbered(request.body)) == 0
    facts = fact_items(result)
    # Said twice, in two chunks: one fact resting on both messages.
    assert facts["Ann lives in Berlin."].sources == ("msg-1", "again")
    assert facts["Ann prefers tea to coffee."].sources == ("msg-3",)
    assert await refs(mem, facts["Ann lives in Berlin."].id) == ["again", "msg-1"]
    assert len(summary_item(result).sources) == len(chat)


async def test_out_of_range_and_malformed_numbers_are_dropped_and_the_fact_kept(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = answer(
        "Ann moved.",
        [
            {
                "kind": "state",
                "text": "Ann lives in Berlin.",
                "key": None,
                "sources": [0, 99, -1, 4, "2", True, 1.0, None, 2, 0],
            },
            {
                "kind": "preference",
                "text": "Ann prefers tea to coffee.",
                "key": None,
                "sources": [7],
            },
            {"kind": "fact", "text": "Ann has a cat.", "key": None, "sources": "0"},
            {"kind": "fact", "text": "Ann has a bike.", "key": None},
        ],
    )
    async with distiller(server) as model:
        result = await mem.distill_and_save(CHAT, scope=SCOPE, distiller=model)
    facts = fact_items(result)
    assert set(facts) == {
        "Ann lives in Berlin.",
        "Ann prefers tea to coffee.",
        "Ann has a cat.",
        "Ann has a bike.",
    }
    assert facts["Ann lives in Berlin."].sources == ("msg-1", "msg-3")
    assert await refs(mem, facts["Ann lives in Berlin."].id) == ["msg-1", "msg-3"]
    for text in ("Ann prefers tea to coffee.", "Ann has a cat.", "Ann has a bike."):
        assert facts[text].sources == ()
        assert await mem.sources(facts[text].id) == []


async def test_the_distiller_alone_reports_message_indexes(server: ChatServer) -> None:
    server.default = answer(
        "s",
        [
            {"kind": "fact", "text": "A.", "key": None, "sources": [1, 0, 5]},
            {"kind": "fact", "text": "a.", "key": None, "sources": [2]},  # a repeat
        ],
    )
    async with distiller(server) as model:
        got = await model("ann: one\n\nbob: two\nann: three")  # lines are the messages
        assert got.facts == (Fact("fact", "A.", sources=(0, 1, 2)),)
        again = await model("ignored", messages=["x: a\nmore", "y: b"])
        assert again.facts == (Fact("fact", "A.", sources=(0, 1)),)
        with pytest.raises(InvalidTypeError):
            await model("t", messages=[1])  # type: ignore[list-item]
    assert numbered(server.requests[0].body) == {0: "ann: one", 1: "bob: two", 2: "ann: three"}
    user = server.requests[1].body["messages"][1]["content"]
    assert "[0] x: a\n    more\n[1] y: b" in user  # a message's later lines are indented


async def test_no_ids_no_sources(mem: ContextForge, server: ChatServer) -> None:
    server.default = reader
    plain = [{k: v for k, v in m.items() if k != "id"} for m in CHAT]
    text = "\n".join(f"{m['role']}: {m['content']}" for m in plain)
    async with distiller(server) as model:
        for transcript in (plain, text, [(m["role"], m["content"]) for m in plain]):
            result = await mem.distill_and_save(
                transcript, scope=SCOPE, session_id=f"s{len(server.requests)}", distiller=model
            )
            assert result.saved and all(item.sources == () for item in result.saved)
            for item in result.saved:
                assert await mem.sources(item.id) == []


async def test_ids_the_store_would_refuse_are_not_linked(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = reader
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    chat = [
        {**CHAT[0], "id": secret},
        {**CHAT[2], "id": "bad\x00id"},
        {**CHAT[3], "id": "x" * 3000},
        {"role": "user", "content": "Berlin again, yes.", "id": "ok-1"},
        {"role": "user", "content": "tea, yes.", "id": 2.5},
    ]
    assert message_ids(chat) == [secret, "bad\x00id", "x" * 3000, "ok-1", None]
    async with distiller(server) as model:
        result = await mem.distill_and_save(chat, scope=SCOPE, distiller=model)
    facts = fact_items(result)
    assert facts["Ann lives in Berlin."].sources == ("ok-1",)
    assert facts["Ann prefers tea to coffee."].sources == ()
    assert facts["The launch is on Friday."].sources == ()
    assert summary_item(result).sources == ("ok-1",)


# ---------------------------------------------------------------------------
# The offline extractor
# ---------------------------------------------------------------------------


async def test_the_offline_extractor_links_each_fact_to_its_message(mem: ContextForge) -> None:
    chat = [
        {"id": "a", "role": "user", "content": "Hello there."},
        {"id": "b", "role": "user", "content": "I decided to use Postgres for the project."},
        {"id": "c", "role": "user", "content": "Thanks."},
        {"id": "d", "role": "user", "content": "I prefer dark mode in every editor."},
    ]
    result = await mem.distill_and_save(chat, scope=SCOPE)
    facts = [item for item in result.saved if item.kind == "fact"]
    assert facts
    for item in facts:
        [ref] = item.sources
        [message] = [m for m in chat if m["id"] == ref]
        assert item.text.split(": ", 1)[-1].rstrip(".") in str(message["content"])
        assert await refs(mem, item.id) == [ref]


# ---------------------------------------------------------------------------
# distill_session: messages already in the store
# ---------------------------------------------------------------------------


async def save_session(mem: ContextForge, session: str = "mon") -> list[int]:
    ids = []
    for turn, message in enumerate(CHAT):
        saved = await mem.save(
            str(message["content"]),
            "message",
            scope=SCOPE,
            session_id=session,
            metadata={"role": message["role"], "turn": turn},
            timestamp=T0 + timedelta(minutes=turn),
        )
        ids.append(int(saved))
    return ids


async def test_distill_session_links_facts_to_the_message_entries(
    mem: ContextForge, server: ChatServer
) -> None:
    # Saved newest first: distill_session still reads them oldest first.
    ids = list(reversed(await save_session_reversed(mem)))
    await mem.save("Ann went to Rome.", "message", scope=SCOPE, session_id="tue")
    server.default = reader
    async with distiller(server) as model:
        result = await mem.distill_session(SCOPE, "mon", distiller=model)
    [request] = server.requests
    assert numbered(request.body) == {
        0: "user: Hi, I just moved to Berlin.",
        1: "assistant: Welcome! How is it going?",
        2: "user: Good. I drink tea every morning.",
        3: "user: And we ship the launch on Friday.",
    }
    facts = fact_items(result)
    assert facts["Ann lives in Berlin."].sources == (ids[0],)
    assert facts["Ann prefers tea to coffee."].sources == (ids[2],)
    assert facts["The launch is on Friday."].sources == (ids[3],)
    for text, i in [("Ann lives in Berlin.", 0), ("The launch is on Friday.", 3)]:
        assert await source_ids(mem, facts[text].id) == [ids[i]]
        derived = await mem.derived(ids[i], depth=1)
        assert facts[text].id in {link.entry_id for link in derived}
    summary = summary_item(result)
    assert await source_ids(mem, summary.id) == sorted(ids)
    for item in result.saved:  # saved in the session they came from
        entry = await mem.get(item.id)
        assert entry is not None and entry.session_id == "mon" and entry.scope == SCOPE

    # Again: the distilled entries are not messages, and nothing new is saved.
    async with distiller(server) as model:
        again = await mem.distill_session(SCOPE, "mon", distiller=model)
    assert len(numbered(server.requests[-1].body)) == 4
    assert again.saved == () and {i.id for i in again.skipped} == {i.id for i in result.saved}
    assert all(item.sources == () for item in again.skipped)


async def save_session_reversed(mem: ContextForge) -> list[int]:
    """The session's messages saved last turn first; their ids, in saving order."""
    ids = []
    for turn, message in reversed(list(enumerate(CHAT))):
        saved = await mem.save(
            str(message["content"]),
            "message",
            scope=SCOPE,
            session_id="mon",
            metadata={"role": message["role"], "turn": turn},
            timestamp=T0 + timedelta(minutes=turn),
        )
        ids.append(int(saved))
    return ids


async def test_forgetting_a_message_with_cascade_forgets_what_came_from_it(
    mem: ContextForge, server: ChatServer
) -> None:
    ids = await save_session(mem)
    server.default = reader
    async with distiller(server) as model:
        result = await mem.distill_session(SCOPE, "mon", distiller=model)
    facts = fact_items(result)
    berlin = facts["Ann lives in Berlin."].id
    tea = facts["Ann prefers tea to coffee."].id
    summary = summary_item(result).id
    assert {link.entry_id for link in await mem.derived(ids[0])} == {berlin, summary}

    receipt = await mem.forget(ids=[ids[0]], cascade=True)
    assert receipt is not None
    for gone in (ids[0], berlin, summary):
        assert await mem.get(gone, include_superseded=True) is None
    # The other messages and the facts that rest on them stay.
    assert await mem.get(tea) is not None and await mem.get(ids[2]) is not None
    assert await source_ids(mem, tea) == [ids[2]]


async def test_distill_session_offline_links_exact_messages(mem: ContextForge) -> None:
    ids = await save_session(mem)
    result = await mem.distill_session(SCOPE, "mon")
    facts = [item for item in result.saved if item.kind == "fact"]
    assert facts
    for item in facts:
        [source] = item.sources
        assert isinstance(source, int) and source in ids
        entry = await mem.get(source)
        assert entry is not None
        assert item.text.split(": ", 1)[-1].rstrip(".") in entry.content
        assert await source_ids(mem, item.id) == [source]


async def test_distill_session_needs_messages(mem: ContextForge) -> None:
    await mem.save("Ann lives in Berlin.", "fact", scope=SCOPE, session_id="mon")
    with pytest.raises(InvalidInputError, match="no messages"):
        await mem.distill_session(SCOPE, "mon")
    with pytest.raises(InvalidInputError, match="no messages"):
        await mem.distill_session(SCOPE, "nothing-here")
    with pytest.raises(InvalidTypeError):
        await mem.distill_session(SCOPE, 3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------


def test_fact_sources_are_validated_and_normalised() -> None:
    assert Fact("fact", "A.", sources=[3, 1, 3]).sources == (1, 3)  # type: ignore[arg-type]
    assert Fact("fact", "A.").sources == ()
    with pytest.raises(InvalidTypeError):
        Fact("fact", "A.", sources=(True,))
    with pytest.raises(InvalidTypeError):
        Fact("fact", "A.", sources="1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Fact("fact", "A.", sources=(-1,))


def test_merge_joins_the_sources_of_repeated_facts() -> None:
    a = Distillation("one", (Fact("fact", "Ann lives in Berlin.", sources=(4,)),))
    b = Distillation("two", (Fact("state", "ann lives in berlin.", sources=(1, 4)),))
    [fact] = merge([a, b]).facts
    assert fact == Fact("state", "Ann lives in Berlin.", sources=(1, 4))


async def test_a_distiller_that_takes_messages_gets_each_chunks_messages(
    mem: ContextForge,
) -> None:
    seen: list[list[str]] = []

    async def by_message(text: str, /, *, messages: Sequence[str] = ()) -> Distillation:
        seen.append(list(messages))
        facts = tuple(
            Fact("fact", f"Said: {m.split(': ', 1)[-1].splitlines()[0]}", sources=(i,))
            for i, m in enumerate(messages)
            if "tea" in m or "Berlin" in m
        )
        return Distillation("s", facts, "mine")

    async def by_text(text: str) -> Distillation:
        return Distillation("s", (Fact("fact", "From text.", sources=(1, 9)),), "plain")

    assert accepts_messages(by_message) and not accepts_messages(by_text)
    chat = [
        {"id": "m1", "role": "user", "content": "  first line\nsecond line  "},
        {"id": "m2", "role": "user", "content": "I like tea.\n\nA lot."},
        {"id": "m3", "content": "Berlin is home."},
    ]
    result = await mem.distill_and_save(chat, scope=SCOPE, distiller=by_message)
    assert seen == [
        ["user: first line\nsecond line", "user: I like tea.\n\nA lot.", "Berlin is home."]
    ]
    assert {i.text: i.sources for i in fact_items(result).values()} == {
        "Said: I like tea.": ("m2",),
        "Said: Berlin is home.": ("m3",),
    }
    # A distiller without messages=: its indexes are read the same way; past the end, dropped.
    plain = await mem.distill_and_save(chat, scope=SCOPE, session_id="p", distiller=by_text)
    assert fact_items(plain)["From text."].sources == ("m2",)
    # distill_all passes them only to a distiller that takes them.
    await distill_all(by_text, ["x"], messages=[["a"]])
    await distill_all(by_message, ["x"], messages=[["only"]])
    assert seen[-1] == ["only"]
    with pytest.raises(InvalidInputError):
        await distill_all(by_message, ["x", "y"], messages=[["a"]])
