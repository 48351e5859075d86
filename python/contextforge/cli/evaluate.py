"""``eval``: measure retrieval quality on a labelled spec."""

from __future__ import annotations

import click

__all__ = ["eval_"]


@click.command("eval", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                         "help_option_names": []})
@click.pass_context
def eval_(ctx: click.Context) -> None:
    """Evaluate retrieval on SPEC: recall@k, hit@k, MRR, nDCG and budget recall.

    Run 'contextforge eval --help' for the options.
    """
    from ..evaluation.cli import main

    ctx.exit(main(ctx.args, prog="contextforge eval"))
