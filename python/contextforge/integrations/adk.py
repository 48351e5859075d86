"""contextforge as a Google ADK memory service.

``ContextForgeMemoryService`` is a ``google.adk.memory.BaseMemoryService``: give
it to a ``Runner`` (``memory_service=``) and ADK's memory tools
(``load_memory``, ``preload_memory``) and callbacks
(``ctx.add_session_to_memory()``, ``ctx.search_memory(query)``) read and write
one contextforge store::

    from google.adk.runners import Runner
    from contextforge import ContextForge
    from contextforge.integrations.adk import ContextForgeMemoryService

    cf = await ContextForge.open("memory.db")
    runner = Runner(app_name="app", agent=agent, session_service=sessions,
                    memory_service=ContextForgeMemoryService(cf))

Each ``(app_name, user_id)`` pair is a scope of its own,
``adk:<app_name>/<user_id>`` with ``%``, ``/`` and control characters
percent-encoded, so no user or app ever reads another's memory. Each event with
text is one entry, keyed by the event's id: adding a session again adds only
its new events, and an event once added (or deleted) is never added again.

Install with ``pip install 'contextforge-memory[adk]'``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from contextforge.integrations import escape_label, require, store_of

require("google.adk.memory", "adk")

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from contextforge.memory import ContextForge
from contextforge.sync import ContextForgeSync

__all__ = ["ContextForgeMemoryService", "escape_label"]

EVENT_KIND = "message"
MEMORY_KIND = "memory"
_DELETED_KIND = "adk.deleted"
_KEY = "adk:"
_DELETED_KEY = "adk-deleted:"
_CHUNK = 500


class ContextForgeMemoryService(BaseMemoryService):
    """An ADK memory service backed by a contextforge store.

    Args:
        cf: an open ``ContextForge`` (or a ``ContextForgeSync``, whose ``aio``
            store is used); also accepted as ``store=``.
        scope_root: the first part of every scope (``"adk"``: ``adk:<app>/<user>``),
            without ``/`` or ``:``.
        budget: the most tokens the memories one search returns may hold.
        limit: the most memories one search returns.
    """

    def __init__(
        self,
        cf: ContextForge | ContextForgeSync | None = None,
        /,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        scope_root: str = "adk",
        budget: int = 2048,
        limit: int = 10,
    ) -> None:
        handle = store_of(cf, store, "ContextForgeMemoryService")
        if not scope_root or "/" in scope_root or ":" in scope_root:
            # The first ':' ends the root: two roots never share a scope.
            raise ValueError("scope_root must be a non-empty label without '/' or ':'")
        self.store: ContextForge = handle
        self.scope_root = scope_root
        self.budget = budget
        self.limit = limit

    def scope(self, app_name: str, user_id: str) -> str:
        """The contextforge scope of one app's user: ``adk:<app>/<user>``, escaped."""
        return f"{self.scope_root}:{escape_label(app_name)}/{escape_label(user_id)}"

    async def add_session_to_memory(self, session: Session) -> None:
        """Saves the session's events that hold text, except those already added
        (or deleted): a session may be added again and again as it grows."""
        await self._add_events(session.app_name, session.user_id, session.events, session.id, None)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Saves these events (a delta), except those already added (or deleted).
        ``custom_metadata`` is stored with each new one; its ``"ttl"`` (seconds)
        makes them expire."""
        await self._add_events(app_name, user_id, events, session_id, custom_metadata)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Saves explicit memories (kind ``"memory"``). An entry's ``id`` is its
        key: adding the same id again saves a new version that supersedes the
        old one. ``custom_metadata["ttl"]`` (seconds) makes them expire."""
        scope = self.scope(app_name, user_id)
        extra, ttl = _split_ttl(custom_metadata)
        items = []
        for memory in memories:
            text = _text(memory.content)
            if not text:
                continue
            memory_id = memory.id or uuid.uuid4().hex
            item: dict[str, Any] = {
                "content": text,
                "kind": MEMORY_KIND,
                "scope": scope,
                "key": _KEY + memory_id,
                "metadata": _metadata(
                    memory_id,
                    memory.author,
                    memory.content.role,
                    {**memory.custom_metadata, **extra},
                ),
                "ttl": ttl,
            }
            when = _parse_time(memory.timestamp)
            if when is not None:
                item["timestamp"] = when
            items.append(item)
        if items:
            await self.store.save_many(items)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The memories of this app's user most relevant to ``query`` (the newest
        ones for an empty query), within ``budget`` tokens and ``limit`` entries."""
        hits = await self.store.query(
            query,
            self.scope(app_name, user_id),
            self.budget,
            limit=self.limit,
            kinds=[EVENT_KIND, MEMORY_KIND],
        )
        memories = []
        for hit in hits:
            meta = hit.metadata
            found = meta.get("adk")
            adk: dict[str, Any] = found if isinstance(found, dict) else {}
            custom = meta.get("custom")
            memories.append(
                MemoryEntry(
                    id=adk.get("id") or str(hit.id),
                    content=types.Content(
                        role=adk.get("role"), parts=[types.Part(text=hit.content)]
                    ),
                    author=adk.get("author"),
                    timestamp=hit.timestamp.isoformat(),
                    custom_metadata=custom if isinstance(custom, dict) else {},
                )
            )
        return SearchMemoryResponse(memories=memories)

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forgets memory ``memory_id`` (a ``MemoryEntry.id`` from ``search_memory``)
        with every version of it, leaving no byte of it behind (``forget``). A
        deleted event is not saved again when its session is added again.
        ``None`` deletes nothing."""
        if not memory_id:
            return
        scope = self.scope(app_name, user_id)
        # The tombstone first: were the forget to fail after it, a retry still
        # forgets, and re-adding the session never brings the memory back.
        await self.store.save(
            f"deleted memory {memory_id}",
            _DELETED_KIND,
            scope=scope,
            key=_DELETED_KEY + memory_id,
            metadata={"adk": {"id": memory_id}},
            scrub=False,
        )
        await self.store.forget(scope=scope, key=_KEY + memory_id)

    async def _add_events(
        self,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None,
        custom_metadata: Mapping[str, object] | None,
    ) -> None:
        scope = self.scope(app_name, user_id)
        extra, ttl = _split_ttl(custom_metadata)
        with_text = [(event, _text(event.content)) for event in events]
        known = await self._known(scope, [event.id for event, text in with_text if text])
        items = []
        for event, text in with_text:
            if not text or event.id in known:
                continue
            known.add(event.id)
            item: dict[str, Any] = {
                "content": text,
                "kind": EVENT_KIND,
                "scope": scope,
                "key": _KEY + event.id,
                "timestamp": event.timestamp,
                "metadata": _metadata(
                    event.id, event.author, event.content.role if event.content else None, extra
                ),
                "ttl": ttl,
            }
            if session_id:
                item["session_id"] = session_id
            items.append(item)
        if items:
            await self.store.save_many(items)

    async def _known(self, scope: str, ids: Sequence[str]) -> set[str]:
        """Which of these ids the scope already holds, as a memory or as deleted."""
        known: set[str] = set()
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            async for hit in self.store.list(scope=scope, metadata={"adk.id": {"$in": chunk}}):
                adk = hit.metadata.get("adk")
                if isinstance(adk, dict) and isinstance(adk.get("id"), str):
                    known.add(adk["id"])
        return known


def _text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text and not part.thought).strip()


def _metadata(
    memory_id: str, author: str | None, role: str | None, custom: Mapping[str, object]
) -> dict[str, Any]:
    adk: dict[str, Any] = {"id": memory_id}
    if author:
        adk["author"] = author
    if role:
        adk["role"] = role
    meta: dict[str, Any] = {"adk": adk}
    if custom:
        meta["custom"] = dict(custom)
    return meta


def _split_ttl(custom: Mapping[str, object] | None) -> tuple[dict[str, object], float | None]:
    rest = dict(custom or {})
    ttl = rest.pop("ttl", None)
    if ttl is None:
        return rest, None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"custom_metadata['ttl'] must be a number of seconds, got {ttl!r}")
    return rest, float(ttl)


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    # ADK writes local, naive ISO times (memory/_utils.py:format_timestamp).
    return when if when.tzinfo is not None else when.astimezone()
