"""``save``, ``query``, ``get``, ``delete`` and ``history``: one entry (or one
key) at a time."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

import click

from .._core import Hit
from ..hits import Hits
from ..scope import ALL_SCOPES, Scope
from .audit import source_option
from .errors import EXIT_NOT_FOUND, NotFoundError
from .lines import read_text
from .options import common, common_options, json_object
from .render import count, echo_json, entry_record, interval, table, when
from .safe import printable
from .timeparse import time_option

__all__ = ["delete", "get", "history", "query", "save"]


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
@click.option(
    "--key",
    metavar="KEY",
    help="The slot this fact fills in its scope (e.g. user.city): it becomes the key's "
    "new version, and the version it replaces is kept in the key's history.",
)
@click.option(
    "--valid-from",
    callback=time_option,
    metavar="TIME",
    help="When the fact starts to hold. Default: its --timestamp.",
)
@click.option(
    "--valid-to",
    callback=time_option,
    metavar="TIME",
    help="When it stops holding. Default: until a newer version supersedes it.",
)
@click.option(
    "--supersedes",
    type=click.IntRange(min=1),
    metavar="ID",
    help="The id of the entry without a key, in the same scope, that this one corrects.",
)
@source_option
@common_options()
def save(
    content: str,
    kind: str,
    scope: str | None,
    session_id: str | None,
    metadata: dict[str, Any] | None,
    timestamp: datetime | None,
    dedupe: bool,
    key: str | None,
    valid_from: datetime | None,
    valid_to: datetime | None,
    supersedes: int | None,
    sources: list[int | str | tuple[int | str, int, int]],
) -> None:
    """Save CONTENT ('-' reads it from stdin, at most 16 Mi characters) and print its id.

    An entry identical to one already stored is not saved twice: the stored
    entry's id is printed (with a note on stderr; with --json, "created": false).
    Identical means the same text (ignoring whitespace and Unicode forms), scope,
    session, kind and metadata, and no expiry: the rule of the API's
    save(dedupe=True). The same words in another session or with other metadata
    are saved.
    --no-dedupe saves a copy anyway.

    With --key, the entry is the key's new version in its scope: the version
    that held at --valid-from (default: --timestamp) stops holding there and is
    kept, so queries answer with the new one and 'history KEY' lists both. The
    same content as that version adds none (its id is printed). --supersedes ID
    does the same for an entry saved without a key. See docs/keyed-facts.md.

    --source records where it came from: an entry id of the same scope, or a
    reference (a URL, a message id); SOURCE@START:END cites a character span of
    it. 'contextforge sources ID' reads them back.
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
            key=key,
            valid_from=valid_from,
            valid_to=valid_to,
            supersedes=supersedes,
            sources=sources or None,
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
@click.option(
    "--as-of",
    callback=time_option,
    metavar="TIME",
    help="Answer with what held at TIME (ISO 8601 or Unix seconds). Default: now.",
)
@click.option(
    "--all-versions",
    is_flag=True,
    help="Search every version, superseded ones too, and show which ones hold now.",
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
    as_of: datetime | None,
    all_versions: bool,
) -> None:
    """Find the entries most relevant to TEXT, packed into --budget tokens.

    Only what holds now is searched: a superseded version of a key (or a
    corrected entry) is left out, and so is a fact whose --valid-from is still
    to come. --as-of TIME searches what held at TIME instead, and
    --all-versions every version (the "current" column says which hold now).

    Exits with 1 when nothing matches.
    """
    if as_of is not None and all_versions:
        raise click.UsageError("give --as-of or --all-versions, not both")
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
            as_of=as_of,
            include_superseded=all_versions,
        )
    if opts.as_json:
        records = [entry_record(h, ranked=True, current=True) for h in hits]
        if explain:
            for record, hit in zip(records, hits):
                record["explain"] = hit.explain
        echo_json(records)
    elif explain:
        _explain(hits, budget, all_versions)
    elif hits and all_versions:
        rows = [
            [
                h.id,
                h.scope or "(global)",
                h.kind,
                h.key or "-",
                interval(h),
                _yes(h.current),
                h.content,
            ]
            for h in hits
        ]
        click.echo(table(["id", "scope", "kind", "key", "valid", "current", "content"], rows))
    elif hits:
        rows = [[h.id, h.scope or "(global)", h.kind, when(h), h.content] for h in hits]
        click.echo(table(["id", "scope", "kind", "when", "content"], rows))
    if not hits:
        if not opts.as_json:
            click.echo("no results", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _explain(hits: Hits, budget: int, all_versions: bool = False) -> None:
    """Rank, score parts and tokens per hit (and with ``all_versions``, whether
    it holds now), then the budget used and the time taken."""
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
                *([_yes(h.current)] if all_versions else []),
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
        *(["current"] if all_versions else []),
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
    """Print the entries with these IDS, superseded versions too (their card
    says so). Exits with 1 if any is missing."""
    opts = common()
    with opts.store() as store:
        found = store.get_many(list(ids), include_superseded=True)
    present = [h for h in found if h is not None]
    if opts.as_json:
        records = [entry_record(h, current=True) for h in present]
        echo_json(records[0] if len(ids) == 1 and records else records)
    elif present:
        click.echo("\n\n".join(_card(h) for h in present))
    missing = [i for i, h in zip(ids, found) if h is None]
    if missing:
        raise NotFoundError(f"not found: {', '.join(map(str, missing))}")


def _card(hit: Hit) -> str:
    """An entry for people: one field a line, then the content, every part made
    safe for a terminal (only the content keeps its newlines and tabs). The key,
    the validity interval and the link to a newer version are shown when the
    entry has them (an entry without holds from its timestamp, for good)."""
    expires = hit.expires_at.isoformat() if hit.expires_at is not None else "-"
    fields: list[tuple[str, object]] = [
        ("id", hit.id),
        ("scope", hit.scope or "(global)"),
        ("kind", hit.kind),
        ("session", hit.session_id or "-"),
        ("timestamp", hit.timestamp.isoformat()),
        ("expires", expires),
        ("tokens", hit.tokens),
        ("metadata", json.dumps(hit.metadata, ensure_ascii=False)),
    ]
    if hit.key is not None:
        fields.append(("key", hit.key))
    timed = hit.valid_from != hit.timestamp or hit.valid_to is not None
    if hit.key is not None or timed or hit.superseded_by is not None:
        until = hit.valid_to.isoformat() if hit.valid_to is not None else ""
        fields.append(("valid", f"{hit.valid_from.isoformat()} .. {until}".rstrip()))
        fields.append(("current", _yes(hit.current)))
    if hit.superseded_by is not None:
        fields.append(("superseded", f"by {hit.superseded_by}"))
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


@click.command()
@click.argument("key")
@click.option("--scope", metavar="SCOPE", help="The key's scope. Default: global.")
@common_options()
def history(key: str, scope: str | None) -> None:
    """Print the versions of KEY in --scope, oldest first: the interval over which
    each held (it ends where the next one starts), and which one holds now.
    Exits with 1 when the key has no version in the scope.
    """
    opts = common()
    with opts.store() as store:
        versions = store.history(key, scope)
    if opts.as_json:
        echo_json([entry_record(h, current=True) for h in versions])
    elif versions:
        rows = [[h.id, interval(h), _yes(h.current), h.kind, h.content] for h in versions]
        click.echo(table(["id", "valid", "current", "kind", "content"], rows))
    if not versions:
        where = "global entries" if scope is None else f"scope {scope!r}"
        raise NotFoundError(f"no versions of key {key!r} in {where}")
