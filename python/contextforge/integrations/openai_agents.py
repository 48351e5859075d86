"""OpenAI Agents SDK session memory backed by contextforge.

``ContextForgeSession(session_id, cf)`` implements the SDK's ``Session``
protocol (``get_items``, ``add_items``, ``pop_item``, ``clear_session`` and
``session_settings``), so ``Runner.run(agent, input, session=...)`` keeps a
conversation's history in a contextforge store::

    async with ContextForge.open("memory.db") as cf:
        session = ContextForgeSession("chat-1", cf)
        await Runner.run(agent, "hello", session=session)

How items are stored: each Responses-API item is one entry of kind
``"message"`` in the scope ``agents:<session_id>`` (``/`` and ``%`` of the id
percent-encoded, so a session is one scope level), with ``session_id`` set to
the session's id. The entry's content is the item's text (what a person, the
model or a tool said), so it is scrubbed and searchable like any memory; its
metadata holds the exact item under ``"item"`` (plus ``"role"`` and ``"type"``
when the item has them, so ``cf.distill_session(scope, session_id)`` knows the
speakers). ``get_items`` returns the stored items, oldest first, in the order
they were added.

Scrubbing: by default (``scrub=True``) contextforge redacts secrets in the
content and in the stored item alike, so an API key a user pastes never
reaches the disk and comes back as ``[REDACTED:...]`` in the history; every
other item round-trips exactly. ``scrub=False`` stores items byte for byte
(secrets included).

Requires ``pip install 'contextforge-memory[openai-agents]'``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, cast

from contextforge.integrations import escape_label, require, store_of

require("agents", "openai-agents")

from agents.memory import SessionSettings
from agents.memory.session_settings import (
    coerce_session_settings,
    resolve_session_limit,
)

from contextforge import ContextForge, ContextForgeSync, Hit

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

__all__ = ["ContextForgeSession", "item_text", "recall_instructions", "session_scope"]

#: The kind of the entries a session writes.
ITEM_KIND = "message"
#: The metadata key that holds the exact item.
ITEM_KEY = "item"

_TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text", "refusal", "summary_text"})


def session_scope(session_id: str, parent: str | None = None) -> str:
    """The scope a session's items go to: ``agents:<session_id>``, with ``%``
    and ``/`` of the id percent-encoded so the session is one scope level;
    beneath ``parent`` when given (``"user:42"`` gives
    ``"user:42/agents:<session_id>"``, so ``scope_prefix="user:42"`` reads
    every session of that user)."""
    level = f"agents:{escape_label(session_id)}"
    return f"{parent.rstrip('/')}/{level}" if parent else level


def _parts_text(parts: Any) -> list[str]:
    texts: list[str] = []
    if isinstance(parts, str):
        return [parts]
    if isinstance(parts, Sequence):
        for part in parts:
            if isinstance(part, Mapping):
                text = part.get("text") if part.get("type") in _TEXT_PART_TYPES else None
                if text is None and part.get("type") == "refusal":
                    text = part.get("refusal")
                if isinstance(text, str):
                    texts.append(text)
            elif isinstance(part, str):
                texts.append(part)
    return texts


def item_text(item: Mapping[str, Any]) -> str:
    """What an item says, as plain text for the entry's content: a message's
    text parts, a tool call's name and arguments, a tool output, a reasoning
    summary; ``[<type>]`` for an item with no text (an image, a computer call)."""
    texts: list[str] = []
    kind = item.get("type")
    if "content" in item:
        texts += _parts_text(item["content"])
    if kind == "reasoning":
        texts += _parts_text(item.get("summary"))
    name = item.get("name")
    if isinstance(name, str) and "arguments" in item:
        arguments = item.get("arguments")
        texts.append(f"{name}({arguments if isinstance(arguments, str) else ''})")
    output = item.get("output")
    if output is not None:
        texts += _parts_text(output) if not isinstance(output, str) else [output]
    text = "\n".join(t for t in texts if t.strip())
    if text.strip():
        return text
    return f"[{kind if isinstance(kind, str) and kind else 'item'}]"


class ContextForgeSession:
    """An OpenAI Agents SDK ``Session`` whose items live in a contextforge store.

    Args:
        session_id: The conversation's id (a contextforge label: at most about
            500 bytes, no control characters, never a secret).
        cf: An open ``ContextForge`` (or a ``ContextForgeSync``, whose
            ``aio`` store is used); also accepted as ``store=``.
        session_settings: The SDK's ``SessionSettings`` (or a dict; by default
            ``SessionSettings()``, as the SDK's sessions); its ``limit`` caps
            how many of the latest items ``get_items()`` returns when called
            without a limit.
        scope: Where the items go; by default
            ``session_scope(session_id, parent_scope)``: ``"agents:<session_id>"``,
            or ``"<parent_scope>/agents:<session_id>"``. Every read and delete
            also selects ``session_id``, so sessions sharing a scope stay apart.
        parent_scope: The scope the session's own scope nests under
            (``"user:42"``), for recall across a user's sessions.
        scrub: ``False`` stores items exactly as given, secrets included.
        ttl: Forget each item this long after it is added (seconds or a
            ``timedelta``); ``None`` keeps them.
    """

    session_id: str
    session_settings: SessionSettings | None  # as the protocol; never None here

    def __init__(
        self,
        session_id: str,
        cf: ContextForge | ContextForgeSync | None = None,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        scope: str | None = None,
        parent_scope: str | None = None,
        scrub: bool = True,
        ttl: float | timedelta | None = None,
    ) -> None:
        if cf is None and store is None:
            raise TypeError("give the store: ContextForgeSession(session_id, cf) or store=cf")
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self._cf = store_of(cf, store, "ContextForgeSession")
        # As the SDK's own sessions: no settings means the default ones.
        self.session_settings = (
            coerce_session_settings(dict(session_settings))
            if isinstance(session_settings, Mapping)
            else session_settings or SessionSettings()
        )
        if scope is not None and parent_scope is not None:
            raise TypeError("give scope or parent_scope, not both")
        self.scope = scope if scope is not None else session_scope(session_id, parent_scope)
        self._scrub = scrub
        self._ttl = ttl

    @property
    def store(self) -> ContextForge:
        """The store the items are kept in."""
        return self._cf

    def __repr__(self) -> str:
        return f"ContextForgeSession(session_id={self.session_id!r}, scope={self.scope!r})"

    async def _newest(self, n: int | None) -> list[Hit]:
        """The session's ``n`` newest entries (every one for ``None``), oldest first."""
        hits: list[Hit] = []
        page = 500 if n is None else max(1, min(n, 500))
        async for hit in self._cf.list(
            scope=self.scope, session_id=self.session_id, kind=ITEM_KIND, page_size=page
        ):
            if ITEM_KEY not in hit.metadata:
                continue
            hits.append(hit)
            if n is not None and len(hits) >= n:
                break
        # list() is newest first by timestamp; add_items keeps timestamps rising with
        # the ids, and ids rise in save order, so sorting by id is insertion order.
        hits.sort(key=lambda h: h.id)
        return hits

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with ``limit`` (or
        ``session_settings.limit``) only the latest ``limit``, still oldest first.
        A limit of 0 returns nothing; a negative one, everything."""
        effective = resolve_session_limit(limit, self.session_settings)
        if effective == 0:
            return []
        hits = await self._newest(effective if effective is not None and effective > 0 else None)
        return [cast("TResponseInputItem", h.metadata[ITEM_KEY]) for h in hits]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends ``items`` in one transaction (all of them or none)."""
        if not items:
            return
        records: list[dict[str, Any]] = []
        for raw in items:
            item = cast("Mapping[str, Any]", raw)
            if not isinstance(item, Mapping):
                raise TypeError(f"a session item is a mapping, not {type(item).__name__}")
            exact = json.loads(json.dumps(item))  # a plain JSON copy; refuses non-JSON values
            metadata: dict[str, Any] = {ITEM_KEY: exact}
            for field in ("role", "type"):
                if isinstance(exact.get(field), str):
                    metadata[field] = exact[field]
            records.append(
                {
                    "content": item_text(exact),
                    "kind": ITEM_KIND,
                    "scope": self.scope,
                    "session_id": self.session_id,
                    "metadata": metadata,
                    "dedupe": False,
                    "scrub": self._scrub,
                }
            )
        # Reads select the newest items by timestamp: keep timestamps rising with the
        # ids (insertion order) even when the clock has stepped back since the last
        # add. Otherwise the store's own clock, read when it saves, stamps them.
        newest = await self._newest(1)
        behind = bool(newest) and newest[-1].timestamp >= datetime.now(timezone.utc)
        for record in records:
            if behind:
                record["timestamp"] = newest[-1].timestamp + timedelta(microseconds=1)
            if self._ttl is not None:
                record["ttl"] = self._ttl
        await self._cf.save_many(records)

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes the most recently added item and returns it; ``None`` when
        the session is empty."""
        while True:
            newest = await self._newest(1)
            if not newest:
                return None
            hit = newest[-1]
            if await self._cf.delete(hit.id):
                return cast("TResponseInputItem", hit.metadata[ITEM_KEY])
            # Another caller popped it first: take the next one.

    async def clear_session(self) -> None:
        """Deletes every item of this session."""
        await self._cf.delete_where(scope=self.scope, session_id=self.session_id, kind=ITEM_KIND)


async def recall_instructions(
    cf: ContextForge | ContextForgeSync,
    query: str,
    scope: str | None = None,
    *,
    scope_prefix: str | None = None,
    budget: int = 1024,
    instructions: str = "",
    **context_kwargs: Any,
) -> str:
    """Instructions with the memory relevant to ``query`` packed in: ``instructions``
    followed by ``cf.context(query, ...)``'s block (at most ``budget`` tokens,
    fenced and marked as data, not instructions). Search one ``scope`` or
    everything under ``scope_prefix`` (``"user:42"``: every session made
    with ``parent_scope="user:42"``, and that user's other memory); other keywords go to ``cf.context`` (``kinds=``,
    ``metadata=``, ``order=``...). With nothing relevant, ``instructions`` alone."""
    store = store_of(cf, None, "recall_instructions")
    if scope_prefix is not None:
        ctx = await store.context(query, budget=budget, scope_prefix=scope_prefix, **context_kwargs)
    else:
        ctx = await store.context(query, scope, budget, **context_kwargs)
    if not ctx.text:
        return instructions
    return f"{instructions}\n\n{ctx.text}" if instructions else ctx.text
