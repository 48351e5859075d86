"""The ``contextforge eval`` command (:data:`eval_command`), and :func:`main` to run
it from Python or as ``python -m contextforge.evaluation.cli``.

The spec format is described in ``docs/eval-spec.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..cli.evaluate import config_from_pairs, eval_command

__all__ = ["config_from_pairs", "eval_command", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``contextforge eval`` with ``argv`` (the arguments after ``eval``;
    ``sys.argv[1:]`` by default) and returns its exit status: 0 on success, 2 for
    bad arguments, an unreadable or invalid spec or settings the store refuses, 3
    when the store itself fails."""
    from ..cli.main import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli_main(["eval", *args])
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
