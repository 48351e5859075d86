"""The records an import reads, and checks of their fields (each problem a
:class:`RecordError` naming its line)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .timeparse import parse_time

__all__ = [
    "Defaults",
    "Parsed",
    "Record",
    "RecordError",
    "Source",
    "json_type",
    "metadata",
    "optional_text",
    "text",
    "time",
]


class RecordError(ValueError):
    """A line that cannot be imported, with its 1-based number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def text(line: int, value: Mapping[str, Any], key: str, where: str = "") -> str:
    found = value.get(key)
    if not isinstance(found, str):
        raise RecordError(line, f"{where}'{key}' must be a string, got {json_type(found)}")
    return found


def optional_text(line: int, value: Mapping[str, Any], key: str, where: str = "") -> str | None:
    return None if value.get(key) is None else text(line, value, key, where)


def metadata(line: int, found: object, where: str = "") -> dict[str, Any] | None:
    if found is None or isinstance(found, dict):
        return found
    raise RecordError(line, f"{where}'metadata' must be an object, got {json_type(found)}")


def time(line: int, value: Mapping[str, Any], key: str, where: str = "") -> datetime | None:
    if value.get(key) is None:
        return None
    try:
        return parse_time(value[key])
    except ValueError as err:
        raise RecordError(line, f"{where}'{key}': {err}") from None


def json_type(value: object) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Defaults:
    """What the command line supplies for fields a record leaves out."""

    scope: str | None = None
    session_id: str | None = None
    kind: str | None = None
    source: str = "stdin"
    confine: bool = False  # every record must go to ``scope``
    include_system: bool = False  # import system (and developer) messages too


@dataclass(frozen=True)
class Source:
    """One direct source of an entry in a file: ``entry`` (an id of the file,
    or of the store) or ``ref`` (an external reference), with an optional span."""

    entry: int | None
    ref: str | None
    span: tuple[int, int] | None = None


@dataclass(frozen=True)
class Record:
    """One entry to save: ``item`` holds ``save_many``'s keywords. ``timed`` says
    whether the file gave its time (otherwise the import assigns one); ``id`` is
    the id an exported entry had, and ``superseded_by`` the id of the entry
    that superseded it (the import links a correction without a key to the
    entry it corrects from it; the versions of a key link themselves);
    ``sources`` its direct sources, restored once saved (see :mod:`.importer`)."""

    line: int
    item: dict[str, Any]
    timed: bool
    id: int | None = None
    superseded_by: int | None = None
    sources: tuple[Source, ...] = ()


@dataclass
class Parsed:
    """Every record of a file, and what was left out of it."""

    records: list[Record] = field(default_factory=list)
    lines: int = 0
    messages: int = 0
    empty_messages: int = 0
    system_skipped: int = 0
