"""Keys and corrections in distillation (issue 22): a model's keyed facts become
versions of their key, the scope's keys are shown to the model, bad keys are
dropped, and the offline extractor links a correction to the fact it corrects
only when that is clear. The model is a real HTTP server on 127.0.0.1
(``test_distill_client.ChatServer``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contextforge import ContextForge, InvalidInputError, InvalidTypeError
from contextforge.distill import (
    Distillation,
    Fact,
    KeyedDistiller,
    SavedItem,
    accepts_keys,
    distill_all,
    merge,
)

from .test_distill_client import ChatServer, answer, distiller, server

__all__ = ["server"]  # the fixture, imported for use here

SCOPE = "user:ann"


def facts(result: Any) -> list[SavedItem]:
    return [item for item in result.saved if item.kind == "fact"]


def shown_keys(request_body: dict[str, Any]) -> list[str] | None:
    """The keys listed to the model in a request, or ``None`` when none were."""
    user = request_body["messages"][1]["content"]
    if "<existing_keys>" not in user:
        return None
    listed = user.split("<existing_keys>\n", 1)[1].split("\n</existing_keys>", 1)[0]
    keys = json.loads(listed)
    assert isinstance(keys, list)
    return keys


# ---------------------------------------------------------------------------
# The model distiller
# ---------------------------------------------------------------------------


async def test_keyed_facts_are_saved_and_a_later_session_supersedes(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = answer(
        "Ann talked about where she lives.",
        [
            {"kind": "state", "text": "Ann lives in Berlin.", "key": "user.city"},
            {"kind": "fact", "text": "Ann has a sister called Eva.", "key": None},
        ],
    )
    async with distiller(server) as model:
        first = await mem.distill_and_save(
            "ann: I live in Berlin, my sister Eva too",
            scope=SCOPE,
            session_id="s1",
            distiller=model,
        )
    berlin, sister = facts(first)
    assert (berlin.text, berlin.key, berlin.superseded) == (
        "Ann lives in Berlin.",
        "user.city",
        None,
    )
    assert (sister.key, sister.superseded) == (None, None)
    assert [s.key for s in first.saved if s.kind == "summary"] == [None]
    assert await mem.keys(SCOPE) == ["user.city"]
    [stored] = await mem.history("user.city", SCOPE)
    assert stored.id == berlin.id and stored.current

    server.default = answer(
        "Ann moved.", [{"kind": "state", "text": "Ann lives in Paris.", "key": "user.city"}]
    )
    async with distiller(server) as model:
        second = await mem.distill_and_save(
            "ann: I moved to Paris last week", scope=SCOPE, session_id="s2", distiller=model
        )
    [paris] = facts(second)
    assert (paris.key, paris.superseded) == ("user.city", berlin.id)

    hits = await mem.query("lives in Berlin or Paris", SCOPE, kinds=["fact"])
    assert [h.content for h in hits] == ["Ann lives in Paris."]
    every = await mem.query("lives in Berlin", SCOPE, kinds=["fact"], include_superseded=True)
    assert {(h.content, h.current) for h in every} >= {
        ("Ann lives in Berlin.", False),
        ("Ann lives in Paris.", True),
    }
    history = await mem.history("user.city", SCOPE)
    assert [(h.content, h.superseded_by) for h in history] == [
        ("Ann lives in Berlin.", paris.id),
        ("Ann lives in Paris.", None),
    ]
    # The second request showed the model the key the first one made.
    assert shown_keys(server.requests[0].body) is None
    assert shown_keys(server.requests[-1].body) == ["user.city"]


async def test_the_same_value_again_is_skipped_not_a_new_version(
    mem: ContextForge, server: ChatServer
) -> None:
    server.default = answer(
        "s", [{"kind": "preference", "text": "Ann drinks tea.", "key": "user.drink"}]
    )
    async with distiller(server) as model:
        first = await mem.distill_and_save("ann: tea", scope=SCOPE, session_id="a", distiller=model)
        again = await mem.distill_and_save(
            "ann: still tea", scope=SCOPE, session_id="b", distiller=model
        )
    [tea] = facts(first)
    assert facts(again) == []
    assert [(i.id, i.key, i.superseded) for i in again.skipped] == [(tea.id, "user.drink", None)]
    assert len(await mem.history("user.drink", SCOPE)) == 1


async def test_existing_keys_are_sent_to_the_model(mem: ContextForge, server: ChatServer) -> None:
    await mem.save("Ann lives in Berlin.", "fact", scope=SCOPE, key="user.city")
    await mem.save("The deadline is 1 June.", "fact", scope=SCOPE, key="project.deadline")
    await mem.save("Bob lives in Rome.", "fact", scope="user:bob", key="user.home")
    await mem.save("A key that could close the list", scope=SCOPE, key="x</existing_keys>")
    async with distiller(server) as model:
        await mem.distill_and_save(
            "ann: hi\nbob: hello\nann: launch in May", scope=SCOPE, distiller=model
        )
    [request] = server.requests
    keys = shown_keys(request.body)
    assert keys is not None
    assert sorted(keys) == ["project.deadline", "user.city", "x</existing_keys>"]  # not user:bob's
    user = request.body["messages"][1]["content"]
    assert user.count("</existing_keys>") == 1  # the key's "<" is escaped in the JSON
    assert user.index("</existing_keys>") < user.index("<transcript>")
    system = request.body["messages"][0]["content"]
    assert '"key"' in system and "user.city" in system and "<existing_keys>" in system
    schema = request.body["response_format"]["json_schema"]
    assert schema["strict"] is True
    item = schema["schema"]["properties"]["facts"]["items"]
    assert item["required"] == ["kind", "text", "key", "sources"]
    assert item["properties"]["key"] == {"type": ["string", "null"]}


async def test_no_keys_no_list(mem: ContextForge, server: ChatServer) -> None:
    async with distiller(server) as model:
        await mem.distill_and_save("ann: hi", scope=SCOPE, distiller=model)
    [request] = server.requests
    assert shown_keys(request.body) is None
    assert request.body["messages"][1]["content"].startswith("<transcript>")


BAD_KEYS: list[Any] = [
    42,
    ["user.city"],
    {"k": 1},
    "",
    "   ",
    "user\ncity",
    "user\x00city",
    "k" * 513,
    "é" * 257,  # 514 bytes
]


async def test_a_bad_key_from_the_model_is_dropped_and_the_fact_kept(
    mem: ContextForge, server: ChatServer
) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    replies = [
        {"kind": "state", "text": f"Fact number {i}.", "key": bad} for i, bad in enumerate(BAD_KEYS)
    ]
    replies += [
        {"kind": "state", "text": "A fact with a secret for a key.", "key": secret},
        {"kind": "state", "text": "A fact without the key field."},
        {"kind": "state", "text": "A fact with a padded key.", "key": "  user.mood \t"},
        {"kind": "state", "text": "A fact with a long key.", "key": "k" * 512},
    ]
    server.default = answer("s", replies)
    async with distiller(server) as model:
        got = await model("t")
        result = await mem.distill_and_save("ann: many facts", scope=SCOPE, distiller=model)
    # The client drops what is not a label; distill_and_save also drops the
    # keys the store would refuse as secrets.
    assert [f.key for f in got.facts] == [None] * len(BAD_KEYS) + [
        secret,
        None,
        "user.mood",
        "k" * 512,
    ]
    saved = facts(result)
    assert len(saved) == len(replies)
    by_text = {item.text: item.key for item in saved}
    assert by_text["A fact with a secret for a key."] is None  # the store refuses secret keys
    assert by_text["A fact with a padded key."] == "user.mood"
    assert sorted(await mem.keys(SCOPE)) == ["k" * 512, "user.mood"]
    assert secret not in json.dumps([r.body for r in server.requests[1:]])


async def test_a_wrongly_typed_answer_still_fails(server: ChatServer) -> None:
    from contextforge.distill import DistillResponseError

    server.default = answer("s", [{"kind": "opinion", "text": "x", "key": "k"}])
    async with distiller(server) as model:
        with pytest.raises(DistillResponseError):
            await model("t")


async def test_keys_reach_a_distiller_that_takes_them(mem: ContextForge) -> None:
    await mem.save("Ann lives in Berlin.", "fact", scope=SCOPE, key="user.city")
    seen: list[tuple[str, ...]] = []

    async def keyed(text: str, /, *, keys: tuple[str, ...] = ()) -> Distillation:
        seen.append(tuple(keys))
        return Distillation("s", (Fact("state", "Ann lives in Rome.", "user.city"),), "mine")

    assert isinstance(keyed, KeyedDistiller)
    result = await mem.distill_and_save("ann: Rome now", scope=SCOPE, distiller=keyed)
    assert seen == [("user.city",)]
    [rome] = facts(result)
    assert rome.key == "user.city" and rome.superseded is not None
    assert [h.content for h in await mem.query("Ann lives", SCOPE, kinds=["fact"])] == [
        "Ann lives in Rome."
    ]


async def test_a_plain_user_distiller_still_works(mem: ContextForge) -> None:
    await mem.save("Ann lives in Berlin.", "fact", scope=SCOPE, key="user.city")
    calls: list[str] = []

    async def plain(text: str) -> Distillation:
        calls.append(text)
        return Distillation("Numbers.", (Fact("fact", "The budget is 40k"),), "plain")

    async def catch_all(text: str, **options: Any) -> Distillation:
        assert options == {}  # a **kwargs catch-all is not sent keys
        return Distillation("s", (Fact("fact", "Launch on 14 May"),), "catch-all")

    for fn, text in ((plain, "The budget is 40k"), (catch_all, "Launch on 14 May")):
        result = await mem.distill_and_save("ann: the budget is 40k", scope=SCOPE, distiller=fn)
        [item] = facts(result)
        assert (item.text, item.key, item.superseded) == (text, None, None)
    assert len(calls) == 1


def test_accepts_keys() -> None:
    async def plain(text: str) -> Distillation:
        raise AssertionError

    async def keyword(text: str, *, keys: tuple[str, ...] = ()) -> Distillation:
        raise AssertionError

    async def positional(text: str, keys: tuple[str, ...] = ()) -> Distillation:
        raise AssertionError

    async def first(keys: str) -> Distillation:
        raise AssertionError

    async def catch_all(text: str, **kw: Any) -> Distillation:
        raise AssertionError

    class Callable:
        async def __call__(self, text: str, /, *, keys: tuple[str, ...] = ()) -> Distillation:
            raise AssertionError

    assert [accepts_keys(f) for f in (plain, keyword, positional, first, catch_all)] == [
        False,
        True,
        True,
        False,
        False,
    ]
    assert accepts_keys(Callable())
    assert not accepts_keys(len)
    assert not accepts_keys(object())


async def test_distill_all_passes_keys_only_where_taken() -> None:
    got: list[Any] = []

    async def keyword(text: str, *, keys: tuple[str, ...] = ()) -> Distillation:
        got.append(keys)
        return Distillation(text)

    async def plain(text: str) -> Distillation:
        return Distillation(text)

    assert [d.summary for d in await distill_all(keyword, ["a", "b"], keys=["k1", "k2"])] == [
        "a",
        "b",
    ]
    assert got == [("k1", "k2"), ("k1", "k2")]
    assert [d.summary for d in await distill_all(plain, ["a"], keys=["k1"])] == ["a"]
    with pytest.raises(InvalidTypeError):
        await distill_all(plain, ["a"], keys="k1")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def test_fact_keys_are_validated() -> None:
    assert Fact("state", "x") == Fact("state", "x", None)
    assert Fact("state", "x", "user.city").key == "user.city"
    assert Fact("state", "x", key="k" * 512).key == "k" * 512
    for bad in ("", "  ", "a\nb", "a\x7fb", "k" * 513):
        with pytest.raises(InvalidInputError):
            Fact("state", "x", bad)
    with pytest.raises(InvalidTypeError):
        Fact("state", "x", 3)  # type: ignore[arg-type]


def test_saved_item_keeps_its_positional_form() -> None:
    item = SavedItem(1, "fact", "t", "state")
    assert (item.key, item.superseded) == (None, None)
    assert SavedItem(2, "fact", "t", "state", "k", 1).superseded == 1


def test_merge_keeps_keys() -> None:
    a = Distillation("a", (Fact("fact", "Ann lives in Berlin."), Fact("state", "X", "x")))
    b = Distillation(
        "b",
        (
            Fact("state", "ann lives in berlin.", "user.city"),  # lends kind and key
            Fact("state", "Y", "x"),  # same key, another value: kept after
        ),
    )
    assert merge([a, b]).facts == (
        Fact("state", "Ann lives in Berlin.", "user.city"),
        Fact("state", "X", "x"),
        Fact("state", "Y", "x"),
    )


# ---------------------------------------------------------------------------
# The offline extractor's corrections
# ---------------------------------------------------------------------------

UPDATE = [
    ("user", "Hi, a few updates for the team."),
    ("user", "Actually, the standup moved to 10am."),
    ("user", "Actually, the cafeteria no longer serves pizza."),
]


def by_kind(result: Any, kind: str) -> list[SavedItem]:
    return [item for item in facts(result) if item.fact_kind == kind]


async def test_a_correction_supersedes_the_fact_it_corrects(mem: ContextForge) -> None:
    old = await mem.save("The standup is at 9am", "fact", scope=SCOPE)
    printer = await mem.save("The printer is on floor 2", "fact", scope=SCOPE)
    result = await mem.distill_and_save(UPDATE, scope=SCOPE, session_id="s2")
    standup, cafeteria = by_kind(result, "correction")
    assert "standup moved to 10am" in standup.text and standup.superseded == old
    assert "cafeteria" in cafeteria.text and cafeteria.superseded is None  # unrelated
    assert standup.key is None
    hits = await mem.query("standup", SCOPE, kinds=["fact"])
    assert hits[0].id == standup.id and old not in {h.id for h in hits}
    [was] = await mem.get_many([old], include_superseded=True)
    assert was is not None and not was.current and was.superseded_by == standup.id
    assert (await mem.get(printer)) is not None  # untouched

    # The same transcript again: the correction is already there, nothing is linked.
    again = await mem.distill_and_save(UPDATE, scope=SCOPE, session_id="s2")
    assert again.saved == () and all(i.superseded is None for i in again.skipped)


async def test_a_distilled_fact_is_corrected_by_a_later_session(mem: ContextForge) -> None:
    first = await mem.distill_and_save(
        [("user", "Hello!"), ("user", "The standup is at 9am every day.")],
        scope=SCOPE,
        session_id="mon",
    )
    [standup] = facts(first)
    second = await mem.distill_and_save(UPDATE, scope=SCOPE, session_id="tue")
    [moved] = [i for i in facts(second) if "standup" in i.text]
    assert moved.superseded == standup.id


async def test_a_correction_of_a_keyed_fact_is_a_new_version_of_its_key(
    mem: ContextForge,
) -> None:
    old = await mem.save("The standup is at 9am", "fact", scope=SCOPE, key="team.standup")
    result = await mem.distill_and_save(UPDATE, scope=SCOPE)
    [standup] = [i for i in facts(result) if "standup" in i.text]
    assert (standup.key, standup.superseded) == ("team.standup", old)
    history = await mem.history("team.standup", SCOPE)
    assert [h.id for h in history] == [old, standup.id]


async def test_a_change_of_state_is_linked_too(mem: ContextForge) -> None:
    old = await mem.save("Ann works at Google", "fact", scope=SCOPE)
    result = await mem.distill_and_save(
        [("ann", "Hello there."), ("ann", "I no longer work at Google, I joined Stripe.")],
        scope=SCOPE,
    )
    [fact] = facts(result)
    assert fact.fact_kind in ("state", "correction") and fact.superseded == old


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        # Two entries about the standup, equally relevant: which one is meant?
        (
            ["The standup is at 9am", "The standup is in room 4"],
            "Actually, the standup moved to 10am.",
        ),
        # The correction is about something else the entry merely mentions.
        (
            ["The standup is at 9am"],
            "Actually, the design review moved to Tuesday, not the standup.",
        ),
        # A correction with no subject of its own.
        (["The standup is at 9am"], "Actually, it is at 10am."),
        # Only a note, not a fact, mentions it.
        ([], "Actually, the standup moved to 10am."),
    ],
)
async def test_no_link_unless_it_is_clear(mem: ContextForge, stored: list[str], said: str) -> None:
    ids = [await mem.save(text, "fact", scope=SCOPE) for text in stored]
    await mem.save("The standup is at 9am", "note", scope=SCOPE)
    await mem.save("The standup is at 9am", "fact", scope="user:other")
    result = await mem.distill_and_save([("user", "Hello."), ("user", said)], scope=SCOPE)
    assert all(item.superseded is None for item in facts(result))
    assert None not in await mem.get_many(ids)  # all still current


async def test_two_corrections_of_one_fact_link_neither(mem: ContextForge) -> None:
    old = await mem.save("The standup is at 9am", "fact", scope=SCOPE)
    result = await mem.distill_and_save(
        [
            ("user", "Hello."),
            ("user", "Actually, the standup moved to 10am."),
            ("user", "Sorry, the standup moved to 11am instead."),
        ],
        scope=SCOPE,
    )
    assert len(facts(result)) == 2
    assert all(item.superseded is None for item in facts(result))
    assert (await mem.get(old)) is not None


async def test_facts_of_the_same_call_are_never_linked(mem: ContextForge) -> None:
    result = await mem.distill_and_save(
        [("user", "The standup is at 9am."), ("user", "Actually, the standup moved to 10am.")],
        scope=SCOPE,
    )
    assert len(facts(result)) == 2
    assert all(item.superseded is None for item in facts(result))


async def test_a_keyed_distiller_also_reduces_the_summary(mem: ContextForge) -> None:
    seen: list[tuple[str, ...]] = []

    async def keyed(text: str, /, *, keys: tuple[str, ...]) -> Distillation:  # keys required
        seen.append(tuple(keys))
        return Distillation(f"About: {text.splitlines()[0]}", (), "mine")

    await mem.save("Ann lives in Berlin.", "fact", scope=SCOPE, key="user.city")
    transcript = [("ann", f"Message number {i} about the launch plans.") for i in range(8)]
    result = await mem.distill_and_save(
        transcript,
        scope=SCOPE,
        distiller=keyed,  # type: ignore[arg-type]  # keys without a default: not a Distiller
        max_chunk_tokens=24,
        summary="model",
    )
    assert result.chunks > 1
    assert seen[:-1] == [("user.city",)] * result.chunks and seen[-1] == ()
