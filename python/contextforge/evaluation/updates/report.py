"""The results of a run (:class:`SystemResult`, :class:`Report`) and their markdown
:func:`table`."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .metrics import METRICS, MISSES


@dataclass(frozen=True)
class SystemResult:
    """One system's scores; ``checks`` lists what looked wrong in its answers."""

    system: str
    name: str
    available: bool
    note: str = ""
    metrics: Mapping[str, float] = dataclasses.field(default_factory=dict)
    misses: Mapping[str, float] = dataclasses.field(default_factory=dict)
    checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    dataset: str
    budget: int
    results: tuple[SystemResult, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "budget": self.budget,
            "systems": [
                {
                    **dataclasses.asdict(r),
                    "metrics": {k: _num(v) for k, v in r.metrics.items()},
                    "misses": {k: _num(v) for k, v in r.misses.items()},
                }
                for r in self.results
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1)


def _num(v: float) -> float | None:
    return None if math.isnan(v) else round(v, 4)


def table(reports: Sequence[Report]) -> str:
    """One markdown table of every report's systems, then the targets and notes."""
    lines = [
        f"Dataset: {reports[0].dataset}." if reports else "",
        "",
        "| budget | system | " + " | ".join(METRICS) + " |",
        "|---:|---|" + "---:|" * len(METRICS),
    ]
    notes: dict[str, str] = {}
    for report in reports:
        for r in report.results:
            cells = [_cell(r, m) for m in METRICS] if r.available else ["n/a"] * len(METRICS)
            lines.append(f"| {report.budget} | {r.name} | " + " | ".join(cells) + " |")
            notes.setdefault(r.name, r.note)
            notes.update({f"{r.name}, budget {report.budget}": c for c in r.checks})
    lines += [
        "",
        (
            "history: keys, versions from history() in order; others, versions among"
            " the packed hits of the history question (order not scored)."
        ),
    ]
    lines += _targets(reports)
    lines += ["", *(f"- {name}: {note}" for name, note in notes.items() if note)]
    lines += [
        "",
        "When the current version was not the top hit of a current question, the top hit was:",
        "",
        "| budget | system | " + " | ".join(MISSES) + " |",
        "|---:|---|" + "---:|" * len(MISSES),
    ]
    for report in reports:
        for r in report.results:
            if r.available and r.misses:
                cells = [f"{r.misses[m]:.3f}" for m in MISSES]
                lines.append(f"| {report.budget} | {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(r: SystemResult, metric: str) -> str:
    v = r.metrics.get(metric, math.nan)
    return "n/a" if math.isnan(v) else f"{v:.3f}"


def _targets(reports: Sequence[Report]) -> list[str]:
    """The issue's targets, reported, not asserted: keys leak nothing stale, and
    their current@1 beats BM25's by 30 points or more."""
    out = []
    for report in reports:
        by = {r.system: r for r in report.results if r.available}
        keys, bm25 = by.get("keys"), by.get("bm25")
        if keys is None:
            continue
        leak = keys.metrics["stale leak"]
        line = f"Targets at {report.budget} tokens: stale leak {leak:.3f} (target 0)"
        if bm25 is not None:
            gap = (keys.metrics["current@1"] - bm25.metrics["current@1"]) * 100
            line += f", current@1 {gap:+.1f} points over BM25 (target +30)"
        out.append(line + ".")
    return ["", *out] if out else []
