"""Distillation: long transcripts into a summary and durable facts.

The pieces the store's ``distill_and_save`` is built from, usable on their own:

- :class:`Distiller`: the protocol, ``async (text: str) -> Distillation``, and
  :class:`KeyedDistiller`, one that also takes the scope's existing keys
  (``keys=``) so that its facts can reuse them;
- :class:`OpenAIChatDistiller`: a distiller for any OpenAI-compatible
  ``/v1/chat/completions`` server (structured output with fallbacks, retries,
  timeouts, bounded concurrency, strict validation);
- :func:`distill_all`, :func:`merge`, :func:`merge_with_sources`,
  :func:`reduce_summary`, :func:`merge_with_model`: map a distiller over chunks
  and reduce the results (deduplicated facts; summaries joined, or reduced by one
  more model call);
- :func:`coerce_transcript`: a transcript as ``(speaker, text)`` pairs, and
  :func:`message_ids`: the messages' own ids (what their facts are linked to);
- :func:`accepts_messages`: whether a distiller is given the chunk's messages
  (``messages=``), whose indexes its facts' ``sources`` name;
- :class:`DistillResult` and :class:`SavedItem`: what ``distill_and_save`` returns.

Errors are :class:`DistillError` (a ``ContextForgeError``), with
:class:`DistillTimeoutError` (also a ``TimeoutError``) and
:class:`DistillResponseError` (also a ``ValueError``).
"""

from typing import TYPE_CHECKING

from ._types import (
    FACT_KINDS,
    Distillation,
    Distiller,
    DistillError,
    DistillResponseError,
    DistillTimeoutError,
    Fact,
    FactKind,
    KeyedDistiller,
)
from .merge import (
    DEFAULT_MAX_SUMMARY_CHARS,
    accepts_keys,
    accepts_messages,
    distill_all,
    merge,
    merge_with_model,
    merge_with_sources,
    normalize_fact,
    reduce_summary,
    truncate,
)
from .run import DistillResult, SavedItem
from .transcript import Transcript, TranscriptMessage, coerce_transcript, message_ids

if TYPE_CHECKING:
    from .client import OpenAIChatDistiller, ResponseMode


def __getattr__(name: str) -> object:
    # The model client loads httpx (a quarter of a second); the offline distiller
    # and the result types never need it.
    if name in ("OpenAIChatDistiller", "ResponseMode"):
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'contextforge.distill' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MAX_SUMMARY_CHARS",
    "FACT_KINDS",
    "DistillError",
    "DistillResponseError",
    "DistillResult",
    "DistillTimeoutError",
    "Distillation",
    "Distiller",
    "Fact",
    "FactKind",
    "KeyedDistiller",
    "OpenAIChatDistiller",
    "ResponseMode",
    "SavedItem",
    "Transcript",
    "TranscriptMessage",
    "accepts_keys",
    "accepts_messages",
    "coerce_transcript",
    "distill_all",
    "merge",
    "merge_with_model",
    "merge_with_sources",
    "message_ids",
    "normalize_fact",
    "reduce_summary",
    "truncate",
]
