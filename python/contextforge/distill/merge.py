"""Combining the distillations of a transcript's chunks into one.

The map step runs a distiller on every chunk with bounded concurrency
(:func:`distill_all`); the reduce step deduplicates facts and joins summaries
(:func:`merge`, :func:`merge_with_sources`), or asks the model once more for one
summary of the chunk summaries (:func:`reduce_summary`, :func:`merge_with_model`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import cast

from ..errors import InvalidInputError, InvalidTypeError
from ._types import Distillation, Distiller, Fact, KeyedDistiller

__all__ = [
    "DEFAULT_MAX_SUMMARY_CHARS",
    "accepts_keys",
    "accepts_messages",
    "distill_all",
    "merge",
    "merge_with_model",
    "merge_with_sources",
    "normalize_fact",
    "reduce_summary",
    "truncate",
]

#: The default cap on a merged summary, in characters.
DEFAULT_MAX_SUMMARY_CHARS = 2000


def normalize_fact(text: str) -> str:
    """The key two facts are duplicates by: NFKC, case-folded, whitespace runs
    collapsed to one space, ends trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at a word boundary when
    one is in the second half, ending in ``…`` when cut."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    keep = text[: max_chars - 1]
    space = max(keep.rfind(" "), keep.rfind("\n"))
    if space >= len(keep) // 2:
        keep = keep[:space]
    return keep.rstrip() + "…"


def _check_cap(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1, got {value}")
    return value


def merge(
    distillations: Iterable[Distillation],
    *,
    max_facts: int | None = None,
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
) -> Distillation:
    """One distillation from many, structurally, with no model call.

    Facts keep their first occurrence in chunk order; a later duplicate (same
    :func:`normalize_fact` key) is dropped, except that it lends its kind when the
    first one was only a plain ``"fact"``, and its ``key`` when the first one had
    none; its ``sources`` join the first one's (so give every distillation's
    sources in one numbering, such as the whole transcript's messages, as
    ``distill_and_save`` does). Facts with the same key and different texts are all kept, in order
    (saved in that order, the last one becomes the key's current version).
    ``max_facts`` (if given) keeps the first so many. The summary joins the chunk
    summaries, one per line, skipping empty and repeated ones, cut to
    ``max_summary_chars``. The model is the distinct model names joined with
    ``,``.
    """
    return merge_with_sources(
        distillations, max_facts=max_facts, max_summary_chars=max_summary_chars
    )[0]


def merge_with_sources(
    distillations: Iterable[Distillation],
    *,
    max_facts: int | None = None,
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
) -> tuple[Distillation, tuple[int, ...]]:
    """:func:`merge`, and for each merged fact the index of the distillation (the
    chunk) it first came from: what a fact's ``chunk`` metadata records."""
    items = list(distillations)
    for i, d in enumerate(items):
        if not isinstance(d, Distillation):
            raise InvalidTypeError(
                f"distillations[{i}] must be a Distillation, not {type(d).__name__}"
            )
    cap = None if max_facts is None else _check_cap("max_facts", max_facts)
    summary_cap = _check_cap("max_summary_chars", max_summary_chars)

    by_key: dict[str, int] = {}
    facts: list[Fact] = []
    sources: list[int] = []
    for source, d in enumerate(items):
        for fact in d.facts:
            key = normalize_fact(fact.text)
            at = by_key.get(key)
            if at is None:
                by_key[key] = len(facts)
                facts.append(fact)
                sources.append(source)
            else:
                first = facts[at]
                if first.kind == "fact" and fact.kind != "fact":
                    first = dataclasses.replace(first, kind=fact.kind)
                if first.key is None and fact.key is not None:
                    first = dataclasses.replace(first, key=fact.key)
                if not set(fact.sources) <= set(first.sources):
                    first = dataclasses.replace(first, sources=first.sources + fact.sources)
                facts[at] = first
    if cap is not None:
        facts, sources = facts[:cap], sources[:cap]

    models = list(dict.fromkeys(d.model for d in items if d.model))
    merged = Distillation(
        summary=truncate("\n".join(_summaries(items)), summary_cap),
        facts=tuple(facts),
        model=",".join(models),
    )
    return merged, tuple(sources)


def _summaries(items: Iterable[Distillation]) -> list[str]:
    """The non-empty chunk summaries, each once, in order."""
    out: list[str] = []
    seen: set[str] = set()
    for d in items:
        s = d.summary.strip()
        key = normalize_fact(s)
        if s and key not in seen:
            seen.add(key)
            out.append(s)
    return out


async def reduce_summary(
    distillations: Sequence[Distillation],
    distiller: Distiller,
    *,
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
) -> tuple[str, str]:
    """One summary of the chunk summaries by one more model call: the distiller
    gets them one per line, and ``(its summary, its model)`` is returned. With one
    distinct summary or none, no call is made and ``(that summary or "", "")`` is
    returned."""
    cap = _check_cap("max_summary_chars", max_summary_chars)
    summaries = _summaries(distillations)
    if len(summaries) <= 1:
        return truncate(summaries[0], cap) if summaries else "", ""
    text = "\n".join(summaries)
    if accepts_keys(distiller):  # no keys: this call's facts are not kept
        reduced = await cast(KeyedDistiller, distiller)(text, keys=())
    else:
        reduced = await distiller(text)
    if not isinstance(reduced, Distillation):
        raise InvalidTypeError(
            f"the distiller returned {type(reduced).__name__}, not a Distillation"
        )
    return truncate(reduced.summary, cap), reduced.model


async def merge_with_model(
    distillations: Sequence[Distillation],
    distiller: Distiller,
    *,
    max_facts: int | None = None,
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
) -> Distillation:
    """Like :func:`merge`, but the summary comes from :func:`reduce_summary` (one
    more model call when there are two summaries or more). The facts are
    :func:`merge`'s; the reducing call's facts are ignored (they restate them)."""
    merged = merge(distillations, max_facts=max_facts, max_summary_chars=max_summary_chars)
    summary, model = await reduce_summary(
        distillations, distiller, max_summary_chars=max_summary_chars
    )
    models = list(dict.fromkeys(m for m in [*merged.model.split(","), model] if m))
    return Distillation(summary=summary, facts=merged.facts, model=",".join(models))


def accepts_keys(distiller: object) -> bool:
    """Whether ``distiller`` can be called as ``distiller(text, keys=...)``: its
    signature names a ``keys`` parameter that is keyword-only, or positional or
    keyword but not the first (which takes the text). A ``**kwargs`` catch-all
    does not count, nor does a callable whose signature cannot be read."""
    return _accepts(distiller, "keys")


def accepts_messages(distiller: object) -> bool:
    """Whether ``distiller`` can be called as ``distiller(text, messages=...)``
    (the chunk's messages, one string each), by the rule of :func:`accepts_keys`."""
    return _accepts(distiller, "messages")


def _accepts(distiller: object, name: str) -> bool:
    if not callable(distiller):
        return False
    try:
        params = list(inspect.signature(distiller).parameters.values())
    except (TypeError, ValueError):
        return False
    for index, param in enumerate(params):
        if param.name != name:
            continue
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            return True
        return param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and index > 0
    return False


async def distill_all(
    distiller: Distiller,
    texts: Sequence[str],
    *,
    concurrency: int = 4,
    keys: Sequence[str] = (),
    messages: Sequence[Sequence[str]] | None = None,
) -> list[Distillation]:
    """Runs ``distiller`` on every text, at most ``concurrency`` at a time, and
    returns the results in the order of ``texts``.

    ``keys`` (the keys the scope already has) are passed on as
    ``distiller(text, keys=keys)`` when the distiller takes them (see
    :func:`accepts_keys` and :class:`KeyedDistiller`); a distiller that does
    not, such as a plain ``async def f(text)``, is called with the text alone.
    Likewise ``messages`` (one sequence of message strings per text) is passed
    on as ``messages=`` to a distiller that takes it (see
    :func:`accepts_messages`).

    The first failure cancels the calls still running or waiting and is raised;
    cancelling this coroutine cancels them all.
    """
    limit = _check_cap("concurrency", concurrency)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidTypeError(f"texts[{i}] must be a str, not {type(text).__name__}")
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        raise InvalidTypeError(f"keys must be a sequence of str, not {type(keys).__name__}")
    existing = tuple(keys)
    for i, key in enumerate(existing):
        if not isinstance(key, str):
            raise InvalidTypeError(f"keys[{i}] must be a str, not {type(key).__name__}")
    shown: list[list[str]] | None = None
    if messages is not None and accepts_messages(distiller):
        if isinstance(messages, str) or not isinstance(messages, Sequence):
            raise InvalidTypeError("messages must be a sequence of message lists, one per text")
        if len(messages) != len(texts):
            raise InvalidInputError(
                f"messages has {len(messages)} lists for {len(texts)} texts; give one per text"
            )
        shown = []
        for i, group in enumerate(messages):
            if isinstance(group, str) or not isinstance(group, Sequence):
                raise InvalidTypeError(f"messages[{i}] must be a sequence of str")
            if not all(isinstance(m, str) for m in group):
                raise InvalidTypeError(f"messages[{i}] must hold only str")
            shown.append(list(group))
    keyed = accepts_keys(distiller)
    gate = asyncio.Semaphore(limit)
    call = cast(Callable[..., Awaitable[object]], distiller)

    async def one(index: int, text: str) -> Distillation:
        extra: dict[str, object] = {}
        if keyed:
            extra["keys"] = existing
        if shown is not None:
            extra["messages"] = shown[index]
        async with gate:
            result = await call(text, **extra)
        if not isinstance(result, Distillation):
            raise InvalidTypeError(
                f"the distiller returned {type(result).__name__}, not a Distillation"
            )
        return result

    tasks = [asyncio.ensure_future(one(i, text)) for i, text in enumerate(texts)]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        # Let cancelled calls finish unwinding (closing connections) before returning.
        await asyncio.gather(*tasks, return_exceptions=True)
