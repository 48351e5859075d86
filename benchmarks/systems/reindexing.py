"""The shared shape of the in-memory BM25 peers (bm25s, rank_bm25).

Entries are durable in SQLite; the BM25 index lives in RAM and is rebuilt over
the whole corpus on every add, since neither library can add to an index. Opening
an existing store reads every row back and builds the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokens import count
from workload import Entry

from systems.base import DEPTH, Candidate, Hit, Id, SqliteStore, SyncSystem, rank_and_pack, words


class ReindexingPeer(SyncSystem):
    def _open(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.store = SqliteStore(path / "memory.db")
        self.ids: list[int] = []
        self.contents: list[str] = []
        self.docs: list[list[str]] = []
        self.stamps: list[float] = []
        self.tokens: list[int] = []
        self.scope_rows: dict[str | None, list[int]] = {}
        for entry_id, content, scope, ts, n in self.store.rows():
            self._remember(entry_id, content, scope, ts, n)
        self._scope_arrays: dict[str | None, np.ndarray] = {}
        if self.ids:
            self._reindex()

    def _remember(
        self, entry_id: int, content: str, scope: str | None, ts: float, tokens: int
    ) -> None:
        self.scope_rows.setdefault(scope, []).append(len(self.ids))
        self.ids.append(entry_id)
        self.contents.append(content)
        self.docs.append(words(content))
        self.stamps.append(ts)
        self.tokens.append(tokens)

    def _ingest(self, entries: Sequence[Entry]) -> list[Id]:
        counts = [count(e.content) for e in entries]
        ids = self.store.insert(
            [(e.content, e.scope, e.timestamp, n) for e, n in zip(entries, counts)]
        )
        for entry_id, entry, n in zip(ids, entries, counts):
            self._remember(entry_id, entry.content, entry.scope, entry.timestamp, n)
        self._scope_arrays = {}
        self._reindex()
        return list(ids)

    def _save(self, entry: Entry) -> Id:
        return self._ingest([entry])[0]

    def _rows_in(self, scope: str | None) -> np.ndarray | None:
        """Row numbers of the scope's entries, or None for an unscoped query."""
        if scope is None:
            return None
        rows = self._scope_arrays.get(scope)
        if rows is None:
            rows = np.asarray(self.scope_rows.get(scope, []), dtype=np.int64)
            self._scope_arrays[scope] = rows
        return rows

    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        rows, scores = self._top(words(text), self._rows_in(scope), min(DEPTH, len(self.ids)))
        candidates = [
            Candidate(r, float(s), self.stamps[r], self.tokens[r])
            for r, s in zip(rows.tolist(), scores.tolist())
            if s > 0.0
        ]
        packed = rank_and_pack(candidates, now, budget)
        return [
            Hit(self.ids[int(c.id)], score, c.tokens, self.contents[int(c.id)])
            for c, score in packed
        ]

    def _reindex(self) -> None:
        raise NotImplementedError

    def _top(
        self, query: list[str], rows: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best `k` row numbers (restricted to `rows` when given) and their BM25 scores."""
        raise NotImplementedError

    def _close(self) -> None:
        self.store.close()
