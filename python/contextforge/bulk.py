"""How ``save_many`` hands its items to the engine: converted and checked a
chunk at a time, so that an iterable of any size is never held whole. A call
of one chunk crosses once; a larger one goes through a ``_core.BulkSave``, fed
a chunk at a time while the one before is written, all in one transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import _convert
from ._vectors import Vectors, as_vector
from .errors import InvalidInputError, InvalidTypeError
from .saved import Saved

if TYPE_CHECKING:
    from . import _core

__all__ = ["CHUNK", "Chunk", "chunks", "save_chunked"]

#: Items converted and handed to the engine at a time.
CHUNK = 4096

SAVE_KEYS = frozenset(
    {
        "content",
        "kind",
        "scope",
        "session_id",
        "metadata",
        "timestamp",
        "dedupe",
        "ttl",
        "expires_at",
        "embedding",
        "key",
        "valid_from",
        "valid_to",
        "supersedes",
        "sources",
        "cross_scope_sources",
        "id",
        "scrub",
    }
)


class Chunk:
    """Consecutive items, checked: their records, and the vectors given."""

    __slots__ = ("first", "given", "prepared")

    def __init__(self, first: int) -> None:
        self.first = first
        self.prepared: list[_convert.SaveItem] = []
        self.given: list[Any] = []


def chunks(items: Iterable[Mapping[str, Any]], size: int = CHUNK) -> Iterator[Chunk]:
    """``items`` checked and converted, ``size`` at a time. A bad item raises
    ``InvalidInputError`` (or ``InvalidTypeError``) naming its place."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InvalidTypeError(
            f"save_many takes an iterable of mappings, not {type(items).__name__}"
        )
    chunk = Chunk(0)
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidTypeError(f"item {i}: expected a mapping, not {type(item).__name__}")
        unknown = set(item) - SAVE_KEYS
        if unknown:
            raise InvalidInputError(f"item {i}: unknown keys {sorted(map(str, unknown))}")
        if "content" not in item:
            raise InvalidInputError(f"item {i}: 'content' is required")
        fields = {k: v for k, v in item.items() if k != "embedding"}
        try:
            chunk.prepared.append(_convert.save_item(**fields))
            vector = item.get("embedding")
            chunk.given.append(None if vector is None else as_vector(vector))
        except InvalidInputError as err:
            raise type(err)(f"item {i}: {err}") from err
        if len(chunk.prepared) == size:
            yield chunk
            chunk = Chunk(i + 1)
    if chunk.prepared:
        yield chunk


ItemVectors = Callable[[Chunk], Awaitable["Vectors | None"]]


async def save_chunked(
    engine: _core.Engine, batch: Iterator[Chunk], item_vectors: ItemVectors
) -> list[Saved]:
    """Saves every chunk of ``batch`` in one transaction, through a
    ``BulkSave``: each chunk is converted (and embedded) while the one before
    is written. Any error, or a cancel, leaves nothing of the batch saved."""
    bulk = engine.bulk_save()
    try:
        shape: tuple[bool, int] | None = None  # (with vectors, their length)
        for chunk in batch:
            vectors = await item_vectors(chunk)
            now = (vectors is not None, 0 if vectors is None else vectors.shape[1])
            if shape is not None and now != shape:
                raise _mixed(shape, now, chunk.first)
            shape = now
            await bulk.add(chunk.prepared, vectors)
            del chunk, vectors
        ids, existing = await bulk.finish()
    except BaseException:
        bulk.abort()
        raise
    saved = [Saved(entry_id, True) for entry_id in ids]
    for place in existing:
        saved[place] = Saved(ids[place], False)
    return saved


def _mixed(before: tuple[bool, int], now: tuple[bool, int], first: int) -> InvalidInputError:
    """The error one crossing would give for vectors that differ between chunks."""
    if before[0] and now[0]:
        return InvalidInputError("the items' embeddings have different lengths")
    missing = first if before[0] else 0
    return InvalidInputError(
        f"item {missing}: no embedding; give every item one (or none), or configure an embedder"
    )
