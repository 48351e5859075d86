"""Argument checks and conversions done once at the API boundary.

The engine validates again; these checks exist to give Python callers precise,
typed errors (a ``TypeError`` for a wrong type) before anything reaches Rust.
Each call crosses into Rust as one record (a dict the binding reads with
``#[derive(FromPyObject)]``, see ``rust/src/python/records``): ``SaveItem``,
``QueryRecord``, ``ListRecord``, ``PatchRecord``; a ``Config`` crosses as it is.
Rust refuses text holding a lone surrogate with ``InvalidInputError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypedDict

from .errors import InvalidInputError, InvalidTypeError
from .scope import ALL_SCOPES, AllScopes, Scope, ScopeFilter

Timestamp = datetime | int | float
InjectionPolicy = Literal["flag", "drop"]
ContextOrder = Literal["score", "chronological", "edges"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)
# Years 1 to 9999, the range of datetime.
_MIN_US = -62_135_596_800_000_000
_MAX_US = 253_402_300_799_999_999
_MAX_METADATA_DEPTH = 64


#: An argument left out, where ``None`` means something (``scope=None``: global).
UNSET: Any = object()
#: Entries (or changes) fetched per round trip by the paging iterators.
PAGE = 500


def text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def optional_text(name: str, value: object) -> str | None:
    return None if value is None else text(name, value)


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if value <= 0:
        raise InvalidInputError(f"{name} must be positive, got {value}")
    if value >= 2**63:
        raise InvalidInputError(f"{name} is too large: {value}")
    return value


def non_negative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**63:
        raise InvalidInputError(f"{name} must be between 0 and 2**63 - 1, got {value}")
    return value


def from_micros(micros: int) -> datetime:
    """The aware UTC datetime of microseconds since the epoch (as records carry times)."""
    return _EPOCH + timedelta(microseconds=micros)


def timestamp_us(name: str, value: Timestamp | None) -> int | None:
    """Microseconds since the epoch from an aware datetime or Unix seconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidInputError(
                f"{name} must be timezone-aware (e.g. datetime.now(timezone.utc))"
            )
        micros = (value - _EPOCH) // _MICRO
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(
            f"{name} must be an aware datetime or Unix seconds, not {type(value).__name__}"
        )
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {value}")
    elif not _MIN_US / 1e6 - 1 <= value <= _MAX_US / 1e6 + 1:
        # Checked before scaling: a huge float would overflow on the way.
        raise InvalidInputError(f"{name} is outside the years 1 to 9999")
    else:
        micros = round(value * 1_000_000)
    if not _MIN_US <= micros <= _MAX_US:
        raise InvalidInputError(f"{name} is outside the years 1 to 9999")
    return micros


def metadata_json(value: object) -> str | None:
    """Serialises metadata, refusing anything that would not round-trip exactly."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidTypeError(f"metadata must be a dict, not {type(value).__name__}")
    _check_json(value, "metadata", 0)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _check_json(value: object, path: str, depth: int) -> None:
    if depth > _MAX_METADATA_DEPTH:
        raise InvalidInputError(f"{path} is nested deeper than {_MAX_METADATA_DEPTH} levels")
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{path} is {value}, which JSON cannot hold")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"{path} has a non-str key {key!r}")
            _check_json(item, f"{path}[{key!r}]", depth + 1)
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]", depth + 1)
        return
    raise InvalidTypeError(
        f"{path} holds a {type(value).__name__}, which is not JSON "
        "(use dict, list, str, int, float, bool or None)"
    )


def scopes(value: Scope) -> list[str | None] | AllScopes:
    """The engine's scope list: ``ALL_SCOPES`` as it is; otherwise the scopes
    asked for, where ``None`` stands for global (unscoped) entries."""
    if value is ALL_SCOPES:
        return value
    if value is None or isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        out = []
        for s in value:
            if isinstance(s, AllScopes):
                raise InvalidInputError("ALL_SCOPES cannot be part of a scope list: pass it alone")
            out.append(optional_text("scope", s))
        if not out:
            raise InvalidInputError(
                "scope list is empty: pass ALL_SCOPES to search every scope, None for global entries"
            )
        return out
    raise InvalidTypeError(
        f"scope must be a str, None, a list or ALL_SCOPES, not {type(value).__name__}"
    )


def scope_filter(value: ScopeFilter) -> ScopeFilter:
    """``list``/``count``'s scope, checked: ``ALL_SCOPES``, one scope, or ``None``
    for global entries."""
    if value is ALL_SCOPES:
        return value
    if isinstance(value, AllScopes) or (value is not None and not isinstance(value, str)):
        raise InvalidTypeError(
            f"scope must be a str, None or ALL_SCOPES, not {type(value).__name__}"
        )
    return value


class _SaveItem(TypedDict):
    content: str
    kind: str
    scope: str | None
    session_id: str | None
    metadata: str | None  # JSON text
    timestamp: int | None
    expires_at: int | None
    dedupe: bool
    id: int | None
    scrub: bool


class SaveItem(_SaveItem, total=False):
    """One entry as ``save``/``save_many`` hand it to the engine; the keys of
    this class are there only when given (a bulk save holds one dict per item)."""

    key: str
    valid_from: int
    valid_to: int
    supersedes: int
    sources: list[SourceRecord]
    cross_scope_sources: bool


class SourceRecord(TypedDict):
    """One source (``records::SourceRecord``): an entry id or an external
    reference, with an optional ``(start, end)`` span."""

    entry: int | None
    ref: str | None
    span: tuple[int, int] | None


def source(value: object, name: str = "source") -> SourceRecord:
    """An entry id (int), an external reference (str), or either with a span:
    ``(id_or_ref, start, end)``."""
    span: tuple[int, int] | None = None
    if isinstance(value, tuple):
        if len(value) != 3:
            raise InvalidInputError(f"{name}: a source with a span is (id_or_ref, start, end)")
        value, start, end = value
        for part, v in (("start", start), ("end", end)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidTypeError(f"{name}: the span's {part} must be an int")
        span = (start, end)
    if isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be an entry id (int) or a reference (str), not bool")
    if isinstance(value, int):
        return {"entry": entry_id(value, name), "ref": None, "span": span}
    if isinstance(value, str):
        return {"entry": None, "ref": text(name, value), "span": span}
    raise InvalidTypeError(
        f"{name} must be an entry id (int) or a reference (str), not {type(value).__name__}"
    )


def _sources(values: object) -> list[SourceRecord]:
    if values is None:
        return []
    if isinstance(values, (str, bytes, int)) or not isinstance(values, Iterable):
        raise InvalidTypeError("sources must be a list of entry ids and references")
    return [source(v, f"sources[{i}]") for i, v in enumerate(values)]


def save_item(
    content: object,
    kind: object = "note",
    scope: object = None,
    session_id: object = None,
    metadata: object = None,
    timestamp: Any = None,
    dedupe: object = True,
    ttl: Any = None,
    expires_at: Any = None,
    id: object = None,
    scrub: object = True,
    key: object = None,
    valid_from: Any = None,
    valid_to: Any = None,
    supersedes: object = None,
    sources: object = None,
    cross_scope_sources: object = False,
) -> SaveItem:
    item: SaveItem = {
        "content": text("content", content),
        "kind": text("kind", kind),
        "scope": optional_text("scope", scope),
        "session_id": optional_text("session_id", session_id),
        "metadata": metadata_json(metadata),
        "timestamp": timestamp_us("timestamp", timestamp),
        "expires_at": expiry_us(ttl, expires_at),
        "dedupe": flag("dedupe", dedupe),
        "id": None if id is None else entry_id(id),
        "scrub": flag("scrub", scrub),
    }
    if key is not None:
        item["key"] = text("key", key)
    start = timestamp_us("valid_from", valid_from)
    if start is not None:
        item["valid_from"] = start
    end = timestamp_us("valid_to", valid_to)
    if end is not None:
        item["valid_to"] = end
    if supersedes is not None:
        item["supersedes"] = entry_id(supersedes, "supersedes")
    if sources is not None:
        item["sources"] = _sources(sources)
    if flag("cross_scope_sources", cross_scope_sources):
        item["cross_scope_sources"] = True
    return item


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def entry_id(value: object, name: str = "id") -> int:
    """An entry id: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 1 <= value < 2**63:
        raise InvalidInputError(f"{name} must be a positive integer below 2**63, got {value}")
    return value


def expiry_us(ttl: Any, expires_at: Any) -> int | None:
    """When an entry expires, from a time to live (seconds or a timedelta, counted
    from now) or an absolute ``expires_at``; at most one of the two."""
    if ttl is not None and expires_at is not None:
        raise InvalidInputError("give ttl or expires_at, not both")
    if expires_at is not None:
        return timestamp_us("expires_at", expires_at)
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidTypeError(f"ttl must be seconds or a timedelta, not {type(ttl).__name__}")
    elif not -1e12 < ttl < 1e12:  # beyond any representable expiry; also avoids float overflow
        raise InvalidInputError(f"ttl is out of range: {ttl!r}")
    else:
        seconds = float(ttl)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidInputError(f"ttl must be a positive duration, got {ttl!r}")
    return timestamp_us("expires_at", datetime.now(timezone.utc).timestamp() + seconds)


def label(name: str, value: object) -> str:
    value = text(name, value)
    if not value:
        raise InvalidInputError(f"{name} must not be empty")
    return value


def text_list(name: str, values: object) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidTypeError(f"{name} must be a list of str")
    return [label(name, v) for v in values]


def ids(values: object) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidTypeError("ids must be an iterable of int")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidTypeError(f"an id must be an int, not {type(v).__name__}")
        if not -(2**63) <= v < 2**63:
            raise InvalidInputError(f"id {v} is out of range")
        out.append(v)
    return out


class ListRecord(TypedDict):
    """Which entries ``list`` and ``count`` see (``records::ListRecord``)."""

    scope: ScopeFilter
    kind: str | None
    session_id: str | None
    since: int | None
    until: int | None
    as_of: int | None
    include_superseded: bool
    scope_prefix: str | None
    metadata: str | None  # JSON text: a metadata filter


def validity(as_of: Any, include_superseded: object) -> tuple[int | None, bool]:
    """``as_of`` and ``include_superseded``, checked: one or the other."""
    every = flag("include_superseded", include_superseded)
    at = timestamp_us("as_of", as_of)
    if every and at is not None:
        raise InvalidInputError(
            "give as_of (what held then) or include_superseded=True (every version), not both"
        )
    return at, every


def list_record(
    scope: ScopeFilter,
    kind: object = None,
    session_id: object = None,
    since: Any = None,
    until: Any = None,
    *,
    as_of: Any = None,
    include_superseded: object = False,
    scope_prefix: object = None,
    metadata: object = None,
) -> ListRecord:
    at, every = validity(as_of, include_superseded)
    prefix = optional_text("scope_prefix", scope_prefix)
    if prefix is not None and scope is not ALL_SCOPES:
        raise InvalidInputError("give scope or scope_prefix, not both")
    return {
        "scope_prefix": prefix,
        "metadata": metadata_json(metadata),
        "scope": scope_filter(scope),
        "kind": optional_text("kind", kind),
        "session_id": optional_text("session_id", session_id),
        "since": timestamp_us("since", since),
        "until": timestamp_us("until", until),
        "as_of": at,
        "include_superseded": every,
    }


def choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in allowed:
        raise InvalidInputError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}"
        )
    return value


class _Query(TypedDict):
    text: str
    scopes: list[str | None] | AllScopes
    budget: int
    limit: int | None
    now: int | None
    depth: int | None
    kinds: list[str] | None
    session_id: str | None
    since: int | None
    until: int | None
    metadata: str | None  # JSON text
    on_injection: str
    as_of: int | None
    include_superseded: bool
    scope_prefix: str | None
    offset: int


class QueryRecord(_Query, total=False):
    """What ``query`` and ``context`` ask (``records::QueryRecord``); ``explain``
    is ``query``'s, ``order`` is ``context``'s."""

    explain: bool
    order: str
    embedding: Any  # a float32 vector


def query_record(
    q: object,
    scope: Scope,
    budget: object,
    *,
    limit: object,
    now: Any,
    depth: object,
    kinds: object,
    session_id: object,
    since: Any,
    until: Any,
    metadata: object,
    on_injection: object,
    as_of: Any = None,
    include_superseded: object = False,
    scope_prefix: object = None,
    offset: object = 0,
) -> QueryRecord:
    """The arguments shared by ``query`` and ``context``, checked."""
    at, every = validity(as_of, include_superseded)
    prefix = optional_text("scope_prefix", scope_prefix)
    if prefix is not None and scope is not None:
        raise InvalidInputError("give scope or scope_prefix, not both")
    return {
        "text": text("q", q),
        "scopes": ALL_SCOPES if prefix is not None else scopes(scope),
        "scope_prefix": prefix,
        "offset": non_negative_int("offset", offset),
        "budget": positive_int("budget", budget),
        "now": timestamp_us("now", now),
        "depth": None if depth is None else positive_int("depth", depth),
        "kinds": None if kinds is None else text_list("kinds", kinds),
        "session_id": optional_text("session_id", session_id),
        "since": timestamp_us("since", since),
        "until": timestamp_us("until", until),
        "metadata": metadata_json(metadata),
        "on_injection": choice("on_injection", on_injection, ("flag", "drop")),
        "limit": None if limit is None else positive_int("limit", limit),
        "as_of": at,
        "include_superseded": every,
    }


class ForgetRecord(TypedDict, total=False):
    """What ``forget`` selects (``records::ForgetRecord``): ``ids`` is always
    there; another key left out is no criterion; ``scope`` present and ``None``
    selects global entries."""

    ids: list[int] | None
    scope: str | None
    session_id: str
    key: str
    metadata: str  # JSON text
    source: SourceRecord
    cascade: bool


class PatchRecord(TypedDict, total=False):
    """What ``update`` changes (``records::PatchRecord``): a key left out keeps
    that field; ``None`` for ``metadata``, ``scope`` or ``expires_at`` removes it."""

    content: str | None
    kind: str | None
    metadata: str | None  # JSON text
    scope: str | None
    expires_at: int | None
    scrub: bool
    embedding: Any  # a float32 vector
    key: str
