"""The deterministic chat-like memory workload every system runs.

N entries of about 30 pseudo-words drawn from a Zipf(1.1) vocabulary, spread over
N/100 Zipf-sized scopes plus 10% global entries, timestamps ascending over 180
days. Queries take three of the rarest words of a target entry plus one common
word; 80% are scoped to the target's scope, the rest search everything.

The pseudo-words are consonant-vowel syllables ending in a, o or u, so that every
system's analyzer (English stemming included) keeps each word as one distinct term.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

SEED = 20240611
VOCAB_SIZE = 50_000
ZIPF_S = 1.1
DAY = 86_400.0
SPAN_DAYS = 180.0
START = 1_700_000_000.0  # fixed, so runs are comparable
BUDGET = 2048
GLOBAL_SHARE = 0.10
SCOPED_QUERY_SHARE = 0.80
COMMON_WORDS = 100  # a query's common word comes from the most frequent words

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_FINAL_VOWELS = "aou"


@dataclass(frozen=True)
class Entry:
    content: str
    scope: str | None
    timestamp: float


@dataclass(frozen=True)
class Query:
    text: str
    scope: str | None
    target: int  # index into Workload.entries


@dataclass(frozen=True)
class Workload:
    seed: int
    size: int
    budget: int
    now: float  # the clock every query passes for recency
    entries: list[Entry]
    saves: list[Entry]  # single saves into the loaded store
    queries: list[Query]


def _pseudo_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < count:
        syllables = rng.choice((2, 3, 3, 4))
        middle = "".join(
            rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables - 1)
        )
        word = middle + rng.choice(_CONSONANTS) + rng.choice(_FINAL_VOWELS)
        if word not in words:
            words.add(word)
            ordered.append(word)
    return ordered


def _zipf_cum_weights(n: int, s: float = ZIPF_S) -> list[float]:
    return list(accumulate(1.0 / (rank**s) for rank in range(1, n + 1)))


class _Sampler:
    def __init__(self, rng: random.Random, vocab: list[str], n_scopes: int) -> None:
        self.rng = rng
        self.vocab = vocab
        self.word_cw = _zipf_cum_weights(len(vocab))
        self.scopes = [f"user:{i:05d}" for i in range(n_scopes)]
        self.scope_cw = _zipf_cum_weights(n_scopes)

    def content(self) -> list[str]:
        length = self.rng.randint(24, 36)
        return self.rng.choices(self.vocab, cum_weights=self.word_cw, k=length)

    def scope(self) -> str | None:
        if self.rng.random() < GLOBAL_SHARE:
            return None
        return self.rng.choices(self.scopes, cum_weights=self.scope_cw, k=1)[0]


def _queries(
    rng: random.Random,
    entries: list[list[str]],
    scopes: list[str | None],
    vocab: list[str],
    count: int,
) -> list[Query]:
    df: Counter[str] = Counter()
    for words in entries:
        df.update(set(words))
    rank = {word: i for i, word in enumerate(vocab)}
    queries = []
    for _ in range(count):
        target = rng.randrange(len(entries))
        distinct = sorted(set(entries[target]), key=lambda w: (df[w], -rank[w]))
        rare = distinct[:3]
        common = rng.choice([w for w in vocab[:COMMON_WORDS] if w not in rare])
        words = rare + [common]
        rng.shuffle(words)
        scope = scopes[target] if rng.random() < SCOPED_QUERY_SHARE else None
        queries.append(Query(" ".join(words), scope, target))
    return queries


def generate(size: int, queries: int = 1000, saves: int = 200, seed: int = SEED) -> Workload:
    """Builds the workload; the same arguments always give the same workload."""
    rng = random.Random(seed)
    vocab = _pseudo_words(rng, VOCAB_SIZE)
    sampler = _Sampler(rng, vocab, max(1, size // 100))
    now = START + SPAN_DAYS * DAY
    step = (SPAN_DAYS * DAY - 3600.0) / size  # the last hour is left for the saves
    words = [sampler.content() for _ in range(size)]
    scopes = [sampler.scope() for _ in range(size)]
    entries = [
        Entry(" ".join(w), s, START + i * step) for i, (w, s) in enumerate(zip(words, scopes))
    ]
    new = [
        Entry(" ".join(sampler.content()), sampler.scope(), now - 3600.0 + i) for i in range(saves)
    ]
    return Workload(
        seed, size, BUDGET, now, entries, new, _queries(rng, words, scopes, vocab, queries)
    )


def everywhere(scope: str | None) -> Any:
    """A query's scope as contextforge takes it: an unscoped query of the workload
    searches every scope (``ALL_SCOPES``), where ``None`` would search only the
    global entries."""
    from contextforge import ALL_SCOPES

    return ALL_SCOPES if scope is None else scope


def save(workload: Workload, path: Path) -> None:
    """Writes the workload as JSON for the worker processes and the Rust harness."""
    data = {
        "seed": workload.seed,
        "size": workload.size,
        "budget": workload.budget,
        "now": workload.now,
        "entries": [[e.content, e.scope, e.timestamp] for e in workload.entries],
        "saves": [[e.content, e.scope, e.timestamp] for e in workload.saves],
        "queries": [[q.text, q.scope, q.target] for q in workload.queries],
    }
    path.write_text(json.dumps(data, separators=(",", ":")))


def load(path: Path) -> Workload:
    data = json.loads(path.read_text())
    return Workload(
        seed=data["seed"],
        size=data["size"],
        budget=data["budget"],
        now=data["now"],
        entries=[Entry(*row) for row in data["entries"]],
        saves=[Entry(*row) for row in data["saves"]],
        queries=[Query(*row) for row in data["queries"]],
    )


def describe(workload: Workload) -> dict[str, object]:
    scoped = [e.scope for e in workload.entries if e.scope is not None]
    sizes = Counter(scoped).most_common()
    return {
        "entries": workload.size,
        "queries": len(workload.queries),
        "saves": len(workload.saves),
        "scopes": len(sizes),
        "largest_scope": sizes[0][1] if sizes else 0,
        "global_entries": workload.size - len(scoped),
        "mean_words": sum(len(e.content.split()) for e in workload.entries) / max(1, workload.size),
        "scoped_queries": sum(q.scope is not None for q in workload.queries),
    }
