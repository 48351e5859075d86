"""``Link``: one step of provenance, as ``sources()`` and ``derived()`` return it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._core import _Linked

__all__ = ["Link"]


@dataclass(frozen=True)
class Link:
    """Entry ``entry_id`` rests on a source: an entry of the store
    (``source_id``) or an external reference (``ref``: a URL, a message id),
    optionally a character ``span`` of it. ``depth`` counts the links from the
    entry asked about (1: a direct source, or a direct derivation). Links hold
    ids and references only, never content: read an entry with ``get``."""

    entry_id: int
    source_id: int | None
    ref: str | None
    span: tuple[int, int] | None
    depth: int

    @classmethod
    def _from_record(cls, record: _Linked) -> Link:
        span = record["span"]
        return cls(
            entry_id=record["entry_id"],
            source_id=record["source_id"],
            ref=record["ref"],
            span=None if span is None else (span[0], span[1]),
            depth=record["depth"],
        )
