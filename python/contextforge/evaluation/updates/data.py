"""The seeded dataset: its records (:class:`Item`, :class:`Fact`, :class:`Question`,
:class:`Dataset`) and :func:`generate`, which writes them from the word lists and
sentence templates of :mod:`.templates`."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from .templates import _CHATTER, _KINDS, _MAX_PER_USER, _PERSON, _PROJECT, _SERVICE, _TOPICS, _day

DEFAULT_SUBJECTS = 120
START = datetime(2025, 1, 6, tzinfo=timezone.utc)
Kind = Literal["current", "as_of", "history"]


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
