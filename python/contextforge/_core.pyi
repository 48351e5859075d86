"""The compiled engine. Use the ``contextforge`` package rather than this module."""

import os
from collections.abc import Awaitable
from datetime import datetime
from typing import Any, Literal, TypeAlias, TypedDict, final

import numpy
import numpy.typing as npt

from contextforge._convert import ForgetRecord, ListRecord, PatchRecord, QueryRecord, SaveItem
from contextforge.config import Config
from contextforge.scope import ScopeFilter

__all__ = [
    "BulkSave",
    "Context",
    "Embedder",
    "Engine",
    "Hit",
    "__build__",
    "__version__",
    "_rebuild_hit",
    "_shutdown",
    "default_config",
]

__version__: str
__build__: str

@final
class Hit:
    """An entry returned by a query (with a score) or a lookup (``score`` is ``None``).

    A value: hits compare equal when their fields are equal, and they pickle,
    copy and convert with :meth:`to_dict`. Build one by hand for a test fake.
    """

    def __new__(
        cls,
        id: int,
        content: str,
        kind: str = ...,
        *,
        scope: str | None = None,
        session_id: str | None = None,
        timestamp: datetime | None = None,
        tokens: int = 0,
        metadata: dict[str, Any] | None = None,
        score: float | None = None,
        expires_at: datetime | None = None,
        updated_at: datetime | None = None,
        risks: list[str] = ...,
        key: str | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        superseded_by: int | None = None,
    ) -> Hit: ...
    @property
    def id(self) -> int: ...
    @property
    def content(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def scope(self) -> str | None:
        """The entry's scope; ``None`` for a global entry."""
    @property
    def session_id(self) -> str | None: ...
    @property
    def timestamp(self) -> datetime:
        """When the entry happened, as an aware UTC datetime."""
    @property
    def tokens(self) -> int:
        """The content's length in the store's tokenizer."""
    @property
    def explain(self) -> dict[str, float] | None:
        """With ``explain=True``: relevance, bm25 (the content's), bm25_context (what
        the previous turns and the date add), dense, recency, diversity (0 until
        MMR), final, rank (the keys of ``_Explain``)."""
    @property
    def risks(self) -> list[str]:
        """Prompt-injection risks found in the content, e.g. ``["instruction_override"]``."""
    @property
    def expires_at(self) -> datetime | None:
        """When the entry expires, as an aware UTC datetime; ``None`` if it is permanent."""
    @property
    def updated_at(self) -> datetime | None:
        """When ``update`` last changed the entry; ``None`` if it never did."""
    @property
    def key(self) -> str | None:
        """The slot the entry fills in its scope (``save(..., key=)``); ``None`` without one."""
    @property
    def valid_from(self) -> datetime:
        """When the fact starts to hold, as an aware UTC datetime (by default its timestamp)."""
    @property
    def valid_to(self) -> datetime | None:
        """When the fact stopped (or stops) holding; ``None`` while it is open."""
    @property
    def superseded_by(self) -> int | None:
        """The id of the entry that superseded this one; ``None`` if nothing has."""
    @property
    def current(self) -> bool:
        """Whether the entry holds now: its validity interval contains the time you ask."""
    @property
    def metadata(self) -> dict[str, Any]:
        """A new dict with the metadata saved with the entry (empty if none)."""
    @property
    def score(self) -> float | None:
        """Relevance times the recency boost for a query's hit (higher is better);
        ``None`` for an entry read by id or listed."""
    def to_dict(self) -> dict[str, Any]:
        """The fields as a new dict (datetimes stay datetimes)."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def _rebuild_hit(cls: type[Hit], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hit: ...

@final
class Context:
    """A prompt-ready block of retrieved memory and the hits in it."""

    @property
    def text(self) -> str:
        """The whole block, ready to put in a prompt; ``""`` when no hit fits."""
    @property
    def tokens(self) -> int:
        """The block's size in the store's tokenizer (never more than the budget; 0 when empty)."""
    @property
    def hits(self) -> list[Hit]:
        """The hits in block order."""
    @property
    def citations(self) -> list[str]:
        """The citation ids in block order, e.g. ``["mem:12", "mem:7"]``."""
    def unknown_citations(self, answer: str) -> list[str]:
        """Citation ids in ``answer`` that are not in this block."""

class _Logged(TypedDict):
    """One change of the audit trail (``records::LoggedRecord``): ``Change``."""

    seq: int
    entry_id: int
    op: Literal["insert", "update", "delete", "forget"]
    at: int | None
    scope: str | None
    key: str | None
    forget: str | None

class _Linked(TypedDict):
    """One provenance link (``records::LinkedRecord``): ``Link``."""

    entry_id: int
    source_id: int | None
    ref: str | None
    span: tuple[int, int] | None
    depth: int

class _Read(TypedDict):
    """One audited read (``records::ReadRecord``): ``Read``."""

    seq: int
    at: int
    scopes: list[str | None] | None
    query_hash: str
    query: str | None
    ids: list[int]

class _Receipt(TypedDict):
    """What a forget removed (``records::ReceiptRecord``): ``Forgotten``."""

    id: str
    at: int
    ids: list[int]
    vectors: int
    reindexed: int
    segments: int
    storage_scrubbed: bool

class _Timings(TypedDict):
    """Where a query's time went, in microseconds (``records::TimingsRecord``):
    ``Hits.timings``."""

    sync_us: float
    search_us: float
    pack_us: float
    total_us: float

class _ExplainParts(TypedDict):
    relevance: float
    bm25: float
    bm25_context: float
    recency: float
    diversity: float
    final: float
    rank: int

class _Explain(_ExplainParts, total=False):
    """A hit's score parts (``records::ExplainRecord``): ``Hit.explain``; ``dense``
    only in a hybrid query."""

    dense: float

_Matrix: TypeAlias = npt.NDArray[numpy.float32]

@final
class BulkSave:
    """One `save_many` too large for one crossing, fed a chunk at a time.
    Aborted, or dropped before `finish`, it keeps nothing."""

    def add(self, items: list[SaveItem], embeddings: _Matrix | None = None) -> Awaitable[None]:
        """Hands over the next chunk, once the writer is ready for it."""
    def finish(self) -> Awaitable[tuple[list[int], list[int]]]:
        """Commits; the ids in order, and the places of items that existed."""
    def abort(self) -> None:
        """Ends the bulk save without keeping anything, without waiting."""

@final
class Engine:
    """A handle on an open store. Timestamps are microseconds since the epoch."""

    @staticmethod
    def open(config: Config) -> Awaitable[Engine]:
        """Opens a store from a `contextforge.Config` (read by attribute)."""
    @property
    def scrub_pii(self) -> bool:
        """Whether saves scrub personal data (``scrub_pii`` as resolved on open)."""
    @property
    def scrub_dropped(self) -> list[str]:
        """What the store scrubbed before this open that this one does not."""
    @property
    def encrypted(self) -> bool:
        """Whether the database file is encrypted at rest."""
    def count_tokens(self, texts: list[str]) -> list[int]:
        """The tokens each text holds by the store's tokenizer, counted without
        the GIL (a long text takes a while)."""
    def scrub(self, texts: list[str]) -> Awaitable[list[str]]:
        """Content as it would be stored: secrets (and PII when configured) redacted."""
    def embedder(self) -> Awaitable[tuple[str, int] | None]:
        """`(name, dim)` of the embedder recorded in the store, or `None`."""
    def set_embedder(self, name: str, dim: int, replace: bool) -> Awaitable[int]:
        """Records the store's embedder; with `replace`, drops vectors of another."""
    def set_vectors(self, ids: list[int], vectors: _Matrix) -> Awaitable[int]: ...
    def missing_vectors(self, after: int, limit: int) -> Awaitable[list[tuple[int, str]]]:
        """`(id, content)` of up to `limit` entries without a vector, after id `after`."""
    def vector_count(self) -> Awaitable[int]: ...
    def query(self, query: QueryRecord) -> Awaitable[tuple[list[Hit], _Timings | None]]:
        """Answers a `_convert.query_record`: `(hits, timings)`, the timings with `explain`."""
    def context(self, query: QueryRecord) -> Awaitable[Context]:
        """Renders the hits of a `_convert.query_record` (with its `order`) as a `Context`."""
    def get_many(
        self, ids: list[int], *, as_of: int | None = None, include_superseded: bool = False
    ) -> Awaitable[list[Hit | None]]:
        """Entries by id; `None` for those that do not hold at `as_of` (default now)."""
    def history(self, key: str, scope: str | None) -> Awaitable[list[Hit]]:
        """The versions of `key` in `scope`, oldest first."""
    def changes(self, after: int, limit: int, scope: ScopeFilter) -> Awaitable[list[_Logged]]:
        """Up to `limit` changes of the log after `after`, oldest first."""
    def linked(self, id: int, up: bool, depth: int) -> Awaitable[list[_Linked]]:
        """What `id` rests on (`up`), or what was derived from it, to `depth` links."""
    def direct_sources(self, ids: list[int]) -> Awaitable[list[_Linked]]:
        """The direct sources of each of `ids`, by entry."""
    def reads(self, after: int, limit: int) -> Awaitable[list[_Read]]:
        """Up to `limit` audited reads after `after`, oldest first."""
    def forget(self, what: ForgetRecord) -> Awaitable[_Receipt]:
        """Forgets what a `_convert.ForgetRecord` selects; returns its receipt."""
    def keys(self, scope: str | None, limit: int) -> Awaitable[list[str]]:
        """The keys `scope` holds, in order, at most `limit`."""
    def versions(self, id: int) -> Awaitable[list[Hit]]:
        """The entries linked to `id` by supersession, oldest first."""
    def save_detailed(
        self, items: list[SaveItem], embeddings: _Matrix | None = None
    ) -> Awaitable[list[tuple[int, bool]]]:
        """Saves entries in one transaction, returning `(id, created)` per item."""
    def bulk_save(self) -> BulkSave:
        """Starts a bulk save fed a chunk at a time, all in one transaction."""
    def distill_chunks(
        self, pairs: list[tuple[str | None, str]], max_tokens: int
    ) -> Awaitable[
        tuple[
            list[tuple[str | None, str]], list[tuple[list[int], str, int, tuple[int, int] | None]]
        ]
    ]:
        """Scrubs and chunks a transcript; returns the scrubbed pairs and the chunks."""
    def distill_extract(
        self,
        pairs: list[tuple[str | None, str]],
        max_facts: int,
        max_fact_chars: int,
        summary_sentences: int,
    ) -> Awaitable[tuple[str, list[tuple[str, str, float, int]]]]:
        """The offline extractor: `(summary, [(kind, text, score, message)])`."""
    def update(self, id: int, patch: PatchRecord) -> Awaitable[Hit]:
        """Applies a `_convert.PatchRecord` and returns the entry as stored."""
    def delete_many(self, ids: list[int]) -> Awaitable[list[bool]]: ...
    def purge_expired(self, now: int | None = None) -> Awaitable[int]: ...
    def clear_scope(self, scope: str) -> Awaitable[int]: ...
    def clear_all(self) -> Awaitable[int]: ...
    def count(self, filter: ListRecord) -> Awaitable[int]: ...
    def scopes(self, prefix: str | None = None) -> Awaitable[list[tuple[str | None, int]]]: ...
    def delete_where(self, filter: ListRecord) -> Awaitable[int]:
        """Deletes what a `_convert.ListRecord` selects; returns how many."""
    def list_page(
        self, filter: ListRecord, after: tuple[int, int] | None, limit: int
    ) -> Awaitable[tuple[list[Hit], tuple[int, int] | None]]:
        """One page, newest first, after the (timestamp_us, id) cursor."""
    def sync(self) -> Awaitable[int | None]: ...
    def rekey(self, key: bytes | str) -> Awaitable[None]:
        """Re-encrypts the database file with `key`."""
    def flush(self) -> Awaitable[None]: ...
    def close(self) -> Awaitable[None]:
        """Flushes and releases the store; closing twice is harmless."""
    @property
    def closed(self) -> bool: ...

def default_config() -> dict[str, Any]:
    """The engine's defaults, as a dict of `Config`'s names, so the Python config can be
    checked against them."""

def _shutdown() -> None:
    """Registered with atexit: waits for in-flight results to be delivered."""

@final
class Embedder:
    """A BERT sentence embedder read from a sentence-transformers model directory.
    Use ``contextforge.embedders.LocalEmbedder`` rather than this class."""

    def __new__(cls, path: str | os.PathLike[str]) -> Embedder:
        """Loads ``config.json``, ``model.safetensors`` and ``tokenizer.json`` from
        ``path``; raises ``InvalidInputError`` naming a missing or bad file."""
    @property
    def dim(self) -> int:
        """The length of each vector."""
    def embed(self, texts: list[str]) -> npt.NDArray[numpy.float32]:
        """Mean-pooled, L2-normalised vectors, shape ``(len(texts), dim)``; the GIL
        is released while the model runs."""
