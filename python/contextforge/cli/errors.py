"""Exit codes, and the one place library errors become them.

| code | meaning |
|---|---|
| 0 | success |
| 1 | not found, or no results |
| 2 | usage error or bad input (arguments, files, records) |
| 3 | storage error (the database or its index failed) |
"""

from __future__ import annotations

from typing import IO, Any

import click

from ..errors import (
    ClosedError,
    ContextForgeError,
    IncompatibleStoreError,
    InternalError,
    InvalidInputError,
    NotFound,
    SearchIndexError,
    StorageError,
)
from .safe import printable

__all__ = [
    "EXIT_BAD_INPUT", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_STORAGE",
    "CliError", "NotFoundError", "StorageFailure", "from_library",
]

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_STORAGE = 3


class CliError(click.ClickException):
    """Bad input: a one-line error on stderr (``Error: ...``), exit code 2. The
    message is made safe for a terminal (it may quote stored or given text)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        # One line, whatever the underlying message held.
        super().__init__(" ".join(message.split()))

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {printable(self.format_message())}", err=file is None, file=file)


class NotFoundError(CliError):
    """Not found, or no results: exit code 1."""

    exit_code = EXIT_NOT_FOUND


class StorageFailure(CliError):
    """The store failed: exit code 3."""

    exit_code = EXIT_STORAGE


def from_library(err: ContextForgeError) -> CliError:
    """The CLI error for a library error: bad input 2, not found 1, storage 3."""
    if isinstance(err, InvalidInputError):
        return CliError(str(err))
    if isinstance(err, NotFound):
        return NotFoundError(str(err))
    if isinstance(err, (StorageError, SearchIndexError, IncompatibleStoreError)):
        return StorageFailure(str(err))
    if isinstance(err, (ClosedError, InternalError)):
        return StorageFailure(f"internal error: {err}")
    return StorageFailure(str(err))
