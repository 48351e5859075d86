"""``import``: entries and chat transcripts in, from JSONL or a JSON array
(see :mod:`.records` for the format, :mod:`.importer` for what is saved)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import click

from .errors import CliError
from .fields import Parsed
from .importer import Summary, import_records
from .options import common, common_options
from .outfile import check_target, export_file
from .paths import resolve_db
from .records import Defaults, RecordError, parse_lines
from .render import count, echo_json
from .safe import printable

__all__ = ["import_"]


@click.command("import")
@click.argument("file", metavar="FILE")
@click.option(
    "--scope",
    metavar="SCOPE",
    help="Import everything into SCOPE: an entry naming another scope is refused.",
)
@click.option(
    "--keep-scopes",
    is_flag=True,
    help="With --scope: entries naming a scope keep it; SCOPE is only the default.",
)
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="Session for every message (default: from the record).",
)
@click.option(
    "--kind",
    metavar="KIND",
    help="Kind for records that name none. Default: note (entries), message (chat).",
)
@click.option(
    "--dedupe/--no-dedupe",
    default=True,
    show_default=True,
    help="Skip a record equal to a stored entry (as 'save' does); --no-dedupe keeps every copy.",
)
@click.option(
    "--include-system",
    is_flag=True,
    help="Also import system and developer messages (skipped by default).",
)
@click.option(
    "--id-map",
    metavar="MAP",
    help='Write MAP (JSONL): {"old": ID, "new": ID} for every entry that had an id.',
)
@click.option("--force", is_flag=True, help="Replace MAP if it exists.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    metavar="N",
    default=1000,
    show_default=True,
    help="Entries saved per transaction.",
)
@click.option("--dry-run", is_flag=True, help="Validate and count, but save nothing.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr. Default: only on a terminal.",
)
@common_options()
def import_(
    file: str,
    scope: str | None,
    keep_scopes: bool,
    session_id: str | None,
    kind: str | None,
    dedupe: bool,
    include_system: bool,
    id_map: str | None,
    force: bool,
    batch_size: int,
    dry_run: bool,
    progress: bool | None,
) -> None:
    """Import entries or chat transcripts from FILE ('-' for stdin): JSONL, or one
    JSON array of chat messages.

    \b
    Each JSONL line is one JSON object of at most 16 MiB (over 4 million tokens,
    more than any context window holds; a stream without newlines stops there):
      entry         {"content", "kind", "scope", "session_id", "metadata",
                     "timestamp", "expires_at", "id", "key", "valid_from",
                     "valid_to", "superseded_by", "sources"}
                                                        (as export writes it)
      message       {"role", "content", "timestamp"?}  -> an entry of kind "message"
      conversation  {"messages": [...], "id"?}         -> an entry per message
    A file starting with '[' is one JSON array of messages (at most 16 MiB).
    Times are ISO 8601 (UTC when no offset is given) or Unix seconds; a message's
    time is its timestamp, created_at or create_time. An undated message in a
    transcript that dates others takes the time of the dated message before it
    (or, at the start, after it). System and developer messages are skipped
    unless --include-system is given; so are entries whose expires_at has passed.

    With --scope, every record goes to SCOPE: an entry naming another scope (or
    null, global) is an error unless --keep-scopes is given. Chat messages
    imported without --scope go to the global scope (a warning says so).

    \b
    Ids: into an empty store (or one holding only this file's entries at their
    ids, as an interrupted import leaves it) entries keep the ids they had, so
    [mem:N] citations stay valid, and are restored as they are (no dedupe).
    Otherwise they get new ids in the order of the old ones: --id-map MAP lists
    old and new (a duplicate maps to the entry it equals), and the summary
    counts the ids that changed.

    Keys and validity intervals are restored as given, and the versions of a
    key link themselves again; an entry without a key that another corrected
    (its superseded_by) is linked to it again when both are in the file.

    Sources are restored (references and spans as given; source entries as the
    ids they got). A source entry not in the file is kept only when ids are kept
    and the store holds an entry at its id; otherwise the link is dropped and
    the summary counts it.

    The whole file is validated before anything is saved: a bad line is reported
    with its number and the store is left unchanged. Records the store already
    holds exactly (the same time too) are skipped, so running the same import
    again (or after an interruption) adds only what is missing. Others equal to a
    stored entry, as 'save' compares them (the same text, ignoring whitespace and
    Unicode forms, scope, session, kind, metadata, expiry and end), are counted as
    duplicates and not saved, unless --no-dedupe is given.
    """
    if keep_scopes and scope is None:
        raise click.UsageError("--keep-scopes needs --scope")
    if id_map is not None and dry_run:
        raise click.UsageError("--id-map is written by an import, not by --dry-run")
    if force and id_map is None:
        raise click.UsageError("--force replaces the --id-map file: give --id-map")
    opts = common()
    show = progress if progress is not None else sys.stderr.isatty()
    label = "stdin" if file == "-" else file
    defaults = Defaults(
        scope=scope,
        session_id=session_id,
        kind=kind,
        source="stdin" if file == "-" else Path(file).name,
        confine=scope is not None and not keep_scopes,
        include_system=include_system,
    )
    db, _ = resolve_db(opts.db)
    if id_map is not None:
        check_target(id_map, db, force=force)  # before anything is read or saved
    try:
        with _open_input(file) as stream:
            parsed = parse_lines(stream, defaults)
        if parsed.messages and scope is None:
            click.echo(
                f"Warning: {count(parsed.messages, 'chat message')} without --scope "
                "go to the global scope, shared by every user; give --scope "
                "(e.g. user:42) to keep them apart",
                err=True,
            )
        with opts.store() as store:
            summary = import_records(
                store,
                parsed.records,
                batch_size=batch_size,
                dedupe=dedupe,
                dry_run=dry_run,
                progress=show,
            )
    except RecordError as err:
        raise CliError(f"{label}:{err.line}: {err.message}") from None
    if id_map is not None:
        with export_file(id_map, db, force=force) as out:
            for old, new in summary.id_map:
                out.write(json.dumps({"old": old, "new": new}) + "\n")
    _report(summary, parsed, label, id_map, dry_run, opts.as_json)


def _report(
    summary: Summary, parsed: Parsed, label: str, id_map: str | None, dry_run: bool, as_json: bool
) -> None:
    if as_json:
        echo_json(
            {
                "file": label,
                "lines": parsed.lines,
                "records": len(parsed.records),
                "added": summary.added,
                "already_present": summary.present,
                "duplicates": summary.duplicates,
                "expired_skipped": summary.expired,
                "empty_messages_skipped": parsed.empty_messages,
                "system_messages_skipped": parsed.system_skipped,
                "ids": summary.ids,
                "remapped": summary.remapped,
                "sources_dropped": summary.sources_dropped,
                "id_map": id_map,
                "dry_run": dry_run,
            }
        )
        return
    parts = [f"{summary.present} already present"]
    if summary.duplicates:
        parts.append(count(summary.duplicates, "duplicate"))
    if summary.expired:
        parts.append(f"{count(summary.expired, 'expired entry', 'expired entries')} skipped")
    if parsed.empty_messages:
        parts.append(f"{count(parsed.empty_messages, 'empty message')} skipped")
    if parsed.system_skipped:
        parts.append(f"{count(parsed.system_skipped, 'system message')} skipped")
    if summary.ids == "kept":
        parts.append("ids kept")
    elif summary.ids == "renumbered" and summary.remapped is None:
        parts.append("ids would be renumbered")
    elif summary.ids == "renumbered":
        changed = f"{count(summary.remapped or 0, 'id')} renumbered"
        parts.append(changed + (f", listed in {printable(id_map)}" if id_map else ""))
    if summary.sources_dropped:
        parts.append(
            f"{count(summary.sources_dropped, 'source link')} to entries not in the file dropped"
        )
    verb = "would import" if dry_run else "imported"
    click.echo(
        f"{verb} {summary.added} of {count(len(parsed.records), 'record')} from "
        f"{printable(label)} ({', '.join(parts)})"
    )
    if summary.remapped and id_map is None:
        click.echo(
            f"Warning: {count(summary.remapped, 'entry', 'entries')} got a new id; "
            "--id-map MAP lists the old and new ids",
            err=True,
        )


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
