"""Opening the store for one command, with its errors mapped to exit codes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..config import Config
from ..errors import ContextForgeError
from ..sync import ContextForgeSync
from .errors import CliError, from_library
from .paths import TOKEN_VAR, encryption_key, is_url, prepare_db

__all__ = ["open_store"]


@contextmanager
def open_store(
    path: str,
    is_default: bool = False,
    *,
    scrub_pii: bool | None = None,
    read_only: bool = False,
) -> Iterator[ContextForgeSync]:
    """The store at ``path``, closed afterwards; ``scrub_pii`` also redacts personal
    data in what is saved (``None``: as the store recorded it); ``read_only``
    opens it without writing, or taking its search index from an application
    that has it open. Library errors raised inside the block become
    :class:`CliError` with their exit code."""
    problem = prepare_db(path, is_default)
    if problem:
        raise CliError(problem)
    try:
        token = os.environ.get(TOKEN_VAR) if is_url(path) else None
        store = ContextForgeSync.open(
            Config(
                path=path,
                scrub_pii=scrub_pii,
                read_only=read_only,
                auth_token=token or None,
                encryption_key=encryption_key(),
            )
        )
    except ContextForgeError as err:
        raise from_library(err) from err
    try:
        with store:
            yield store
    except ContextForgeError as err:
        raise from_library(err) from err
