"""``mcp``: serve the store to agents over the Model Context Protocol."""

from __future__ import annotations

import click

from ..errors import ContextForgeError
from .errors import CliError, from_library
from .options import common, common_options
from .paths import prepare_db, resolve_db

__all__ = ["mcp"]


@click.command()
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
              help="A scope the agent may use (repeatable). The first is the default.")
@click.option("--scope-prefix", "prefixes", multiple=True, metavar="PREFIX",
              help="Allow every scope under PREFIX, e.g. 'team:a:' (repeatable).")
@click.option("--allow-global", is_flag=True, help="Also allow global (unscoped) entries.")
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="Port with --http.")
@common_options(with_json=False)
def mcp(
    scopes: tuple[str, ...], prefixes: tuple[str, ...], allow_global: bool, http: bool,
    host: str, port: int,
) -> None:
    """Run an MCP server over stdio (or streamable HTTP with --http).

    The agent can read and change only the scopes given here: a tool call naming
    another scope is refused, and entries outside them are "not found". Calls that
    name no scope use the first --scope.

    --http serves http://HOST:PORT/mcp without authentication: keep it on
    localhost or put it behind an authenticating proxy.
    """
    try:
        from ..mcp_server import ScopePolicy, serve
    except ImportError as err:
        raise CliError(
            f"the MCP server needs the 'mcp' package: pip install 'contextforge[mcp]' ({err})"
        ) from None
    try:
        policy = ScopePolicy.create(scopes, prefixes, allow_global=allow_global)
    except ValueError as err:
        raise CliError(str(err)) from None
    path, is_default = resolve_db(common().db)
    problem = prepare_db(path, is_default)
    if problem:
        raise CliError(problem)
    try:
        serve(path, policy, http=http, host=host, port=port)
    except ContextForgeError as err:
        raise from_library(err) from err
