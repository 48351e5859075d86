"""``Lineage``: where memory came from and where it went — the methods of
``ContextForge`` for a key's history, supersession chains, provenance, the
audit trails and forgetting. A mixin: ``ContextForge`` holds the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import _convert
from .audit import Change, Read
from .forgotten import Forgotten
from .provenance import Link
from .scope import ALL_SCOPES, ScopeFilter

if TYPE_CHECKING:
    from . import _core

__all__ = ["Lineage"]


class Lineage:
    """History, provenance, audit and forgetting (mixed into ``ContextForge``)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _engine: _core.Engine

    async def history(self, key: str, scope: str | None) -> list[_core.Hit]:
        """The versions of ``key`` in ``scope`` (``None``: global entries), oldest
        first, each with its interval (``valid_from``, ``valid_to``) and
        ``superseded_by``; empty when the key has none."""
        return await self._engine.history(
            _convert.label("key", key), _convert.optional_text("scope", scope)
        )

    async def keys(self, scope: str | None, *, limit: int = 1000) -> list[str]:
        """The keys that ``scope`` (``None``: global entries) holds versions of,
        in order, at most ``limit`` (up to 10,000)."""
        return await self._engine.keys(
            _convert.optional_text("scope", scope), _convert.positive_int("limit", limit)
        )

    async def versions(self, id: int) -> list[_core.Hit]:
        """Entry ``id`` and every entry linked to it by supersession, both ways,
        oldest first; empty when there is no such entry."""
        [entry_id] = _convert.ids([id])
        return await self._engine.versions(entry_id)

    async def sources(self, id: int, *, depth: int = 8) -> list[Link]:
        """What entry ``id`` rests on, following sources up to ``depth`` links
        (at most 32), nearest first: entry ids and external references, never
        content. An entry source that was since deleted still shows its id."""
        [entry_id] = _convert.ids([id])
        records = await self._engine.linked(entry_id, True, _convert.positive_int("depth", depth))
        return [Link._from_record(r) for r in records]

    async def derived(self, id: int, *, depth: int = 8) -> list[Link]:
        """What was derived from entry ``id``, following sources down up to
        ``depth`` links (at most 32), nearest first: each link's ``entry_id``
        is an entry that rests on the one before it."""
        [entry_id] = _convert.ids([id])
        records = await self._engine.linked(entry_id, False, _convert.positive_int("depth", depth))
        return [Link._from_record(r) for r in records]

    async def changes(
        self,
        since: int = 0,
        scope: ScopeFilter = ALL_SCOPES,
        *,
        page_size: int = _convert.PAGE,
    ) -> AsyncIterator[Change]:
        """Iterates over the change log, oldest first, from after ``since`` (a
        :class:`Change`'s ``seq``: pass the last one seen to resume), fetching
        ``page_size`` at a time: the audit trail of every insert, update,
        delete and forget, with when it was made and in which scope, never
        content. ``scope`` is one scope, ``None`` for global entries, or
        ``ALL_SCOPES`` (the default); changes logged before the store kept
        scopes are in the ``ALL_SCOPES`` trail only. It is the log the search
        index follows, read-only; it ends at the newest change when it is
        read."""
        after = _convert.non_negative_int("since", since)
        size = _convert.positive_int("page_size", page_size)
        chosen = _convert.scope_filter(scope)
        while True:
            page = await self._engine.changes(after, size, chosen)
            for record in page:
                yield Change._from_record(record)
            if len(page) < size:
                return
            after = page[-1]["seq"]

    async def reads(self, since: int = 0, *, page_size: int = _convert.PAGE) -> AsyncIterator[Read]:
        """Iterates over the read audit, oldest first, from after ``since`` (a
        :class:`Read`'s ``seq``), fetching ``page_size`` at a time: what each
        ``query`` and ``context`` returned, with ``Config(audit_reads=True)``
        (empty otherwise). Reads not yet written are written first."""
        after = _convert.non_negative_int("since", since)
        size = _convert.positive_int("page_size", page_size)
        while True:
            page = await self._engine.reads(after, size)
            for record in page:
                yield Read._from_record(record)
            if len(page) < size:
                return
            after = page[-1]["seq"]

    async def forget(
        self,
        *,
        ids: Iterable[int] | None = None,
        scope: str | None = _convert.UNSET,
        session_id: str | None = None,
        key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: int | str | None = None,
        cascade: bool = False,
    ) -> Forgotten:
        """Forgets the entries that match every criterion given, completely,
        and returns a :class:`Forgotten` receipt.

        When it returns, no byte of their content is readable in any file the
        library writes: the rows are deleted with SQLite's ``secure_delete``
        (freed space is zeroed), the write-ahead log is checkpointed and
        truncated, the search index drops their documents and rewrites every
        segment that still held deleted ones (and the documents of the next
        turns of their sessions, whose context held their words), and their
        vectors go. The change log keeps a tombstone per entry: its id and the
        forget's id. docs/forgetting.md says what ``delete`` and
        ``clear_scope`` leave behind instead.

        Args:
            ids: These entries.
            scope: The entries of this scope (``None``: global entries).
            session_id: The entries of this session (a conversation, a thread).
            key: Every version of this key.
            metadata: The entries whose metadata holds these top-level values,
                such as a subject ``{"user": "u-42"}`` (str, number, bool or
                ``None``; typed: ``True`` is not ``1``, ``1`` is not ``"1"``, and
                ``1`` equals ``1.0``).
            source: The entries that cite this source directly: an entry id,
                or an external reference.
            cascade: Also forget everything derived from the entries chosen,
                transitively (``forget(ids=[message], cascade=True)`` takes a
                message and every fact distilled from it).

        Raises:
            InvalidInputError: when no criterion is given, or ``metadata`` is
                empty (it would match everything: use ``clear_all``).
            RetryableStorageError: when another connection kept the
                write-ahead log from being truncated; the entries are deleted,
                and calling ``forget`` again finishes the job.
        """
        what: _convert.ForgetRecord = {"ids": None if ids is None else _convert.ids(ids)}
        if scope is not _convert.UNSET:
            what["scope"] = _convert.optional_text("scope", scope)
        if session_id is not None:
            what["session_id"] = _convert.label("session_id", session_id)
        if key is not None:
            what["key"] = _convert.label("key", key)
        if metadata is not None:
            what["metadata"] = _convert.metadata_json(metadata) or "{}"
        if source is not None:
            what["source"] = _convert.source(source)
        what["cascade"] = _convert.flag("cascade", cascade)
        return Forgotten._from_record(await self._engine.forget(what))
