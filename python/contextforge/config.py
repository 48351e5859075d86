"""Store configuration."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Union

from ._vectors import Embedder

__all__ = ["Config", "EncryptionKey", "resolve_key"]

PathLike = Union[str, "os.PathLike[str]"]
#: A key, or a function returning one (read from a keyring or a KMS when the store opens).
EncryptionKey = str | bytes | Callable[[], str | bytes]


@dataclass(frozen=True, kw_only=True)
class Config:
    """How a store is opened. Every field has a working default.

    Attributes:
        path: The libSQL database file, ``":memory:"`` to keep everything in RAM,
            or the URL of a libSQL server (sqld, Turso): ``"http://host:port"``,
            ``"https://..."`` or ``"libsql://..."`` (which means https). The server is
            then the source of truth, shared by every process that opens it.
        auth_token: The token a libSQL server authenticates with (a JWT); ``None``
            for a server without authentication. Unused for local files. Left out of
            ``repr()``.
        encryption_key: Encrypts the database file at rest (AES-256): a ``str``
            or ``bytes`` key, or a callable returning one, called when the store
            opens (a keyring, a KMS). Every page of the database and its WAL is
            encrypted, vectors and the change log included, and every file of the
            search index is sealed (AES-256-GCM) under a key kept in the
            database, so no file holds plaintext. A wrong key, none for an encrypted store, or one for a plain
            store raises ``EncryptionKeyError`` and changes nothing. Local files
            only; left out of ``repr()``. See docs/safety.md.
        replica: With a server ``path``: the path of a local file kept in sync with
            the server (an embedded replica). Queries and reads are served from
            it at a local file's speed; writes go to the server, and this handle
            reads its own writes at once. Other processes' writes arrive with
            the next sync: every ``sync_interval``, or on ``await cf.sync()``.
            One process at a time may use a replica file.
        sync_interval: Seconds between background syncs of the ``replica``
            (the bound on how stale other processes' writes can be); ``None``
            syncs only on ``sync()`` and before reads that follow this handle's
            writes.
        index_dir: Where the search index lives; by default ``<path>.index`` beside
            the database (in RAM for ``":memory:"`` and for a server). For a server,
            a directory given here is a cache: the index goes in a subdirectory named
            by a hash of the URL and catches up from the server's change log on open.
            It is derived data: deleting it only costs a rebuild on the next open.
        tokenizer: How tokens are counted for budgets: ``"o200k"`` (GPT-4o and later,
            the default), ``"cl100k"`` (GPT-4), or the path of a Hugging Face
            ``tokenizer.json``.
        recency_weight: How much a fresh entry is preferred over an old one of equal
            relevance. A score is multiplied by ``1 + recency_weight * 0.5 **
            (age / half_life)``, so recency can reorder near-ties but never buries a
            strong old match under a weak fresh one.
        recency_half_life_days: The age at which the recency boost halves.
        stopword_weight: How much English function words in a query ("what",
            "when", "did", "the", "she", ...) count, from ``0`` (dropped) to ``1``
            (like any other word). A query made only of function words counts them
            fully; the index keeps every word.
        context_weight: How much the previous turns of an entry's session count:
            each entry is also indexed with the text of the two entries saved
            before it in the same scope and session (within a day), scored as its
            own BM25 field and added to the content's score times this weight.
            ``0`` turns it off.
        date_weight: The same for the entry's date as words (``"8 may 2023"``),
            so "what happened in May 2023" can match by date. ``0`` turns it off.
        reply_weight: A candidate lends this share of its relevance to the
            previous turn of its session (the message it replies to), when that
            turn is a candidate too: evidence is often stated in one turn and
            echoed, in the words a later question uses, by the reply. ``0``
            turns it off.
        session_weight: Each candidate with a ``session_id`` gains this times the
            best relevance among the candidates of its scope and session (its own
            included, before replies lend): an answer often sits a few turns away
            from the turn that matches the question best, and that match lifts
            its session. Entries without a session are not boosted. ``0`` turns
            it off; at most ``10``.
        min_relevance: The relevance floor's absolute part: a hit whose own
            relevance is below this is left out (``0``, the default, sets no
            absolute floor). A hit's own relevance is its relevance as ranked
            (``hit.explain["relevance"]``) when its content or date holds a word
            of the query (function words count only in a query made of them),
            and otherwise only what its embedding scored: 0 in a lexical query.
            So a "Noted!" or "ok" that the context, reply and session boosts
            lifted on the words of the turns around it is left out, and the
            budget goes to the next hit, unless it is the immediate reply to a
            hit that clears the floor ("yes" or "hunter2" answer the turn before
            them). In BM25 units in a lexical query, fused ones in a hybrid query.
        min_relative_relevance: The relevance floor's relative part: a hit's own
            relevance must reach this share of the best candidate's, from ``0``
            to ``1``. ``0.1`` by default: low enough that a query about two
            things keeps the weaker thing's matches; ``0`` with
            ``min_relevance=0`` turns the floor off and returns every candidate
            that fits.
        embedder: Turns texts into vectors for hybrid retrieval: a sync or async
            callable taking a list of str and returning an ``(n, d)`` array, such
            as :class:`contextforge.embedders.LocalEmbedder` (all-MiniLM-L6-v2,
            offline). Every saved entry and every query is then embedded, and
            queries fuse BM25 with cosine similarity. Its ``name`` (and
            dimension) is recorded in the store; opening with another raises
            ``EmbedderMismatchError`` unless ``open(..., reembed=True)``.
        embed_batch_size: Texts per embedder call.
        fusion: How BM25 and dense matches combine: ``"weighted"`` (the default:
            ``(1 - dense_weight) * BM25' + dense_weight * cosine``, where BM25' is
            BM25 scaled min-max over the BM25 matches, from 0 for the weakest to 1
            for the best, and 0 for entries only the dense side found; every
            candidate scored on both sides) or ``"rrf"`` (reciprocal-rank
            fusion, ``weight / (rrf_k + rank)`` per list).
        dense_weight: The dense side's share, from 0 (BM25 alone) to 1.
        rrf_k: The rank offset of reciprocal-rank fusion.
        mmr_lambda: Maximal marginal relevance over the best ``mmr_window``
            candidates: ``1`` ranks by relevance alone, lower values trade
            relevance for variety (cosine between embeddings where both entries
            have one, the Jaccard similarity of their words otherwise).
        duplicate_similarity: A candidate at least this similar to a hit already
            packed is left out, so near duplicates never fill the budget twice; a
            value above 1 keeps them.
        mmr_window: How many of the best candidates MMR sees.
        depth: Ranked candidates a query considers before packing to the budget.
        flush_entries: Saves are searchable at once from an in-memory tail, which is
            committed to the on-disk index in batches of about this many changes...
        flush_ms: ...or after this many milliseconds, whichever comes first.
        busy_timeout_ms: How long a write waits for another process's lock.
        scrub: Redact secrets (API keys, tokens, private keys, passwords, credentials
            in URLs, ...) as ``[REDACTED:<label>]`` before anything is stored or
            indexed. On by default; the setting is recorded in the database.
        scrub_pii: Also redact e-mail addresses, phone numbers, payment card numbers
            (Luhn-checked) and IBANs. ``None`` (the default) keeps what the store
            recorded the last time it was opened with ``True`` or ``False`` (off
            for a new store), so the CLI and the MCP server honour the setting
            of the application that owns the store. ``ContextForge.config`` of an
            open store shows the setting in force (``True`` or ``False``).
        scrub_metadata: Scrub the strings inside metadata too (keys give context:
            ``{"password": "hunter2"}`` is redacted).
        max_entries_per_scope: Keep at most this many entries in each scope (the
            global scope counts as one); ``None`` keeps everything. A save that
            overfills a scope evicts in that scope only, in the same transaction.
        eviction: Which entries a full scope gives up first: ``"oldest"`` (by
            timestamp) or ``"least_recently_returned"`` (by the last time a query
            returned them; an entry never returned counts from when it was saved).
        read_only: Open a database file read-only: queries and reads work, every
            write raises ``StorageError``, and the search index is built in RAM
            (its directory may not be writable). A file this process may not
            write is opened read-only without being asked.
        audit_reads: Record, for every ``query`` and ``context``, the time, the
            scopes, a keyed hash of the query text and the ids returned: what
            memory fed into which prompt (``ContextForge.reads``). Records are
            written in batches of 64 (and on ``flush`` and ``close``): a crash
            loses at most the batch not yet written.
        audit_query_text: With ``audit_reads``, keep the query's text too.
        audit_retention_days: Drop audited reads older than this many days.

    What the ranking defaults were tuned for: ``stopword_weight``,
    ``context_weight``, ``date_weight``, ``reply_weight``, ``session_weight``,
    ``dense_weight`` and the recency settings were chosen on the LoCoMo dev set
    (``benchmarks/eval_locomo.py``): questions about long two-person chats, one
    entry per turn, scored by whether the turns holding the answer come back.
    The boosts favour turns near a strong match, which helps there and can lift
    unrelated filler turns of the same session in other applications; the
    relevance floor (``min_relevance``, ``min_relative_relevance``) keeps those
    out; LoCoMo dev recall is the same with it as without it for any relative
    floor up to ``0.3``. For notes that stand alone rather than chat turns,
    consider ``context_weight=0`` and ``session_weight=0``.
    """

    path: str = ":memory:"
    auth_token: str | None = field(default=None, repr=False)
    encryption_key: EncryptionKey | None = field(default=None, repr=False, compare=False)
    replica: str | None = None
    sync_interval: float | None = None
    index_dir: str | None = None
    tokenizer: str = "o200k"
    recency_weight: float = 0.2
    recency_half_life_days: float = 30.0
    stopword_weight: float = 0.3
    context_weight: float = 0.4
    date_weight: float = 0.8
    reply_weight: float = 0.2
    session_weight: float = 0.5
    min_relevance: float = 0.0
    min_relative_relevance: float = 0.1
    embedder: Embedder | None = field(default=None, compare=False)
    embed_batch_size: int = 64
    fusion: Literal["weighted", "rrf"] = "weighted"
    dense_weight: float = 0.5
    rrf_k: float = 60.0
    mmr_lambda: float = 1.0
    duplicate_similarity: float = 0.9
    mmr_window: int = 30
    depth: int = 100
    flush_entries: int = 2048
    flush_ms: int = 1000
    busy_timeout_ms: int = 10_000
    scrub: bool = True
    scrub_pii: bool | None = None
    scrub_metadata: bool = True
    max_entries_per_scope: int | None = None
    eviction: Literal["oldest", "least_recently_returned"] = "oldest"
    read_only: bool = False
    audit_reads: bool = False
    audit_query_text: bool = False
    audit_retention_days: int = 30

    def with_key(self) -> Config:
        """This config with a callable ``encryption_key`` called: what the engine reads."""
        if self.encryption_key is None or isinstance(self.encryption_key, (str, bytes)):
            return self
        from dataclasses import replace

        return replace(self, encryption_key=resolve_key(self.encryption_key))

    @classmethod
    def coerce(cls, target: Config | PathLike) -> Config:
        """A ``Config`` from a config, a path string or a path-like object."""
        if isinstance(target, Config):
            return target
        if isinstance(target, (str, os.PathLike)):
            return cls(path=os.fspath(target))
        from .errors import InvalidTypeError

        raise InvalidTypeError(f"open() takes a path or a Config, not {type(target).__name__}")


def resolve_key(key: EncryptionKey) -> str | bytes:
    """The key itself: ``key``, or what calling it returns."""
    from .errors import InvalidTypeError

    if isinstance(key, (str, bytes)):
        return key
    if not callable(key):
        raise InvalidTypeError(
            f"encryption_key must be str, bytes or a callable returning one, not {type(key).__name__}"
        )
    given = key()
    if not isinstance(given, (str, bytes)):
        raise InvalidTypeError(
            f"the encryption_key callable returned {type(given).__name__}, not str or bytes"
        )
    return given
