"""Retrieval-quality evaluation: run a spec of entries and queries with known answers
through the public API and report recall@k, hit@k, MRR, nDCG@k and recall within a
token budget, overall and per category.

    spec = load_spec("my_spec.json")            # or load_locomo(dir), or smoke_spec()
    report = await evaluate(spec, Config(recency_weight=0.0))
    print(report.table())
    open("report.json", "w").write(report.to_json())

The same from a shell: ``contextforge eval SPEC_PATH`` (see :func:`cli.main`).
"""

from __future__ import annotations

from importlib import resources

from .locomo import find_locomo_dir, load_locomo, parse_locomo_datetime
from .metrics import hit_at, ndcg_at, recall_at, reciprocal_rank
from .report import QueryResult, Report
from .run import DEFAULT_BUDGET, DEFAULT_KS, Run, evaluate, score
from .spec import Entry, Query, Spec, SpecError, load_spec, spec_from_dict

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_KS",
    "Entry",
    "Query",
    "QueryResult",
    "Report",
    "Run",
    "Spec",
    "SpecError",
    "evaluate",
    "find_locomo_dir",
    "hit_at",
    "load_locomo",
    "load_spec",
    "ndcg_at",
    "parse_locomo_datetime",
    "recall_at",
    "reciprocal_rank",
    "score",
    "smoke_spec",
    "spec_from_dict",
]


def smoke_spec() -> Spec:
    """The small synthetic spec shipped with the package (``contextforge/data/eval_smoke.json``)."""
    with resources.as_file(resources.files("contextforge") / "data" / "eval_smoke.json") as p:
        return load_spec(p)
