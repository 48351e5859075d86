"""Knowledge updates: does memory answer with a fact's current value, keep its old
values out of the context, answer as of a past date, and tell a fact's history?

    dataset = generate(seed=0, subjects=120)
    reports = [await run(dataset, budget=b) for b in (256, 64)]
    print(table(reports))

The same from a shell: ``contextforge eval-updates`` or
``python benchmarks/knowledge_update.py``; the method is in ``docs/knowledge-update.md``.

:func:`generate` writes, from a seed and fixed word lists, the memory of several
users (one scope each). Each user's memory mentions a dozen subjects (people,
projects, services); each subject has two or three slots (a person's city, a
project's deadline, a service's owner...), and each slot is stated once, then
changed 1 to 6 times over 18 simulated months, with chit-chat about the same
subjects in between. Every slot (a *fact*) gets three questions: its current
value, its value on a date between two changes, and its history.

:func:`run` answers them with one system at a time:

- ``keys``: contextforge, each version saved with ``key="<subject>.<slot>"`` (so a
  change supersedes the previous version); current questions ``query(..., now=end)``,
  as-of questions ``query(..., as_of=T, now=end)``, history ``history(key, scope)``;
- ``no-keys``: contextforge, the same entries without keys (recency ranking only);
  as-of questions ``query(..., until=T, now=T)``;
- ``bm25``: plain BM25 (bm25s, Lucene variant, the English stemmer of
  ``benchmarks/eval_locomo.py``) per scope, packed greedily into the same budget by
  the store's own token counts; as-of questions search the entries before T.

The metrics (:func:`score`; each a mean over questions):

- ``current@1``: the current version is the top hit;
- ``current in budget``: the current version is among the packed hits;
- ``stale leak``: an older version of the slot is among the packed hits;
- ``as-of@1``: the version true at T is the top hit;
- ``history``: for ``keys``, the share of the versions that ``history()`` returns
  in order (longest common subsequence / versions); for the others, which have no
  history call, the share of the versions among the hits packed for the history
  question, in any order.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import numpy as np

from ..config import Config
from ..memory import ContextForge

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_SUBJECTS",
    "METRICS",
    "MISSES",
    "SYSTEMS",
    "Answer",
    "Dataset",
    "Fact",
    "Item",
    "Question",
    "Report",
    "SystemResult",
    "generate",
    "misses",
    "ordered_fraction",
    "present_fraction",
    "run",
    "score",
    "table",
]

SYSTEMS = ("keys", "no-keys", "bm25")
NAMES = {
    "keys": "contextforge (keys)",
    "no-keys": "contextforge (no keys)",
    "bm25": "BM25 (bm25s)",
}
DEFAULT_SUBJECTS = 120
DEFAULT_BUDGETS = (256, 64)
START = datetime(2025, 1, 6, tzinfo=timezone.utc)
METRICS = ("current@1", "current in budget", "stale leak", "as-of@1", "history")
Kind = Literal["current", "as_of", "history"]

# ---------------------------------------------------------------- the dataset


@dataclass(frozen=True)
class Item:
    """One saved entry: a version of a fact (``key`` set) or chit-chat (``key`` None)."""

    id: str
    scope: str
    content: str
    timestamp: datetime
    key: str | None = None
    subject: str = ""  # whom or what it is about


@dataclass(frozen=True)
class Fact:
    """One slot of one subject in one scope, and its versions, oldest first."""

    scope: str
    key: str
    subject: str
    slot: str
    values: tuple[str, ...]
    versions: tuple[str, ...]
    times: tuple[datetime, ...]

    def true_at(self, t: datetime) -> str | None:
        """The id of the version valid at ``t``, ``None`` before the first."""
        valid = [v for v, since in zip(self.versions, self.times, strict=True) if since <= t]
        return valid[-1] if valid else None


@dataclass(frozen=True)
class Question:
    """``answer`` is the id of the version that answers it (``None`` for history)."""

    id: str
    kind: Kind
    scope: str
    key: str
    text: str
    as_of: datetime | None = None
    answer: str | None = None


@dataclass(frozen=True)
class Dataset:
    seed: int
    subjects: int
    start: datetime
    end: datetime  # the clock of current questions: a day after the last item
    items: tuple[Item, ...]  # in timeline order
    facts: tuple[Fact, ...]
    questions: tuple[Question, ...]

    def by_key(self) -> dict[tuple[str, str], Fact]:
        """Each fact by its scope and key."""
        return {(f.scope, f.key): f for f in self.facts}

    def by_version(self) -> dict[str, Fact]:
        """Each version's item id -> its fact."""
        return {v: f for f in self.facts for v in f.versions}

    def describe(self) -> str:
        scopes = len({i.scope for i in self.items})
        versions = sum(len(f.versions) for f in self.facts)
        return (
            f"seed {self.seed}: {self.subjects} subjects in {scopes} "
            f"scope{'s' if scopes != 1 else ''}, {len(self.facts)} "
            f"facts with {versions} versions, {len(self.items) - versions} chit-chat entries, "
            f"{len(self.questions)} questions"
        )


@dataclass(frozen=True)
class _Slot:
    name: str
    # A value for each time a fact is stated (distinct, in the order of change).
    draw: Callable[[random.Random, Sequence[datetime]], list[str]]
    first: tuple[str, ...]  # templates of the first statement: {s} subject, {v} value
    change: tuple[str, ...]  # templates of a change
    current: str  # question templates; {d} is the as-of date
    as_of: str
    history: str


def _words(text: str) -> list[str]:
    return text.split()


def _pick(values: Sequence[str]) -> Callable[[random.Random, Sequence[datetime]], list[str]]:
    return lambda rng, times: rng.sample(list(values), len(times))


_MONTHS = _words(
    "January February March April May June July August September October November December"
)


def _day(t: datetime) -> str:
    return f"{t.day} {_MONTHS[t.month - 1]} {t.year}"


def _deadlines(rng: random.Random, times: Sequence[datetime]) -> list[str]:
    """Deadlines only slip: each a few weeks to months after it is set, and later
    than the one before."""
    out: list[datetime] = []
    for t in times:
        due = t + timedelta(days=rng.randint(30, 150))
        out.append(max(due, out[-1] + timedelta(days=rng.randint(7, 60))) if out else due)
    return [_day(d) for d in out]


def _versions(rng: random.Random, times: Sequence[datetime]) -> list[str]:
    """Versions only grow."""
    pool = [f"{a}.{b}.{c}" for a in range(1, 5) for b in range(13) for c in range(4)]
    return [pool[i] for i in sorted(rng.sample(range(len(pool)), len(times)))]


_PEOPLE = _words(
    "Alice Bruno Carla Dmitri Elena Farid Greta Hugo Ines Jonas Keiko Luca Marta "
    "Nadia Omar Priya Quentin Rosa Samir Tessa Ugo Vera Wanda Xavier Yusuf Zoe "
    "Anton Beatriz Caio Dalia"
)
_PROJECTS = _words(
    "Falcon Heron Otter Badger Lynx Marten Osprey Puffin Raven Stork Walrus Yak "
    "Bison Condor Dingo Egret Ferret Gecko Ibis Jackal Kestrel Lemur Mole Newt"
)
_SERVICES = _words(
    "billing search checkout payments inventory shipping notifications auth ledger "
    "catalog pricing reporting scheduler uploads analytics invoicing gateway "
    "messaging profiles recommendations exports webhooks audit sessions"
)
_TOPICS = (
    "gardening",
    "sourdough",
    "chess",
    "marathon training",
    "jazz records",
    "climbing",
    "board games",
    "the budget",
    "hiring",
    "the offsite",
    "tax forms",
    "sailing",
    "photography",
    "the quarterly review",
)

_PERSON = (
    _Slot(
        "city",
        _pick(
            _words(
                "Lisbon Porto Berlin Madrid Paris Vienna Prague Dublin Oslo Warsaw Athens Rome "
                "Munich Zurich Krakow Seville Lyon Ghent"
            )
        ),
        ("{s} lives in {v}.", "{s} is based in {v}."),
        (
            "{s} moved to {v}.",
            "{s} now lives in {v}.",
            "{s} relocated to {v} this month.",
            "{s} has settled in {v} after the move.",
            "Update: {s}'s home is in {v} now.",
        ),
        "Where does {s} live?",
        "Where did {s} live on {d}?",
        "How has {s}'s home city changed?",
    ),
    _Slot(
        "employer",
        _pick(
            (
                "Acme",
                "Globex",
                "Initech",
                "Umbrella",
                "Stark Industries",
                "Hooli",
                "Soylent",
                "Cyberdyne",
                "Tyrell",
                "Massive Dynamic",
                "Vandelay",
                "Wonka",
            )
        ),
        ("{s} works at {v}.", "{s} has a job at {v}."),
        (
            "{s} joined {v}.",
            "{s} now works for {v}.",
            "{s} left for a new job at {v}.",
            "{s} accepted an offer from {v}.",
            "{s} started at {v} on Monday.",
        ),
        "Where does {s} work?",
        "Where did {s} work on {d}?",
        "Which companies has {s} worked for?",
    ),
    _Slot(
        "role",
        _pick(
            (
                "staff engineer",
                "engineering manager",
                "product designer",
                "data scientist",
                "tech lead",
                "site reliability engineer",
                "principal engineer",
                "QA lead",
                "director of engineering",
                "solutions architect",
            )
        ),
        ("{s}'s job title is {v}.", "{s} works as {v}."),
        (
            "{s} was promoted to {v}.",
            "{s}'s title changed to {v}.",
            "{s} took on the {v} role.",
            "{s} is {v} now.",
            "{s} switched tracks and became {v}.",
        ),
        "What is {s}'s job title?",
        "What was {s}'s job title on {d}?",
        "How has {s}'s role changed?",
    ),
)
_PROJECT = (
    _Slot(
        "deadline",
        _deadlines,
        ("{s}'s deadline is {v}.", "{s} is due on {v}."),
        (
            "{s}'s deadline slipped to {v}.",
            "{s} was pushed back; the new deadline is {v}.",
            "The deadline for {s} moved to {v}.",
            "{s} is now due on {v}.",
            "{s} now has to ship by {v}.",
        ),
        "When is {s}'s deadline?",
        "What was {s}'s deadline on {d}?",
        "How has {s}'s deadline moved?",
    ),
    _Slot(
        "lead",
        _pick(_PEOPLE),
        ("{v} leads {s}.", "{s} is led by {v}."),
        (
            "{v} took over {s}.",
            "{s} is now led by {v}.",
            "{v} is the new lead of {s}.",
            "{s} changed hands: {v} runs it now.",
            "Leadership of {s} passed to {v}.",
        ),
        "Who leads {s}?",
        "Who led {s} on {d}?",
        "Who has led {s} over time?",
    ),
    _Slot(
        "phase",
        _pick(_words("planning design development testing beta rollout maintenance hardening")),
        ("{s} is in the {v} phase.", "{s} started in {v}."),
        (
            "{s} moved into the {v} phase.",
            "{s} entered {v}.",
            "{s} is in {v} now.",
            "Status change: {s} is in {v}.",
            "{s} has gone to {v}.",
        ),
        "What phase is {s} in?",
        "What phase was {s} in on {d}?",
        "Which phases has {s} been through?",
    ),
)
_SERVICE = (
    _Slot(
        "owner",
        _pick(
            _words("Payments Platform Growth Identity Search Mobile Core Observability Data Infra")
        ),
        ("{s} is owned by the {v} team.", "The {v} team owns {s}."),
        (
            "The {v} team took over {s}.",
            "{s} now belongs to the {v} team.",
            "Ownership of {s} moved to the {v} team.",
            "{s} was handed to the {v} team.",
            "The {v} team is on call for {s} now.",
        ),
        "Which team owns {s}?",
        "Which team owned {s} on {d}?",
        "Which teams have owned {s}?",
    ),
    _Slot(
        "version",
        _versions,
        ("{s} runs version {v}.", "{s} is on {v}."),
        (
            "{s} was upgraded to {v}.",
            "We deployed {v} of {s}.",
            "{s} is on version {v} now.",
            "Rolled out {s} {v} today.",
            "{s} got bumped to {v}.",
        ),
        "What version is {s} running?",
        "What version was {s} running on {d}?",
        "How has {s}'s version changed?",
    ),
    _Slot(
        "region",
        _pick(
            (
                "eu-west-1",
                "us-east-1",
                "us-west-2",
                "ap-southeast-1",
                "eu-central-1",
                "ap-northeast-1",
                "sa-east-1",
                "ca-central-1",
                "eu-north-1",
            )
        ),
        ("{s} is deployed in {v}.", "{s} runs in {v}."),
        (
            "{s} migrated to {v}.",
            "{s} now runs in {v}.",
            "We moved {s} to {v}.",
            "{s} was redeployed to {v}.",
            "{s} lives in {v} now.",
        ),
        "Which region is {s} deployed in?",
        "Which region was {s} deployed in on {d}?",
        "Which regions has {s} run in?",
    ),
)
# Chit-chat about a subject; some share a question's words ("live", "deadline").
_CHATTER = {
    "person": (
        "Had coffee with {s}; we talked about {t}.",
        "{s} recommended a podcast about {t}.",
        "{s} was out sick today.",
        "{s} sent photos from the weekend trip.",
        "{s} asked me to review a doc about {t}.",
        "Remember to wish {s} a happy birthday.",
        "{s} wants to live closer to the mountains someday.",
        "{s} complained about working late again.",
    ),
    "project": (
        "The {s} retro ran long.",
        "Someone asked about {s}'s logo.",
        "The {s} standup moved to ten o'clock.",
        "The {s} demo went well; people liked the part about {t}.",
        "Need to update the {s} wiki page about {t}.",
        "Worried that talk about the {s} deadline will eat the whole meeting.",
        "{s} has a new chat channel.",
    ),
    "service": (
        "The {s} dashboard was slow this morning.",
        "{s} logs are noisy again.",
        "Got paged twice last night for {s}.",
        "Wrote a runbook for {s} about {t}.",
        "{s} latency looked fine after lunch.",
        "Someone asked which client version {s} needs.",
        "The cost review flagged {s} as expensive.",
    ),
}
_KINDS: dict[str, tuple[Sequence[str], tuple[_Slot, ...], str]] = {
    "person": (_PEOPLE, _PERSON, "{n}"),
    "project": (_PROJECTS, _PROJECT, "Project {n}"),
    "service": (_SERVICES, _SERVICE, "the {n} service"),
}
_MAX_PER_USER = 3 * min(len(_PEOPLE), len(_PROJECTS), len(_SERVICES))
_SPACING = 4  # days between two versions of a fact, at least


def _sentence(template: str, **fields: str) -> str:
    text = template.format(**fields)
    return text[0].upper() + text[1:]


def generate(
    seed: int = 0,
    subjects: int = DEFAULT_SUBJECTS,
    *,
    per_user: int = 12,
    days: int = 540,
    chatter: int = 6,
) -> Dataset:
    """A dataset of ``subjects`` subjects, ``per_user`` to a scope ("user:0", ...),
    over ``days`` days from 6 January 2025, with ``chatter`` chit-chat entries per
    subject. The same arguments always give the same dataset."""
    if subjects < 1 or not 1 <= per_user <= _MAX_PER_USER:
        raise ValueError(f"need subjects >= 1 and 1 <= per_user <= {_MAX_PER_USER}")
    if days < 8 * _SPACING or chatter < 0:
        raise ValueError(f"need days >= {8 * _SPACING} and chatter >= 0")
    rng = random.Random(seed)
    drafts: list[tuple[datetime, str, str, str | None, str]] = []  # time, scope, text, key, subject
    facts: list[tuple[str, str, str, str, list[str], list[datetime]]] = []
    for user in range(math.ceil(subjects / per_user)):
        scope = f"user:{user}"
        count = min(per_user, subjects - user * per_user)
        kinds = [("person", "project", "service")[i % 3] for i in range(count)]
        names = {k: rng.sample(_KINDS[k][0], kinds.count(k)) for k in _KINDS}
        for kind in kinds:
            _, slots, display = _KINDS[kind]
            name = names[kind].pop()
            subject = display.format(n=name)
            chosen = rng.sample(slots, rng.randint(2, 3))
            for slot in (s for s in slots if s in chosen):
                n = rng.randint(1, 6) + 1
                offsets = sorted(rng.sample(range(0, days - _SPACING, _SPACING), n))
                times = [
                    START + timedelta(days=d, hours=rng.randint(8, 19), minutes=rng.randint(0, 59))
                    for d in offsets
                ]
                values = slot.draw(rng, times)
                key = f"{name.lower()}.{slot.name}"
                for i, (value, t) in enumerate(zip(values, times, strict=True)):
                    template = rng.choice(slot.change if i else slot.first)
                    drafts.append((t, scope, _sentence(template, s=subject, v=value), key, subject))
                facts.append((scope, key, subject, slot.name, values, times))
            for _ in range(chatter):
                t = START + timedelta(minutes=rng.randrange(days * 24 * 60))
                text = _sentence(rng.choice(_CHATTER[kind]), s=subject, t=rng.choice(_TOPICS))
                drafts.append((t, scope, text, None, subject))
    drafts.sort(key=lambda d: (d[0], d[1], d[2]))
    items = tuple(
        Item(f"e{i:05d}", scope, text, t, key, subject)
        for i, (t, scope, text, key, subject) in enumerate(drafts)
    )
    ids = {(i.scope, i.key, i.timestamp): i.id for i in items if i.key is not None}
    done = tuple(
        Fact(
            scope,
            key,
            subject,
            slot,
            tuple(values),
            tuple(ids[scope, key, t] for t in times),
            tuple(times),
        )
        for scope, key, subject, slot, values, times in facts
    )
    end = items[-1].timestamp + timedelta(days=1)
    return Dataset(seed, subjects, START, end, items, done, _questions(rng, done))


def _questions(rng: random.Random, facts: Sequence[Fact]) -> tuple[Question, ...]:
    slots = {s.name: s for s in (*_PERSON, *_PROJECT, *_SERVICE)}
    out: list[Question] = []
    for f in facts:
        slot, qid = slots[f.slot], f"{f.scope}/{f.key}"
        out.append(
            Question(
                f"{qid}/current",
                "current",
                f.scope,
                f.key,
                _sentence(slot.current, s=f.subject),
                answer=f.versions[-1],
            )
        )
        # A day strictly between two changes, at noon: the earlier version is true then.
        i = rng.randrange(len(f.versions) - 1)
        first = (f.times[i] - START).days + 1
        last = (f.times[i + 1] - START).days - 1
        t = START + timedelta(days=rng.randint(first, last), hours=12)
        out.append(
            Question(
                f"{qid}/as_of",
                "as_of",
                f.scope,
                f.key,
                _sentence(slot.as_of, s=f.subject, d=_day(t)),
                as_of=t,
                answer=f.true_at(t),
            )
        )
        out.append(
            Question(
                f"{qid}/history", "history", f.scope, f.key, _sentence(slot.history, s=f.subject)
            )
        )
    return tuple(out)


# ---------------------------------------------------------------- the metrics


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
    """The means over questions of :data:`METRICS` (see the module's doc)."""
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


# ---------------------------------------------------------------- the systems


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


# ---------------------------------------------------------------- the table


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
