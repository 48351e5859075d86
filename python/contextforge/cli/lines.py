"""Reading a JSONL stream line by line, with a cap on the length of a line.

A line holds one entry or one conversation. :data:`MAX_LINE_BYTES` (16 MiB) is
over four million tokens of English text, beyond any model's context window, so
no entry meant for a prompt comes near it; a stream without newlines fails once
16 MiB have been read instead of filling memory. Lines are read with a bounded
``readline``, never more than the cap (plus one byte) at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from .errors import CliError

__all__ = ["MAX_LINE_BYTES", "LineTooLong", "bounded_lines", "read_text"]

MAX_LINE_BYTES = 16 * 1024 * 1024


class LineTooLong(ValueError):
    """A line longer than the cap, with its 1-based number."""

    def __init__(self, line: int, limit: int) -> None:
        super().__init__(f"line {line} is longer than {limit // (1024 * 1024)} MiB")
        self.line = line
        self.limit = limit


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line of ``stream`` (its newline included).

    Raises:
        LineTooLong: for the first line of more than ``limit`` bytes, not counting
            its line ending, after reading at most ``limit + 2`` bytes of it.
    """
    number = 0
    while True:
        raw = stream.readline(limit + 2)
        if not raw:
            return
        number += 1
        body = raw[:-1] if raw.endswith(b"\n") else raw  # no newline: the line goes on, or EOF
        if len(body.removesuffix(b"\r")) > limit:
            raise LineTooLong(number, limit)
        yield number, raw


def read_text(stream: IO[str], name: str, limit: int = MAX_LINE_BYTES) -> str:
    """All of a text stream (``save -``, a transcript for ``distill``), refused with a
    :class:`CliError` once it holds more than ``limit`` characters: like an import
    line, it becomes entries, and is read no further than the cap."""
    text = stream.read(limit + 1)
    if len(text) > limit:
        raise CliError(
            f"{name} is longer than {limit // (1024 * 1024)} Mi characters, "
            "the most one input may take"
        )
    return text
