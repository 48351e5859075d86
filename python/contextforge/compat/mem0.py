"""A drop-in for mem0's ``Memory`` and ``AsyncMemory`` (mem0ai 2.2.x) over contextforge.

Switch a mem0 script by one import::

    from contextforge import ContextForgeSync
    from contextforge.compat.mem0 import Memory      # was: from mem0 import Memory

    m = Memory(ContextForgeSync.open("memory.db"))
    m.add("I prefer tea", user_id="alice", infer=False)
    m.search("tea", filters={"user_id": "alice"})["results"]

mem0 itself is not imported (nor needed). What maps to what:

- **Scoping.** ``user_id``/``agent_id``/``run_id`` partition exactly as in mem0:
  each memory keeps the ids it was added with as top-level metadata (filtered
  inside the search index), and lives in the hierarchical scope
  ``<namespace>/user:<u>/agent:<a>/run:<r>`` (the ids it has, in that order,
  with ``%`` and ``/`` percent-encoded), so a filter on the leading ids reads
  one scope prefix. ``search``/``get_all`` take the ids in ``filters=`` only
  (top-level ids raise ``ValueError``, as in mem0 2.x).
- **Ids and versions.** A memory's id is a UUID kept in its metadata
  (``mem0_id``, the same on every version). ``update`` saves the new text as a
  correction of the current version (``cf.supersede``: the old version is kept,
  closed and linked; a fact the distiller filed under a key gets a new version
  of that key), and ``history`` reads the versions back (``cf.versions``) as
  mem0's ADD/UPDATE rows. ``delete`` removes every version, so a deleted
  memory has no history. (The UUID is not made the entry's key: a keyed
  distiller is shown the scope's keys, and they would crowd out its own.)
- **Filters.** mem0's grammar (``eq ne gt gte lt lte in nin``, ``"*"``, ``AND``,
  ``OR``, ``NOT``) is translated to contextforge's ``$`` operators
  (:func:`translate_filters`); what has no translation (``contains``,
  ``icontains``, ``NOT`` of a range) raises :class:`UnsupportedFilterError`.
- **infer.** ``add(infer=True)`` distils the messages with
  ``cf.distill_and_save`` (the offline extractor unless ``distiller=`` is
  given); a fact that supersedes an earlier one keeps that memory's id and is
  reported as an ``UPDATE``. ``infer=False`` stores each non-system message.
- **Scores** are contextforge's (BM25 times recency, or the hybrid fusion with
  an embedder), not mem0's 0..1 fused score: ``threshold`` is validated but not
  applied (contextforge's relevance floor, ``Config.min_relative_relevance``,
  does that job); ``rerank`` is ignored, as in mem0 without a reranker.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, cast

from .._core import Hit
from ..distill import Distiller
from ..memory import ContextForge
from ..sync import ContextForgeSync
from ._mem0_shared import (
    _BUDGET,
    _LEVEL,
    _UNSET,
    ENTITY_IDS,
    ID_KEY,
    UnsupportedFilterError,
    _caller_metadata,
    _entity_id,
    _expiration,
    _item,
    _label,
    _merge,
    _messages,
    _now,
    _reject_entity_kwargs,
    _top_k,
    _unexpired,
    logger,
    translate_filters,
)

__all__ = ["AsyncMemory", "Memory", "UnsupportedFilterError", "translate_filters"]


# ---------------------------------------------------------------- async


class AsyncMemory:
    """mem0's ``AsyncMemory`` over an open contextforge store.

    ``AsyncMemory(cf)`` (or ``store=cf``) takes a ``ContextForge``, or a
    ``ContextForgeSync`` whose ``aio`` store it then uses. ``namespace`` is the
    scope every memory lives under (``reset`` clears it and nothing else);
    ``distiller`` and ``max_chunk_tokens`` go to ``distill_and_save`` for
    ``add(infer=True)``."""

    def __init__(
        self,
        cf: ContextForge | ContextForgeSync | None = None,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        namespace: str = "mem0",
        distiller: Distiller | None = None,
        max_chunk_tokens: int | None = None,
    ) -> None:
        given = _one_store(cf, store, "AsyncMemory")
        self._cf: ContextForge = given.aio if isinstance(given, ContextForgeSync) else given
        if not isinstance(namespace, str) or not namespace.strip("/"):
            raise ValueError("namespace must be a non-empty scope label")
        self.namespace = namespace.strip("/")
        self.distiller = distiller
        self.max_chunk_tokens = max_chunk_tokens

    @classmethod
    def _over(cls, cf: ContextForge, like: AsyncMemory) -> AsyncMemory:
        memory = cls.__new__(cls)
        memory._cf = cf
        memory.namespace = like.namespace
        memory.distiller = like.distiller
        memory.max_chunk_tokens = like.max_chunk_tokens
        return memory

    def _scope(self, entities: Mapping[str, str]) -> str:
        levels = [
            f"{_LEVEL[name]}:{_label(entities[name])}" for name in ENTITY_IDS if name in entities
        ]
        return "/".join([self.namespace, *levels])

    def _selection(
        self, filters: Mapping[str, Any] | None, method: str
    ) -> tuple[str, dict[str, Any]]:
        """The scope prefix and metadata filter a mem0 ``filters=`` selects."""
        if filters is None or not isinstance(filters, Mapping):
            filters = {}
        if not any(name in filters for name in ENTITY_IDS):
            raise ValueError(
                "filters must contain at least one of: user_id, agent_id, run_id. "
                "Example: filters={'user_id': 'u1'}"
            )
        metadata = translate_filters(filters)
        leading: dict[str, str] = {}
        for name in ENTITY_IDS:
            value = metadata.get(name)
            if not isinstance(value, str):
                break
            leading[name] = value
        return self._scope(leading), metadata

    async def _find(self, memory_id: object) -> Hit | None:
        hits = await self._cf.query(
            "",
            scope_prefix=self.namespace,
            budget=_BUDGET,
            limit=1,
            metadata={ID_KEY: str(memory_id)},
        )
        return hits[0] if hits else None

    async def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        llm: Any = None,
    ) -> dict[str, Any]:
        """Adds memories under the given ids (at least one) and returns
        ``{"results": [{"id", "memory", "event"}, ...]}``."""
        if timestamp is not None:
            raise ValueError("add(timestamp=) is a mem0 platform-only parameter")
        if memory_type is not None or llm is not None:
            raise NotImplementedError(
                "memory_type='procedural_memory' needs an LLM summary: distil it yourself "
                "and add it with infer=False"
            )
        if prompt is not None:
            raise NotImplementedError(
                "prompt= is not supported: pass a distiller to AsyncMemory(cf, distiller=...)"
            )
        entities = {
            name: _entity_id(value, name)
            for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id))
            if value is not None
        }
        if not entities:
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
        base = {**_caller_metadata(metadata, "add()"), **entities}
        expires = _expiration(expiration_date)
        if expires is not None:
            base["expiration_date"] = expires
        turns = []
        for message in _messages(messages):
            if (
                not isinstance(message, Mapping)
                or message.get("role") is None
                or message.get("content") is None
            ):
                logger.warning("Skipping invalid message format: %r", message)
            elif message["role"] != "system":
                turns.append(message)
        if not turns:
            return {"results": []}
        scope = self._scope(entities)
        if infer:
            return {"results": await self._infer(turns, scope, base)}
        now = _now()
        items: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for message in turns:
            content = str(message["content"])
            memory_id = str(uuid.uuid4())
            meta = {**base, "role": message["role"]}
            if message.get("name"):
                meta["actor_id"] = message["name"]
            meta.update({ID_KEY: memory_id, "created_at": now, "updated_at": now})
            items.append(
                {
                    "content": content,
                    "kind": "memory",
                    "scope": scope,
                    "metadata": meta,
                }
            )
            results.append(
                {
                    "id": memory_id,
                    "memory": content,
                    "event": "ADD",
                    "actor_id": message.get("name") or None,
                    "role": message["role"],
                }
            )
        await self._cf.save_many(items)
        return {"results": results}

    async def _infer(
        self, turns: list[Mapping[str, Any]], scope: str, base: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        transcript = [{"role": str(m["role"]), "content": str(m["content"])} for m in turns]
        result = await self._cf.distill_and_save(
            transcript,
            scope=scope,
            distiller=self.distiller,
            max_chunk_tokens=self.max_chunk_tokens,
        )
        # mem0 keeps facts only: the transcript's summary is not a memory.
        summaries = [item.id for item in result.saved if item.kind != "fact"]
        if summaries:
            await self._cf.delete_many(summaries)
        results: list[dict[str, Any]] = []
        for item in result.saved:
            if item.kind != "fact":
                continue
            now = _now()
            memory_id, created_at, event, previous = str(uuid.uuid4()), now, "ADD", None
            if item.superseded is not None:
                old = await self._cf.get(item.superseded, include_superseded=True)
                if old is not None and isinstance(old.metadata.get(ID_KEY), str):
                    memory_id = old.metadata[ID_KEY]
                    created_at = old.metadata.get("created_at", now)
                    event, previous = "UPDATE", old.content
            meta = {
                **base,
                ID_KEY: memory_id,
                "created_at": created_at,
                "updated_at": now,
            }
            await self._cf.update(item.id, metadata=meta)
            entry: dict[str, Any] = {"id": memory_id, "memory": item.text, "event": event}
            if previous is not None:
                entry["previous_memory"] = previous
            results.append(entry)
        return results

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory, or ``None``."""
        hit = await self._find(memory_id)
        return None if hit is None else _item(hit, score=True)

    async def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Up to ``top_k`` memories that ``filters`` selects, newest first."""
        _reject_entity_kwargs(kwargs, "get_all")
        limit = _top_k(top_k)
        prefix, metadata = self._selection(filters, "get_all")
        if not show_expired:
            metadata = _merge([metadata, _unexpired()])
        if limit == 0:
            return {"results": []}
        hits = await self._cf.query(
            "", scope_prefix=prefix, budget=_BUDGET, limit=limit, metadata=metadata
        )
        return {"results": [_item(hit, score=False) for hit in hits]}

    async def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The ``top_k`` memories most relevant to ``query`` among those
        ``filters`` selects, best first, with contextforge's ``score``."""
        if reference_date is not None:
            raise ValueError("search(reference_date=) is a mem0 platform-only parameter")
        _reject_entity_kwargs(kwargs, "search")
        if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(
                f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive)."
            )
        limit = _top_k(top_k)
        if not isinstance(query, str) or not query.strip():
            raise ValueError("Invalid query: cannot be empty or whitespace-only.")
        prefix, metadata = self._selection(filters, "search")
        if not show_expired:
            metadata = _merge([metadata, _unexpired()])
        if limit == 0:
            return {"results": []}
        hits = await self._cf.query(
            query.strip(),
            scope_prefix=prefix,
            budget=_BUDGET,
            limit=limit,
            metadata=metadata,
            explain=explain,
        )
        results = []
        for hit in hits:
            item = _item(hit, score=True)
            if explain:
                item["score_details"] = hit.explain
            results.append(item)
        return {"results": results}

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, str]:
        """Saves a new version of the memory (its id, scope and ids unchanged)."""
        if data is not None:
            logger.warning("update(data=) is deprecated in mem0: use text=")
            if text is None:
                text = data
        if text is None and metadata is None and expiration_date is _UNSET:
            raise ValueError("At least one of text, metadata, or expiration_date must be provided.")
        hit = await self._find(memory_id)
        if hit is None:
            raise ValueError(
                f"Memory with id {memory_id} not found. Please provide a valid 'memory_id'"
            )
        content = hit.content if text is None else text
        if not isinstance(content, str):
            raise ValueError(  # noqa: TRY004 (as mem0)
                f"Memory with id {memory_id} does not have text content to update"
            )
        meta = dict(hit.metadata)
        meta.update(_caller_metadata(metadata, "update()"))
        if expiration_date is not _UNSET:
            expires = _expiration(expiration_date)
            if expires is None:
                meta.pop("expiration_date", None)
            else:
                meta["expiration_date"] = expires
        meta.update({"updated_at": _now()})
        # One transaction: the new version takes the place of the old one, which
        # is kept (closed, linked) for history(); a keyed fact gets a new version.
        await self._cf.supersede(hit.id, content, metadata=meta)
        return {"message": "Memory updated successfully!"}

    async def delete(self, memory_id: str) -> dict[str, str]:
        """Deletes the memory and every version of it."""
        hit = await self._find(memory_id)
        if hit is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        # Every version carries the id: one transaction takes them all, a
        # version an update adds meanwhile included.
        await self._cf.delete_where(scope_prefix=self.namespace, metadata={ID_KEY: str(memory_id)})
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """Deletes every memory (every version) with these ids."""
        entities = {
            name: _entity_id(value, name)
            for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id))
            if value is not None
        }
        if not entities:
            raise ValueError(
                "At least one filter is required to delete all memories. If you want to "
                "delete all memories, use the `reset()` method."
            )
        prefix, metadata = self._selection(entities, "delete_all")
        await self._cf.delete_where(scope_prefix=prefix, metadata=metadata)
        return {"message": "Memories deleted successfully!"}

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The memory's changes, oldest first, as mem0's ADD/UPDATE rows; empty
        for an unknown (or deleted) memory."""
        hit = await self._find(memory_id)
        if hit is None:
            return []
        rows: list[dict[str, Any]] = []
        previous: str | None = None
        for version in await self._cf.versions(hit.id):
            meta = version.metadata
            rows.append(
                {
                    "id": str(version.id),
                    "memory_id": str(memory_id),
                    "old_memory": previous,
                    "new_memory": version.content,
                    "event": "ADD" if not rows else "UPDATE",
                    "created_at": meta.get("created_at", version.timestamp.isoformat()),
                    "updated_at": meta.get("updated_at", version.timestamp.isoformat()),
                    "is_deleted": False,
                    "actor_id": meta.get("actor_id"),
                    "role": meta.get("role"),
                }
            )
            previous = version.content
        return rows

    async def reset(self) -> None:
        """Deletes every memory under the namespace (nothing else in the store)."""
        await self._cf.delete_where(scope_prefix=self.namespace)


# ---------------------------------------------------------------- sync


def _one_store(
    cf: ContextForge | ContextForgeSync | None,
    store: ContextForge | ContextForgeSync | None,
    who: str,
) -> ContextForge | ContextForgeSync:
    if cf is not None and store is not None:
        raise TypeError(f"{who}(cf) or {who}(store=cf), not both")
    given = cf if cf is not None else store
    if not isinstance(given, (ContextForge, ContextForgeSync)):
        raise TypeError(
            f"{who} takes an open contextforge store (ContextForge or ContextForgeSync), "
            f"not {type(given).__name__}: mem0 configs have no meaning here"
        )
    return given


class _Blocking:
    """A ``ContextForge`` look-alike whose coroutines call the blocking twin
    and never suspend, so :class:`Memory` runs :class:`AsyncMemory`'s code."""

    def __init__(self, twin: ContextForgeSync) -> None:
        self._twin = twin

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._twin, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("contextforge.compat.mem0: a blocking call suspended")


class Memory:
    """mem0's ``Memory`` (blocking) over an open contextforge store.

    ``Memory(cf)`` (or ``store=cf``) takes a ``ContextForgeSync``, or a
    ``ContextForge``, served through ``ContextForgeSync.sharing(cf)``. The other
    arguments are :class:`AsyncMemory`'s. ``close()`` (or ``with``) stops a
    twin this made, never the store."""

    def __init__(
        self,
        cf: ContextForge | ContextForgeSync | None = None,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        namespace: str = "mem0",
        distiller: Distiller | None = None,
        max_chunk_tokens: int | None = None,
    ) -> None:
        given = _one_store(cf, store, "Memory")
        self._owned = isinstance(given, ContextForge)
        self._twin = ContextForgeSync.sharing(given) if isinstance(given, ContextForge) else given
        self.aio = AsyncMemory(
            self._twin.aio,
            namespace=namespace,
            distiller=distiller,
            max_chunk_tokens=max_chunk_tokens,
        )
        self._run = AsyncMemory._over(cast(ContextForge, _Blocking(self._twin)), self.aio)

    @property
    def namespace(self) -> str:
        return self.aio.namespace

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`AsyncMemory.add`, blocking."""
        return cast(
            "dict[str, Any]",
            _drive(
                self._run.add(
                    messages,
                    user_id=user_id,
                    agent_id=agent_id,
                    run_id=run_id,
                    metadata=metadata,
                    timestamp=timestamp,
                    expiration_date=expiration_date,
                    infer=infer,
                    memory_type=memory_type,
                    prompt=prompt,
                )
            ),
        )

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """:meth:`AsyncMemory.get`, blocking."""
        return cast("dict[str, Any] | None", _drive(self._run.get(memory_id)))

    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """:meth:`AsyncMemory.get_all`, blocking."""
        return cast(
            "dict[str, Any]",
            _drive(
                self._run.get_all(filters=filters, top_k=top_k, show_expired=show_expired, **kwargs)
            ),
        )

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """:meth:`AsyncMemory.search`, blocking."""
        return cast(
            "dict[str, Any]",
            _drive(
                self._run.search(
                    query,
                    top_k=top_k,
                    filters=filters,
                    threshold=threshold,
                    rerank=rerank,
                    explain=explain,
                    reference_date=reference_date,
                    show_expired=show_expired,
                    **kwargs,
                )
            ),
        )

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, str]:
        """:meth:`AsyncMemory.update`, blocking."""
        return cast(
            "dict[str, str]",
            _drive(self._run.update(memory_id, text, metadata, expiration_date, data)),
        )

    def delete(self, memory_id: str) -> dict[str, str]:
        """:meth:`AsyncMemory.delete`, blocking."""
        return cast("dict[str, str]", _drive(self._run.delete(memory_id)))

    def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """:meth:`AsyncMemory.delete_all`, blocking."""
        return cast("dict[str, str]", _drive(self._run.delete_all(user_id, agent_id, run_id)))

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """:meth:`AsyncMemory.history`, blocking."""
        return cast("list[dict[str, Any]]", _drive(self._run.history(memory_id)))

    def reset(self) -> None:
        """:meth:`AsyncMemory.reset`, blocking."""
        _drive(self._run.reset())

    def close(self) -> None:
        """Stops the blocking twin this made from a ``ContextForge`` (the store
        stays open); a ``ContextForgeSync`` given is left to its owner."""
        if self._owned:
            self._twin.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
