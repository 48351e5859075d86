"""``Change``: one write of the audit trail that ``changes()`` iterates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from ._convert import from_micros

if TYPE_CHECKING:
    from ._core import _Logged, _Read

__all__ = ["Change", "Read"]


@dataclass(frozen=True)
class Change:
    """One write, as the change log records it: never content.

    ``seq`` is its place in the log (pass it as ``since`` to resume after it);
    ``op`` is ``"insert"``, ``"update"``, ``"delete"`` or ``"forget"`` (a
    deletion by :meth:`~contextforge.ContextForge.forget`, whose receipt id is
    ``forget``); ``scope`` is the entry's scope when the change was made;
    ``key`` the entry's key while it exists; ``at`` when the change was made
    (``None`` for changes logged before the store kept it).
    """

    seq: int
    op: Literal["insert", "update", "delete", "forget"]
    entry_id: int
    scope: str | None
    key: str | None
    at: datetime | None
    forget: str | None

    @classmethod
    def _from_record(cls, record: _Logged) -> Change:
        at = record["at"]
        return cls(
            seq=record["seq"],
            op=record["op"],
            entry_id=record["entry_id"],
            scope=record["scope"],
            key=record["key"],
            at=None if at is None else from_micros(at),
            forget=record["forget"],
        )


@dataclass(frozen=True)
class Read:
    """What one ``query`` or ``context`` returned, as the read audit keeps it
    (``Config(audit_reads=True)``).

    ``seq`` is its place in the audit (pass it as ``since`` to resume);
    ``scopes`` what it searched (``None``: every scope; ``None`` in the list:
    global entries); ``query_hash`` a keyed hash of its text (equal queries give
    equal hashes within one store); ``query`` the text, only with
    ``audit_query_text=True``; ``ids`` the entries returned, in order.
    """

    seq: int
    at: datetime
    scopes: tuple[str | None, ...] | None
    query_hash: str
    query: str | None
    ids: tuple[int, ...]

    @classmethod
    def _from_record(cls, record: _Read) -> Read:
        scopes = record["scopes"]
        return cls(
            seq=record["seq"],
            at=from_micros(record["at"]),
            scopes=None if scopes is None else tuple(scopes),
            query_hash=record["query_hash"],
            query=record["query"],
            ids=tuple(record["ids"]),
        )
