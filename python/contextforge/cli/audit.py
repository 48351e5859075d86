"""``changes``, ``reads``, ``sources`` and ``derived``: the audit trails and
provenance, ids and references only, never content."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import click

from ..audit import Change, Read
from ..provenance import Link
from ..scope import ALL_SCOPES, ScopeFilter
from .errors import EXIT_NOT_FOUND, NotFoundError
from .options import common, common_options
from .render import echo_json, table
from .safe import printable
from .timeparse import iso

__all__ = ["changes", "derived", "parse_source", "reads", "source_option", "sources"]

_MAX_DEPTH = 32
_SPAN = re.compile(r"^(.*)@(\d+):(\d+)$", re.DOTALL)
_ENTRY_ID = re.compile(r"^[0-9]+$")


def parse_source(value: str) -> int | str | tuple[int | str, int, int]:
    """A ``--source``: all digits is an entry id, anything else a reference
    (a URL, a message id); a trailing ``@START:END`` gives a character span
    of it (``12@0:80``, ``https://example.com/a@5:17``)."""
    span: tuple[int, int] | None = None
    found = _SPAN.match(value)
    if found is not None:
        value, span = found.group(1), (int(found.group(2)), int(found.group(3)))
    if not value:
        raise click.BadParameter("names no source: give an entry id or a reference")
    what: int | str = int(value) if _ENTRY_ID.match(value) else value
    if isinstance(what, int) and what < 1:
        raise click.BadParameter(f"{value}: an entry id is a positive integer")
    return what if span is None else (what, *span)


def _sources_callback(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> list[int | str | tuple[int | str, int, int]]:
    return [parse_source(v) for v in value]


source_option = click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="SOURCE",
    callback=_sources_callback,
    help="Where it came from (repeatable): an entry id (all digits, same scope), or a "
    "reference such as a URL or message id; a trailing @START:END is a character span "
    "of it (12@0:80). See 'contextforge sources'.",
)


def change_record(change: Change) -> dict[str, Any]:
    """A change as JSON-ready values (``at`` in ISO 8601, or null)."""
    return {
        "seq": change.seq,
        "at": iso(change.at) if change.at is not None else None,
        "op": change.op,
        "entry_id": change.entry_id,
        "scope": change.scope,
        "key": change.key,
        "forget": change.forget,
    }


def _change_line(change: Change) -> str:
    at = change.at.strftime("%Y-%m-%d %H:%M:%S.%f") if change.at is not None else "-"
    scope = change.scope if change.scope is not None else "(global)"
    fields = [
        f"{change.seq:>6}",
        at.ljust(26),
        change.op.ljust(6),
        f"{change.entry_id:>6}",
        printable(scope),
        printable(change.key) if change.key is not None else "-",
        printable(change.forget) if change.forget is not None else "-",
    ]
    return "  ".join(fields)


_HEADER = "  ".join(
    ["   seq", "at (UTC)".ljust(26), "op".ljust(6), " entry", "scope", "key", "forget"]
)


@click.command()
@click.option(
    "--since",
    type=click.IntRange(min=0),
    default=0,
    metavar="SEQ",
    help="Only changes after this one (a seq printed before): resume where you stopped.",
)
@click.option("--scope", metavar="SCOPE", help="Only changes to entries of this scope.")
@click.option("--global", "only_global", is_flag=True, help="Only changes to global entries.")
@click.option(
    "--follow",
    is_flag=True,
    help="Keep printing new changes as they are made, until interrupted (Ctrl-C).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="With --follow: how often to look for new changes.",
)
@common_options()
def changes(
    since: int, scope: str | None, only_global: bool, follow: bool, interval: float
) -> None:
    """Print the audit trail: every insert, update, delete and forget, oldest
    first, one a line: its seq, when (UTC), the operation, the entry id, its
    scope and key, and for a forget its receipt id. Never any content.

    With --json, one JSON object a line (JSONL) with the same fields. --since SEQ
    starts after that change. --follow keeps polling every --interval seconds
    for new changes until interrupted (Ctrl-C ends it with exit 0).

    Exits with 1 when there is no change to print (without --follow).
    """
    if scope is not None and only_global:
        raise click.UsageError("give --scope or --global, not both")
    if scope == "":
        raise click.BadParameter("must not be empty", param_hint="'--scope'")
    wanted: ScopeFilter = None if only_global else scope if scope is not None else ALL_SCOPES
    opts = common()
    last = since
    printed = 0

    def show(change: Change) -> None:
        if opts.as_json:
            click.echo(json.dumps(change_record(change), ensure_ascii=False))
        else:
            click.echo(_change_line(change))

    # Following for long: read-only, so an application opening the store
    # meanwhile keeps its search index on disk.
    with opts.store(read_only=follow) as store:
        try:
            header = False
            while True:
                for change in store.changes(since=last, scope=wanted):
                    if not header and not opts.as_json:
                        click.echo(_HEADER)
                    header = True
                    show(change)
                    last = change.seq
                    printed += 1
                if not follow:
                    break
                time.sleep(interval)
        except KeyboardInterrupt:
            return
    if not printed:
        click.echo("no changes", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


def read_record(read: Read) -> dict[str, Any]:
    """An audited read as JSON-ready values (``at`` in ISO 8601; ``scopes`` null
    for a read of every scope)."""
    return {
        "seq": read.seq,
        "at": iso(read.at),
        "scopes": list(read.scopes) if read.scopes is not None else None,
        "query_hash": read.query_hash,
        "query": read.query,
        "ids": list(read.ids),
    }


def _read_line(read: Read) -> str:
    if read.scopes is None:
        scopes = "(all)"
    else:
        scopes = ",".join(printable(s) if s is not None else "(global)" for s in read.scopes)
    fields = [
        f"{read.seq:>6}",
        read.at.strftime("%Y-%m-%d %H:%M:%S.%f").ljust(26),
        scopes,
        read.query_hash,
        ",".join(str(i) for i in read.ids) or "-",
        printable(read.query) if read.query is not None else "-",
    ]
    return "  ".join(fields)


_READS_HEADER = "  ".join(["   seq", "at (UTC)".ljust(26), "scopes", "query hash", "ids", "query"])


@click.command()
@click.option(
    "--since",
    type=click.IntRange(min=0),
    default=0,
    metavar="SEQ",
    help="Only reads after this one (a seq printed before): resume where you stopped.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Keep printing new reads as they are recorded, until interrupted (Ctrl-C).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="With --follow: how often to look for new reads.",
)
@common_options()
def reads(since: int, follow: bool, interval: float) -> None:
    """Print the read audit: what each query and context returned, oldest first,
    one a line: its seq, when (UTC), the scopes searched ('(all)': every scope,
    '(global)': global entries), a keyed hash of the query, the ids returned,
    and the query's text when the store keeps it ('-' otherwise). Never any
    content.

    Reads are recorded only by applications that open the store with
    Config(audit_reads=True) (this command records none). With --json, one JSON
    object a line (JSONL) with the same fields. --since SEQ starts after that
    read. --follow keeps polling every --interval seconds for new reads until
    interrupted (Ctrl-C ends it with exit 0); an application writes its reads
    in batches of 64, and when it closes.

    Exits with 1 when there is no read to print (without --follow).
    """
    opts = common()
    last = since
    printed = 0
    with opts.store(read_only=follow) as store:
        try:
            header = False
            while True:
                for read in store.reads(since=last):
                    if opts.as_json:
                        click.echo(json.dumps(read_record(read), ensure_ascii=False))
                    else:
                        if not header:
                            click.echo(_READS_HEADER)
                        header = True
                        click.echo(_read_line(read))
                    last = read.seq
                    printed += 1
                if not follow:
                    break
                time.sleep(interval)
        except KeyboardInterrupt:
            return
    if not printed:
        note = "" if since else " (reads are recorded only with Config(audit_reads=True))"
        click.echo(f"no reads{note}", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


def _link_record(link: Link) -> dict[str, Any]:
    return {
        "entry_id": link.entry_id,
        "source_id": link.source_id,
        "ref": link.ref,
        "span": list(link.span) if link.span is not None else None,
        "depth": link.depth,
    }


def _links(entry_id: int, depth: int, up: bool) -> None:
    opts = common()
    with opts.store() as store:
        links = store.sources(entry_id, depth=depth) if up else store.derived(entry_id, depth=depth)
        exists = bool(links) or store.get(entry_id, include_superseded=True) is not None
    if not exists:
        raise NotFoundError(f"not found: {entry_id}")
    if opts.as_json:
        echo_json([_link_record(link) for link in links])
    elif links:
        rows = [
            [
                link.depth,
                link.entry_id,
                f"{link.span[0]}:{link.span[1]}" if link.span is not None else "-",
                f"entry {link.source_id}" if link.source_id is not None else link.ref or "",
            ]
            for link in links
        ]
        click.echo(table(["depth", "entry", "span", "source"], rows))
    if not links:
        if not opts.as_json:
            what = "no sources" if up else "nothing derived from it"
            click.echo(f"entry {entry_id}: {what}", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


_depth = click.option(
    "--depth",
    type=click.IntRange(min=1, max=_MAX_DEPTH),
    default=8,
    show_default=True,
    metavar="N",
    help=f"Follow at most N links (at most {_MAX_DEPTH}).",
)


@click.command()
@click.argument("entry_id", metavar="ID", type=click.IntRange(min=1))
@_depth
@common_options()
def sources(entry_id: int, depth: int) -> None:
    """Print what entry ID rests on, nearest first: for each link, its depth (1: a
    direct source), the entry that cites it, the span cited, and the source (an
    entry id or an external reference). Ids and references only: read an entry
    with 'get'. A source entry deleted since still shows its id.

    Exits with 1 when ID has no sources, or does not exist.
    """
    _links(entry_id, depth, up=True)


@click.command()
@click.argument("entry_id", metavar="ID", type=click.IntRange(min=1))
@_depth
@common_options()
def derived(entry_id: int, depth: int) -> None:
    """Print what was derived from entry ID, nearest first: for each link, its
    depth (1: cites ID directly), the entry that cites, the span cited, and the
    source it cites.

    Exits with 1 when nothing was derived from ID, or it does not exist.
    """
    _links(entry_id, depth, up=False)
