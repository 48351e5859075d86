"""``export``: every entry out as JSONL, which ``import`` reads back with the same
ids into an empty store."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

import click

from .._core import Hit
from ..scope import ALL_SCOPES
from ..sync import ContextForgeSync
from .options import common, common_options
from .outfile import check_target, export_file
from .paths import resolve_db
from .render import count, entry_record
from .safe import printable
from .timeparse import time_option

__all__ = ["export"]

_ALL = "\0all"  # not a valid scope (control character): "every scope"
# The earliest time a store knows: only a plain entry holds then.
_EVER = datetime(1, 1, 1, tzinfo=timezone.utc)
_PAGE = 500


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
    back, with the same ids. Every version is written, superseded ones too, with
    its key, validity interval (valid_from, valid_to) and superseded_by, so that
    histories and corrections come back as they were; valid_from is null for a
    plain entry (no key, no interval, never superseded), which holds at every
    time. An entry's direct sources (see 'contextforge sources') are written as
    "sources": [{"entry": ID or null, "ref": REFERENCE or null, "span": [START,
    END] or null}, ...], left out when it has none.

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
            # Every version: a superseded one is history that import restores.
            hits = store.list(
                scope=ALL_SCOPES if scope == _ALL else scope,
                kind=kind,
                session_id=session_id,
                since=since,
                until=until,
                include_superseded=True,
            )
            for record in _records(store, hits):
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
    if file != "-":
        click.echo(f"exported {count(written, 'entry', 'entries')} to {printable(file)}", err=True)


def _records(store: ContextForgeSync, hits: Iterable[Hit]) -> Iterator[dict[str, Any]]:
    """Each entry as ``entry_record`` has it, but ``valid_from`` null for a plain
    entry. A hit shows a plain entry's timestamp as its ``valid_from``, so one
    saved with an explicit start equal to its timestamp, or a corrected entry
    whose correction was deleted (both in a timeline, holding only from that
    time), would look the same: the entries that might be either are told
    apart by whether they hold at the earliest time (plain entries hold at every
    time), a page at a time."""
    page: list[Hit] = []
    for hit in hits:
        page.append(hit)
        if len(page) == _PAGE:
            yield from _page_records(store, page)
            page = []
    yield from _page_records(store, page)


def _page_records(store: ContextForgeSync, page: list[Hit]) -> Iterator[dict[str, Any]]:
    unsure = [
        h.id
        for h in page
        if h.key is None
        and h.valid_to is None
        and h.superseded_by is None
        and h.valid_from == h.timestamp
    ]
    plain = set()
    if unsure:
        plain = {h.id for h in store.get_many(unsure, as_of=_EVER) if h is not None}
    for hit in page:
        record = entry_record(hit)
        if hit.id in plain:
            record["valid_from"] = None
        cited = store.sources(hit.id, depth=1)
        if cited:
            record["sources"] = [
                {
                    "entry": link.source_id,
                    "ref": link.ref,
                    "span": list(link.span) if link.span is not None else None,
                }
                for link in cited
            ]
        yield record
