"""Who may reach the server over HTTP: the bind address and the Host/Origin checks.

A bind to anything but a loopback address is refused unless the server
authenticates its callers (bearer tokens, :mod:`.auth`) or the operator says
``insecure_no_auth``. Whatever the address, the
MCP SDK's DNS-rebinding protection is on: a request is served only when its ``Host``
header names a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, any port), the
bound loopback address, or a name given in ``allowed_hosts``; a browser ``Origin``
must name one of them too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "HttpSettings",
    "InsecureBind",
    "check_bind",
    "http_settings",
    "is_loopback",
    "transport_security",
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

# NAME or NAME:PORT or NAME:*, NAME a DNS name, an IPv4 address or a bracketed IPv6 one.
_HOST = re.compile(
    r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::(?P<port>\*|[0-9]{1,5}))?"
)


class InsecureBind(ValueError):
    """An HTTP bind that would expose an unauthenticated server, or a bad --allowed-host."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False  # another name, or "": it may resolve to anything


def check_bind(host: str, *, insecure_no_auth: bool, authenticated: bool = False) -> None:
    """:class:`InsecureBind` unless ``host`` is loopback, the server authenticates
    its callers, or the operator accepted the risk."""
    if not (is_loopback(host) or authenticated or insecure_no_auth):
        raise InsecureBind(
            f"--host {host!r} is not a loopback address and the MCP server would have no "
            "authentication, so anyone who can reach it could read and change the memory: "
            "give each agent a token with --tokens FILE, bind 127.0.0.1, or pass "
            "--insecure-no-auth to serve it anyway"
        )


def transport_security(host: str, allowed_hosts: Iterable[str] = ()) -> TransportSecuritySettings:
    """The SDK's Host/Origin checks for a server bound to ``host``: loopback names,
    the bound address when it is loopback, and ``allowed_hosts`` (``NAME`` for any
    port or none, ``NAME:PORT``, ``NAME:*``)."""
    names = [f"{name}:*" for name in LOOPBACK_NAMES]
    if is_loopback(host) and host != "localhost":
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
        shown = f"[{address}]" if address.version == 6 else str(address)
        names.append(f"{shown}:*")
    for value in allowed_hosts:
        names.extend(_allowed(value))
    hosts = list(dict.fromkeys(names))
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


@dataclass(frozen=True)
class HttpSettings:
    """Where the server's streamable HTTP transport binds, and its Host/Origin checks."""

    host: str
    port: int
    transport_security: TransportSecuritySettings


def http_settings(host: str, port: int, allowed_hosts: Iterable[str] = ()) -> HttpSettings:
    """The HTTP settings of a server bound to ``host:port``, with the Host/Origin
    checks of :func:`transport_security`."""
    return HttpSettings(host, port, transport_security(host, allowed_hosts))


def _allowed(value: str) -> list[str]:
    """The Host header values one ``--allowed-host`` admits."""
    match = _HOST.fullmatch(value.lower())
    if match is None:
        raise InsecureBind(
            f"--allowed-host {value!r} is not a host name or address with an optional "
            "port (e.g. mcp.example.com, mcp.example.com:8443, 10.0.0.5, [fd00::5])"
        )
    name, port = match["name"], match["port"]
    if port is not None and port != "*" and not 1 <= int(port) <= 65535:
        raise InsecureBind(f"--allowed-host {value!r}: port out of range")
    return [f"{name}:{port}"] if port else [name, f"{name}:*"]
