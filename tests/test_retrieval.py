"""Lexical retrieval features through the public API: query stopwords, the
previous-turn context field and the date field, each on and off, and their
scores agreeing between the in-memory tail, the committed index and a rebuild."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from contextforge import ALL_SCOPES, Config, ContextForge, InvalidInputError

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
FILLER = [
    "Groceries: milk, eggs and bread for the week",
    "The printer on the third floor is out of toner",
    "Standup moved to ten thirty on Mondays",
    "Remember to water the plants on the balcony",
]


def cfg(**kw: object) -> Config:
    """Relevance alone, and every candidate kept (no relevance floor), so that
    ranks of weak candidates can be compared."""
    return Config(recency_weight=0.0, min_relative_relevance=0.0, **kw)  # type: ignore[arg-type]


async def ids_for(
    config: Config, entries: Sequence[Mapping[str, object]], q: str
) -> tuple[list[int], list[int]]:
    """The saved ids, and the ranked hit ids for ``q``."""
    async with await ContextForge.open(config) as cf:
        ids = await cf.save_many([{"dedupe": False, **e} for e in entries])
        hits = await cf.query(q, ALL_SCOPES, 1 << 20, now=NOW)
        return [int(i) for i in ids], [h.id for h in hits]


async def test_function_words_in_a_question_do_not_outrank_its_topic() -> None:
    entries = [
        {"content": "Team decision: the offsite trip goes to Lisbon in spring"},
        {"content": "What did you do? What did they do? Did you say what it was?"},
        *({"content": c} for c in FILLER),
    ]
    q = "What did the team decide about the trip?"
    ids, on = await ids_for(cfg(), entries, q)
    assert on[0] == ids[0]
    _, off = await ids_for(cfg(stopword_weight=1.0), entries, q)
    assert off[0] == ids[1]


async def test_a_query_of_only_function_words_still_matches() -> None:
    entries = [{"content": "what was it"}, *({"content": c} for c in FILLER)]
    ids, found = await ids_for(cfg(), entries, "what was it?")
    assert found == [ids[0]]


async def test_previous_turn_context_finds_the_reply() -> None:
    entries = [
        {"content": "Anna: should we adopt the grey kitten from the shelter?", "session_id": "s1"},
        {"content": "Bob: yes, absolutely, let's do it this weekend", "session_id": "s1"},
        # Same words as the reply, another session: it gets no kitten context.
        {"content": "Bob: yes, absolutely, let's do it this weekend!", "session_id": "s2"},
        *({"content": c, "session_id": "s3"} for c in FILLER),
    ]
    q = "what did Bob answer about the kitten adoption?"
    # The two replies are near duplicates: keep both to compare their ranks.
    ids, on = await ids_for(cfg(duplicate_similarity=1.5), entries, q)
    assert ids[1] in on
    assert on.index(ids[1]) < on.index(ids[2])
    _, off = await ids_for(cfg(context_weight=0.0, duplicate_similarity=1.5), entries, q)
    assert ids[0] in off
    assert off.index(ids[1]) > off.index(ids[0]) or ids[1] not in off
    # Context is the previous turns only: the question does not get the reply.
    _, later = await ids_for(cfg(), entries, "absolutely this weekend")
    assert ids[0] not in later


async def test_the_date_of_an_entry_matches_a_question_about_it() -> None:
    june = datetime(2023, 6, 12, 15, tzinfo=timezone.utc)
    may = datetime(2023, 5, 8, 13, tzinfo=timezone.utc)
    entries = [
        {"content": "Melanie went camping with her kids", "timestamp": june},
        {"content": "Melanie went camping by the lake", "timestamp": may},
        *({"content": c, "timestamp": may} for c in FILLER),
    ]
    q = "When did Melanie go camping in June?"
    ids, on = await ids_for(cfg(), entries, q)
    assert on[0] == ids[0]
    _, off = await ids_for(cfg(date_weight=0.0), entries, q)
    assert off[0] == ids[1]  # equal relevance: the newer id first
    _, exact = await ids_for(cfg(), entries, "what happened on 8 May 2023")
    assert set(exact[:5]) <= {ids[1], *ids[2:]}


def conversation() -> list[dict[str, object]]:
    start = datetime(2023, 5, 8, 13, tzinfo=timezone.utc)
    lines = [
        "Caroline: I went to the support group yesterday",
        "Melanie: how did it go? Was it a good group?",
        "Caroline: really moving, people shared their transition stories",
        "Melanie: I painted a sunrise over the lake last week",
        "Caroline: lovely! Did you finish the painting?",
        "Melanie: yes, and my kids loved it",
    ]
    return [
        {
            "content": c,
            "session_id": f"s{i // 3}",
            "scope": "conv",
            "timestamp": start + timedelta(days=30 * (i // 3), minutes=i),
        }
        for i, c in enumerate(lines)
    ]


QUESTIONS = [
    "How did the support group go?",
    "what did her kids think of the painting in June",
    "sunrise lake May 2023",
    "when did Caroline go to the group",
]


async def scores(cf: ContextForge) -> list[list[tuple[int, float]]]:
    out = []
    for q in QUESTIONS:
        hits = await cf.query(q, "conv", 1 << 20, now=NOW)
        out.append([(h.id, h.score or 0.0) for h in hits])
    return out


def same(a: list[list[tuple[int, float]]], b: list[list[tuple[int, float]]]) -> None:
    assert [[i for i, _ in q] for q in a] == [[i for i, _ in q] for q in b]
    for qa, qb in zip(a, b, strict=True):
        for (_, sa), (_, sb) in zip(qa, qb, strict=True):
            assert sa == pytest.approx(sb, rel=1e-4)


async def test_tail_commit_and_rebuild_score_alike(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    async with await ContextForge.open(Config(path=path, flush_ms=600_000)) as cf:
        for e in conversation():  # one save at a time: each lands in the tail
            await cf.save(**e)  # type: ignore[arg-type]
        tail = await scores(cf)
        await cf.flush()
        committed = await scores(cf)
    same(tail, committed)
    assert all(tail)
    shutil.rmtree(path + ".index")
    async with await ContextForge.open(path) as cf:
        rebuilt = await scores(cf)
    same(tail, rebuilt)
    # A bulk save (1,000+ changes, committed at once) indexes the same context
    # and scores the same as small saves that land in the tail.
    # Copies of the conversation, each a day later (timestamps move forward in
    # save order, as in a live conversation), in the same sessions.
    many = [
        {**e, "dedupe": False, "timestamp": e["timestamp"] + timedelta(days=k)}  # type: ignore[operator]
        for k in range(200)
        for e in conversation()
    ]
    async with await ContextForge.open(Config(path=str(tmp_path / "bulk.db"))) as cf:
        await cf.save_many(many)
        bulk = await scores(cf)
    async with await ContextForge.open(
        Config(path=str(tmp_path / "small.db"), flush_ms=600_000, flush_entries=100_000)
    ) as cf:
        for i in range(0, len(many), 100):
            await cf.save_many(many[i : i + 100])
        small = await scores(cf)
    same(bulk, small)


@pytest.mark.parametrize(
    "field", ["stopword_weight", "context_weight", "date_weight", "reply_weight", "session_weight"]
)
async def test_weights_are_validated(field: str) -> None:
    for bad in (-0.1, float("nan"), 11.0):
        with pytest.raises(InvalidInputError):
            await ContextForge.open(Config(**{field: bad}))  # type: ignore[arg-type]


async def test_a_reply_lifts_the_turn_it_answers() -> None:
    t0 = datetime(2023, 5, 8, 13, tzinfo=timezone.utc)
    entries = [
        # The evidence: one query word, in a long turn.
        {
            "content": "we finally did it, the little grey kitten from the old shelter is ours now",
            "session_id": "s1",
            "timestamp": t0,
        },
        # Its reply repeats the question's words.
        {
            "content": "congratulations on the kitten adoption",
            "session_id": "s1",
            "timestamp": t0 + timedelta(minutes=1),
        },
        # A bystander with the same one word, shorter, in another session.
        {"content": "kitten food is on sale", "session_id": "s2", "timestamp": t0},
        *({"content": c, "session_id": "s3", "timestamp": t0} for c in FILLER),
    ]
    q = "kitten adoption"
    # The session boost off: it lifts the answered turn too.
    ids, on = await ids_for(cfg(session_weight=0.0), entries, q)
    assert on[0] == ids[1]
    assert on.index(ids[0]) < on.index(ids[2]), "the answered turn passes the bystander"
    _, off = await ids_for(cfg(reply_weight=0.0, session_weight=0.0), entries, q)
    assert off.index(ids[0]) > off.index(ids[2])
    # A reply lends only backwards: the bystander's order against the reply is unchanged.
    assert on.index(ids[1]) < on.index(ids[2]) and off.index(ids[1]) < off.index(ids[2])


async def test_a_strong_turn_lifts_the_weak_turns_of_its_session() -> None:
    # Context and replies off: only the session boost can tell the weak turns apart.
    only = {"context_weight": 0.0, "reply_weight": 0.0}
    weak_here = {"content": "the kitten is asleep on the sofa", "session_id": "a"}
    strong = {
        "content": "the kitten adoption went well, the kitten adoption is done",
        "session_id": "a",
    }
    # As weak (the same length, the same one query word), in another session;
    # saved last, so it wins the tie without the boost.
    weak_there = {"content": "the kitten is hungry on the sofa", "session_id": "b"}
    fill = [{"content": c, "session_id": "c"} for c in FILLER]
    entries = [weak_here, strong, weak_there, *fill]
    q = "kitten adoption"

    async def scores(config: Config, entries: Sequence[Mapping[str, object]]) -> list[float]:
        async with await ContextForge.open(config) as cf:
            ids = await cf.save_many([{"dedupe": False, **e} for e in entries])
            hits = {h.id: h.score or 0.0 for h in await cf.query(q, ALL_SCOPES, 1 << 20, now=NOW)}
            return [hits[i] for i in ids[:3]]

    on = await scores(cfg(**only), entries)
    assert on[1] > on[0] > on[2]
    off = await scores(cfg(session_weight=0.0, **only), entries)
    assert off[0] == off[2] and off[1] > off[0]
    assert on[0] == pytest.approx(off[0] + 0.5 * off[1], rel=1e-5)
    assert on[2] == pytest.approx(off[2] * 1.5, rel=1e-5), "its own session of one"
    _, order_off = await ids_for(cfg(session_weight=0.0, **only), entries, q)
    ids, order_on = await ids_for(cfg(**only), entries, q)
    assert order_on.index(ids[0]) < order_on.index(ids[2])
    assert order_off.index(ids[2]) < order_off.index(ids[0])
    # Without sessions every entry is a session of its own: each gains the same
    # share of its own relevance, so nothing changes places. Nor does the same
    # session name in another scope lift anything.
    bare = [{"content": e["content"]} for e in entries]
    plain = await scores(cfg(session_weight=0.0, **only), bare)
    assert await scores(cfg(**only), bare) == pytest.approx([1.5 * s for s in plain], rel=1e-5)
    apart = [{**weak_here, "scope": "x"}, {**strong, "scope": "y"}, weak_there, *fill]
    split = await scores(cfg(**only), apart)
    assert split[0] == pytest.approx(split[2], rel=1e-6)


# --- the relevance floor --------------------------------------------------------

T0 = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)


async def chat(config: Config, turns: Sequence[str], q: str) -> tuple[list[int], list[int]]:
    """The saved ids of ``turns`` (one session, a minute apart), and the ids of
    what ``q`` returns with the default budget."""
    async with await ContextForge.open(config) as cf:
        ids = await cf.save_many(
            [
                {
                    "content": t,
                    "scope": "u",
                    "session_id": "s",
                    "timestamp": T0 + timedelta(minutes=i),
                }
                for i, t in enumerate(turns)
            ]
        )
        return [int(i) for i in ids], [
            h.id for h in await cf.query(q, "u", now=T0 + timedelta(days=1))
        ]


async def test_filler_turns_without_a_query_word_stay_out() -> None:
    # Each filler follows the turn after a real one: the real turn's words are
    # in its previous turns, and the real turn lifts its session.
    turns = [
        "I have a severe peanuts allergy",
        "Which foods should I check then?",
        "Noted!",
        "My sister has a peanuts allergy too",
        "Does she carry an EpiPen?",
        "ok",
    ]
    ids, got = await chat(Config(), turns, "peanuts allergy")
    assert ids[0] in got and ids[3] in got
    assert ids[2] not in got and ids[5] not in got
    # Without the floor the boosts bring them back.
    _, unfloored = await chat(Config(min_relative_relevance=0.0), turns, "peanuts allergy")
    assert ids[2] in unfloored and ids[5] in unfloored


async def test_the_immediate_reply_to_a_strong_hit_still_comes() -> None:
    turns = ["What should I cook tonight?", "I have a severe peanuts allergy", "Noted!", "ok"]
    ids, got = await chat(Config(), turns, "peanuts allergy")
    assert got[0] == ids[1]
    assert ids[2] in got, "it answers the real turn"
    assert ids[3] not in got, "it answers the filler"


async def test_the_floor_is_relative_to_the_best_hit_and_absolute() -> None:
    notes = [
        "peanuts allergy: peanuts, peanut butter and peanut oil are out, allergy card in wallet",
        "the allergy season starts in May with the birch pollen that makes everything harder",
    ]
    q = "peanuts allergy"

    async def found(config: Config) -> tuple[list[int], dict[int, float]]:
        async with await ContextForge.open(config) as cf:
            ids = await cf.save_many([{"content": t, "scope": "u"} for t in notes])
            hits = await cf.query(q, "u", explain=True, now=T0)
            parts = {h.id: h.explain["relevance"] for h in hits if h.explain is not None}
            return [int(i) for i in ids], parts

    ids, relevance = await found(Config(min_relative_relevance=0.0))
    strong, weak = relevance[ids[0]], relevance[ids[1]]
    assert strong > weak > 0
    share = weak / strong
    assert list((await found(Config(min_relative_relevance=share - 0.01)))[1]) == ids
    assert list((await found(Config(min_relative_relevance=share + 0.01)))[1]) == [ids[0]]
    absolute = Config(min_relative_relevance=0.0, min_relevance=weak * 1.01)
    assert list((await found(absolute))[1]) == [ids[0]]
    assert (await found(Config(min_relevance=strong * 1.01)))[1] == {}


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("min_relevance", -0.1),
        ("min_relevance", float("nan")),
        ("min_relevance", float("inf")),
        ("min_relative_relevance", -0.1),
        ("min_relative_relevance", 1.5),
        ("min_relative_relevance", float("nan")),
    ],
)
async def test_the_floor_is_validated(field: str, bad: float) -> None:
    with pytest.raises(InvalidInputError, match=field):
        await ContextForge.open(Config(**{field: bad}))  # type: ignore[arg-type]


async def test_explain_separates_content_bm25_from_context_bm25() -> None:
    turns = ["I have a severe peanuts allergy", "ok"]
    async with await ContextForge.open(Config(min_relative_relevance=0.0)) as cf:
        ids = await cf.save_many(
            [
                {
                    "content": t,
                    "scope": "u",
                    "session_id": "s",
                    "timestamp": T0 + timedelta(minutes=i),
                }
                for i, t in enumerate(turns)
            ]
        )
        found = await cf.query("peanuts allergy", "u", explain=True, now=T0)
        hits = {h.id: h.explain for h in found}
    real, filler = hits[ids[0]], hits[ids[1]]
    assert real is not None and filler is not None
    # The real turn matches in its content and has no previous turn.
    assert real["bm25"] > 0 and real["bm25_context"] == 0
    # The filler holds no query word: all its BM25 is its previous turn's.
    assert filler["bm25"] == 0 and filler["bm25_context"] > 0
    # Together they are the BM25 relevance the entry ranked by (no boosts here).
    async with await ContextForge.open(
        Config(min_relative_relevance=0.0, reply_weight=0.0, session_weight=0.0)
    ) as cf:
        await cf.save_many(
            [
                {
                    "content": t,
                    "scope": "u",
                    "session_id": "s",
                    "timestamp": T0 + timedelta(minutes=i),
                }
                for i, t in enumerate(turns)
            ]
        )
        for h in await cf.query("peanuts allergy", "u", explain=True, now=T0):
            assert h.explain is not None
            parts = h.explain
            assert parts["bm25"] + parts["bm25_context"] == pytest.approx(
                parts["relevance"], rel=1e-5
            )
