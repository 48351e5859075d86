"""Exit codes, and the one place library errors become them.

| code | meaning |
|---|---|
| 0 | success |
| 1 | not found, or no results |
| 2 | usage error or bad input (arguments, files, records) |
| 3 | storage error (the database or its index failed) |
| 4 | model error: ``distill --model`` could not reach the model server, or its answer was unusable |
"""

from __future__ import annotations

from typing import IO, Any

import click

from ..distill import DistillError
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
    "EXIT_BAD_INPUT",
    "EXIT_MODEL",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_STORAGE",
    "CliError",
    "ModelFailure",
    "NotFoundError",
    "StorageFailure",
    "from_library",
]

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_STORAGE = 3
EXIT_MODEL = 4


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


class ModelFailure(CliError):
    """The model server failed or answered unusably: exit code 4. Not a storage
    error: the store is fine, and the same call may succeed with the server up."""

    exit_code = EXIT_MODEL


def from_library(err: ContextForgeError) -> CliError:
    """The CLI error for a library error: bad input 2, not found 1, storage 3,
    model 4."""
    if isinstance(err, DistillError):
        return ModelFailure(f"the model failed: {err}")
    if isinstance(err, InvalidInputError):
        return CliError(str(err))
    if isinstance(err, NotFound):
        return NotFoundError(str(err))
    if isinstance(err, (StorageError, SearchIndexError, IncompatibleStoreError)):
        return StorageFailure(str(err))
    if isinstance(err, (ClosedError, InternalError)):
        return StorageFailure(f"internal error: {err}")
    return StorageFailure(str(err))
