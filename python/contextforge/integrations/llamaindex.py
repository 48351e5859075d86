"""contextforge as a LlamaIndex long-term memory block.

``ContextForgeMemoryBlock`` plugs into ``llama_index.core.memory.Memory``: the
messages that ``Memory`` ejects from its short-term queue are saved in one
contextforge scope (one entry per message, kind ``"message"``, the role in
metadata, the LlamaIndex session as ``session_id``), and each ``Memory.aget``
puts a packed, prompt-ready block of what is relevant to the latest messages
into the system message::

    from llama_index.core.memory import Memory
    from contextforge import ContextForge
    from contextforge.integrations.llamaindex import ContextForgeMemoryBlock

    cf = await ContextForge.open("memory.db")
    block = ContextForgeMemoryBlock(cf, scope="user:42", token_budget=512)
    memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])

Install with ``pip install 'contextforge-memory[llamaindex]'``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal

from contextforge.integrations import require, store_of

require("llama_index.core.memory", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory import BaseMemoryBlock

from contextforge.memory import ContextForge
from contextforge.sync import ContextForgeSync

__all__ = ["ContextForgeMemoryBlock"]

_SESSION_KEY = "session_id"
_REMEMBERED = 64  # packed blocks kept for atruncate


class ContextForgeMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block backed by a contextforge store.

    Args:
        cf: an open ``ContextForge`` (or a ``ContextForgeSync``, whose ``aio``
            store is used); also accepted as ``store=``.
        scope: the contextforge scope this block reads and writes (required).
        name: the block's name in ``Memory``'s template.
        token_budget: the most tokens the packed block may hold, counted by the
            store's tokenizer (``Config.tokenizer``).
        query_messages: how many of the latest messages make up the query.
        kind: the kind of the entries saved from ejected messages.
        session_only: read only entries of the current LlamaIndex session
            (by default the whole scope: memory across sessions).
        order: the order of the hits in the block (``"score"``,
            ``"chronological"`` or ``"edges"``).
        priority: ``Memory``'s truncation priority; 0 never truncates, so the
            default is 1 (``atruncate`` re-packs with a smaller budget).
        tokenizer_fn: the tokenizer ``Memory`` counts with, when it is not the
            store's. ``Memory``'s default (tiktoken ``cl100k``) counts as a store
            opened with ``Config(tokenizer="cl100k")`` does; then leave it out.
    """

    store: ContextForge = Field(description="The contextforge store (async API).")
    scope: str = Field(description="The contextforge scope of this memory.")
    name: str = Field(default="contextforge", description="The name of the memory block.")
    token_budget: int = Field(default=1024, gt=0)
    query_messages: int = Field(default=3, gt=0)
    kind: str = Field(default="message")
    session_only: bool = Field(default=False)
    order: Literal["score", "chronological", "edges"] = Field(default="score")
    priority: int = Field(default=1)
    tokenizer_fn: Callable[[str], list[Any]] | None = Field(default=None, exclude=True)

    _packed: OrderedDict[str, tuple[str, str | None, int]] = PrivateAttr(
        default_factory=OrderedDict
    )

    def __init__(
        self,
        cf: ContextForge | ContextForgeSync | None = None,
        /,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        **data: Any,
    ) -> None:
        handle = store_of(cf, store, "ContextForgeMemoryBlock")
        super().__init__(store=handle, **data)  # type: ignore[call-arg]  # a field of this class

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Saves each message with text as one entry (one transaction)."""
        items: list[dict[str, Any]] = []
        for message in messages:
            text = _text(message)
            if not text:
                continue
            session = message.additional_kwargs.get(_SESSION_KEY)
            item: dict[str, Any] = {
                "content": text,
                "kind": self.kind,
                "scope": self.scope,
                "metadata": {"role": _role(message)},
                # Two turns may say the same ("ok"): each is an entry of its own.
                "dedupe": False,
            }
            if isinstance(session, str) and session:
                item["session_id"] = session
            items.append(item)
        if items:
            await self.store.save_many(items)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memory relevant to the latest messages, packed in ``token_budget``.

        With no message text the block holds the newest entries instead.
        """
        query = " ".join(
            text for text in (_text(m) for m in (messages or [])[-self.query_messages :]) if text
        )
        session = block_kwargs.get(_SESSION_KEY) if self.session_only else None
        session_id = session if isinstance(session, str) and session else None
        return await self._pack(query, session_id, self.token_budget)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Re-packs the block ``tokens_to_truncate`` tokens smaller.

        The new budget is the block's size minus ``tokens_to_truncate``, counted
        by the store's tokenizer (or by ``tokenizer_fn`` when given); the best
        hits that fit are kept. ``None`` when nothing fits (``Memory`` then drops
        the block).
        """
        if tokens_to_truncate <= 0:
            return content
        packed = self._packed.get(content)
        if packed is None:
            return None  # not a block this instance packed: drop it, as the default does
        query, session_id, tokens = packed
        budget = tokens - tokens_to_truncate
        count = self.tokenizer_fn
        target = None if count is None else len(count(content)) - tokens_to_truncate
        while budget > 0:
            text = await self._pack(query, session_id, budget)
            if not text:
                return None
            if count is None or target is None:
                return text
            excess = len(count(text)) - target
            if excess <= 0:
                return text
            budget = min(budget, self._packed[text][2]) - excess
        return None

    async def _pack(self, query: str, session_id: str | None, budget: int) -> str:
        ctx = await self.store.context(
            query,
            self.scope,
            budget,
            kinds=[self.kind],
            session_id=session_id,
            order=self.order,
        )
        if ctx.text:
            self._packed[ctx.text] = (query, session_id, ctx.tokens)
            self._packed.move_to_end(ctx.text)
            while len(self._packed) > _REMEMBERED:
                self._packed.popitem(last=False)
        return ctx.text


def _text(message: ChatMessage) -> str:
    content = message.content
    return content.strip() if isinstance(content, str) else ""


def _role(message: ChatMessage) -> str:
    role: Any = message.role
    return str(getattr(role, "value", role))
