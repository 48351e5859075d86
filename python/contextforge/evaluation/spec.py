"""Evaluation specs: a corpus of memory entries and queries with known answers.

A spec is JSON::

    {"name": "...",
     "entries": [{"id", "content", "scope", "session_id", "timestamp", "kind"?, "metadata"?}],
     "queries": [{"id", "text", "scope", "relevant": [entry ids], "category"?, "now"?}]}

Timestamps are ISO 8601 strings (naive ones are read as UTC) or Unix seconds. A
query's ``scope`` is a str, ``null`` (every scope) or a list of scopes (``null``
in a list is the global scope); each of its relevant entries must be visible in
it. ``docs/eval-spec.md`` describes every field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeAlias

__all__ = [
    "Entry",
    "Query",
    "Scope",
    "Spec",
    "SpecError",
    "load_spec",
    "parse_timestamp",
    "spec_from_dict",
]

Scope: TypeAlias = str | None | tuple[str | None, ...]


class SpecError(ValueError):
    """A spec that cannot be evaluated; the message names the offending item."""


@dataclass(frozen=True)
class Entry:
    """One memory entry to save, known by its external ``id``."""

    id: str
    content: str
    scope: str | None
    session_id: str | None
    timestamp: datetime
    kind: str = "note"
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """One query and the external ids of the entries that answer it.

    ``now`` is the clock for recency; ``None`` means the newest timestamp among the
    entries the query can see (the moment right after the last conversation).
    """

    id: str
    text: str
    scope: Scope
    relevant: tuple[str, ...]
    category: str | None = None
    now: datetime | None = None


@dataclass(frozen=True)
class Spec:
    """A named corpus and query set; ``notes`` records what a loader dropped or fixed."""

    name: str
    entries: tuple[Entry, ...]
    queries: tuple[Query, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check(self)


def sees(scope: Scope, entry_scope: str | None) -> bool:
    """Whether a query in ``scope`` can return an entry of ``entry_scope``."""
    if scope is None:
        return True
    if isinstance(scope, str):
        return entry_scope == scope
    return entry_scope in scope


def parse_timestamp(value: object, where: str) -> datetime:
    """An aware UTC datetime from ISO 8601 text (naive means UTC) or Unix seconds."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SpecError(f"{where}: timestamp must be ISO 8601 text or Unix seconds")
    try:
        if isinstance(value, str):
            text = value.strip()
            stamp = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        else:
            stamp = datetime.fromtimestamp(value, timezone.utc)
    except (ValueError, OverflowError, OSError) as err:
        raise SpecError(f"{where}: bad timestamp {value!r} ({err})") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.astimezone(timezone.utc)


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Reads and checks a spec file.

    Raises:
        SpecError: (a ``ValueError``) for invalid JSON or a malformed spec.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as err:
        raise SpecError(f"{os.fspath(path)}: not JSON ({err})") from None
    return spec_from_dict(data)


def spec_from_dict(data: object) -> Spec:
    """A :class:`Spec` from already parsed JSON."""
    if not isinstance(data, Mapping):
        raise SpecError("a spec is a JSON object with 'entries' and 'queries'")
    entries = tuple(_entry(item, i) for i, item in enumerate(_list(data, "entries", "spec")))
    queries = tuple(_query(item, i) for i, item in enumerate(_list(data, "queries", "spec")))
    notes = tuple(str(n) for n in _list(data, "notes", "spec", required=False))
    return Spec(str(data.get("name", "unnamed")), entries, queries, notes)


def _entry(item: object, i: int) -> Entry:
    where = f"entries[{i}]"
    obj = _object(item, where)
    meta = obj.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise SpecError(f"{where}: metadata must be an object")
    return Entry(
        id=_id(obj, where),
        content=_text(obj, "content", where),
        scope=_optional_text(obj, "scope", where),
        session_id=_optional_text(obj, "session_id", where),
        timestamp=parse_timestamp(obj.get("timestamp"), where),
        kind=_text(obj, "kind", where) if "kind" in obj else "note",
        metadata=dict(meta),
    )


def _query(item: object, i: int) -> Query:
    where = f"queries[{i}]"
    obj = _object(item, where)
    raw_scope = obj.get("scope")
    scope: Scope
    if isinstance(raw_scope, list):
        if not raw_scope or not all(s is None or isinstance(s, str) for s in raw_scope):
            raise SpecError(f"{where}: a scope list holds strings or nulls, at least one")
        scope = tuple(raw_scope)
    else:
        scope = _optional_text(obj, "scope", where)
    relevant = tuple(str(r) for r in _list(obj, "relevant", where))
    category = obj.get("category")
    now = obj.get("now")
    return Query(
        id=_id(obj, where),
        text=_text(obj, "text", where),
        scope=scope,
        relevant=relevant,
        category=None if category is None else str(category),
        now=None if now is None else parse_timestamp(now, where),
    )


def _check(spec: Spec) -> None:
    by_id: dict[str, Entry] = {}
    for entry in spec.entries:
        if entry.id in by_id:
            raise SpecError(f"entry id {entry.id!r} is used twice")
        by_id[entry.id] = entry
    seen: set[str] = set()
    for query in spec.queries:
        if query.id in seen:
            raise SpecError(f"query id {query.id!r} is used twice")
        seen.add(query.id)
        if not query.relevant:
            raise SpecError(f"query {query.id!r} has no relevant entries")
        for rid in query.relevant:
            if rid not in by_id:
                raise SpecError(f"query {query.id!r}: relevant entry {rid!r} does not exist")
            if not sees(query.scope, by_id[rid].scope):
                raise SpecError(f"query {query.id!r}: relevant entry {rid!r} is outside its scope")


def _object(item: object, where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise SpecError(f"{where}: expected an object")
    return item


def _list(obj: Mapping[str, Any], key: str, where: str, required: bool = True) -> Sequence[Any]:
    value = obj.get(key, None if required else [])
    if not isinstance(value, list):
        raise SpecError(f"{where}: '{key}' must be a list")
    return value


def _id(obj: Mapping[str, Any], where: str) -> str:
    value = obj.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise SpecError(f"{where}: 'id' must be a non-empty string or an integer")
    return str(value)


def _text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: '{key}' must be non-empty text")
    return value


def _optional_text(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if obj.get(key) is None else _text(obj, key, where)
