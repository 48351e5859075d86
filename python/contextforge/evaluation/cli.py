"""The ``contextforge eval`` command, as a function the CLI calls::

    contextforge eval SPEC_PATH [--k 1,5,10,25] [--budget 512] [--json OUT] [--config K=V ...]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import StorageError
from .run import DEFAULT_BUDGET, DEFAULT_KS, evaluate
from .spec import load_spec

__all__ = ["config_from_pairs", "main"]

# The evaluation always runs in a fresh in-memory store.
_FIXED = frozenset({"path", "index_dir"})
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def main(argv: Sequence[str] | None = None, *, prog: str = "contextforge eval") -> int:
    """Evaluates a spec and prints a markdown table; returns the exit status.

    ``argv`` holds the arguments after the command name (``sys.argv[1:]`` by
    default). Exit status, as the ``contextforge`` command's: 0 on success, 2 for
    bad arguments, an unreadable or invalid spec or settings the store refuses, 3
    when the store itself fails.
    """
    parser = _parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2
    try:
        ks = tuple(int(k) for k in args.k.split(",") if k.strip())
        config = config_from_pairs(args.config)
        spec = load_spec(args.spec)
        report = asyncio.run(evaluate(spec, config, ks=ks, budget=args.budget))
        if args.json:
            Path(args.json).write_text(report.to_json() + "\n", encoding="utf-8")
    except (ValueError, OSError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 3 if isinstance(err, StorageError) else 2
    print(f"## {report.name}: {len(report.queries)} queries, budget {report.budget} tokens\n")
    print(report.table())
    return 0


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
    choices = [repr(c) for o in options if typing.get_origin(o) is typing.Literal
               for c in typing.get_args(o)]
    wanted = f"one of {', '.join(choices)}" if choices else getattr(hint, "__name__", str(hint))
    raise ValueError(f"--config {key}: {value!r} is not {wanted}")


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Measure retrieval quality on a spec: recall@k, hit@k, MRR, nDCG@k "
        "and recall within a token budget, overall and per category.",
    )
    parser.add_argument("spec", metavar="SPEC_PATH", help="the spec (JSON)")
    parser.add_argument("--k", default=",".join(map(str, DEFAULT_KS)),
                        help="comma-separated cut-offs (default: %(default)s)")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                        help="token budget for recall@budget (default: %(default)s)")
    parser.add_argument("--json", metavar="OUT", help="also write the full report as JSON")
    parser.add_argument("--config", metavar="KEY=VALUE", action="extend", nargs="+",
                        default=[],
                        help="Config settings, e.g. recency_weight=0")
    return parser


if __name__ == "__main__":
    sys.exit(main())
