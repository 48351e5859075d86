"""``distill_and_save``: transcript -> scrubbed chunks -> distillations -> entries."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .. import _convert
from ..errors import InvalidInputError
from ._types import Distillation, Distiller, Fact
from .merge import accepts_keys, distill_all, merge_with_sources, normalize_fact, reduce_summary
from .transcript import Transcript, coerce_transcript, message_ids

if TYPE_CHECKING:
    from .._core import Engine, Hit

__all__ = ["DistillResult", "SavedItem", "distill_into"]

EXTRACTIVE_MODEL = "contextforge-extractive"
DEFAULT_CHUNK_TOKENS = 2048
#: How many of the scope's existing keys a distiller that takes them is shown.
MAX_KEYS_SHOWN = 200
#: The most messages a summary is linked to (the first ones of the transcript).
MAX_SUMMARY_SOURCES = 200
#: The longest external reference the store takes, in UTF-8 bytes.
MAX_REF_BYTES = 2048
#: What Rust's ``str::trim`` trims (Unicode White_Space): Python's ``strip()``
#: also trims U+001C..U+001F, which the chunker keeps.
_RUST_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


@dataclass(frozen=True)
class SavedItem:
    """One summary or fact: its entry id, kind (``"summary"`` or ``"fact"``), text,
    for facts their category (decision, correction, preference, state, fact),
    the ``key`` it was saved under (``None`` without one; the summary never has
    one), and ``superseded``: the id of the entry this fact superseded, when it
    replaced the current version of its key or corrected an earlier fact
    (``None`` otherwise, and for skipped items), and ``sources``: what it was
    linked to as its provenance (message entry ids, or the messages' own ids as
    external references; empty for skipped items, which link nothing)."""

    id: int
    kind: str
    text: str
    fact_kind: str | None
    key: str | None = None
    superseded: int | None = None
    sources: tuple[int | str, ...] = ()


@dataclass(frozen=True)
class DistillResult:
    """What ``distill_and_save`` did: entries it created, entries that already
    existed in the scope (returned with their existing ids), the model that
    distilled, and how many chunks the transcript was split into."""

    saved: tuple[SavedItem, ...]
    skipped: tuple[SavedItem, ...]
    model: str
    chunks: int


@dataclass
class _Plan:
    """One fact on its way to the store: where it supersedes, or why it is not
    saved at all."""

    fact: Fact
    chunk: int
    supersedes: int | None = None
    #: The id of the key's current version, when it already says the same.
    existing: int | None = None


async def distill_into(
    engine: Engine,
    transcript: Transcript,
    *,
    scope: str,
    session_id: str | None,
    distiller: Distiller | None,
    max_chunk_tokens: int | None,
    summary: Literal["structural", "model"],
    embed: Callable[[list[str]], Awaitable[Any]] | None = None,
    links: Sequence[int | str | None] | None = None,
) -> DistillResult:
    """Distils ``transcript`` and saves the summary and facts (see
    ``ContextForge.distill_and_save``). ``links`` gives, per message, what a
    fact resting on it is linked to: an entry id, an external reference, or
    ``None``; by default each message mapping's own ``"id"`` (see
    :func:`message_ids`)."""
    scope = _convert.label("scope", scope)
    session = _convert.optional_text("session_id", session_id)
    budget = _convert.positive_int("max_chunk_tokens", max_chunk_tokens or DEFAULT_CHUNK_TOKENS)
    how = _convert.choice("summary", summary, ("structural", "model"))
    pairs = coerce_transcript(transcript)
    if not pairs:
        raise InvalidInputError("the transcript is empty")
    given = message_ids(transcript) if links is None else list(links)
    if len(given) != len(pairs):
        raise InvalidInputError(f"links has {len(given)} items for {len(pairs)} messages")

    # Secrets are redacted here, in Rust, before any model sees the text.
    clean, chunks = await engine.distill_chunks(pairs, budget)
    refs = await _usable_links(engine, given)
    if distiller is None:
        result, sources = await _extract(engine, clean, chunks)
        plans = await _link_corrections(engine, scope, result.facts, sources)
    else:
        texts = [text for _, text, _, _ in chunks]
        keys = await engine.keys(scope, MAX_KEYS_SHOWN) if accepts_keys(distiller) else []
        split = [_chunk_messages(clean, chunk) for chunk in chunks]
        parts = await distill_all(
            distiller,
            texts,
            concurrency=getattr(distiller, "concurrency", 4),
            keys=keys,
            messages=[shown for shown, _ in split],
        )
        # Each chunk's message numbers, as the whole transcript's, before merging.
        parts = [_in_transcript(part, owners) for part, (_, owners) in zip(parts, split)]
        result, sources = merge_with_sources(parts)
        if how == "model" and len(parts) > 1:
            text, model = await reduce_summary(parts, distiller)
            result = Distillation(summary=text, facts=result.facts, model=model or result.model)
        plans = [_Plan(fact, chunk) for fact, chunk in zip(result.facts, sources)]
    plans = await _drop_secret_keys(engine, plans)
    await _mark_unchanged(engine, scope, plans)

    items: list[dict[str, Any]] = []
    meta_base = {"source_session": session, "model": result.model}
    if result.summary.strip():
        every = dict.fromkeys(m for messages, _, _, _ in chunks for m in messages)
        items.append(
            {
                "content": result.summary,
                "kind": "summary",
                "scope": scope,
                "session_id": session,
                "metadata": {**meta_base, "chunks": len(chunks)},
                "sources": _links(refs, every)[:MAX_SUMMARY_SOURCES],
            }
        )
    unchanged: list[SavedItem] = []
    for plan in plans:
        fact = plan.fact
        if plan.existing is not None:
            unchanged.append(SavedItem(plan.existing, "fact", fact.text, fact.kind, fact.key))
            continue
        items.append(
            {
                "content": fact.text,
                "kind": "fact",
                "scope": scope,
                "session_id": session,
                "metadata": {**meta_base, "chunk": plan.chunk, "fact_kind": fact.kind},
                "key": fact.key,
                "supersedes": plan.supersedes,
                "sources": _links(refs, fact.sources),
            }
        )
    if not items:
        return DistillResult((), tuple(unchanged), result.model, len(chunks))
    prepared = [_convert.save_item(**item) for item in items]
    vectors = None if embed is None else await embed([p["content"] for p in prepared])
    # One transaction: all or nothing.
    outcome = await engine.save_detailed(prepared, vectors)
    superseded = await _superseded(engine, items, outcome)
    saved: list[SavedItem] = []
    skipped: list[SavedItem] = []
    for item, (entry_id, created), old in zip(items, outcome, superseded):
        record = SavedItem(
            entry_id,
            item["kind"],
            item["content"],
            item["metadata"].get("fact_kind"),
            item.get("key"),
            old if created else None,
            tuple(item["sources"]) if created else (),
        )
        (saved if created else skipped).append(record)
    return DistillResult(tuple(saved), (*skipped, *unchanged), result.model, len(chunks))


async def _extract(
    engine: Engine,
    clean: list[tuple[str | None, str]],
    chunks: list[tuple[list[int], str, int, tuple[int, int] | None]],
) -> tuple[Distillation, tuple[int, ...]]:
    """The offline extractor over the whole transcript; each fact is attributed
    to the chunk that holds its message."""
    summary, facts = await engine.distill_extract(clean, 20, 300, 3)
    chunk_of: dict[int, int] = {}
    for index, (messages, _, _, _) in enumerate(chunks):
        for message in messages:
            chunk_of.setdefault(message, index)
    kept = tuple(
        Fact(kind, text, sources=(message,) if 0 <= message < len(clean) else ())  # type: ignore[arg-type]
        for kind, text, _, message in facts
    )
    sources = tuple(chunk_of.get(message, 0) for _, _, _, message in facts)
    return Distillation(summary=summary, facts=kept, model=EXTRACTIVE_MODEL), sources


def _chunk_messages(
    clean: Sequence[tuple[str | None, str]],
    chunk: tuple[list[int], str, int, tuple[int, int] | None],
) -> tuple[list[str], list[tuple[int, ...]]]:
    """A chunk's messages as a distiller is shown them (one string each, its
    lines of the chunk's text), and for each the transcript's messages it is.

    The chunker writes one ``speaker: text`` line per message, the text trimmed,
    joined with ``\\n``: each message takes one line more than its trimmed
    text has line breaks. A part of a long message is one message. Should the
    lines not add up, the whole chunk is one message standing for all of them."""
    indexes, text, _, part = chunk
    if part is not None or len(indexes) <= 1:
        return [text], [tuple(indexes)]
    lines = text.split("\n")
    shown: list[str] = []
    at = 0
    for m in indexes:
        n = clean[m][1].strip(_RUST_SPACE).count("\n") + 1
        shown.append("\n".join(lines[at : at + n]))
        at += n
    if at != len(lines):
        return [text], [tuple(indexes)]
    return shown, [(m,) for m in indexes]


def _in_transcript(part: Distillation, owners: Sequence[tuple[int, ...]]) -> Distillation:
    """``part`` with its facts' sources (indexes of its chunk's messages) made
    indexes of the transcript's; an index past the chunk's messages is dropped."""
    facts = tuple(
        dataclasses.replace(
            fact,
            sources=tuple(m for i in fact.sources if i < len(owners) for m in owners[i]),
        )
        for fact in part.facts
    )
    return dataclasses.replace(part, facts=facts)


async def _usable_links(
    engine: Engine, given: Sequence[int | str | None]
) -> list[int | str | None]:
    """``given`` with every reference the store would refuse made ``None``
    (blank, longer than 2048 bytes, holding a control character, or taken for
    a secret by the scrubber): the message is then not linked."""
    out: list[int | str | None] = []
    for value in given:
        if isinstance(value, str) and (
            not value.strip()
            or len(value.encode("utf-8", "surrogatepass")) > MAX_REF_BYTES
            or any(unicodedata.category(c) in ("Cc", "Cs") for c in value)
        ):
            value = None
        out.append(value)
    refs = list(dict.fromkeys(v for v in out if isinstance(v, str)))
    if refs:
        scrubbed = await engine.scrub(refs)
        bad = {ref for ref, clean in zip(refs, scrubbed) if clean != ref}
        out = [None if v in bad else v for v in out]
    return out


def _links(refs: Sequence[int | str | None], messages: Iterable[int]) -> list[int | str]:
    """What the messages are linked through, each once, in message order."""
    found = (refs[m] for m in sorted(set(messages)) if 0 <= m < len(refs))
    return list(dict.fromkeys(link for link in found if link is not None))


async def _drop_secret_keys(engine: Engine, plans: list[_Plan]) -> list[_Plan]:
    """The plans with every key that the store would take for a secret (the
    scrubber changes it) dropped: the fact is saved without it."""
    keys = list(dict.fromkeys(p.fact.key for p in plans if p.fact.key is not None))
    if not keys:
        return plans
    scrubbed = await engine.scrub(keys)
    bad = {key for key, clean in zip(keys, scrubbed) if clean != key}
    if not bad:
        return plans
    return [
        dataclasses.replace(p, fact=dataclasses.replace(p.fact, key=None))
        if p.fact.key in bad
        else p
        for p in plans
    ]


async def _mark_unchanged(engine: Engine, scope: str, plans: list[_Plan]) -> None:
    """Marks the keyed facts that would only repeat their key's current version
    (same text after :func:`normalize_fact`): they are reported as skipped, with
    that version's id, rather than saved as a new version that says the same.
    Facts are taken in order, so a key's value that changes and changes back
    within one call is saved each time."""
    keys = list(dict.fromkeys(p.fact.key for p in plans if p.fact.key is not None))
    if not keys:
        return
    histories = await asyncio.gather(*(engine.history(key, scope) for key in keys))
    current: dict[str, tuple[int, str] | None] = {}
    for key, versions in zip(keys, histories):
        holding = [v for v in versions if v.current]
        current[key] = (holding[-1].id, normalize_fact(holding[-1].content)) if holding else None
    for plan in plans:
        slot = plan.fact.key
        if slot is None:
            continue
        text = normalize_fact(plan.fact.text)
        now = current[slot]
        if now is not None and now[1] == text:
            plan.existing = now[0]
        else:
            current[slot] = (0, text)  # saved in this call: no id to report yet


async def _superseded(
    engine: Engine, items: Sequence[dict[str, Any]], outcome: Sequence[tuple[int, bool]]
) -> list[int | None]:
    """For each saved item, the id of the version it superseded (its key's
    previous version, or the entry it corrects), read back from the store."""

    async def one(item: dict[str, Any], entry_id: int, created: bool) -> int | None:
        if not created or (item.get("key") is None and item.get("supersedes") is None):
            return None
        versions = await engine.versions(entry_id)
        return next((v.id for v in versions if v.superseded_by == entry_id), None)

    return list(
        await asyncio.gather(
            *(one(item, entry_id, created) for item, (entry_id, created) in zip(items, outcome))
        )
    )


# ---------------------------------------------------------------------------
# Linking the offline extractor's corrections to what they correct
# ---------------------------------------------------------------------------

#: A state fact that says something changed (a correction needs no cue).
_CHANGE = re.compile(
    r"\b(moved to|switched to|changed to|changed from|no longer|not any ?more"
    r"|(is|are|was) now|now (lives?|works?|uses?|runs?|has|is|are))\b",
    re.IGNORECASE,
)
#: One leading speaker label, as the extractor writes it ("user: ...").
_SPEAKER = re.compile(r"^\s*[^\W\d_][\w.'-]{0,40}:\s+")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
#: Function words, chat filler and the cue words of changes and corrections:
#: they say nothing about what a fact is about.
_NOT_SUBJECT_WORDS = """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't could couldn't did didn't do
    does doesn't doing don't down during each every few for from further had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me
    more most mustn't my myself no nor not of off on once only or other ought our ours
    ourselves out over own same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves
    actually correction wait sorry scratch meant wrong clarify mistake oops instead
    anymore longer now moved move moving switched switch changed change changing updated
    update new old still really currently nowadays day days yes yeah ok okay well so please
    thanks though
    today tomorrow yesterday tonight morning afternoon evening night week weekend month
    year daily weekly monthly am pm noon midnight o'clock
    monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december
    one two three four five six seven eight nine ten eleven twelve twenty thirty forty
    fifty hundred thousand million first second third half
"""
_NOT_SUBJECT = frozenset(_NOT_SUBJECT_WORDS.split())
#: How much the corrected entry's relevance must beat the next candidate's.
_CLEAR_MARGIN = 1.5
_CANDIDATES = 8


def _subject_words(text: str) -> list[str]:
    """The words that say what a fact is about: all but the speaker label,
    function words, change and correction cues, numbers, dates and times."""
    words: list[str] = []
    for word in _WORD.findall(_SPEAKER.sub("", text, count=1).casefold()):
        word = word.removesuffix("'s")
        if len(word) < 2 or word in _NOT_SUBJECT or any(c.isdigit() for c in word):
            continue
        words.append(word)
    return words


def _stem(word: str) -> str:
    """A light stem: without a plural ``s``, or ``ing`` or ``ed``."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) > len(suffix) + 3:
            return word[: -len(suffix)]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _subject(text: str) -> frozenset[str]:
    """A fact's subject words (:func:`_subject_words`), stemmed (:func:`_stem`)."""
    return frozenset(_stem(word) for word in _subject_words(text))


def _shares_subject(fact: frozenset[str], entry: frozenset[str]) -> bool:
    """At least half of each side's subject words are in the other."""
    shared = len(fact & entry)
    return shared > 0 and 2 * shared >= len(fact) and 2 * shared >= len(entry)


def _corrected(fact: Fact, hits: Sequence[Hit]) -> Hit | None:
    """The entry ``fact`` corrects among ``hits`` (current ``fact`` entries of the
    scope, best first), or ``None`` unless the rule is met (see
    :func:`_link_corrections`)."""
    text = normalize_fact(fact.text)
    if any(normalize_fact(hit.content) == text for hit in hits):
        return None  # already known: saved as before, so skipped
    subject = _subject(fact.text)
    if not subject:
        return None
    candidates = sorted(
        (
            (_relevance(hit), hit)
            for hit in hits
            if hit.superseded_by is None and _shares_subject(subject, _subject(hit.content))
        ),
        key=lambda pair: -pair[0],
    )
    if not candidates or candidates[0][0] <= 0:
        return None
    if len(candidates) > 1 and candidates[0][0] < _CLEAR_MARGIN * candidates[1][0]:
        return None
    return candidates[0][1]


def _relevance(hit: Hit) -> float:
    """A hit's BM25 relevance over its own content (no recency, no context)."""
    explain = hit.explain
    if explain is not None and "bm25" in explain:
        return float(explain["bm25"])
    return float(hit.score or 0.0)


async def _link_corrections(
    engine: Engine, scope: str, facts: Sequence[Fact], sources: Sequence[int]
) -> list[_Plan]:
    """Plans for the offline extractor's facts, each correction linked to the
    entry it corrects when the rule is clearly met.

    A fact is looked at when its kind is ``correction``, or ``state`` with a
    change cue ("moved to", "switched to", "changed to", "no longer", "is
    now", ...). Its subject words (see :func:`_subject`) are looked up among the
    scope's current entries of kind ``fact`` (a BM25 query, before this call
    saves anything, so never an entry of this call). The best hit is the one it
    corrects when:

    1. no hit already says the same (then nothing is linked and the fact is
       skipped as a duplicate);
    2. it shares the fact's subject: at least half of the fact's subject words
       are among its own, and at least half of its own among the fact's;
    3. its BM25 relevance is at least 1.5 times that of the next hit that also
       shares the subject (or no other hit does);
    4. it has not been superseded, and no other fact of the same call picks it
       (two corrections of one entry: neither is linked).

    A linked fact is saved with ``supersedes=`` that entry, or, when the entry
    has a key, as a new version of that key. Anything else is saved plainly.
    """
    plans = [_Plan(fact, chunk) for fact, chunk in zip(facts, sources)]
    looked = [
        i
        for i, fact in enumerate(facts)
        if fact.kind == "correction" or (fact.kind == "state" and _CHANGE.search(fact.text))
    ]

    async def lookup(fact: Fact) -> Hit | None:
        words = _subject_words(fact.text)
        if not words:
            return None
        record = _convert.query_record(
            " ".join(dict.fromkeys(words)),
            scope,
            8192,
            limit=_CANDIDATES,
            now=None,
            depth=None,
            kinds=["fact"],
            session_id=None,
            since=None,
            until=None,
            metadata=None,
            on_injection="flag",
        )
        record["explain"] = True
        record["embedding"] = None
        hits, _ = await engine.query(record)
        return _corrected(fact, hits)

    found = await asyncio.gather(*(lookup(facts[i]) for i in looked))
    picks: dict[int, list[int]] = {}
    for i, hit in zip(looked, found):
        if hit is not None:
            picks.setdefault(hit.id, []).append(i)
    targets = {i: hit for i, hit in zip(looked, found) if hit is not None}
    for entry_id, chosen_by in picks.items():
        if len(chosen_by) != 1:
            continue
        i = chosen_by[0]
        hit = targets[i]
        if hit.key is not None:
            plans[i].fact = dataclasses.replace(plans[i].fact, key=hit.key)
        else:
            plans[i].supersedes = entry_id
    return plans
