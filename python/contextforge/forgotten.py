"""``Forgotten``: the receipt ``forget`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._core import _Receipt

__all__ = ["Forgotten"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Forgotten:
    """What one ``forget`` removed.

    ``id`` names the forget: the change log keeps it, with each forgotten
    entry's id, as the only trace (a tombstone, never content). ``ids`` are the
    entries forgotten; ``vectors`` their embeddings; ``reindexed`` the entries
    kept whose search-index documents held forgotten words (the next turns of a
    forgotten entry's session), rewritten without them; ``segments`` the index
    segments this call rewrote so that no deleted document stays in them (a
    background merge may have rewritten others first).
    """

    id: str
    at: datetime
    ids: tuple[int, ...]
    vectors: int
    reindexed: int
    segments: int

    @property
    def entries(self) -> int:
        """How many entries were forgotten."""
        return len(self.ids)

    @classmethod
    def _from_record(cls, record: _Receipt) -> Forgotten:
        return cls(
            id=record["id"],
            at=_EPOCH + timedelta(microseconds=record["at"]),
            ids=tuple(record["ids"]),
            vectors=record["vectors"],
            reindexed=record["reindexed"],
            segments=record["segments"],
        )
