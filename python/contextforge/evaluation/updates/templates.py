"""The generator's word lists and sentence templates: for each kind of subject
(person, project, service) its names, its slots (how a value is drawn, stated,
changed and asked about) and its chit-chat."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


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
