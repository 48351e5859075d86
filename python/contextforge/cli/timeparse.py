"""Times on the command line and in imported files: ISO 8601 or Unix seconds."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import click

__all__ = ["iso", "parse_time", "time_option"]


def parse_time(value: object) -> datetime:
    """An aware datetime from ISO 8601 text (a date, or a date and time; ``Z`` or an
    offset, or none for UTC) or Unix seconds (a number, or digits in text).

    Raises:
        ValueError: with a short reason when ``value`` is neither.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected an ISO 8601 time or Unix seconds, got {value!r}")  # noqa: TRY004 (documented)
    if isinstance(value, (int, float)):
        return _from_unix(float(value))
    if not isinstance(value, str):
        raise ValueError(  # noqa: TRY004 (the documented error)
            f"expected an ISO 8601 time or Unix seconds, got {type(value).__name__}"
        )
    text = value.strip()
    try:
        return _from_unix(float(text))
    except ValueError:
        pass
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 time or Unix seconds: {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _from_unix(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise ValueError(f"not a finite number of seconds: {seconds}")
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"Unix time out of range: {seconds}") from None


def iso(moment: datetime) -> str:
    """ISO 8601 with microseconds kept, so that parsing it back is exact."""
    return moment.isoformat()


def time_option(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """A click callback: the option's text as an aware datetime (see :func:`parse_time`)."""
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None
