"""Runs a spec through the public API of a fresh in-memory store and scores it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .._vectors import embedder_name
from ..config import Config
from ..memory import ContextForge
from ..scope import ALL_SCOPES
from ..scope import Scope as CfScope
from .metrics import query_metrics
from .report import QueryResult, Report
from .spec import Query, Spec, sees

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_KS",
    "ID_KEY",
    "Run",
    "evaluate",
    "newest_by_scope",
    "query_now",
    "score",
]

DEFAULT_KS = (1, 5, 10, 25)
DEFAULT_BUDGET = 512
#: The metadata key under which each entry's external id is saved.
ID_KEY = "eval_id"
# A budget nothing reaches, so the ranked query is never cut short by packing.
_UNBOUNDED = 1 << 40
_MAX_DEPTH = 10_000


@dataclass(frozen=True)
class Run:
    """What a system returned for one query, as external ids."""

    ranked: Sequence[str]
    packed: Sequence[str]
    packed_tokens: int = 0


async def evaluate(
    spec: Spec,
    config: Config | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    budget: int = DEFAULT_BUDGET,
) -> Report:
    """Saves every entry of ``spec`` into a new ``":memory:"`` store and scores its queries.

    Each entry is saved with its scope, session, timestamp and kind, its external id
    in ``metadata["eval_id"]``, and ``dedupe=False``. Each query runs twice in its
    scope at its ``now`` (see :func:`query_now`): once with an unbounded budget and
    ``depth = max(max(ks), config.depth)`` for the ranked metrics, and once as an
    application would, ``query(text, scope, budget)``, for ``recall@budget``.

    Args:
        config: Ranking settings (recency, depth, tokenizer...); its path and index
            directory are ignored. Defaults to ``Config()``.
        ks: Cut-offs for recall, hit and nDCG.
        budget: The token budget for ``recall@budget``.
    """
    cuts = check_ks(ks)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"budget must be a positive int, got {budget!r}")
    cfg = dataclasses.replace(config or Config(), path=":memory:", index_dir=None)
    depth = min(max(max(cuts), cfg.depth), _MAX_DEPTH)
    runs: dict[str, Run] = {}
    async with await ContextForge.open(cfg) as cf:
        ids = await cf.save_many(
            [
                {
                    "content": e.content,
                    "kind": e.kind,
                    "scope": e.scope,
                    "session_id": e.session_id,
                    "metadata": {**e.metadata, ID_KEY: e.id},
                    "timestamp": e.timestamp,
                    "dedupe": False,
                }
                for e in spec.entries
            ]
        )
        external = dict(zip(map(int, ids), (e.id for e in spec.entries), strict=True))
        newest = newest_by_scope(spec)
        for query in spec.queries:
            now = query_now(query, newest)
            # In a spec, a query without a scope searches every scope.
            scope: CfScope = (
                ALL_SCOPES
                if query.scope is None
                else list(query.scope)
                if isinstance(query.scope, tuple)
                else query.scope
            )
            ranked = await cf.query(query.text, scope, _UNBOUNDED, now=now, depth=depth)
            packed = await cf.query(query.text, scope, budget, now=now)
            runs[query.id] = Run(
                ranked=[external[h.id] for h in ranked],
                packed=[external[h.id] for h in packed],
                packed_tokens=sum(h.tokens for h in packed),
            )
    settings = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    if cfg.embedder is not None:
        settings["embedder"] = embedder_name(cfg.embedder)
    return score(
        spec, runs, system="contextforge", ks=cuts, budget=budget, depth=depth, config=settings
    )


def score(
    spec: Spec,
    runs: Mapping[str, Run],
    *,
    system: str,
    ks: Sequence[int] = DEFAULT_KS,
    budget: int = DEFAULT_BUDGET,
    depth: int,
    config: Mapping[str, Any] | None = None,
) -> Report:
    """Scores any system's results (one :class:`Run` per query id) into a :class:`Report`.

    ``depth`` is how deep the rankings go; it is recorded, and rankings are cut to it.
    """
    cuts = check_ks(ks)
    results = []
    for query in spec.queries:
        run = runs[query.id]
        ranked = list(run.ranked)[:depth]
        results.append(
            QueryResult(
                id=query.id,
                category=query.category,
                relevant=query.relevant,
                ranked=tuple(ranked[: max(cuts)]),
                packed=tuple(run.packed),
                packed_tokens=run.packed_tokens,
                metrics=query_metrics(query.relevant, ranked, run.packed, cuts),
            )
        )
    return Report(
        name=spec.name,
        system=system,
        ks=cuts,
        budget=budget,
        depth=depth,
        queries=tuple(results),
        config=dict(config or {}),
        notes=spec.notes,
    )


def query_now(query: Query, newest: Mapping[str | None, datetime]) -> datetime | None:
    """The query's clock: its own ``now``, else the newest timestamp among the entries
    it can see (``newest`` maps each scope to its newest; see :func:`newest_by_scope`),
    else ``None`` (the wall clock) when it sees none."""
    if query.now is not None:
        return query.now
    stamps = [t for s, t in newest.items() if sees(query.scope, s)]
    return max(stamps) if stamps else None


def newest_by_scope(spec: Spec) -> dict[str | None, datetime]:
    """Each scope's newest entry timestamp."""
    out: dict[str | None, datetime] = {}
    for e in spec.entries:
        if e.scope not in out or e.timestamp > out[e.scope]:
            out[e.scope] = e.timestamp
    return out


def check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """Sorted distinct cut-offs, each between 1 and the engine's deepest ranking."""
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) for k in ks):
        raise ValueError(f"ks must be a non-empty list of ints, got {ks!r}")
    if any(not 1 <= k <= _MAX_DEPTH for k in ks):
        raise ValueError(f"each k must be between 1 and {_MAX_DEPTH}, got {list(ks)}")
    return tuple(sorted(set(ks)))
