"""``scopes`` and ``stats``: what the store holds."""

from __future__ import annotations

import os
from typing import Any

import click

from .options import common, common_options
from .paths import file_sizes
from .render import echo_json, table
from .safe import printable

__all__ = ["scopes", "stats"]


def _scope_rows(counts: dict[str | None, int]) -> list[dict[str, Any]]:
    ordered = sorted(counts.items(), key=lambda item: (item[0] is not None, item[0] or ""))
    return [{"scope": scope, "entries": n} for scope, n in ordered]


@click.command()
@common_options()
def scopes() -> None:
    """List every scope with its number of entries (global entries as "(global)")."""
    opts = common()
    with opts.store() as store:
        rows = _scope_rows(store.scopes())
    if opts.as_json:
        echo_json(rows)
    elif rows:
        click.echo(
            table(["entries", "scope"], [[r["entries"], r["scope"] or "(global)"] for r in rows])
        )
    else:
        click.echo("the store is empty", err=True)


@click.command()
@common_options()
def stats() -> None:
    """Show the number of entries, the scopes, the database path and file sizes.

    Entries count every stored version, as the scopes do; "current" counts those
    that hold now (not superseded, not yet to come).
    """
    opts = common()
    with opts.store() as store:
        total = store.count(include_superseded=True)
        current = store.count()
        rows = _scope_rows(store.scopes())
        path, index_dir = store.config.path, store.config.index_dir
    sizes = file_sizes(path, index_dir)
    if path != ":memory:":
        path = os.path.abspath(path)
    if opts.as_json:
        echo_json(
            {"db": path, "entries": total, "current": current, "scopes": rows, "bytes": sizes}
        )
        return
    click.echo(f"database  {printable(path)}")
    click.echo(f"entries   {total}")
    click.echo(f"current   {current}")
    click.echo(f"scopes    {len(rows)}")
    for label, size in sizes.items():
        click.echo(f"{label:<9} {_human(size)}")


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
