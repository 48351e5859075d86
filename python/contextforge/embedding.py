"""``Embedding``: how ``ContextForge`` gets vectors — the configured embedder
recorded in the store, content embedded as it is stored (scrubbed first),
queries embedded, and ``reembed``. A mixin: ``ContextForge`` holds the engine
and the config."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from . import _convert
from ._vectors import Vector, Vectors, as_matrix, as_vector, embed, embedder_name
from .errors import InvalidInputError, InvalidTypeError
from .scope import ALL_SCOPES

if TYPE_CHECKING:
    from . import _core
    from .bulk import Chunk
    from .config import Config

__all__ = ["Embedding"]


class Embedding:
    """Vectors for content and queries (mixed into ``ContextForge``)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _engine: _core.Engine
        _config: Config

    async def _adopt_embedder(
        self, reembed: bool, on_progress: Callable[[int, int], None] | None
    ) -> None:
        """Records the configured embedder in the store (see ``open``)."""
        embedder = self._config.embedder
        assert embedder is not None
        size = _convert.positive_int("embed_batch_size", self._config.embed_batch_size)
        dim = getattr(embedder, "dim", None)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            dim = (await embed(embedder, ["dimension probe"], size)).shape[1]
        name = embedder_name(embedder)
        await self._engine.set_embedder(name, dim, reembed)
        if reembed:
            await self.reembed(on_progress=on_progress)

    async def _embed(self, texts: list[str], *, scrubbed: bool = False) -> Vectors | None:
        """The configured embedder's vectors for ``texts`` as they are stored
        (scrubbed first, so no secret reaches the embedder), or ``None``."""
        embedder = self._config.embedder
        if embedder is None or not texts:
            return None
        clean = texts if scrubbed else await self._engine.scrub(texts)
        return await embed(embedder, clean, self._config.embed_batch_size)

    def _embedder(self) -> Callable[[list[str]], Awaitable[Vectors | None]] | None:
        """What embeds distilled facts: the configured embedder, or nothing."""
        return self._embed if self._config.embedder is not None else None

    async def _query_vector(self, q: str, embedding: Vector | None) -> Any:
        if embedding is not None:
            return as_vector(embedding, "embedding")
        if not q.strip():
            return None  # a query without words lists; nothing to embed
        vectors = await self._embed([q], scrubbed=True)
        return None if vectors is None else vectors[0]

    async def reembed(self, *, on_progress: Callable[[int, int], None] | None = None) -> int:
        """Embeds every entry that has no vector with ``Config.embedder``, in
        batches of ``embed_batch_size``, each saved in one transaction (an
        interrupted run resumes where it stopped). Returns how many were embedded.

        ``on_progress(done, total)`` is called after each batch. Use it after
        switching embedders (``open(..., reembed=True)`` does both), or to embed
        entries saved before an embedder was configured.
        """
        embedder = self._config.embedder
        if embedder is None:
            raise InvalidInputError("reembed() needs an embedder: open with Config(embedder=...)")
        if on_progress is not None and not callable(on_progress):
            raise InvalidTypeError("on_progress must be callable")
        size = _convert.positive_int("embed_batch_size", self._config.embed_batch_size)
        # Every version counts: superseded ones are searched with include_superseded.
        entries = await self._engine.count(
            _convert.list_record(ALL_SCOPES, include_superseded=True)
        )
        total = max(0, entries - await self._engine.vector_count())
        done, after = 0, 0
        # Each batch is written while the next one is read and embedded.
        writing: asyncio.Future[int] | None = None
        written = 0
        try:
            while True:
                batch = await self._engine.missing_vectors(after, size)
                if batch:
                    ids = [entry_id for entry_id, _ in batch]
                    vectors = await embed(embedder, [content for _, content in batch], size)
                if writing is not None:
                    await writing
                    writing, done = None, done + written
                    if on_progress is not None:
                        on_progress(done, max(total, done))
                if not batch:
                    return done
                writing = asyncio.ensure_future(self._engine.set_vectors(ids, vectors))
                written, after = len(batch), ids[-1]
        finally:
            if writing is not None and not writing.done():
                # An error (or a cancel) while embedding: the batch already
                # handed to the store is written or refused, never left half.
                with contextlib.suppress(Exception):
                    await asyncio.shield(writing)

    async def _chunk_vectors(self, chunk: Chunk) -> Vectors | None:
        """One vector per item of ``chunk``: the given ones, the embedder's for the rest."""
        prepared, given = chunk.prepared, chunk.given
        missing = [i for i, v in enumerate(given) if v is None]
        if len(missing) == len(given):
            return await self._embed([p["content"] for p in prepared])
        if missing:
            made = await self._embed([prepared[i]["content"] for i in missing])
            if made is None:
                raise InvalidInputError(
                    f"item {chunk.first + missing[0]}: no embedding; give every item one (or none), "
                    "or configure an embedder"
                )
            for row, i in enumerate(missing):
                given[i] = made[row]
        if len({len(v) for v in given}) > 1:
            raise InvalidInputError("the items' embeddings have different lengths")
        return as_matrix(given, rows=len(given), what="embeddings")
