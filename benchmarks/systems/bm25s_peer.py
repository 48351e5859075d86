"""Peer: bm25s (sparse-matrix BM25 in RAM), re-indexed on every add, SQLite for durability.

The scope filter is bm25s's weight_mask: documents outside the scope score zero.
"""

from __future__ import annotations

import bm25s
import numpy as np

from systems.reindexing import ReindexingPeer


class Bm25sPeer(ReindexingPeer):
    name = "bm25s"

    def _reindex(self) -> None:
        retriever = bm25s.BM25()
        retriever.index(self.docs, show_progress=False)
        self.retriever = retriever

    def _top(
        self, query: list[str], rows: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        mask = None
        if rows is not None:
            mask = np.zeros(len(self.ids), dtype=np.float32)
            mask[rows] = 1.0
        docs, scores = self.retriever.retrieve(
            [query], k=k, show_progress=False, n_threads=1, weight_mask=mask
        )
        return docs[0], scores[0]
