"""Retrieval metrics over one query's ranking, with binary relevance.

With ``R`` the relevant ids and ``ranked`` the ids in rank order (rank 1 first):

- ``recall@k`` = |R ∩ ranked[:k]| / |R|
- ``hit@k`` = 1 if any relevant id is in ranked[:k], else 0
- ``mrr`` = 1 / (rank of the first relevant id), 0 if none is ranked (the ranking
  is as deep as the query asked for)
- ``ndcg@k`` = DCG@k / IDCG@k, DCG@k = Σ_{i ≤ k, ranked[i] ∈ R} 1 / log2(i + 1),
  IDCG@k the same for a ranking with all of R first (min(|R|, k) gains)
- ``recall@budget`` = |R ∩ packed| / |R|, ``packed`` the hits of a query whose
  results were packed into the token budget

Each is averaged over queries (a macro average), overall and per category.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

__all__ = [
    "BUDGET_RECALL",
    "MRR",
    "hit_at",
    "metric_names",
    "ndcg_at",
    "query_metrics",
    "recall",
    "recall_at",
    "reciprocal_rank",
]

MRR = "mrr"
BUDGET_RECALL = "recall@budget"


def recall(relevant: Collection[str], found: Collection[str]) -> float:
    """The share of ``relevant`` that is in ``found``."""
    return len(set(relevant) & set(found)) / len(relevant) if relevant else 0.0


def recall_at(relevant: Collection[str], ranked: Sequence[str], k: int) -> float:
    return recall(relevant, ranked[:k])


def hit_at(relevant: Collection[str], ranked: Sequence[str], k: int) -> float:
    return 1.0 if any(r in relevant for r in ranked[:k]) else 0.0


def reciprocal_rank(relevant: Collection[str], ranked: Sequence[str]) -> float:
    for rank, rid in enumerate(ranked, start=1):
        if rid in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at(relevant: Collection[str], ranked: Sequence[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, rid in enumerate(ranked[:k]) if rid in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def metric_names(ks: Sequence[int]) -> list[str]:
    """Every metric's key, in report order."""
    return (
        [f"recall@{k}" for k in ks]
        + [f"hit@{k}" for k in ks]
        + [MRR]
        + [f"ndcg@{k}" for k in ks]
        + [BUDGET_RECALL]
    )


def query_metrics(
    relevant: Collection[str], ranked: Sequence[str], packed: Collection[str], ks: Sequence[int]
) -> Mapping[str, float]:
    """All metrics of one query, keyed as :func:`metric_names` lists them."""
    rel = frozenset(relevant)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at(rel, ranked, k)
    for k in ks:
        out[f"hit@{k}"] = hit_at(rel, ranked, k)
    out[MRR] = reciprocal_rank(rel, ranked)
    for k in ks:
        out[f"ndcg@{k}"] = ndcg_at(rel, ranked, k)
    out[BUDGET_RECALL] = recall(rel, packed)
    return out
