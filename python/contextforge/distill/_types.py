"""The values a distiller returns, the protocol it implements, and its errors."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ..errors import ContextForgeError, InvalidInputError, InvalidTypeError

__all__ = [
    "FACT_KINDS",
    "DistillError",
    "DistillResponseError",
    "DistillTimeoutError",
    "Distillation",
    "Distiller",
    "Fact",
    "FactKind",
    "KeyedDistiller",
    "key_problem",
]

FactKind = Literal["decision", "correction", "preference", "state", "fact"]
#: The kinds a fact may have, in the engine's order.
FACT_KINDS: tuple[FactKind, ...] = ("decision", "correction", "preference", "state", "fact")
#: The longest key, in UTF-8 bytes (the store's limit on labels).
MAX_KEY_BYTES = 512


def key_problem(key: object) -> str | None:
    """Why ``key`` cannot be a fact's key, or ``None`` when it can: a key is a
    label, like a scope or a kind: a non-blank ``str`` of at most 512 UTF-8
    bytes, without control characters. (The store also refuses a key that
    looks like a secret; ``distill_and_save`` drops such keys.)"""
    if not isinstance(key, str):
        return f"a key must be a str, not {type(key).__name__}"
    if not key.strip():
        return "a key must not be empty"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "a key must be valid Unicode"
    if size > MAX_KEY_BYTES:
        return f"a key must be at most {MAX_KEY_BYTES} bytes, got {size}"
    if any(unicodedata.category(c) == "Cc" for c in key):
        return "a key must not contain control characters"
    return None


class DistillError(ContextForgeError):
    """Distillation failed: the model server could not be reached, refused the
    request, or kept failing after the retries.

    ``status`` is the last HTTP status (``None`` when no answer came), and
    ``retryable`` tells whether the same call may succeed later (timeouts, rate
    limits, server errors, lost connections).
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "distillation failed"


class DistillTimeoutError(DistillError, TimeoutError):
    """The model server did not answer within the timeout, on every attempt."""


class DistillResponseError(DistillError, ValueError):
    """The model answered, but not with a valid distillation (malformed JSON, a
    missing or mistyped field, an unknown fact kind, a refusal, a cut-off answer)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One durable fact: its kind, a self-contained sentence, and optionally a
    ``key``: the slot it fills in its scope (``"user.city"``), for a fact that
    may change later. A fact saved under a key supersedes the key's current
    version (see docs/keyed-facts.md).

    ``sources`` are the messages the fact rests on: 0-based indexes into the
    messages of the chunk the distiller was given (its ``messages=``, or the
    lines of its text), in ascending order without repeats.
    ``distill_and_save`` maps them to the whole transcript and links the saved
    fact to those messages (their ids)."""

    kind: FactKind
    text: str
    key: str | None = None
    sources: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str):
            raise InvalidTypeError(f"kind must be a str, not {type(self.kind).__name__}")
        if self.kind not in FACT_KINDS:
            raise InvalidInputError(
                f"kind must be one of {', '.join(FACT_KINDS)}, got {self.kind!r}"
            )
        if not isinstance(self.text, str):
            raise InvalidTypeError(f"text must be a str, not {type(self.text).__name__}")
        if not self.text.strip():
            raise InvalidInputError("a fact's text must not be empty")
        if self.key is not None:
            problem = key_problem(self.key)
            if problem is not None:
                error = InvalidTypeError if not isinstance(self.key, str) else InvalidInputError
                raise error(problem)
        given: object = self.sources
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise InvalidTypeError(
                f"sources must be a sequence of message indexes, not {type(given).__name__}"
            )
        indexes = tuple(given)
        for i, index in enumerate(indexes):
            if isinstance(index, bool) or not isinstance(index, int):
                raise InvalidTypeError(f"sources[{i}] must be an int, not {type(index).__name__}")
            if index < 0:
                raise InvalidInputError(f"sources[{i}] must be a message index >= 0, got {index}")
        object.__setattr__(self, "sources", tuple(sorted(set(indexes))))


@dataclass(frozen=True, slots=True)
class Distillation:
    """What a distiller made of a text: a summary, facts, and the model's name."""

    summary: str
    facts: tuple[Fact, ...] = field(default=())
    model: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.summary, str):
            raise InvalidTypeError(f"summary must be a str, not {type(self.summary).__name__}")
        if not isinstance(self.model, str):
            raise InvalidTypeError(f"model must be a str, not {type(self.model).__name__}")
        facts: object = self.facts
        if isinstance(facts, (str, bytes)) or not isinstance(facts, Iterable):
            raise InvalidTypeError(f"facts must be a sequence of Fact, not {type(facts).__name__}")
        items = tuple(facts)
        for i, fact in enumerate(items):
            if not isinstance(fact, Fact):
                raise InvalidTypeError(f"facts[{i}] must be a Fact, not {type(fact).__name__}")
        object.__setattr__(self, "facts", items)


@runtime_checkable
class Distiller(Protocol):
    """Anything that turns a chunk of transcript into a :class:`Distillation`.

    An ``async def distill(text: str) -> Distillation`` function satisfies it, and
    so does :class:`~contextforge.distill.OpenAIChatDistiller`. The text it gets
    is already scrubbed of secrets. It should raise :class:`DistillError` (or a
    subclass) when it cannot distil.

    A distiller whose signature also takes a ``messages`` keyword (with a
    default, ``messages: Sequence[str] = ()``) is given the chunk's messages,
    one string per message (``"speaker: text"``), in order;
    the indexes in its facts' ``sources`` point into that list. Any other
    distiller's ``sources`` are read as indexes of its text's messages all the same
    (one per line, when no message spans lines).
    """

    async def __call__(self, text: str, /) -> Distillation: ...


@runtime_checkable
class KeyedDistiller(Protocol):
    """A :class:`Distiller` that also takes the keys the scope already has, so
    that its facts can reuse them (``keys=("user.city", ...)``), as
    :class:`~contextforge.distill.OpenAIChatDistiller` does.

    ``distill_and_save`` passes ``keys`` only to a distiller whose signature
    names a ``keys`` parameter it can take by keyword; any other distiller is
    called with the text alone.
    """

    async def __call__(self, text: str, /, *, keys: Sequence[str] = ()) -> Distillation: ...
