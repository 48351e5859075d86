"""The scores of a system's answers: :func:`score` (:data:`METRICS`) and
:func:`misses` (:data:`MISSES`), see the package's doc."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .data import Dataset

METRICS = ("current@1", "current in budget", "stale leak", "as-of@1", "history")


def ordered_fraction(expected: Sequence[str], returned: Sequence[str]) -> float:
    """The share of ``expected`` that ``returned`` holds in the same order: the longest
    common subsequence's length over ``len(expected)``."""
    if not expected:
        return 0.0
    row = [0] * (len(returned) + 1)
    for e in expected:
        prev = 0  # the previous row's value one column to the left
        for j, r in enumerate(returned, start=1):
            prev, row[j] = row[j], prev + 1 if e == r else max(row[j], row[j - 1])
    return row[-1] / len(expected)


def present_fraction(expected: Sequence[str], returned: Iterable[str]) -> float:
    """The share of ``expected`` found anywhere in ``returned``."""
    found = set(returned)
    return sum(e in found for e in expected) / len(expected) if expected else 0.0


@dataclass(frozen=True)
class Answer:
    """A system's answer to one question, as item ids: the packed hits, best first,
    and for a history call the versions it returned, oldest first."""

    packed: tuple[str, ...] = ()
    history: tuple[str, ...] | None = None


def score(dataset: Dataset, answers: Mapping[str, Answer]) -> dict[str, float]:
    """The means over questions of :data:`METRICS` (see the package's doc)."""
    sums = dict.fromkeys(METRICS, 0.0)
    counts = dict.fromkeys(METRICS, 0)
    facts = dataset.by_key()

    def add(metric: str, value: float) -> None:
        sums[metric] += value
        counts[metric] += 1

    for q in dataset.questions:
        a, fact = answers[q.id], facts[q.scope, q.key]
        top = a.packed[0] if a.packed else None
        if q.kind == "current":
            add("current@1", float(top == q.answer))
            add("current in budget", float(q.answer in a.packed))
            stale = set(fact.versions[:-1])
            add("stale leak", float(any(h in stale for h in a.packed)))
        elif q.kind == "as_of":
            add("as-of@1", float(top == q.answer))
        elif a.history is not None:
            add("history", ordered_fraction(fact.versions, a.history))
        else:
            add("history", present_fraction(fact.versions, a.packed))
    return {m: sums[m] / counts[m] if counts[m] else math.nan for m in METRICS}


MISSES = (
    "older version",
    "other slot, same subject",
    "chit-chat, same subject",
    "other subject",
    "no hit",
)


def misses(dataset: Dataset, answers: Mapping[str, Answer]) -> dict[str, float]:
    """What took the top place when the current version did not, as shares of the
    current questions, by :data:`MISSES` (they add up to 1 - current@1)."""
    items = {i.id: i for i in dataset.items}
    facts = dataset.by_key()
    out = dict.fromkeys(MISSES, 0.0)
    current = [q for q in dataset.questions if q.kind == "current"]
    for q in current:
        packed = answers[q.id].packed
        if packed and packed[0] == q.answer:
            continue
        top = items[packed[0]] if packed else None
        fact = facts[q.scope, q.key]
        if top is None:
            why = "no hit"
        elif top.id in fact.versions:
            why = "older version"
        elif top.subject != fact.subject:
            why = "other subject"
        else:
            why = "chit-chat, same subject" if top.key is None else "other slot, same subject"
        out[why] += 1 / len(current)
    return out
