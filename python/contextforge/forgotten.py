"""``Forgotten``: the receipt ``forget`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ._convert import from_micros

if TYPE_CHECKING:
    from ._core import _Receipt

__all__ = ["Forgotten"]


@dataclass(frozen=True)
class Forgotten:
    """What one ``forget`` removed.

    ``id`` names the forget: the change log keeps it, with each forgotten
    entry's id, as the only trace (a tombstone, never content). ``ids`` are the
    entries forgotten; ``vectors`` their embeddings; ``reindexed`` the entries
    kept whose search-index documents held forgotten words (the next turns of a
    forgotten entry's session), rewritten without them; ``segments`` the index
    segments this call rewrote so that no deleted document stays in them (a
    background merge may have rewritten others first). ``storage_scrubbed``
    says whether the database's own storage no longer holds the forgotten
    bytes: ``True`` for a local file (``secure_delete``, the WAL truncated) and
    a store in memory; ``False`` for a libSQL server, whose WAL, replication log
    and free pages are the server's to scrub (docs/forgetting.md, "Remote
    stores").
    """

    id: str
    at: datetime
    ids: tuple[int, ...]
    vectors: int
    reindexed: int
    segments: int
    storage_scrubbed: bool

    @property
    def entries(self) -> int:
        """How many entries were forgotten."""
        return len(self.ids)

    @classmethod
    def _from_record(cls, record: _Receipt) -> Forgotten:
        return cls(
            id=record["id"],
            at=from_micros(record["at"]),
            ids=tuple(record["ids"]),
            vectors=record["vectors"],
            reindexed=record["reindexed"],
            segments=record["segments"],
            storage_scrubbed=record["storage_scrubbed"],
        )
