"""``save``, ``query``, ``get`` and ``delete``: one entry at a time."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

import click

from .._core import Hit
from ..hits import Hits
from ..scope import ALL_SCOPES, Scope
from .errors import EXIT_NOT_FOUND, NotFoundError
from .lines import read_text
from .options import common, common_options, json_object
from .render import count, echo_json, entry_record, table, when
from .safe import printable
from .timeparse import time_option

__all__ = ["delete", "get", "query", "save"]


@click.command()
@click.argument("content")
@click.option(
    "--kind",
    metavar="KIND",
    default="note",
    show_default=True,
    help="A short label: note, fact, preference...",
)
@click.option(
    "--scope", metavar="SCOPE", help="The user, project or thread it belongs to. Default: global."
)
@click.option("--session", "session_id", metavar="ID", help="The conversation or run it came from.")
@click.option(
    "--metadata", metavar="JSON", callback=json_object, help="A JSON object stored with the entry."
)
@click.option(
    "--timestamp",
    callback=time_option,
    metavar="TIME",
    help="When it happened (ISO 8601 or Unix seconds). Default: now.",
)
@click.option(
    "--dedupe/--no-dedupe",
    default=True,
    show_default=True,
    help="Return the id of an identical stored entry instead of saving a copy.",
)
@common_options()
def save(
    content: str,
    kind: str,
    scope: str | None,
    session_id: str | None,
    metadata: dict[str, Any] | None,
    timestamp: datetime | None,
    dedupe: bool,
) -> None:
    """Save CONTENT ('-' reads it from stdin, at most 16 Mi characters) and print its id.

    An entry identical to one already stored is not saved twice: the stored
    entry's id is printed (with a note on stderr; with --json, "created": false).
    Identical means the same text (ignoring whitespace and Unicode forms), scope,
    session, kind and metadata, and no expiry: the rule of the API's
    save(dedupe=True). The same words in another session or with other metadata
    are saved.
    --no-dedupe saves a copy anyway.
    """
    if content == "-":
        content = read_text(sys.stdin, "stdin")
    opts = common()
    with opts.store() as store:
        saved = store.save(
            content,
            kind,
            scope=scope,
            session_id=session_id,
            metadata=metadata,
            timestamp=timestamp,
            dedupe=dedupe,
        )
    if opts.as_json:
        echo_json({"id": int(saved), "created": saved.created})
        return
    click.echo(int(saved))
    if not saved.created:
        click.echo(
            f"already stored as {int(saved)}: not saved again (--no-dedupe saves a copy)", err=True
        )


@click.command()
@click.argument("text")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="Search this scope (repeatable). Default: every scope.",
)
@click.option(
    "--global", "include_global", is_flag=True, help="Include global entries (alone: only them)."
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    default=2048,
    show_default=True,
    help="The most tokens the results may hold together.",
)
@click.option(
    "--kind", "kinds", multiple=True, metavar="KIND", help="Only entries of this kind (repeatable)."
)
@click.option("--session", "session_id", metavar="ID", help="Only entries of this session.")
@click.option(
    "--since",
    callback=time_option,
    metavar="TIME",
    help="Only entries at or after this time (ISO 8601 or Unix seconds).",
)
@click.option(
    "--until", callback=time_option, metavar="TIME", help="Only entries before this time."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show rank, score parts (relevance x recency), tokens and injection risks.",
)
@common_options()
def query(
    text: str,
    scopes: tuple[str, ...],
    include_global: bool,
    budget: int,
    kinds: tuple[str, ...],
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    explain: bool,
) -> None:
    """Find the entries most relevant to TEXT, packed into --budget tokens.

    Exits with 1 when nothing matches.
    """
    wanted: Scope = ALL_SCOPES
    if scopes or include_global:
        wanted = [*scopes, *([None] if include_global else [])]
    opts = common()
    with opts.store() as store:
        hits = store.query(
            text,
            wanted,
            budget,
            kinds=list(kinds) or None,
            session_id=session_id,
            since=since,
            until=until,
            explain=explain,
        )
    if opts.as_json:
        records = [entry_record(h, ranked=True) for h in hits]
        if explain:
            for record, hit in zip(records, hits):
                record["explain"] = hit.explain
        echo_json(records)
    elif explain:
        _explain(hits, budget)
    elif hits:
        rows = [[h.id, h.scope or "(global)", h.kind, when(h), h.content] for h in hits]
        click.echo(table(["id", "scope", "kind", "when", "content"], rows))
    if not hits:
        if not opts.as_json:
            click.echo("no results", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


def _explain(hits: Hits, budget: int) -> None:
    """Rank, score parts and tokens per hit, then the budget used and the time taken."""
    rows = []
    for rank, h in enumerate(hits, 1):
        parts = h.explain or {}
        rows.append(
            [
                rank,
                f"{h.score:.4f}",
                f"{parts.get('relevance', 0.0):.4f}",
                f"{parts.get('recency', 0.0):.3f}",
                h.tokens,
                h.id,
                h.scope or "(global)",
                h.kind,
                when(h),
                ",".join(h.risks) or "-",
                h.content,
            ]
        )
    headers = [
        "rank",
        "score",
        "relevance",
        "recency",
        "tokens",
        "id",
        "scope",
        "kind",
        "when",
        "risks",
        "content",
    ]
    if rows:
        click.echo(table(headers, rows))
    used = sum(h.tokens for h in hits)
    took = (hits.timings or {}).get("total_us")
    timing = f" in {took / 1000:.1f} ms" if took is not None else ""
    click.echo(f"{count(len(hits), 'hit')}, {used} of {budget} tokens{timing}")


@click.command()
@click.argument("ids", nargs=-1, required=True, type=int)
@common_options()
def get(ids: tuple[int, ...]) -> None:
    """Print the entries with these IDS. Exits with 1 if any is missing."""
    opts = common()
    with opts.store() as store:
        found = store.get_many(list(ids))
    present = [h for h in found if h is not None]
    if opts.as_json:
        records = [entry_record(h) for h in present]
        echo_json(records[0] if len(ids) == 1 and records else records)
    elif present:
        click.echo("\n\n".join(_card(h) for h in present))
    missing = [i for i, h in zip(ids, found) if h is None]
    if missing:
        raise NotFoundError(f"not found: {', '.join(map(str, missing))}")


def _card(hit: Hit) -> str:
    """An entry for people: one field a line, then the content, every part made
    safe for a terminal (only the content keeps its newlines and tabs)."""
    expires = hit.expires_at.isoformat() if hit.expires_at is not None else "-"
    fields = [
        ("id", hit.id),
        ("scope", hit.scope or "(global)"),
        ("kind", hit.kind),
        ("session", hit.session_id or "-"),
        ("timestamp", hit.timestamp.isoformat()),
        ("expires", expires),
        ("tokens", hit.tokens),
        ("metadata", json.dumps(hit.metadata, ensure_ascii=False)),
    ]
    head = "\n".join(f"{name:<10} {printable(str(value))}" for name, value in fields)
    return f"{head}\n{printable(hit.content, block=True)}"


@click.command()
@click.argument("ids", nargs=-1, required=True, type=int)
@common_options()
def delete(ids: tuple[int, ...]) -> None:
    """Delete the entries with these IDS. Exits with 1 if any did not exist."""
    opts = common()
    with opts.store() as store:
        existed = store.delete_many(list(ids))
    deleted = [i for i, ok in zip(ids, existed) if ok]
    missing = [i for i, ok in zip(ids, existed) if not ok]
    if opts.as_json:
        echo_json({"deleted": deleted, "not_found": missing})
    elif deleted:
        click.echo(f"deleted {', '.join(map(str, deleted))}")
    if missing:
        raise NotFoundError(f"not found: {', '.join(map(str, missing))}")
