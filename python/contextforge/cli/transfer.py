"""``import`` and ``export``: JSONL in and out, lossless between them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO

import click

from .errors import CliError
from .importer import import_records
from .options import common, common_options
from .outfile import check_target, export_file
from .paths import resolve_db
from .records import Defaults, RecordError, parse_lines
from .render import echo_json, entry_record
from .safe import printable
from .timeparse import time_option

__all__ = ["export", "import_"]

_ALL = "\0all"  # not a valid scope (control character): "every scope"


@click.command("import")
@click.argument("file", metavar="FILE")
@click.option("--scope", metavar="SCOPE",
              help="Import everything into SCOPE: an entry naming another scope is refused.")
@click.option("--keep-scopes", is_flag=True,
              help="With --scope: entries naming a scope keep it; SCOPE is only the default.")
@click.option("--session", "session_id", metavar="ID", help="Session for every message (default: from the record).")
@click.option("--kind", metavar="KIND", help="Kind for records that name none. Default: note (entries), message (chat).")
@click.option("--batch-size", type=click.IntRange(min=1), metavar="N", default=1000, show_default=True,
              help="Entries saved per transaction.")
@click.option("--dedupe", is_flag=True, help="Also skip text already stored in the same scope.")
@click.option("--dry-run", is_flag=True, help="Validate and count, but save nothing.")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar on stderr. Default: only on a terminal.")
@common_options()
def import_(
    file: str,
    scope: str | None,
    keep_scopes: bool,
    session_id: str | None,
    kind: str | None,
    batch_size: int,
    dedupe: bool,
    dry_run: bool,
    progress: bool | None,
) -> None:
    """Import entries or chat transcripts from a JSONL FILE ('-' for stdin).

    \b
    Each line is one JSON object of at most 16 MiB (over 4 million tokens, more
    than any context window holds; a stream without newlines stops there):
      entry         {"content", "kind", "scope", "session_id", "metadata",
                     "timestamp", "expires_at"}
      message       {"role", "content"}            -> one entry of kind "message"
      conversation  {"messages": [...], "id"?}     -> one entry per message
    Times are ISO 8601 (UTC when no offset is given) or Unix seconds. Entries
    whose expires_at has passed are skipped (and counted).

    With --scope, every record goes to SCOPE: an entry naming another scope (or
    null, global) is an error unless --keep-scopes is given.

    The whole file is validated before anything is saved: a bad line is reported
    with its number and the store is left unchanged. Importing is idempotent:
    records the store already holds are skipped, so running the same import again
    (or again after an interruption) adds only what is missing.
    """
    if keep_scopes and scope is None:
        raise click.UsageError("--keep-scopes needs --scope")
    opts = common()
    show = progress if progress is not None else sys.stderr.isatty()
    label = "stdin" if file == "-" else file
    defaults = Defaults(scope=scope, session_id=session_id, kind=kind,
                        source="stdin" if file == "-" else Path(file).name,
                        confine=scope is not None and not keep_scopes)
    try:
        with _open_input(file) as stream:
            parsed = parse_lines(stream, defaults)
        with opts.store() as store:
            summary = import_records(store, parsed.records, batch_size=batch_size, dedupe=dedupe,
                                     dry_run=dry_run, progress=show)
    except RecordError as err:
        raise CliError(f"{label}:{err.line}: {err.message}") from None
    result = {
        "file": label, "lines": parsed.lines, "records": len(parsed.records),
        "added": summary.added, "already_present": summary.present,
        "expired_skipped": summary.expired,
        "empty_messages_skipped": parsed.empty_messages, "dry_run": dry_run,
    }
    if opts.as_json:
        echo_json(result)
        return
    verb = "would import" if dry_run else "imported"
    extra = f", {parsed.empty_messages} empty message(s) skipped" if parsed.empty_messages else ""
    extra += f", {summary.expired} expired entry(ies) skipped" if summary.expired else ""
    click.echo(f"{verb} {summary.added} of {len(parsed.records)} record(s) from {printable(label)} "
               f"({summary.present} already present{extra})")


@contextmanager
def _open_input(file: str) -> Iterator[IO[bytes]]:
    if file == "-":
        yield sys.stdin.buffer
        return
    try:
        stream = open(file, "rb")  # noqa: SIM115 - closed below
    except OSError as err:
        raise CliError(f"cannot read {file}: {err.strerror or err}") from None
    with stream:
        yield stream


@click.command()
@click.argument("file", metavar="[FILE]", default="-")
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE", help="Only this scope (repeatable). Default: all.")
@click.option("--global", "include_global", is_flag=True, help="Only global entries (with --scope: also).")
@click.option("--kind", metavar="KIND", help="Only entries of this kind.")
@click.option("--session", "session_id", metavar="ID", help="Only entries of this session.")
@click.option("--since", callback=time_option, metavar="TIME", help="Only entries at or after this time.")
@click.option("--until", callback=time_option, metavar="TIME", help="Only entries before this time.")
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

    Every field is written (expires_at too), times as ISO 8601 with microseconds,
    so that `import` into an empty store gives the same entries back.

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
                hits = store.list(scope=scope, kind=kind, session_id=session_id, since=since, until=until)
            for hit in hits:
                out.write(json.dumps(entry_record(hit), ensure_ascii=False) + "\n")
                written += 1
    if file != "-":
        click.echo(f"exported {written} entries to {printable(file)}", err=True)
