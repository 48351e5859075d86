"""Evaluation results: per-query metrics, macro averages, a markdown table and JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .metrics import BUDGET_RECALL, MRR, metric_names

__all__ = ["ALL", "UNCATEGORIZED", "QueryResult", "Report"]

ALL = "all"
UNCATEGORIZED = "uncategorized"


@dataclass(frozen=True)
class QueryResult:
    """One query's outcome: the top of its ranking, what the budget packed, its metrics."""

    id: str
    category: str | None
    relevant: tuple[str, ...]
    ranked: tuple[str, ...]
    packed: tuple[str, ...]
    packed_tokens: int
    metrics: Mapping[str, float]


@dataclass(frozen=True)
class Report:
    """Metrics of one system on one spec.

    Attributes:
        name: The spec's name.
        system: What was evaluated, e.g. ``"contextforge"``.
        ks: The cut-offs of the ranked metrics.
        budget: The token budget of ``recall@budget``.
        depth: How deep each ranking went (MRR looks no further).
        queries: Per-query results, in spec order.
        config: The settings used, for the record.
        notes: What the spec's loader dropped or repaired.
    """

    name: str
    system: str
    ks: tuple[int, ...]
    budget: int
    depth: int
    queries: tuple[QueryResult, ...]
    config: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def metric_names(self) -> list[str]:
        return metric_names(self.ks)

    def groups(self) -> dict[str, list[QueryResult]]:
        """``"all"`` then each category (sorted), mapped to its queries."""
        out: dict[str, list[QueryResult]] = {ALL: list(self.queries)}
        if any(q.category is not None for q in self.queries):
            cats = sorted({q.category or UNCATEGORIZED for q in self.queries})
            for cat in cats:
                out[cat] = [q for q in self.queries if (q.category or UNCATEGORIZED) == cat]
        return out

    def summary(self) -> dict[str, dict[str, float]]:
        """Each group's mean of every metric, plus ``"queries"``, its size."""
        out: dict[str, dict[str, float]] = {}
        for group, results in self.groups().items():
            row: dict[str, float] = {"queries": float(len(results))}
            for name in self.metric_names:
                values = [r.metrics[name] for r in results]
                row[name] = sum(values) / len(values) if values else 0.0
            out[group] = row
        return out

    def overall(self, metric: str) -> float:
        """One metric over every query, e.g. ``report.overall("recall@5")``."""
        return self.summary()[ALL][metric]

    def header(self, metric: str) -> str:
        """A metric's column title (the budget metric names its budget)."""
        if metric == BUDGET_RECALL:
            return f"recall@{self.budget}tok"
        return "MRR" if metric == MRR else metric

    def table(self, metrics: Sequence[str] | None = None) -> str:
        """A markdown table: one row per group, one column per metric (all by default)."""
        names = list(metrics) if metrics is not None else self.metric_names
        unknown = [m for m in names if m not in self.metric_names]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; known: {self.metric_names}")
        lines = [
            "| " + " | ".join(["category", "queries", *map(self.header, names)]) + " |",
            "|---|" + "---:|" * (len(names) + 1),
        ]
        for group, row in self.summary().items():
            cells = [group, str(int(row["queries"])), *(f"{row[m]:.3f}" for m in names)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready: settings, the summary and each query."""
        return {
            "name": self.name,
            "system": self.system,
            "ks": list(self.ks),
            "budget": self.budget,
            "depth": self.depth,
            "config": dict(self.config),
            "notes": list(self.notes),
            "metrics": {m: self.header(m) for m in self.metric_names},
            "summary": self.summary(),
            "queries": [
                {
                    "id": q.id,
                    "category": q.category,
                    "relevant": list(q.relevant),
                    "ranked": list(q.ranked),
                    "packed": list(q.packed),
                    "packed_tokens": q.packed_tokens,
                    "metrics": dict(q.metrics),
                }
                for q in self.queries
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.as_dict(), indent=indent, ensure_ascii=False)
