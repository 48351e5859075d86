"""How ``save_many`` hands its items to the engine: converted and checked a
chunk at a time, so that an iterable of any size is never held whole. A call
of one chunk crosses once; a larger one goes through a ``_core.BulkSave``, fed
a chunk at a time while the one before is written, all in one transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import _convert
from ._vectors import Vectors, as_vector
from .errors import InvalidInputError, InvalidTypeError
from .saved import Saved

if TYPE_CHECKING:
    from . import _core

__all__ = ["CHUNK", "Chunk", "chunks", "pending", "save_chunked"]

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
    prepared, given = chunk.prepared, chunk.given
    save_item = _convert.save_item
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidTypeError(f"item {i}: expected a mapping, not {type(item).__name__}")
        unknown = item.keys() - SAVE_KEYS
        if unknown:
            raise InvalidInputError(f"item {i}: unknown keys {sorted(map(str, unknown))}")
        if "content" not in item:
            raise InvalidInputError(f"item {i}: 'content' is required")
        try:
            if "embedding" not in item:
                prepared.append(save_item(**item))
                given.append(None)
            else:
                fields = {k: v for k, v in item.items() if k != "embedding"}
                prepared.append(save_item(**fields))
                vector = item["embedding"]
                given.append(None if vector is None else as_vector(vector))
        except InvalidInputError as err:
            raise type(err)(f"item {i}: {err}") from err
        if len(prepared) == size:
            yield chunk
            chunk = Chunk(i + 1)
            prepared, given = chunk.prepared, chunk.given
    if prepared:
        yield chunk


ItemVectors = Callable[[Chunk], Awaitable["Vectors | None"]]
Ready = tuple[Chunk, "Vectors | None"]


async def save_chunked(
    engine: _core.Engine,
    batch: Iterator[Chunk],
    item_vectors: ItemVectors,
    *,
    embed_first: bool,
) -> list[Saved]:
    """Saves every chunk of ``batch`` in one transaction, through a
    ``BulkSave``: each chunk is converted while the one before is written.
    With ``embed_first`` (an embedder to run) every chunk is embedded before
    the transaction opens: embedding inside it would hold the store's writer,
    against other processes and tasks, for as long as the embedder takes. Any
    error, or a cancel before ``finish``, leaves nothing of the batch saved."""
    if embed_first:
        # Every item checked before the embedder sees any: a bad one late in
        # the batch costs no embedding.
        whole = list(batch)
        ready = _replay([pair async for pair in _with_vectors(_taken(whole), item_vectors)])
    else:
        ready = _with_vectors(batch, item_vectors)
    bulk = engine.bulk_save()
    try:
        async for chunk, vectors in ready:
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


async def _with_vectors(batch: Iterator[Chunk], item_vectors: ItemVectors) -> AsyncIterator[Ready]:
    """Each chunk with its vectors; vectors given for some chunks and not for
    others (or of other lengths) raise as they would within one chunk."""
    shape: tuple[bool, int] | None = None  # (with vectors, their length)
    for chunk in batch:
        vectors = await item_vectors(chunk)
        now = (vectors is not None, 0 if vectors is None else vectors.shape[1])
        if shape is not None and now != shape:
            raise _mixed(shape, now, chunk.first)
        shape = now
        yield chunk, vectors
        del chunk, vectors  # not held while the next chunk is converted


def pending(first: Chunk, second: Chunk, rest: Iterable[Chunk]) -> Iterator[Chunk]:
    """``first``, ``second``, then ``rest``, holding none once it is taken."""
    return _taken([first, second], rest)


def _taken(chunks: list[Chunk], rest: Iterable[Chunk] = ()) -> Iterator[Chunk]:
    """``chunks`` (emptied as they are taken), then ``rest``."""
    chunks.reverse()
    while chunks:
        yield chunks.pop()
    yield from rest


async def _replay(pairs: list[Ready]) -> AsyncIterator[Ready]:
    """``pairs`` again, each let go once taken."""
    pairs.reverse()
    while pairs:
        yield pairs.pop()


def _mixed(before: tuple[bool, int], now: tuple[bool, int], first: int) -> InvalidInputError:
    """The error one crossing would give for vectors that differ between chunks."""
    if before[0] and now[0]:
        return InvalidInputError("the items' embeddings have different lengths")
    missing = first if before[0] else 0
    return InvalidInputError(
        f"item {missing}: no embedding; give every item one (or none), or configure an embedder"
    )
