"""``forget``: remove entries for good (GDPR erasure, a leaked secret), with a
receipt. See docs/forgetting.md for what "for good" covers."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import click

from .._core import Hit
from ..forgotten import Forgotten
from ..scope import ALL_SCOPES, ScopeFilter
from ..sync import ContextForgeSync
from .errors import EXIT_NOT_FOUND, CliError, NotFoundError
from .options import common, common_options, json_object
from .render import count, echo_json
from .safe import printable
from .timeparse import iso

__all__ = ["forget"]

_UNSET: Any = object()
_SHOWN_IDS = 20


def _match_metadata(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> dict[str, Any] | None:
    """``--metadata``: a JSON object of top-level values to match, not empty."""
    parsed = json_object(ctx, param, value)
    if parsed is None:
        return None
    if not parsed:
        raise click.BadParameter("{} would match every entry: name at least one field")
    for name, field in parsed.items():
        if isinstance(field, (dict, list)):
            raise click.BadParameter(
                f"{name!r}: only strings, numbers, true, false and null can be matched"
            )
    return parsed


@click.command()
@click.option(
    "--id",
    "ids",
    multiple=True,
    type=int,
    metavar="N",
    help="Forget the entry with this id (repeatable).",
)
@click.option("--scope", metavar="SCOPE", help="Only entries of this scope.")
@click.option("--global", "only_global", is_flag=True, help="Only global (unscoped) entries.")
@click.option("--session", "session_id", metavar="ID", help="Only entries of this session.")
@click.option("--key", metavar="KEY", help="Only the versions of this key (every one of them).")
@click.option(
    "--metadata",
    metavar="JSON",
    callback=_match_metadata,
    help='Only entries whose metadata holds these top-level values, e.g. \'{"user": "u-42"}\' '
    '(compared as JSON: 1 is not "1").',
)
@click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
@common_options()
def forget(
    ids: tuple[int, ...],
    scope: str | None,
    only_global: bool,
    session_id: str | None,
    key: str | None,
    metadata: dict[str, Any] | None,
    yes: bool,
) -> None:
    """Forget the entries that match every option given, for good, and print the
    receipt: the forget's id, the entries, their vectors, the later turns of
    their sessions re-indexed without their words, and the index segments
    rewritten.

    Unlike delete, nothing of their content stays readable in the database, its
    write-ahead log or the search index (see docs/forgetting.md); the change log
    keeps only their ids and the forget's id. Superseded versions are forgotten
    too.

    Without --yes, it says how many entries match and asks before forgetting
    them; without a terminal to ask on, it refuses (exit 2). At least one
    option is needed: --id, --scope, --global, --session, --key or --metadata.
    Exits with 1 when nothing matched, or an --id was not forgotten.
    """
    if scope is not None and only_global:
        raise click.UsageError("give --scope or --global, not both")
    for hint, given in (("--scope", scope), ("--session", session_id), ("--key", key)):
        if given == "":
            raise click.BadParameter("must not be empty", param_hint=f"'{hint}'")
    where: Any = None if only_global else scope if scope is not None else _UNSET
    if not (ids or where is not _UNSET or session_id is not None or key is not None or metadata):
        raise click.UsageError(
            "say what to forget: --id, --scope, --global, --session, --key or --metadata"
        )
    if not yes and not sys.stdin.isatty():
        raise CliError(
            "forget asks for confirmation and stdin is not a terminal: "
            "pass --yes to forget without asking"
        )
    opts = common()
    if not yes:
        with opts.store() as store:
            matching = _preview(store, ids, where, session_id, key, metadata)
        if not matching:
            if opts.as_json:
                echo_json(_record(None, ids))
            else:
                click.echo("nothing matches: nothing forgotten", err=True)
            click.get_current_context().exit(EXIT_NOT_FOUND)
        click.echo(
            f"{count(len(matching), 'entry', 'entries')} match, in {_scopes(matching)}. "
            "Forgetting them cannot be undone.",
            err=True,
        )
        _confirm(f"Forget {count(len(matching), 'entry', 'entries')}? [y/N]: ")
    with opts.store() as store:
        receipt = store.forget(
            ids=list(ids) or None,
            **({} if where is _UNSET else {"scope": where}),
            session_id=session_id,
            key=key,
            metadata=metadata,
        )
    record = _record(receipt, ids)
    if opts.as_json:
        echo_json(record)
    else:
        _show(receipt)
    if record["not_found"]:
        raise NotFoundError(
            "not forgotten (no such entry matched): " + ", ".join(map(str, record["not_found"]))
        )
    if not receipt.ids:
        if not opts.as_json:
            click.echo("nothing matched: nothing forgotten", err=True)
        click.get_current_context().exit(EXIT_NOT_FOUND)


def _confirm(question: str) -> None:
    """Asks on stderr and reads the answer from the terminal; anything but yes
    aborts (exit 130, nothing changed). Not ``click.confirm``: it writes to
    stdout, which ``--json`` keeps for the receipt."""
    click.echo(question, nl=False, err=True)
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        if not answer:
            click.echo(err=True)  # EOF: end the prompt's line
        raise click.Abort()


def _preview(
    store: ContextForgeSync,
    ids: tuple[int, ...],
    where: Any,
    session_id: str | None,
    key: str | None,
    metadata: dict[str, Any] | None,
) -> list[Hit]:
    """The entries ``forget`` would remove now: every version, superseded ones
    too, matching every criterion as the store does."""
    candidates: Iterable[Hit | None]
    if ids:
        candidates = store.get_many(list(dict.fromkeys(ids)), include_superseded=True)
    else:
        scope_filter: ScopeFilter = ALL_SCOPES if where is _UNSET else where
        candidates = store.list(scope=scope_filter, session_id=session_id, include_superseded=True)
    return [
        hit
        for hit in candidates
        if hit is not None
        and (where is _UNSET or hit.scope == where)
        and (session_id is None or hit.session_id == session_id)
        and (key is None or hit.key == key)
        and (metadata is None or _holds(hit.metadata, metadata))
    ]


def _holds(stored: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether ``stored`` has every top-level value of ``wanted``, compared as
    ``forget`` compares them: typed (``1`` is neither ``"1"`` nor ``true``),
    numbers by value (``1`` equals ``1.0``)."""
    return all(name in stored and _same(stored[name], value) for name, value in wanted.items())


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _scopes(hits: list[Hit]) -> str:
    names = sorted({h.scope for h in hits}, key=lambda s: (s is not None, s or ""))
    shown = ", ".join(printable(s) if s is not None else "(global)" for s in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"{count(len(names), 'scope')}: {shown}{more}"


def _record(receipt: Forgotten | None, ids: tuple[int, ...]) -> dict[str, Any]:
    """The receipt as JSON-ready values (``None``: nothing was forgotten)."""
    gone = set(receipt.ids) if receipt is not None else set()
    return {
        "id": receipt.id if receipt is not None else None,
        "at": iso(receipt.at) if receipt is not None else None,
        "entries": len(gone),
        "ids": list(receipt.ids) if receipt is not None else [],
        "vectors": receipt.vectors if receipt is not None else 0,
        "reindexed": receipt.reindexed if receipt is not None else 0,
        "segments": receipt.segments if receipt is not None else 0,
        "storage_scrubbed": receipt.storage_scrubbed if receipt is not None else None,
        "not_found": [i for i in dict.fromkeys(ids) if i not in gone],
    }


def _show(receipt: Forgotten) -> None:
    shown = ", ".join(map(str, receipt.ids[:_SHOWN_IDS]))
    if len(receipt.ids) > _SHOWN_IDS:
        shown += f", ... ({len(receipt.ids) - _SHOWN_IDS} more)"
    click.echo(f"forget     {receipt.id}")
    click.echo(f"at         {iso(receipt.at)}")
    click.echo(f"entries    {receipt.entries}" + (f" ({shown})" if shown else ""))
    click.echo(f"vectors    {receipt.vectors}")
    click.echo(f"reindexed  {count(receipt.reindexed, 'turn')}")
    click.echo(f"segments   {receipt.segments}")
    if not receipt.storage_scrubbed:
        click.echo(
            "storage    the server's own files may keep the bytes until its operator "
            "scrubs them (docs/forgetting.md, Remote stores)"
        )
