"""Reading JSONL files for ``import``: entries and chat transcripts, one JSON value a line.

A line is one of:

- an **entry**: ``{"content", "kind", "scope", "session_id", "metadata", "timestamp",
  "expires_at"}`` (as ``export`` writes it; ``id``, ``tokens``, ``score`` and ``risks``
  are accepted and ignored, any other field is an error);
- a **message**: ``{"role", "content"}`` (plus optional ``session_id``, ``timestamp``,
  ``name``, ``metadata``; other fields are ignored);
- a **conversation**: ``{"messages": [message, ...]}`` with an optional ``session_id``
  or ``id`` naming its session.

Each message becomes one entry of kind ``message`` whose metadata records its role
and where it came from (``source``, ``source_line``, ``message_index``).

With ``Defaults.confine`` (``import --scope S`` without ``--keep-scopes``) every
record goes to scope S: an entry naming another scope (or ``null``, global) is an
error, so a file from elsewhere cannot write outside the scope it was given.

A line may hold at most :data:`.lines.MAX_LINE_BYTES`; JSON nested too deeply for
the parser is an error on its line like any other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from .lines import MAX_LINE_BYTES, LineTooLong, bounded_lines
from .timeparse import parse_time

__all__ = ["Defaults", "Parsed", "Record", "RecordError", "parse_lines"]

_ENTRY_FIELDS = frozenset(
    {"content", "kind", "scope", "session_id", "metadata", "timestamp", "expires_at"}
)
_IGNORED_FIELDS = frozenset({"id", "tokens", "score", "risks"})


class RecordError(ValueError):
    """A line that cannot be imported, with its 1-based number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Defaults:
    """What the command line supplies for fields a record leaves out."""

    scope: str | None = None
    session_id: str | None = None
    kind: str | None = None
    source: str = "stdin"
    confine: bool = False  # every record must go to ``scope``


@dataclass(frozen=True)
class Record:
    """One entry to save: ``item`` holds ``save_many``'s keywords. ``timed`` says
    whether the file gave its time (otherwise the import assigns one)."""

    line: int
    item: dict[str, Any]
    timed: bool


@dataclass
class Parsed:
    records: list[Record] = field(default_factory=list)
    lines: int = 0
    empty_messages: int = 0


def parse_lines(stream: IO[bytes], defaults: Defaults) -> Parsed:
    """Every record of a JSONL byte stream, or the first problem as a RecordError."""
    parsed = Parsed()
    try:
        for number, raw in bounded_lines(stream):
            parsed.lines = number
            _parse_line(number, raw, defaults, parsed)
    except LineTooLong as err:
        most = f"{MAX_LINE_BYTES // (1024 * 1024)} MiB"
        message = f"line longer than {most}, the most one record may take"
        raise RecordError(err.line, message) from None
    return parsed


def _parse_line(number: int, raw: bytes, defaults: Defaults, parsed: Parsed) -> None:
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(number, f"not UTF-8 text (byte {err.start + 1})") from None
    if not text.strip():
        return
    try:
        value = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as err:
        raise RecordError(number, f"invalid JSON: {err.msg} (column {err.colno})") from None
    except RecursionError:
        raise RecordError(number, "invalid JSON: nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise RecordError(number, f"invalid JSON: {err}") from None
    if not isinstance(value, dict):
            raise RecordError(number, f"expected a JSON object, got {_json_type(value)}")
    parsed.records.extend(_records(number, value, defaults, parsed))


def _records(line: int, value: dict[str, Any], defaults: Defaults, parsed: Parsed) -> Iterator[Record]:
    if "messages" in value:
        messages = value["messages"]
        if not isinstance(messages, list):
            raise RecordError(line, f"'messages' must be a list, got {_json_type(messages)}")
        session = defaults.session_id or _session_of(line, value)
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                raise RecordError(line, f"messages[{index}] must be an object, got {_json_type(message)}")
            record = _message(line, message, defaults, session, index)
            if record is None:
                parsed.empty_messages += 1
            else:
                yield record
    elif "role" in value:
        record = _message(line, value, defaults, defaults.session_id, None)
        if record is None:
            parsed.empty_messages += 1
        else:
            yield record
    else:
        yield _entry(line, value, defaults)


def _entry(line: int, value: dict[str, Any], defaults: Defaults) -> Record:
    unknown = sorted(set(value) - _ENTRY_FIELDS - _IGNORED_FIELDS)
    if unknown:
        raise RecordError(line, f"unknown field {unknown[0]!r} (an entry has {', '.join(sorted(_ENTRY_FIELDS))})")
    if "content" not in value:
        raise RecordError(line, "missing 'content' (or 'role' for a chat message)")
    timestamp = _time(line, value, "timestamp")
    item = {
        "content": _text(line, value, "content"),
        "kind": _text(line, value, "kind") if value.get("kind") is not None else defaults.kind or "note",
        "scope": _scope(line, value, defaults),
        "session_id": (_optional_text(line, value, "session_id") if "session_id" in value
                       else defaults.session_id),
        "metadata": _metadata(line, value.get("metadata")),
        "timestamp": timestamp,
        "expires_at": _time(line, value, "expires_at"),
    }
    return Record(line, item, timestamp is not None)


def _scope(line: int, value: Mapping[str, Any], defaults: Defaults) -> str | None:
    """The entry's scope: its own, else the default; with ``confine``, the default
    or an error."""
    if "scope" not in value:
        return defaults.scope
    scope = _optional_text(line, value, "scope")
    if defaults.confine and scope != defaults.scope:
        named = "null (global)" if scope is None else repr(scope)
        raise RecordError(line, f"scope {named} is outside --scope {defaults.scope!r} "
                                "(--keep-scopes imports records into the scopes they name)")
    return scope


def _message(
    line: int, value: Mapping[str, Any], defaults: Defaults, session: str | None, index: int | None
) -> Record | None:
    where = "" if index is None else f"messages[{index}]: "
    role = value.get("role")
    if not isinstance(role, str) or not role.strip():
        raise RecordError(line, f"{where}'role' must be a non-empty string")
    content = _message_text(line, where, value.get("content"))
    if not content.strip():
        return None
    if defaults.session_id is None and value.get("session_id") is not None:
        session = _optional_text(line, value, "session_id")
    metadata = dict(_metadata(line, value.get("metadata")) or {})
    metadata.update({"role": role, "source": defaults.source, "source_line": line})
    if index is not None:
        metadata["message_index"] = index
    if isinstance(value.get("name"), str):
        metadata["name"] = value["name"]
    timestamp = _time(line, value, "timestamp")
    item = {
        "content": content,
        "kind": defaults.kind or "message",
        "scope": defaults.scope,
        "session_id": session,
        "metadata": metadata,
        "timestamp": timestamp,
    }
    return Record(line, item, timestamp is not None)


def _message_text(line: int, where: str, content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    raise RecordError(line, f"{where}'content' must be a string or a list of parts, got {_json_type(content)}")


def _session_of(line: int, value: Mapping[str, Any]) -> str | None:
    for key in ("session_id", "id"):
        session = value.get(key)
        if isinstance(session, str) and session:
            return session
        if isinstance(session, int) and not isinstance(session, bool):
            return str(session)
        if session is not None:
            raise RecordError(line, f"'{key}' must be a string or an integer, got {_json_type(session)}")
    return None


def _text(line: int, value: Mapping[str, Any], key: str) -> str:
    text = value.get(key)
    if not isinstance(text, str):
        raise RecordError(line, f"'{key}' must be a string, got {_json_type(text)}")
    return text


def _optional_text(line: int, value: Mapping[str, Any], key: str) -> str | None:
    return None if value.get(key) is None else _text(line, value, key)


def _metadata(line: int, metadata: object) -> dict[str, Any] | None:
    if metadata is None or isinstance(metadata, dict):
        return metadata
    raise RecordError(line, f"'metadata' must be an object, got {_json_type(metadata)}")


def _time(line: int, value: Mapping[str, Any], key: str) -> datetime | None:
    if value.get(key) is None:
        return None
    try:
        return parse_time(value[key])
    except ValueError as err:
        raise RecordError(line, f"'{key}': {err}") from None


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
