"""Distillation: long transcripts into a summary and durable facts.

The pieces the store's ``distill_and_save`` is built from, usable on their own:

- :class:`Distiller`: the protocol, ``async (text: str) -> Distillation``;
- :class:`OpenAIChatDistiller`: a distiller for any OpenAI-compatible
  ``/v1/chat/completions`` server (structured output with fallbacks, retries,
  timeouts, bounded concurrency, strict validation);
- :func:`distill_all`, :func:`merge`, :func:`merge_with_sources`,
  :func:`reduce_summary`, :func:`merge_with_model`: map a distiller over chunks
  and reduce the results (deduplicated facts; summaries joined, or reduced by one
  more model call);
- :func:`coerce_transcript`: a transcript as ``(speaker, text)`` pairs.

Errors are :class:`DistillError` (a ``ContextForgeError``), with
:class:`DistillTimeoutError` (also a ``TimeoutError``) and
:class:`DistillResponseError` (also a ``ValueError``).
"""

from ._types import (
    FACT_KINDS,
    Distillation,
    Distiller,
    DistillError,
    DistillResponseError,
    DistillTimeoutError,
    Fact,
    FactKind,
)
from .client import OpenAIChatDistiller, ResponseMode
from .merge import (
    DEFAULT_MAX_SUMMARY_CHARS,
    distill_all,
    merge,
    merge_with_model,
    merge_with_sources,
    normalize_fact,
    reduce_summary,
    truncate,
)
from .transcript import Transcript, TranscriptMessage, coerce_transcript

__all__ = [
    "DEFAULT_MAX_SUMMARY_CHARS",
    "FACT_KINDS",
    "DistillError",
    "DistillResponseError",
    "DistillTimeoutError",
    "Distillation",
    "Distiller",
    "Fact",
    "FactKind",
    "OpenAIChatDistiller",
    "ResponseMode",
    "Transcript",
    "TranscriptMessage",
    "coerce_transcript",
    "distill_all",
    "merge",
    "merge_with_model",
    "merge_with_sources",
    "normalize_fact",
    "reduce_summary",
    "truncate",
]
