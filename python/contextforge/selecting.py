"""``Selecting``: the methods of ``ContextForge`` that act on a selection of
entries rather than on ids: listing and counting them, the scopes, and deleting
by selection (``delete_where``, ``clear_scope``, ``clear_all``,
``purge_expired``). A mixin: ``ContextForge`` holds the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from . import _convert
from .errors import InvalidInputError
from .scope import ALL_SCOPES, ScopeFilter

if TYPE_CHECKING:
    from . import _core
    from ._convert import Timestamp

__all__ = ["Selecting"]


class Selecting:
    """Listing, counting and deleting by selection (mixed into ``ContextForge``)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _engine: _core.Engine

    async def purge_expired(self, *, now: Timestamp | None = None) -> int:
        """Deletes the entries that have expired (by ``now``, default the current
        time) and returns how many. Expired entries are never returned anyway;
        this reclaims their space."""
        return await self._engine.purge_expired(_convert.timestamp_us("now", now))

    async def delete_where(
        self,
        *,
        scope: ScopeFilter = ALL_SCOPES,
        scope_prefix: str | None = None,
        session_id: str | None = None,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Deletes every entry the selection holds, in one transaction, and
        returns how many: a scope (``None``: global entries), a ``scope_prefix``
        (the scope and those beneath it), a session, a kind, a ``metadata``
        filter (as :meth:`query`'s), together. At least one must be given;
        :meth:`clear_all` deletes everything. Like :meth:`delete`, the content
        may stay in the search index's files until a merge: :meth:`forget`
        takes the same selections and leaves no byte behind."""
        record = _convert.list_record(
            scope, kind, session_id, scope_prefix=scope_prefix, metadata=metadata
        )
        return await self._engine.delete_where(record)

    async def clear_scope(self, scope: str) -> int:
        """Deletes every entry of exactly ``scope`` (no prefixes, no wildcards) and
        returns how many. Global entries are never touched."""
        return await self._engine.clear_scope(_convert.label("scope", scope))

    async def clear_all(self, *, confirm: bool) -> int:
        """Deletes every entry of every scope. Requires ``confirm=True``."""
        if confirm is not True:
            raise InvalidInputError("clear_all() deletes every scope: pass confirm=True")
        return await self._engine.clear_all()

    async def scopes(self, prefix: str | None = None) -> dict[str | None, int]:
        """Every scope with its number of live (unexpired) entries; ``None`` is the
        global scope. With ``prefix``, only that scope and the scopes beneath it
        (``"org:1"``: ``org:1`` and ``org:1/...``, never ``org:10``)."""
        return dict(await self._engine.scopes(_convert.optional_text("prefix", prefix)))

    async def list(
        self,
        *,
        scope: ScopeFilter = ALL_SCOPES,
        kind: str | None = None,
        session_id: str | None = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        page_size: int = _convert.PAGE,
        as_of: Timestamp | None = None,
        include_superseded: bool = False,
        scope_prefix: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[_core.Hit]:
        """Iterates over entries newest first, fetching ``page_size`` at a time, so
        memory stays bounded however large the store is. ``scope`` is one scope,
        ``None`` for global entries, or ``ALL_SCOPES`` (the default) for every
        scope. Entries with equal timestamps come newest id first. Only entries
        that hold now (or at ``as_of``) are listed, unless
        ``include_superseded``. ``scope_prefix`` lists a scope and those beneath
        it (leave ``scope`` out); ``metadata`` is a filter as :meth:`query`'s."""
        record = _convert.list_record(
            scope,
            kind,
            session_id,
            since,
            until,
            as_of=as_of,
            include_superseded=include_superseded,
            scope_prefix=scope_prefix,
            metadata=metadata,
        )
        size = _convert.positive_int("page_size", page_size)
        cursor: tuple[int, int] | None = None
        while True:
            page, cursor = await self._engine.list_page(record, cursor, size)
            for entry in page:
                yield entry
            if cursor is None or len(page) < size:
                return

    async def count(
        self,
        scope: ScopeFilter = ALL_SCOPES,
        *,
        as_of: Timestamp | None = None,
        include_superseded: bool = False,
        scope_prefix: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """The number of live entries that hold now (or at ``as_of``; every
        version with ``include_superseded``): in every scope by default
        (``ALL_SCOPES``), in one scope when given, or global entries for
        ``scope=None``; under ``scope_prefix``, of a session, matching a
        ``metadata`` filter (as :meth:`query`'s)."""
        return await self._engine.count(
            _convert.list_record(
                scope,
                session_id=session_id,
                as_of=as_of,
                include_superseded=include_superseded,
                scope_prefix=scope_prefix,
                metadata=metadata,
            )
        )
