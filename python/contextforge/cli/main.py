"""The ``contextforge`` command: the root group and the entry point."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click

from .. import __version__
from .audit import changes, derived, reads, sources
from .distill import distill, distill_session
from .entries import delete, get, history, query, save
from .errors import CliError
from .evaluate import eval_, eval_updates
from .forget import forget
from .importing import import_
from .info import scopes, stats
from .options import Common, common_options
from .safe import printable
from .serve import mcp
from .transfer import export

__all__ = ["cli", "main"]


class _NeverRaised(click.UsageError):
    pass


# click >= 8.2 raises this for `contextforge` with no command; older versions print help.
_NO_ARGS: type[click.UsageError] = getattr(click.exceptions, "NoArgsIsHelpError", _NeverRaised)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="contextforge")
@common_options()
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Durable, scoped, searchable memory for LLM applications.

    \b
    Exit codes:
      0  success
      1  not found, or no results
      2  usage error or bad input (arguments, files, records); nothing changed
      3  storage error: the database or its search index failed
      4  model error: distill --model could not reach the model server, or its
         answer was unusable (the store is fine; retrying may help)
    """
    ctx.ensure_object(Common)


for command in (
    save,
    query,
    get,
    delete,
    forget,
    history,
    changes,
    reads,
    sources,
    derived,
    scopes,
    stats,
    import_,
    export,
    distill,
    distill_session,
    eval_,
    eval_updates,
    mcp,
):
    cli.add_command(command)


def main(argv: Sequence[str] | None = None) -> None:
    """Runs the CLI and exits with its code. Every error is one line on stderr."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        code = cli.main(args=args, prog_name="contextforge", standalone_mode=False)
    except _NO_ARGS as err:  # a group called bare: its help, as click shows it
        err.show()
        sys.exit(err.exit_code)
    except click.UsageError as err:
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx else ""
        click.echo(f"Error: {printable(' '.join(err.format_message().split()))}{hint}", err=True)
        sys.exit(err.exit_code)
    except CliError as err:
        err.show()
        sys.exit(err.exit_code)
    except click.ClickException as err:  # e.g. click.File's "Could not open file"
        click.echo(f"Error: {printable(' '.join(err.format_message().split()))}", err=True)
        sys.exit(err.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (`contextforge export | head`): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
