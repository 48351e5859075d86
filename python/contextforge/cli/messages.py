"""Chat messages in an import: one entry of kind ``message`` per message.

A message is ``{"role", "content"}`` plus, optionally, ``session_id``, ``name``,
``metadata`` and its time under ``timestamp``, ``created_at`` or ``create_time``
(the first one present; ISO 8601 or Unix seconds). Other fields are ignored.

- ``content`` is a string or a list of parts whose text parts are kept; a message
  with no text (a tool call) is skipped and counted.
- ``system`` and ``developer`` messages (the application's instructions, not the
  conversation) are skipped and counted unless ``Defaults.include_system``.
- The entry's metadata records the role, the ``name`` if any, and where the
  message came from: ``source`` (the file's name), ``source_line`` and, inside a
  conversation or a JSON array, ``message_index``.

**Undated messages.** Inside a transcript (one conversation, one JSON array, or
the loose message lines of one session in a file) that dates some messages, an
undated message takes the time of the closest dated message before it, or, when
none comes before it, of the first dated one after it. It then ties with that
message, and ties keep the file's order (the store breaks them by id, and ids
follow the file). A transcript that dates no message at all gets the import's
time, one microsecond apart per message in file order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from .fields import Defaults, Parsed, Record, RecordError, json_type, metadata, optional_text, time

__all__ = ["SKIPPED_ROLES", "TIME_KEYS", "conversation", "date_undated", "message"]

#: Where a message's time is read from, in this order.
TIME_KEYS = ("timestamp", "created_at", "create_time")
#: Roles skipped unless asked for: instructions to the model, not conversation.
SKIPPED_ROLES = frozenset({"system", "developer"})


def conversation(
    line: int,
    messages: Sequence[object],
    defaults: Defaults,
    session: str | None,
    parsed: Parsed,
    label: str = "messages",
) -> Iterator[Record]:
    """The records of one conversation's messages, undated ones dated as the module says."""
    records = []
    for index, value in enumerate(messages):
        where = f"{label}[{index}]: "
        if not isinstance(value, dict):
            raise RecordError(line, f"{where}expected a message object, got {json_type(value)}")
        record = message(line, value, defaults, session, index, parsed, label)
        if record is not None:
            records.append(record)
    yield from date_undated(records)


def message(
    line: int,
    value: Mapping[str, Any],
    defaults: Defaults,
    session: str | None,
    index: int | None,
    parsed: Parsed,
    label: str = "messages",
) -> Record | None:
    """A message's record, or ``None`` (counted in ``parsed``) when it is skipped."""
    where = "" if index is None else f"{label}[{index}]: "
    role = value.get("role")
    if not isinstance(role, str) or not role.strip():
        raise RecordError(line, f"{where}'role' must be a non-empty string")
    content = _text(line, where, value.get("content"))
    timestamp = _time(line, where, value)
    if role.strip().lower() in SKIPPED_ROLES and not defaults.include_system:
        parsed.system_skipped += 1
        return None
    if not content.strip():
        parsed.empty_messages += 1
        return None
    if defaults.session_id is None and value.get("session_id") is not None:
        session = optional_text(line, value, "session_id", where)
    meta = dict(metadata(line, value.get("metadata"), where) or {})
    meta.update({"role": role, "source": defaults.source, "source_line": line})
    if index is not None:
        meta["message_index"] = index
    if isinstance(value.get("name"), str):
        meta["name"] = value["name"]
    item = {
        "content": content,
        "kind": defaults.kind or "message",
        "scope": defaults.scope,
        "session_id": session,
        "metadata": meta,
        "timestamp": timestamp,
    }
    parsed.messages += 1
    return Record(line, item, timestamp is not None)


def date_undated(records: Sequence[Record]) -> list[Record]:
    """One transcript's records, each undated one given the time of the closest
    dated record before it, else of the first after it; unchanged when none is dated."""
    following: list[datetime | None] = []
    upcoming: datetime | None = None
    for record in reversed(records):
        upcoming = record.item["timestamp"] or upcoming
        following.append(upcoming)
    following.reverse()
    dated: list[Record] = []
    previous: datetime | None = None
    for record, after in zip(records, following):
        when: datetime | None = record.item["timestamp"]
        if when is not None:
            previous = when
        elif previous is not None or after is not None:
            when = previous if previous is not None else after
            record = Record(record.line, {**record.item, "timestamp": when}, True, record.id)
        dated.append(record)
    return dated


def _time(line: int, where: str, value: Mapping[str, Any]) -> datetime | None:
    for key in TIME_KEYS:
        if value.get(key) is not None:
            return time(line, value, key, where)
    return None


def _text(line: int, where: str, content: object) -> str:
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
    raise RecordError(
        line, f"{where}'content' must be a string or a list of parts, got {json_type(content)}"
    )
