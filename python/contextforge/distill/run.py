"""``distill_and_save``: transcript -> scrubbed chunks -> distillations -> entries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .. import _convert
from ..errors import InvalidInputError
from ._types import Distillation, Distiller, Fact
from .merge import distill_all, merge_with_sources, reduce_summary
from .transcript import Transcript, coerce_transcript

if TYPE_CHECKING:
    from .._core import Engine

__all__ = ["DistillResult", "SavedItem", "distill_into"]

EXTRACTIVE_MODEL = "contextforge-extractive"
DEFAULT_CHUNK_TOKENS = 2048


@dataclass(frozen=True)
class SavedItem:
    """One summary or fact: its entry id, kind (``"summary"`` or ``"fact"``), text,
    and for facts their category (decision, correction, preference, state, fact)."""

    id: int
    kind: str
    text: str
    fact_kind: str | None


@dataclass(frozen=True)
class DistillResult:
    """What ``distill_and_save`` did: entries it created, entries that already
    existed in the scope (returned with their existing ids), the model that
    distilled, and how many chunks the transcript was split into."""

    saved: tuple[SavedItem, ...]
    skipped: tuple[SavedItem, ...]
    model: str
    chunks: int


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
) -> DistillResult:
    scope = _convert.label("scope", scope)
    session = _convert.optional_text("session_id", session_id)
    budget = _convert.positive_int("max_chunk_tokens", max_chunk_tokens or DEFAULT_CHUNK_TOKENS)
    how = _convert.choice("summary", summary, ("structural", "model"))
    pairs = coerce_transcript(transcript)
    if not pairs:
        raise InvalidInputError("the transcript is empty")

    # Secrets are redacted here, in Rust, before any model sees the text.
    clean, chunks = await engine.distill_chunks(pairs, budget)
    if distiller is None:
        result, sources = await _extract(engine, clean, chunks)
    else:
        texts = [text for _, text, _, _ in chunks]
        parts = await distill_all(
            distiller, texts, concurrency=getattr(distiller, "concurrency", 4)
        )
        result, sources = merge_with_sources(parts)
        if how == "model" and len(parts) > 1:
            text, model = await reduce_summary(parts, distiller)
            result = Distillation(summary=text, facts=result.facts, model=model or result.model)

    items: list[dict[str, Any]] = []
    meta_base = {"source_session": session, "model": result.model}
    if result.summary.strip():
        items.append(
            {
                "content": result.summary,
                "kind": "summary",
                "scope": scope,
                "session_id": session,
                "metadata": {**meta_base, "chunks": len(chunks)},
            }
        )
    for fact, chunk in zip(result.facts, sources):
        items.append(
            {
                "content": fact.text,
                "kind": "fact",
                "scope": scope,
                "session_id": session,
                "metadata": {**meta_base, "chunk": chunk, "fact_kind": fact.kind},
            }
        )
    if not items:
        return DistillResult((), (), result.model, len(chunks))
    prepared = [_convert.save_item(**item) for item in items]
    vectors = None if embed is None else await embed([p["content"] for p in prepared])
    # One transaction: all or nothing.
    outcome = await engine.save_detailed(prepared, vectors)
    saved: list[SavedItem] = []
    skipped: list[SavedItem] = []
    for item, (entry_id, created) in zip(items, outcome):
        record = SavedItem(
            entry_id, item["kind"], item["content"], item["metadata"].get("fact_kind")
        )
        (saved if created else skipped).append(record)
    return DistillResult(tuple(saved), tuple(skipped), result.model, len(chunks))


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
    kept = tuple(Fact(kind, text) for kind, text, _, _ in facts)  # type: ignore[arg-type]
    sources = tuple(chunk_of.get(message, 0) for _, _, _, message in facts)
    return Distillation(summary=summary, facts=kept, model=EXTRACTIVE_MODEL), sources
