"""``contextforge mcp --http``: a real server in a subprocess on 127.0.0.1, reached with
plain HTTP requests and with the MCP SDK's streamable HTTP client. Who may reach it:
the bind address and the Host/Origin (DNS-rebinding) checks."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process
from contextforge import ContextForge, __version__
from contextforge.mcp_server import ScopePolicy, build_server
from contextforge.mcp_server.compat import MCP2
from contextforge.mcp_server.http import http_settings
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from .test_mcp import SERVER, TOOLS, field, refused, result

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
LOOPBACK_ONLY = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@asynccontextmanager
async def http_server(
    db: Path, *flags: str, policy: tuple[str, ...] = ("--scope", "user:42")
) -> AsyncIterator[int]:
    """``contextforge mcp --http`` on 127.0.0.1 at a free port, once it answers; the
    port. Its output goes to ``http.log`` beside ``db``."""
    port = free_port()
    log = db.parent / "http.log"
    with log.open("w") as out:
        server = await anyio.open_process(
            [
                sys.executable,
                *SERVER,
                "--db",
                str(db),
                *policy,
                "--http",
                "--port",
                str(port),
                *flags,
            ],
            stdout=out,
            stderr=out,
        )
    async with serving(server, port, log):
        yield port


@asynccontextmanager
async def serving(server: Process, port: int, log: Path) -> AsyncIterator[None]:
    """Waits until ``server`` answers HTTP on ``port`` (its output in ``log``),
    and stops it afterwards."""
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    async with httpx.AsyncClient() as client:
                        await client.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                    break
                except httpx.TransportError:
                    assert server.returncode is None, log.read_text()
                    await anyio.sleep(0.2)
        yield
    finally:
        if server.returncode is None:
            server.terminate()
        with anyio.fail_after(30):
            await server.wait()
        await server.aclose()


async def post_initialize(port: int, **headers: str) -> int:
    """The status of a plain ``initialize`` POST sent with these headers."""
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"http://127.0.0.1:{port}/mcp",
            json=INITIALIZE,
            timeout=30,
            headers={"Accept": "application/json, text/event-stream", **headers},
        )
    return answer.status_code


@asynccontextmanager
async def mcp_session(
    port: int, host: str | None = None, token: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session through the SDK's client, sending ``Host: host`` and
    ``Authorization: Bearer token`` if given."""
    headers = {"Host": host} if host else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    # The SDK's HTTP client: httpx2 on mcp 2 (whose transport yields two streams,
    # where mcp 1's yields three).
    client: Any = sdk_httpx().AsyncClient(headers=headers or None, timeout=60)
    async with (
        client,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        hello = await session.initialize()
        assert field(hello, "server_info").version == __version__
        yield session


def sdk_httpx() -> Any:
    """The HTTP library of the SDK's client: httpx2 on mcp 2, httpx on mcp 1."""
    if MCP2:
        import httpx2  # type: ignore[import-not-found, unused-ignore]

        return httpx2
    return httpx


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


async def test_streamable_http(db: Path) -> None:
    async with http_server(db) as port, mcp_session(port) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        await result(session, "save_memory", content="served over http")
        found = await result(session, "search_memory", query="http")
        assert [h["content"] for h in found["hits"]] == ["served over http"]
        await refused(session, "search_memory", query="http", scope="user:4")


async def test_host_and_origin_are_checked_on_loopback(db: Path) -> None:
    async with http_server(db) as port:
        own = f"127.0.0.1:{port}"
        assert await post_initialize(port) == 200
        assert await post_initialize(port, Host=f"localhost:{port}") == 200
        assert await post_initialize(port, Origin=f"http://{own}") == 200
        assert await post_initialize(port, Host="evil.example") == 421
        assert await post_initialize(port, Host=f"evil.example:{port}") == 421
        assert await post_initialize(port, Origin="http://evil.example") == 403
        with pytest.raises(Exception) as refusal:
            async with mcp_session(port, host=f"evil.example:{port}"):
                pass
        if MCP2:  # its client reports any HTTP error status as this MCP error (the 421 is above)
            from mcp import MCPError  # type: ignore[attr-defined, unused-ignore]

            assert [str(e) for e in leaves(refusal.value) if isinstance(e, MCPError)] == [
                "Server returned an error response"
            ]
        else:
            assert [
                e.response.status_code
                for e in leaves(refusal.value)
                if isinstance(e, httpx.HTTPStatusError)
            ] == [421]


async def test_allowed_host_adds_a_name(db: Path) -> None:
    async with http_server(db, "--allowed-host", "mcp.example") as port:
        async with mcp_session(port, host=f"mcp.example:{port}") as session:
            await result(session, "save_memory", content="reached by name")
        assert await post_initialize(port, Host="mcp.example") == 200
        assert await post_initialize(port, Origin="https://mcp.example") == 200
        assert await post_initialize(port, Host=f"evil.example:{port}") == 421
        assert await post_initialize(port, Host=f"mcp.example.evil:{port}") == 421


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "example.com", ""])
def test_public_bind_is_refused_without_insecure_no_auth(db: Path, host: str) -> None:
    started = run(db, "--http", "--host", host, "--port", str(free_port()))
    assert started.returncode == 2
    assert started.stderr.startswith("Error: ") and len(started.stderr.strip().splitlines()) == 1
    assert "not a loopback address" in started.stderr and "--insecure-no-auth" in started.stderr
    assert not db.exists()  # refused before anything was opened, let alone bound


@pytest.mark.parametrize(
    "flags",
    [
        ["--insecure-no-auth"],
        ["--allowed-host", "mcp.example"],
        ["--http", "--allowed-host", "*"],
        ["--http", "--allowed-host", "http://mcp.example"],
        ["--http", "--allowed-host", "fd00::1"],
        ["--http", "--allowed-host", "mcp.example:99999"],
        ["--http", "--allowed-host", ""],
    ],
)
def test_bad_http_flags_are_refused(db: Path, flags: list[str]) -> None:
    started = run(db, *flags, "--port", str(free_port()))
    assert started.returncode == 2, started.stderr
    assert started.stderr.startswith("Error: ") and len(started.stderr.strip().splitlines()) == 1
    assert not db.exists()


async def test_public_bind_keeps_the_host_checks(tmp_path: Path) -> None:
    """``--host 0.0.0.0 --insecure-no-auth`` is not bound here (tests bind loopback
    only): the settings the SDK serves with are checked instead (those ``serve``
    runs the server with; on mcp 1 they are the server's own settings too)."""
    policy = ScopePolicy.create(["user:42"], [], allow_global=False)
    async with await ContextForge.open(str(tmp_path / "memory.db")) as store:

        def served(host: str, allowed: list[str]) -> Any:
            security = http_settings(host, 8000, allowed).transport_security
            if not MCP2:
                server: Any = build_server(store, policy, host=host, allowed_hosts=allowed)
                assert server.settings.transport_security == security
            return security

        for host in ("0.0.0.0", "::", "192.0.2.7"):
            default = served(host, [])
            assert default is not None and default.enable_dns_rebinding_protection
            assert default.allowed_hosts == LOOPBACK_ONLY
            assert "http://evil.example" not in default.allowed_origins
            security = served(host, ["MCP.example:8443"])
            assert security is not None
            assert security.allowed_hosts == [*LOOPBACK_ONLY, "mcp.example:8443"]
            assert "https://mcp.example:8443" in security.allowed_origins
        other_loopback = served("127.0.0.5", [])
        assert other_loopback is not None
        assert other_loopback.allowed_hosts == [*LOOPBACK_ONLY, "127.0.0.5:*"]


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner: tuple[BaseException, ...] = getattr(error, "exceptions", ())
    return [leaf for e in inner for leaf in leaves(e)] if inner else [error]


def run(db: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``contextforge mcp --db DB --scope user:42 FLAGS``, which must exit by itself."""
    return subprocess.run(
        [sys.executable, *SERVER, "--db", str(db), "--scope", "user:42", *flags],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
