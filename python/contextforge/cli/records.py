"""Reading files for ``import``: entries and chat transcripts.

A file is JSONL, one JSON object a line, or one JSON array of chat messages (the
first thing in the file is ``[``; it may span lines, as a pretty-printed file
does, and holds at most :data:`.lines.MAX_LINE_BYTES`). A JSONL line is one of:

- an **entry**: ``{"content", "kind", "scope", "session_id", "metadata", "timestamp",
  "expires_at", "id", "key", "valid_from", "valid_to", "superseded_by"}`` as
  ``export`` writes it, and ``"sources"`` (see :func:`_sources`) (``tokens``, ``score``, ``risks`` and ``current`` are
  accepted and ignored, any other field is an error). ``id`` is the id the
  entry had: a positive integer, each at most once in a file; ``superseded_by``
  the id of the entry that superseded it (see :mod:`.importer`). An entry with a
  ``valid_from`` is in a timeline, and holds from then; one without (or with
  ``null``), key and ``valid_to`` is a plain entry, which holds at every time;
- a **message**: ``{"role", "content"}`` (see :mod:`.messages`);
- a **conversation**: ``{"messages": [message, ...]}`` with an optional ``session_id``
  or ``id`` naming its session.

With ``Defaults.confine`` (``import --scope S`` without ``--keep-scopes``) every
record goes to scope S: an entry naming another scope (or ``null``, global) is an
error, so a file from elsewhere cannot write outside the scope it was given.

A line may hold at most :data:`.lines.MAX_LINE_BYTES`; JSON nested too deeply for
the parser is an error on its line like any other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import IO, Any

from .fields import (
    Defaults,
    Parsed,
    Record,
    RecordError,
    Source,
    json_type,
    metadata,
    optional_text,
    text,
    time,
)
from .lines import MAX_LINE_BYTES, LineTooLong, bounded_lines
from .messages import conversation, date_undated, message

__all__ = ["Defaults", "Parsed", "Record", "RecordError", "parse_lines"]

_ENTRY_FIELDS = frozenset(
    {
        "content",
        "kind",
        "scope",
        "session_id",
        "metadata",
        "timestamp",
        "expires_at",
        "id",
        "key",
        "valid_from",
        "valid_to",
        "superseded_by",
        "sources",
    }
)
_IGNORED_FIELDS = frozenset({"tokens", "score", "risks", "current"})
_MAX_ID = 2**63 - 1
_MIB = f"{MAX_LINE_BYTES // (1024 * 1024)} MiB"


def parse_lines(stream: IO[bytes], defaults: Defaults) -> Parsed:
    """Every record of a byte stream, or the first problem as a RecordError."""
    parsed = Parsed()
    ids: dict[int, int] = {}  # an entry id -> the line that gave it
    loose: dict[str | None, list[int]] = {}  # a session -> its loose messages' positions
    lines = bounded_lines(stream)
    started = False
    try:
        for number, raw in lines:
            parsed.lines = number
            line = _decode(number, raw)
            if not line.strip():
                continue
            if not started and line.lstrip().startswith("["):
                _parse_array(number, raw, lines, defaults, parsed)
                break
            started = True
            _parse_line(number, line, defaults, parsed, ids, loose)
    except LineTooLong as err:
        raise RecordError(
            err.line, f"line longer than {_MIB}, the most one record may take"
        ) from None
    for positions in loose.values():
        dated = date_undated([parsed.records[i] for i in positions])
        for i, record in zip(positions, dated):
            parsed.records[i] = record
    return parsed


def _decode(number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(number, f"not UTF-8 text (byte {err.start + 1})") from None


def _loads(number: int, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = "" if err.lineno == 1 else f"line {err.lineno}, "
        raise RecordError(number, f"invalid JSON: {err.msg} ({where}column {err.colno})") from None
    except RecursionError:
        raise RecordError(number, "invalid JSON: nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise RecordError(number, f"invalid JSON: {err}") from None


def _parse_array(
    number: int, first: bytes, rest: Iterator[tuple[int, bytes]], defaults: Defaults, parsed: Parsed
) -> None:
    """A file that is one JSON array of messages, from its first line to the end."""
    chunks, size = [first], len(first)
    for later, raw in rest:
        parsed.lines = later
        size += len(raw)
        if size > MAX_LINE_BYTES:
            raise RecordError(
                number, f"a JSON array file longer than {_MIB}, the most one may take"
            )
        chunks.append(raw)
    try:
        body = b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise RecordError(number, f"not UTF-8 text (byte {err.start + 1} of the array)") from None
    value = _loads(number, body)
    if not isinstance(value, list):
        raise RecordError(number, f"expected a JSON array of messages, got {json_type(value)}")
    parsed.records.extend(conversation(number, value, defaults, defaults.session_id, parsed, ""))


def _parse_line(
    number: int,
    line: str,
    defaults: Defaults,
    parsed: Parsed,
    ids: dict[int, int],
    loose: dict[str | None, list[int]],
) -> None:
    value = _loads(number, line.rstrip("\r\n"))
    if not isinstance(value, dict):
        raise RecordError(number, f"expected a JSON object, got {json_type(value)}")
    if "messages" in value:
        messages = value["messages"]
        if not isinstance(messages, list):
            raise RecordError(number, f"'messages' must be a list, got {json_type(messages)}")
        session = defaults.session_id or _session_of(number, value)
        parsed.records.extend(conversation(number, messages, defaults, session, parsed))
    elif "role" in value:
        record = message(number, value, defaults, defaults.session_id, None, parsed)
        if record is not None:
            loose.setdefault(record.item["session_id"], []).append(len(parsed.records))
            parsed.records.append(record)
    else:
        record = _entry(number, value, defaults)
        if record.id is not None:
            if record.id in ids:
                raise RecordError(
                    number, f"id {record.id} was already given on line {ids[record.id]}"
                )
            ids[record.id] = number
        parsed.records.append(record)


def _entry(line: int, value: dict[str, Any], defaults: Defaults) -> Record:
    unknown = sorted(set(value) - _ENTRY_FIELDS - _IGNORED_FIELDS)
    if unknown:
        raise RecordError(
            line, f"unknown field {unknown[0]!r} (an entry has {', '.join(sorted(_ENTRY_FIELDS))})"
        )
    if "content" not in value:
        raise RecordError(line, "missing 'content' (or 'role' for a chat message)")
    timestamp = time(line, value, "timestamp")
    item = {
        "content": text(line, value, "content"),
        "kind": text(line, value, "kind")
        if value.get("kind") is not None
        else defaults.kind or "note",
        "scope": _scope(line, value, defaults),
        "session_id": (
            optional_text(line, value, "session_id")
            if "session_id" in value
            else defaults.session_id
        ),
        "metadata": metadata(line, value.get("metadata")),
        "timestamp": timestamp,
        "expires_at": time(line, value, "expires_at"),
    }
    key = optional_text(line, value, "key")
    if key is not None:
        item["key"] = key
    valid_from = time(line, value, "valid_from")
    if valid_from is not None:  # null: a plain entry, which holds at every time
        item["valid_from"] = valid_from
    valid_to = time(line, value, "valid_to")
    if valid_to is not None:
        item["valid_to"] = valid_to
    return Record(
        line,
        item,
        timestamp is not None,
        _id(line, value.get("id")),
        _id(line, value.get("superseded_by"), "superseded_by"),
        _sources(line, value.get("sources")),
    )


def _sources(line: int, value: object) -> tuple[Source, ...]:
    """``sources``: a list of ``{"entry": ID}`` or ``{"ref": REFERENCE}``, each
    with an optional ``"span": [START, END]`` (as ``export`` writes them)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RecordError(line, f"'sources' must be a list, got {json_type(value)}")
    found = []
    for i, item in enumerate(value):
        where = f"sources[{i}]: "
        if not isinstance(item, dict):
            raise RecordError(line, f"{where}expected an object, got {json_type(item)}")
        unknown = sorted(set(item) - {"entry", "ref", "span"})
        if unknown:
            raise RecordError(
                line, f"{where}unknown field {unknown[0]!r} (a source has entry, ref, span)"
            )
        entry = _id(line, item.get("entry"), f"sources[{i}].entry")
        ref = optional_text(line, item, "ref", where)
        if (entry is None) == (ref is None):
            raise RecordError(line, f"{where}give one of 'entry' (an id) or 'ref' (a reference)")
        span = item.get("span")
        if span is not None and not (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in span)
        ):
            raise RecordError(line, f"{where}'span' must be [start, end], two integers")
        found.append(Source(entry, ref, (span[0], span[1]) if span is not None else None))
    return tuple(found)


def _id(line: int, value: object, name: str = "id") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(line, f"'{name}' must be a positive integer, got {json_type(value)}")
    if not 1 <= value <= _MAX_ID:
        shown = value if abs(value) < 10**20 else "a larger number"
        raise RecordError(line, f"'{name}' must be a positive integer below 2**63, got {shown}")
    return value


def _scope(line: int, value: Mapping[str, Any], defaults: Defaults) -> str | None:
    """The entry's scope: its own, else the default; with ``confine``, the default
    or an error."""
    if "scope" not in value:
        return defaults.scope
    scope = optional_text(line, value, "scope")
    if defaults.confine and scope != defaults.scope:
        named = "null (global)" if scope is None else repr(scope)
        raise RecordError(
            line,
            f"scope {named} is outside --scope {defaults.scope!r} "
            "(--keep-scopes imports records into the scopes they name)",
        )
    return scope


def _session_of(line: int, value: Mapping[str, Any]) -> str | None:
    for key in ("session_id", "id"):
        session = value.get(key)
        if isinstance(session, str) and session:
            return session
        if isinstance(session, int) and not isinstance(session, bool):
            return str(session)
        if session is not None:
            raise RecordError(
                line, f"'{key}' must be a string or an integer, got {json_type(session)}"
            )
    return None
