"""Output: plain tables for people, JSON for scripts.

Tables escape control and bidi characters (see :mod:`.safe`); JSON is exact.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from typing import Any

import click

from .._core import Hit
from .safe import printable
from .timeparse import iso

__all__ = ["count", "echo_json", "entry_record", "interval", "one_line", "table", "when"]

_SECONDS = "%Y-%m-%d %H:%M:%S"


def entry_record(hit: Hit, *, ranked: bool = False, current: bool = False) -> dict[str, Any]:
    """Every field of an entry as JSON-ready values (ISO timestamps): its key,
    validity interval and ``superseded_by`` too, as ``export`` writes them and
    ``import`` reads them back. With ``ranked``, also the query's score and the
    injection risks found in the content; with ``current``, whether the entry
    holds now (which depends on when it is asked, so ``export`` leaves it out)."""
    record: dict[str, Any] = {
        "id": hit.id,
        "content": hit.content,
        "kind": hit.kind,
        "scope": hit.scope,
        "session_id": hit.session_id,
        "timestamp": iso(hit.timestamp),
        "expires_at": iso(hit.expires_at) if hit.expires_at is not None else None,
        "metadata": hit.metadata,
        "tokens": hit.tokens,
        "key": hit.key,
        "valid_from": iso(hit.valid_from),
        "valid_to": iso(hit.valid_to) if hit.valid_to is not None else None,
        "superseded_by": hit.superseded_by,
    }
    if current:
        record["current"] = hit.current
    if ranked:
        record["score"] = hit.score
        record["risks"] = hit.risks
    return record


def count(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun in agreement: ``count(1, "entry", "entries")`` is
    "1 entry", ``count(2, "record")`` is "2 records"."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def echo_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def when(hit: Hit) -> str:
    """A short UTC time for tables."""
    return hit.timestamp.strftime("%Y-%m-%d %H:%M")


def interval(hit: Hit) -> str:
    """Where an entry holds, in UTC to the second, for tables:
    ``2024-01-01 00:00:00 .. 2024-01-31 00:00:00``, open-ended as
    ``2024-01-31 00:00:00 ..`` (``--json`` has the exact times)."""
    start = hit.valid_from.strftime(_SECONDS)
    if hit.valid_to is None:
        return f"{start} .."
    return f"{start} .. {hit.valid_to.strftime(_SECONDS)}"


def one_line(text: str, width: int) -> str:
    """``text`` on one line, safe for a terminal, cut to ``width`` characters with
    an ellipsis."""
    flat = printable(" ".join(text.split()))
    if len(flat) <= width:
        return flat
    return flat[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns; the last column is cut to fit the terminal width.
    Every cell is made safe for a terminal."""
    cells = [[printable(str(c)) for c in row[:-1]] + [str(row[-1])] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    fixed = sum(widths[:-1]) + 2 * (len(headers) - 1)
    last = max(shutil.get_terminal_size((100, 24)).columns - fixed, 20)
    lines = []
    for row in [list(headers), *cells]:
        head = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*head, one_line(row[-1], last)]).rstrip())
    return "\n".join(lines)
