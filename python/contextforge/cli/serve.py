"""``mcp``: serve the store to agents over the Model Context Protocol."""

from __future__ import annotations

import os

import click

from ..errors import ContextForgeError
from .errors import CliError, from_library
from .options import common, common_options
from .paths import TOKEN_VAR, encryption_key, is_url, prepare_db, resolve_db

__all__ = ["mcp"]


@click.command()
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="A scope the agent may use (repeatable). The first is the default.",
)
@click.option(
    "--scope-prefix",
    "prefixes",
    multiple=True,
    metavar="PREFIX",
    help="Allow every scope under PREFIX, e.g. 'team:a:' (repeatable).",
)
@click.option("--allow-global", is_flag=True, help="Also allow global (unscoped) entries.")
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--tokens",
    type=click.Path(dir_okay=False, path_type=str),
    metavar="FILE",
    help="With --http, require a bearer token from FILE on every request: a JSON object "
    'mapping each token to its policy, {"TOKEN": {"scopes": [...], "scope_prefixes": [...], '
    '"allow_global": false}}. Each token\'s calls are confined to its own scopes (instead '
    "of --scope and friends). Re-read on SIGHUP.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind with --http. Anything but a loopback address needs --tokens "
    "(or --insecure-no-auth).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
    help="Port with --http.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST[:PORT]",
    help="With --http, also serve requests whose Host header names HOST (any port "
    "unless one is given). Repeatable. Loopback names are always served.",
)
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    help="With --http and no --tokens, allow a non-loopback --host although the server "
    "has no authentication: anyone who reaches it can read and change the memory.",
)
@common_options(with_json=False)
def mcp(
    scopes: tuple[str, ...],
    prefixes: tuple[str, ...],
    allow_global: bool,
    http: bool,
    tokens: str | None,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    insecure_no_auth: bool,
) -> None:
    """Run an MCP server over stdio (or streamable HTTP with --http).

    The agent can read and change only the scopes given here: a tool call naming
    another scope is refused, and entries outside them are "not found". Calls that
    name no scope use the first --scope. With --scrub-pii, what the tools save is
    scrubbed of PII too.

    --http serves http://HOST:PORT/mcp. With --tokens FILE every request needs
    "Authorization: Bearer TOKEN" with a token from FILE, and each token's calls
    are confined to the scopes FILE gives it, so one server serves several agents;
    send the process SIGHUP to re-read FILE. Without --tokens there is no
    authentication, so HOST must be a loopback address unless --insecure-no-auth
    is given. Whatever HOST, a request is served only when its Host header (and a
    browser's Origin) names 127.0.0.1, localhost, [::1] or an --allowed-host,
    against DNS rebinding.
    """
    try:
        from ..mcp_server import ScopePolicy, serve
        from ..mcp_server.auth import TokenFile
        from ..mcp_server.http import check_bind, is_loopback, transport_security
    except ImportError as err:
        raise CliError(
            f"the MCP server needs the 'mcp' package: pip install 'contextforge-memory[mcp]' ({err})"
        ) from None
    if not http and (allowed_hosts or insecure_no_auth or tokens):
        raise CliError("--allowed-host, --insecure-no-auth and --tokens apply to --http only")
    if tokens and (scopes or prefixes or allow_global):
        raise CliError(
            "with --tokens each token's scopes come from the file: "
            "drop --scope, --scope-prefix and --allow-global"
        )
    if tokens and insecure_no_auth:
        raise CliError("--insecure-no-auth contradicts --tokens: drop one")
    policy = None
    try:
        if tokens:
            TokenFile(tokens)  # a bad file is refused here, before anything is opened
        else:
            policy = ScopePolicy.create(scopes, prefixes, allow_global=allow_global)
        if http:
            check_bind(host, insecure_no_auth=insecure_no_auth, authenticated=bool(tokens))
            accepted = transport_security(host, allowed_hosts).allowed_hosts
    except (
        ValueError
    ) as err:  # a bad policy or tokens file, an exposed bind or a bad --allowed-host
        raise CliError(str(err)) from None
    opts = common()
    path, is_default = resolve_db(opts.db)
    problem = prepare_db(path, is_default)
    if problem:
        raise CliError(problem)
    if http and not tokens and not is_loopback(host):
        click.echo(
            f"Warning: serving MCP on {host!r} port {port} without authentication; "
            f"accepted Host headers: {', '.join(accepted)}",
            err=True,
        )
    try:
        serve(
            path,
            policy,
            http=http,
            host=host,
            port=port,
            allowed_hosts=allowed_hosts,
            insecure_no_auth=insecure_no_auth,
            tokens=tokens or None,
            scrub_pii=opts.scrub_pii,
            auth_token=(os.environ.get(TOKEN_VAR) or None) if is_url(path) else None,
            encryption_key=encryption_key(),
        )
    except ContextForgeError as err:
        raise from_library(err) from err
