"""``eval``: measure retrieval quality on a labelled spec (:data:`eval_command`).

The spec format is described in ``docs/eval-spec.md``; the evaluation itself is
:mod:`contextforge.evaluation`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..config import Config
from ..errors import ContextForgeError
from ..evaluation.run import DEFAULT_BUDGET, DEFAULT_KS, check_ks, evaluate
from ..evaluation.spec import load_spec
from .errors import CliError, from_library
from .options import common, json_option
from .render import count
from .safe import printable

__all__ = ["config_from_pairs", "eval_", "eval_command"]

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
