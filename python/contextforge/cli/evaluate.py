"""``eval``: measure retrieval quality on a labelled spec (:data:`eval_command`), and
``eval-updates``: the knowledge-update benchmark (:data:`eval_updates_command`).

The spec format is described in ``docs/eval-spec.md``; the evaluation itself is
:mod:`contextforge.evaluation`; the benchmark is ``docs/knowledge-update.md``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..config import Config
from ..errors import ContextForgeError
from ..evaluation import updates
from ..evaluation.run import DEFAULT_BUDGET, DEFAULT_KS, check_ks, evaluate
from ..evaluation.spec import load_spec
from .errors import CliError, from_library
from .options import common, json_option
from .render import count
from .safe import printable

__all__ = [
    "config_from_pairs",
    "eval_",
    "eval_command",
    "eval_updates",
    "eval_updates_command",
]

# The evaluation always runs in a fresh in-memory store.
_FIXED = frozenset({"path", "index_dir"})
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _cutoffs(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        return check_ks([int(k) for k in value.split(",") if k.strip()])
    except ValueError as err:
        raise click.BadParameter(
            f"expected positive integers separated by commas ({err})", ctx=ctx, param=param
        ) from None


@click.command("eval")
@click.argument("spec", metavar="SPEC")
@click.option(
    "--k",
    "ks",
    metavar="K,...",
    default=",".join(map(str, DEFAULT_KS)),
    show_default=True,
    callback=_cutoffs,
    help="The cut-offs of recall@k, hit@k and nDCG@k, separated by commas.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    default=DEFAULT_BUDGET,
    show_default=True,
    help="The token budget of recall@budget.",
)
@click.option(
    "--config",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Config setting for the store (repeatable), e.g. recency_weight=0 or "
    "embedder=local; 'none' for an optional setting's None.",
)
@click.option("--report", metavar="FILE", help="Also write the full report as JSON to FILE.")
@json_option("Print the full report as JSON instead of the table.")
def eval_command(
    ks: tuple[int, ...], budget: int, settings: tuple[str, ...], spec: str, report: str | None
) -> None:
    """Measure retrieval quality on SPEC (JSON): recall@k, hit@k, MRR, nDCG@k and
    recall within a token budget, overall and per category.

    SPEC holds entries and queries with the ids of the entries that answer them
    (the format: docs/eval-spec.md). The entries are saved into a new in-memory
    store with the --config settings, each query is run in its scope, and a
    markdown table of the metrics is printed.

    Exits with 2 for a bad spec or bad settings, 3 when the store fails.
    """
    try:
        config = config_from_pairs(settings)
        loaded = load_spec(spec)
        result = asyncio.run(evaluate(loaded, config, ks=ks, budget=budget))
        if report is not None:
            Path(report).write_text(result.to_json() + "\n", encoding="utf-8")
    except ContextForgeError as err:
        raise from_library(err) from err
    except OSError as err:
        raise CliError(f"{getattr(err, 'filename', None) or spec}: {err.strerror or err}") from None
    except ValueError as err:
        raise CliError(str(err)) from None
    if common().as_json:
        click.echo(result.to_json())
        return
    click.echo(
        f"## {printable(result.name)}: {count(len(result.queries), 'query', 'queries')}, "
        f"budget {result.budget} tokens\n"
    )
    click.echo("\n".join(printable(line) for line in result.table().splitlines()))


def config_from_pairs(pairs: Sequence[str]) -> Config:
    """A :class:`Config` from ``key=value`` overrides, each value read as its field's type
    (``none`` for an optional field's ``None``)."""
    hints = typing.get_type_hints(Config)
    known = sorted(f.name for f in dataclasses.fields(Config) if f.name not in _FIXED)
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            raise ValueError(f"--config takes key=value with a key among {known}, got {pair!r}")
        if key == "embedder":
            changes[key] = _embedder(value.strip())
            continue
        changes[key] = _coerce(key, value.strip(), hints[key])
    return dataclasses.replace(Config(), **changes)


def _embedder(value: str) -> object:
    """``embedder=local`` is the built-in model; any other value is the path of a
    sentence-transformers model directory; ``none`` is no embedder."""
    if value.lower() in ("none", "null", ""):
        return None
    from ..embedders import LocalEmbedder

    return LocalEmbedder() if value.lower() == "local" else LocalEmbedder(value)


def _coerce(key: str, value: str, hint: Any) -> object:
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = typing.get_args(hint) if union else (hint,)
    if type(None) in options and value.lower() in ("none", "null"):
        return None
    for option in options:
        if option is bool and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        if typing.get_origin(option) is typing.Literal and value in typing.get_args(option):
            return value
        if option is str:
            return value
        if option in (int, float):
            try:
                return option(value)
            except ValueError:
                continue
    choices = [
        repr(c)
        for o in options
        if typing.get_origin(o) is typing.Literal
        for c in typing.get_args(o)
    ]
    wanted = f"one of {', '.join(choices)}" if choices else getattr(hint, "__name__", str(hint))
    raise ValueError(f"--config {key}: {value!r} is not {wanted}")


eval_ = eval_command


def _systems(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    if not names or any(n not in updates.SYSTEMS for n in names):
        raise click.BadParameter(
            f"expected names among {', '.join(updates.SYSTEMS)}, separated by commas",
            ctx=ctx,
            param=param,
        )
    return names


@click.command("eval-updates")
@click.option(
    "--subjects",
    type=click.IntRange(min=1),
    default=updates.DEFAULT_SUBJECTS,
    show_default=True,
    help="How many subjects (people, projects, services) the generated memories mention.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The dataset's seed.")
@click.option(
    "--budget",
    "budgets",
    type=click.IntRange(min=1),
    multiple=True,
    metavar="TOKENS",
    help=f"A token budget (repeatable; default: {', '.join(map(str, updates.DEFAULT_BUDGETS))}).",
)
@click.option(
    "--systems",
    metavar="NAME,...",
    default=",".join(updates.SYSTEMS),
    show_default=True,
    callback=_systems,
    help="The systems to compare.",
)
@click.option("--report", metavar="FILE", help="Also write every number as JSON to FILE.")
@json_option("Print every number as JSON instead of the table.")
def eval_updates_command(
    subjects: int, seed: int, budgets: tuple[int, ...], systems: tuple[str, ...], report: str | None
) -> None:
    """Measure how memory handles facts that change: contextforge with keyed
    facts, without keys, and plain BM25 (when bm25s is installed) on generated
    histories of facts with chit-chat in between.

    Prints current@1 (the current version is the top hit), current in budget,
    stale leak (an older version is among the packed hits), as-of@1 (the version
    true on a past date is the top hit) and history, per system and budget. The
    method: docs/knowledge-update.md.
    """
    try:
        dataset = updates.generate(seed, subjects)
        reports = asyncio.run(_run_updates(dataset, budgets or updates.DEFAULT_BUDGETS, systems))
        payload = {"seed": seed, "subjects": subjects, "reports": [r.as_dict() for r in reports]}
        if report is not None:
            Path(report).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    except ContextForgeError as err:
        raise from_library(err) from err
    except OSError as err:
        raise CliError(
            f"{getattr(err, 'filename', None) or report}: {err.strerror or err}"
        ) from None
    if common().as_json:
        click.echo(json.dumps(payload, indent=1))
        return
    click.echo(updates.table(reports).rstrip("\n"))


async def _run_updates(
    dataset: updates.Dataset, budgets: Sequence[int], systems: Sequence[str]
) -> list[updates.Report]:
    return [await updates.run(dataset, budget=b, systems=systems) for b in budgets]


eval_updates = eval_updates_command
