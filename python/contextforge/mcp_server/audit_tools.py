"""The audit and session tools of the MCP server: ``memory_changes``,
``memory_reads`` and ``distill_session``, under the server's :class:`ScopePolicy`.

A scope named by a call is checked exactly as the other tools check it (a scope
outside the policy is refused with the same error). The change log and the read
audit cover the whole store, so records are filtered here, before anything is
returned: a change only when its scope is allowed (and known: changes logged
before the store kept scopes are never shown), a read only when every scope it
searched is allowed (a read of every scope at once, ``ALL_SCOPES``, never).
Sequence numbers are the store's: a gap between two records says only that
something not shown happened in between.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Annotated, TypeVar

from pydantic import Field

from ..audit import Change, Read
from ..distill.run import SavedItem
from ..errors import InvalidInputError
from ..memory import ContextForge
from .compat import ToolError, Tools, hints
from .models import ChangeRecord, Changes, Distilled, DistilledItem, ReadRecord, Reads
from .policy import Policy, ScopeDenied

__all__ = ["register"]

_MAX_LIMIT = 1000
#: The most records one call looks at, shown or not: a call over a large store
#: whose records are mostly outside the policy returns early, with ``more``.
_MAX_SCANNED = 10_000
_PAGE = 500

T = TypeVar("T")

Since = Annotated[
    int,
    Field(
        ge=0, description="Only records after this seq (0: from the start); pass next to resume."
    ),
]
Limit = Annotated[int, Field(ge=1, le=_MAX_LIMIT, description="Return at most this many records.")]


def register(server: Tools, store: ContextForge, policy: Policy) -> None:
    """Adds ``memory_changes``, ``memory_reads`` and ``distill_session`` to ``server``."""

    @server.tool(
        description="The audit trail: every insert, update, delete and forget of memories "
        "in the scopes this server may use, oldest first, with when it was made, the "
        "memory's id, scope and key, and for a forget its forget_id. Never content: read "
        "a memory with get_memory. Give scope for one scope; omit it for every scope this "
        "server may use (global memories only if it may use them). Returns at most limit "
        "records and next: call again with since=next while more is true.",
        annotations=hints(read_only=True),
    )
    async def memory_changes(
        since: Since = 0,
        scope: Annotated[
            str | None,
            Field(description="Only this scope; omit for every scope this server may use."),
        ] = None,
        limit: Limit = 100,
    ) -> Changes:
        if scope is not None:
            source = store.changes(since, _guard(policy.check, scope), page_size=_PAGE)
        else:
            source = store.changes(since, page_size=_PAGE)
        # Unknown time means a change logged before the store kept scopes: its
        # scope reads as None without being global, so it is never shown.
        kept, last, more = await _scan(
            source,
            lambda c: c.at is not None and policy.allows(c.scope),
            lambda c: c.seq,
            since,
            limit,
        )
        return Changes(changes=[_change(c) for c in kept], next=last, more=more)

    @server.tool(
        description="The read audit: for each search (search_memory, or an application's "
        "query) whose scopes are all scopes this server may use, when it ran, the scopes, "
        "a hash of the query (its text only if the store keeps it) and the ids of the "
        "memories it returned, oldest first. Never content. The store records reads only "
        "when opened with audit_reads: if it was not, this returns an empty list (with "
        "audited=false) or only what applications that audit reads recorded. Returns at "
        "most limit records and next: call again with since=next while more is true.",
        annotations=hints(read_only=True),
    )
    async def memory_reads(since: Since = 0, limit: Limit = 100) -> Reads:
        kept, last, more = await _scan(
            store.reads(since, page_size=_PAGE),
            lambda r: r.scopes is not None and all(policy.allows(s) for s in r.scopes),
            lambda r: r.seq,
            since,
            limit,
        )
        return Reads(
            reads=[_read(r) for r in kept], next=last, more=more, audited=store.config.audit_reads
        )

    @server.tool(
        description="Condense a conversation already saved in memory (the memories of one "
        "session in one scope, oldest first) into a summary and durable facts with the "
        "offline extractive distiller (secrets are scrubbed first), and save them in the "
        "same scope and session, each linked to the memories it rests on (memory_sources "
        "reads the links). Facts already in the scope are skipped; summaries and facts "
        "saved earlier are not distilled again.",
        annotations=hints(read_only=False, destructive=False),
    )
    async def distill_session(
        scope: Annotated[str, Field(description="The scope the conversation is saved in.")],
        session_id: Annotated[str, Field(description="The conversation to distil.")],
    ) -> Distilled:
        target = _guard(policy.check, scope)
        assert target is not None  # a str was checked
        try:
            result = await store.distill_session(target, session_id)
        except InvalidInputError as err:
            raise ToolError(str(err)) from None
        return Distilled(
            saved=[_item(i) for i in result.saved],
            skipped=[_item(i) for i in result.skipped],
            chunks=result.chunks,
            model=result.model,
        )


async def _scan(
    source: AsyncIterator[T],
    keep: Callable[[T], bool],
    seq: Callable[[T], int],
    since: int,
    limit: int,
) -> tuple[list[T], int, bool]:
    """The first ``limit`` records of ``source`` that ``keep`` accepts, looking at
    no more than ``_MAX_SCANNED``; with the seq to resume after (the last record
    looked at, shown or not) and whether there may be more."""
    kept: list[T] = []
    last, scanned, more = since, 0, False
    try:
        async for record in source:
            last, scanned = seq(record), scanned + 1
            if keep(record):
                kept.append(record)
            if len(kept) >= limit or scanned >= _MAX_SCANNED:
                more = True
                break
    finally:
        if isinstance(source, AsyncGenerator):
            await source.aclose()
    return kept, last, more


def _guard(check: Callable[[str | None], str | None], scope: str | None) -> str | None:
    """A policy decision, as an MCP error for the agent when it is a refusal (as
    the other tools of the server refuse)."""
    try:
        return check(scope)
    except ScopeDenied as err:
        raise ToolError(str(err)) from None


def _change(change: Change) -> ChangeRecord:
    assert change.at is not None
    return ChangeRecord(
        seq=change.seq,
        at=change.at.isoformat(),
        op=change.op,
        entry_id=change.entry_id,
        scope=change.scope,
        key=change.key,
        forget=change.forget,
    )


def _read(read: Read) -> ReadRecord:
    return ReadRecord(
        seq=read.seq,
        at=read.at.isoformat(),
        scopes=list(read.scopes or ()),
        query_hash=read.query_hash,
        query=read.query,
        ids=list(read.ids),
    )


def _item(item: SavedItem) -> DistilledItem:
    return DistilledItem(
        id=item.id,
        kind=item.kind,
        text=item.text,
        fact_kind=item.fact_kind,
        key=item.key,
        superseded=item.superseded,
        sources=list(item.sources),
    )
