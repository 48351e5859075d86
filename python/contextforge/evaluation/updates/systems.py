"""The systems that answer the questions: contextforge with and without keys (and
the checks of what the keyed API promises), and the BM25 peer; :func:`run` runs them."""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...config import Config
from ...memory import ContextForge
from .data import Dataset, Question
from .metrics import Answer, misses, score
from .report import Report, SystemResult

SYSTEMS = ("keys", "no-keys", "bm25")
NAMES = {
    "keys": "contextforge (keys)",
    "no-keys": "contextforge (no keys)",
    "bm25": "BM25 (bm25s)",
}
DEFAULT_BUDGETS = (256, 64)


async def run(
    dataset: Dataset,
    budget: int = DEFAULT_BUDGETS[0],
    systems: Sequence[str] = SYSTEMS,
    *,
    config: Config | None = None,
) -> Report:
    """Answers every question of ``dataset`` with each of ``systems`` (names from
    :data:`SYSTEMS`) within ``budget`` tokens, each contextforge system in a new
    in-memory store opened with ``config`` (default ``Config()``)."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise ValueError(f"systems must be among {list(SYSTEMS)}, got {list(systems)}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive int, got {budget!r}")
    cfg = dataclasses.replace(config or Config(), path=":memory:", index_dir=None)
    results = []
    for system in systems:
        if system == "bm25":
            results.append(await _bm25(dataset, budget, cfg))
        else:
            results.append(await _contextforge(dataset, budget, cfg, keyed=system == "keys"))
    return Report(dataset.describe(), budget, tuple(results))


class _KeysUnavailable(Exception):
    pass


async def _contextforge(dataset: Dataset, budget: int, cfg: Config, *, keyed: bool) -> SystemResult:
    system = "keys" if keyed else "no-keys"
    answers: dict[str, Answer] = {}
    checks = _Checks(dataset)
    async with await ContextForge.open(cfg) as cf:
        try:
            external = await _save(cf, dataset, keyed)
        except _KeysUnavailable as err:
            note = f"keys unavailable in this build ({err})"
            return SystemResult(system, NAMES[system], False, note)
        checks.external = external
        for q in dataset.questions:
            if q.kind == "history" and keyed:
                versions = await cf.history(q.key, q.scope)
                answers[q.id] = Answer(history=tuple(external[h.id] for h in versions))
                checks.history(q, versions)
                continue
            if q.kind == "as_of" and keyed:
                hits = await cf.query(q.text, q.scope, budget, as_of=q.as_of, now=dataset.end)
            elif q.kind == "as_of":
                hits = await cf.query(q.text, q.scope, budget, until=q.as_of, now=q.as_of)
            else:
                hits = await cf.query(q.text, q.scope, budget, now=dataset.end)
            answers[q.id] = Answer(packed=tuple(external[h.id] for h in hits))
            if keyed:
                checks.hits(q, hits, dataset.end)
    note = "versions saved with key=, history()" if keyed else "same entries, no keys"
    return SystemResult(
        system,
        NAMES[system],
        True,
        note,
        score(dataset, answers),
        misses(dataset, answers),
        checks.found(),
    )


async def _save(cf: ContextForge, dataset: Dataset, keyed: bool) -> dict[int, str]:
    """Saves the items one by one, in timeline order; returns store id -> item id."""
    external: dict[int, str] = {}
    for item in dataset.items:
        kind = "note" if item.key is None else "fact"
        if keyed and item.key is not None:
            try:
                saved = await cf.save(
                    item.content,
                    kind,
                    scope=item.scope,
                    key=item.key,
                    timestamp=item.timestamp,
                    dedupe=False,
                )
            except TypeError as err:
                raise _KeysUnavailable(str(err)) from None
        else:
            saved = await cf.save(
                item.content, kind, scope=item.scope, timestamp=item.timestamp, dedupe=False
            )
        external[int(saved)] = item.id
    return external


class _Checks:
    """What the keyed API promises of its answers (the brief's contract), and how
    often an answer broke a promise."""

    def __init__(self, dataset: Dataset) -> None:
        self.facts, self.versions = dataset.by_key(), dataset.by_version()
        self.external: Mapping[int, str] = {}
        self.counts: dict[str, int] = {}

    def fail(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def found(self) -> tuple[str, ...]:
        return tuple(f"{what} (x{n})" for what, n in self.counts.items())

    def hits(self, q: Question, hits: Sequence[Any], end: datetime) -> None:
        at = q.as_of or end
        for h in hits:
            item = self.external[h.id]
            fact = self.versions.get(item)
            if fact is None or fact.scope != q.scope:
                continue
            if h.key != fact.key:
                self.fail(f"a hit's key is not the one saved ({h.key!r}, not {fact.key!r})")
            if fact.true_at(at) != item:
                self.fail(f"{q.kind} query returned a version not valid at its clock")
            if q.kind == "current" and not h.current:
                self.fail("current query returned a hit with current=False")

    def history(self, q: Question, versions: Sequence[Any]) -> None:
        fact = self.facts[q.scope, q.key]
        if [self.external.get(h.id) for h in versions] != list(fact.versions):
            self.fail("history() is not the versions saved, in order")
        for i, h in enumerate(versions):
            later = versions[i + 1] if i + 1 < len(versions) else None
            if h.valid_from != h.timestamp:
                self.fail("history(): valid_from is not the saved timestamp")
            if later is not None and h.valid_to != later.valid_from:
                self.fail("history(): a version's valid_to is not the next one's valid_from")
            if later is None and (h.valid_to is not None or not h.current):
                self.fail("history(): the newest version is not open-ended and current")
            if later is not None and h.current:
                self.fail("history(): a superseded version has current=True")


_WORD = re.compile(r"\w+")


async def _bm25(dataset: Dataset, budget: int, cfg: Config) -> SystemResult:
    """Plain BM25 per scope as in ``benchmarks/eval_locomo.py``: bm25s (Lucene
    BM25, k1=1.2, b=0.75) over tantivy's English stemming analyzer (lowercase
    words when tantivy is missing), the first ``Config.depth`` matches packed
    greedily by the store's own token count of each entry."""
    try:
        bm25s = importlib.import_module("bm25s")
    except ImportError as err:
        return SystemResult("bm25", NAMES["bm25"], False, f"not run: {err}")
    analyze, analyzer = _analyzer()
    tokens = await _token_counts(dataset, cfg)
    answers: dict[str, Answer] = {}
    for scope in sorted({i.scope for i in dataset.items}):
        docs = [i for i in dataset.items if i.scope == scope]
        corpus = [analyze(d.content) for d in docs]
        vocab = {t for doc in corpus for t in doc}
        index = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        index.index(corpus, show_progress=False)
        for q in (q for q in dataset.questions if q.scope == scope):
            terms = [t for t in analyze(q.text) if t in vocab]
            scores = index.get_scores(terms) if terms else np.zeros(len(docs))
            if q.as_of is not None:  # the entries before T, as no-keys' until=T
                scores = np.where([d.timestamp < q.as_of for d in docs], scores, 0.0)
            order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
            packed, used = [], 0
            for i in order[: cfg.depth]:
                if used + tokens[docs[i].id] <= budget:
                    packed.append(docs[i].id)
                    used += tokens[docs[i].id]
            answers[q.id] = Answer(packed=tuple(packed))
    note = f"per scope, {analyzer}, store token counts"
    return SystemResult(
        "bm25", NAMES["bm25"], True, note, score(dataset, answers), misses(dataset, answers)
    )


def _analyzer() -> tuple[Callable[[str], list[str]], str]:
    try:
        tantivy = importlib.import_module("tantivy")
    except ImportError:
        return (lambda text: _WORD.findall(text.lower())), "lowercase words (no tantivy)"
    built = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    return (lambda text: list(built.analyze(text))), "tantivy English stemmer"


async def _token_counts(dataset: Dataset, cfg: Config) -> dict[str, int]:
    """Each item's size in the store's tokenizer, so BM25 packs the same budget."""
    async with await ContextForge.open(cfg) as cf:
        ids = await cf.save_many(
            [{"content": i.content, "scope": i.scope, "dedupe": False} for i in dataset.items]
        )
        hits = await cf.get_many(ids)
    return {i.id: h.tokens for i, h in zip(dataset.items, hits, strict=True) if h is not None}
