"""What every system under test offers the measuring code, and the pieces the
Python peers share: recency weighting, greedy packing and a SQLite source of truth.

The peers rank like contextforge's defaults: BM25 relevance times
`1 + 0.2 * 0.5 ** (age_days / 30)`, the best 100 candidates considered, then
packed greedily into the token budget (a candidate that does not fit is skipped
and packing goes on).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from workload import Entry

Id = int | str
RECENCY_WEIGHT = 0.2
HALF_LIFE_SECONDS = 30 * 86_400.0
DEPTH = 100


@dataclass(frozen=True)
class Hit:
    id: Id
    score: float
    tokens: int
    content: str


class System(Protocol):
    """One system under test, driven from an asyncio event loop.

    `concurrency` says how two concurrent query tasks run against one instance:
    "threads" (the measuring code calls `query_sync` from two threads) or
    "asyncio" (two `query` coroutines under asyncio.gather).
    """

    name: str
    concurrency: Literal["threads", "asyncio"]

    async def open(self, path: Path) -> None: ...
    async def ingest(self, entries: Sequence[Entry]) -> list[Id]: ...
    async def save(self, entry: Entry) -> Id: ...
    async def query(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]: ...
    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]: ...
    async def close(self) -> None: ...


class SyncSystem:
    """Adapts a blocking peer to the System protocol; subclasses write the `_` methods."""

    name = "?"
    concurrency: Literal["threads", "asyncio"] = "threads"

    async def open(self, path: Path) -> None:
        self._open(path)

    async def ingest(self, entries: Sequence[Entry]) -> list[Id]:
        return self._ingest(entries)

    async def save(self, entry: Entry) -> Id:
        return self._save(entry)

    async def query(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        return self.query_sync(text, scope, budget, now)

    async def close(self) -> None:
        self._close()

    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        raise NotImplementedError

    def _open(self, path: Path) -> None:
        raise NotImplementedError

    def _ingest(self, entries: Sequence[Entry]) -> list[Id]:
        raise NotImplementedError

    def _save(self, entry: Entry) -> Id:
        raise NotImplementedError

    def _close(self) -> None:
        pass


@dataclass(frozen=True)
class Candidate:
    id: Id
    relevance: float
    timestamp: float
    tokens: int


def recency_boost(timestamp: float, now: float) -> float:
    age = max(0.0, now - timestamp)
    return 1.0 + RECENCY_WEIGHT * math.pow(0.5, age / HALF_LIFE_SECONDS)


def rank_and_pack(
    candidates: Iterable[Candidate], now: float, budget: int
) -> list[tuple[Candidate, float]]:
    """Applies the recency boost, sorts best first and packs greedily into `budget`."""
    scored = sorted(
        ((c, c.relevance * recency_boost(c.timestamp, now)) for c in candidates),
        key=lambda pair: pair[1],
        reverse=True,
    )
    left = budget
    packed = []
    for cand, score in scored:
        if cand.tokens <= left:
            left -= cand.tokens
            packed.append((cand, score))
        if left == 0:
            break
    return packed


def words(text: str) -> list[str]:
    """The peers' analyzer: lowercase, split on whitespace (the workload has no punctuation)."""
    return text.lower().split()


class SqliteStore:
    """The durable source of truth for the peers that have none of their own.

    WAL with synchronous=NORMAL, as contextforge's store: a committed save
    survives a crash of the process. One connection per thread.
    """

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS entries (
        id INTEGER PRIMARY KEY,
        content TEXT NOT NULL,
        scope TEXT,
        ts REAL NOT NULL,
        tokens INTEGER NOT NULL
    );
    """

    def __init__(self, path: Path, extra_schema: str = "") -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.conn.executescript(self.SCHEMA + extra_schema)

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def insert(self, rows: Sequence[tuple[str, str | None, float, int]]) -> list[int]:
        """Inserts (content, scope, ts, tokens) rows in one transaction; returns their ids."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            ids = [
                conn.execute(
                    "INSERT INTO entries (content, scope, ts, tokens) VALUES (?, ?, ?, ?)", row
                ).lastrowid
                for row in rows
            ]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return [int(i) for i in ids if i is not None]

    def contents(self, ids: Sequence[int]) -> dict[int, str]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT id, content FROM entries WHERE id IN ({marks})", list(ids)
        )
        return dict(rows.fetchall())

    def rows(self) -> list[tuple[int, str, str | None, float, int]]:
        return self.conn.execute(
            "SELECT id, content, scope, ts, tokens FROM entries ORDER BY id"
        ).fetchall()

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()
