"""Peer: rank_bm25's BM25Okapi (pure Python/numpy), re-built on every add, SQLite for durability.

It scores every document per query, so the suite runs it only at N <= 10,000.
"""

from __future__ import annotations

import numpy as np
from rank_bm25 import BM25Okapi

from systems.reindexing import ReindexingPeer

MAX_SIZE = 10_000


class RankBm25Peer(ReindexingPeer):
    name = "rank_bm25"

    def _reindex(self) -> None:
        self.bm25 = BM25Okapi(self.docs)

    def _top(
        self, query: list[str], rows: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        scores = self.bm25.get_scores(query)
        if rows is not None:
            scores = scores[rows]
        k = min(k, len(scores))
        if k == 0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best])]
        picked = rows[best] if rows is not None else best
        return picked, scores[best]
