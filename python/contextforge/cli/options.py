"""Options every command shares: ``--db PATH``, ``--scrub-pii`` and ``--json``.

All are accepted before the command (``contextforge --db x.db query ...``) and
after it (``contextforge query ... --db x.db``); the later one wins.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from ..sync import ContextForgeSync
from .paths import ENV_VAR, resolve_db
from .store import open_store

__all__ = ["Common", "common", "common_options", "json_object", "json_option"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Common:
    """The shared settings of one invocation."""

    db: str | None = None
    as_json: bool = False
    scrub_pii: bool | None = None  # None: as the store recorded it (--scrub-pii: True)

    def store(self, *, read_only: bool = False) -> AbstractContextManager[ContextForgeSync]:
        path, is_default = resolve_db(self.db)
        return open_store(path, is_default, scrub_pii=self.scrub_pii, read_only=read_only)


def _set_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value == "":
        # Not "the default": an empty variable in `--db "$DB"` must not silently
        # pick another store.
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    if value is not None:
        ctx.ensure_object(Common).db = value


def _set_scrub_pii(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Common).scrub_pii = True


def _set_json(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Common).as_json = True


def json_option(help: str = "Print JSON for scripts instead of tables.") -> Callable[[F], F]:
    """Adds ``--json`` (read back as ``common().as_json``)."""
    return click.option(
        "--json", "as_json", is_flag=True, expose_value=False, callback=_set_json, help=help
    )


def common_options(*, with_json: bool = True) -> Callable[[F], F]:
    """Adds ``--db`` and ``--scrub-pii`` (and ``--json``) to a command or group."""

    def decorate(f: F) -> F:
        if with_json:
            f = json_option()(f)
        f = click.option(
            "--scrub-pii",
            is_flag=True,
            expose_value=False,
            callback=_set_scrub_pii,
            help="Also redact e-mail addresses, phone numbers, payment card numbers and "
            "IBANs in what is saved, as Config(scrub_pii=True) does. Default: as the "
            "store was last opened by its application.",
        )(f)
        return click.option(
            "--db",
            metavar="PATH",
            expose_value=False,
            callback=_set_db,
            help=f"The database file (not empty; a symbolic link must point at an existing "
            f"file). Default: ${ENV_VAR}, else "
            "$XDG_DATA_HOME/contextforge/memory.db (~/.local/share/...).",
        )(f)

    return decorate


def common() -> Common:
    """This invocation's shared settings."""
    return click.get_current_context().ensure_object(Common)


def json_object(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> dict[str, Any] | None:
    """A click callback: the option's text parsed as a JSON object."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not valid JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter('must be a JSON object, e.g. \'{"source": "slack"}\'')
    return parsed
