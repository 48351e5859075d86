"""``export``: every entry out as JSONL, which ``import`` reads back with the same
ids into an empty store."""

from __future__ import annotations

import json
from datetime import datetime

import click

from .options import common, common_options
from .outfile import check_target, export_file
from .paths import resolve_db
from .render import count, entry_record
from .safe import printable
from .timeparse import time_option

__all__ = ["export"]

_ALL = "\0all"  # not a valid scope (control character): "every scope"


@click.command()
@click.argument("file", metavar="[FILE]", default="-")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="Only this scope (repeatable). Default: all.",
)
@click.option(
    "--global", "include_global", is_flag=True, help="Only global entries (with --scope: also)."
)
@click.option("--kind", metavar="KIND", help="Only entries of this kind.")
@click.option("--session", "session_id", metavar="ID", help="Only entries of this session.")
@click.option(
    "--since", callback=time_option, metavar="TIME", help="Only entries at or after this time."
)
@click.option(
    "--until", callback=time_option, metavar="TIME", help="Only entries before this time."
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists (keeping its permissions).")
@common_options(with_json=False)
def export(
    file: str,
    scopes: tuple[str, ...],
    include_global: bool,
    kind: str | None,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    force: bool,
) -> None:
    """Write entries as JSONL to FILE (default: stdout), newest first.

    Every field is written (the id and expires_at too), times as ISO 8601 with
    microseconds, so that `import` into an empty store gives the same entries
    back, with the same ids.

    FILE is written in full to a temporary file, then renamed over FILE. An
    existing FILE is replaced only with --force. Refused: the database and its
    -wal, -shm and -journal files, and anything that is not a regular file (a
    symbolic link, directory, FIFO or device).
    """
    opts = common()
    db, _ = resolve_db(opts.db)
    check_target(file, db, force=force)  # before the store is opened (and maybe created)
    selected: list[str | None] = list(dict.fromkeys([*scopes, *([None] if include_global else [])]))
    with opts.store() as store, export_file(file, db, force=force) as out:
        written = 0
        for scope in selected or [_ALL]:
            if scope == _ALL:
                hits = store.list(kind=kind, session_id=session_id, since=since, until=until)
            else:
                hits = store.list(
                    scope=scope, kind=kind, session_id=session_id, since=since, until=until
                )
            for hit in hits:
                out.write(json.dumps(entry_record(hit), ensure_ascii=False) + "\n")
                written += 1
    if file != "-":
        click.echo(f"exported {count(written, 'entry', 'entries')} to {printable(file)}", err=True)
