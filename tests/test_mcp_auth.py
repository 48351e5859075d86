"""``contextforge mcp --http --tokens FILE``, and the SDK's token-verifier hook: real
servers in subprocesses on 127.0.0.1, reached with the official MCP client and with
plain HTTP requests. Each token's calls are confined to its own scopes."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from contextforge.mcp_server.auth import (
    GLOBAL_GRANT,
    TokenFile,
    TokenFileError,
    grants,
    policy_from_grants,
)
from contextforge.mcp_server.http import InsecureBind, check_bind
from contextforge.mcp_server.policy import ScopePolicy

from .test_mcp import refused, result, run_server
from .test_mcp_http import INITIALIZE, free_port, http_server, leaves, mcp_session, serving


def token() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def tokens() -> dict[str, str]:
    return {"alice": token(), "bob": token(), "expired": token(), "carol": token()}


def write_tokens(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document))
    path.chmod(0o600)
    return path


@pytest.fixture
def token_file(tmp_path: Path, tokens: dict[str, str]) -> Path:
    return write_tokens(
        tmp_path / "tokens.json",
        {
            tokens["alice"]: {"name": "alice", "scopes": ["user:alice"]},
            tokens["bob"]: {"name": "bob", "scope_prefixes": ["team:b:"], "allow_global": True},
            tokens["expired"]: {
                "name": "old",
                "scopes": ["user:alice"],
                "expires_at": "2020-01-01T00:00:00Z",
            },
        },
    )


async def post_initialize(port: int, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(
            f"http://127.0.0.1:{port}/mcp",
            json=INITIALIZE,
            timeout=30,
            headers={"Accept": "application/json, text/event-stream", **headers},
        )


def assert_no_token_logged(db: Path, tokens: dict[str, str]) -> None:
    log = (db.parent / "http.log").read_text()
    assert not any(t in log for t in tokens.values())


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


async def test_each_token_sees_only_its_own_scopes(
    db: Path, token_file: Path, tokens: dict[str, str]
) -> None:
    async with http_server(db, "--tokens", str(token_file), policy=()) as port:
        async with mcp_session(port, token=tokens["alice"]) as alice:
            mine = await result(alice, "save_memory", content="alice keeps the launch codes")
            assert mine["scope"] == "user:alice"  # her first scope is her default
            await refused(alice, "save_memory", content="x", scope="team:b:plans")
        async with mcp_session(port, token=tokens["bob"]) as bob:
            # Bob's grant has no exact scope but allows global entries: that is his default.
            noted = await result(bob, "save_memory", content="a global launch note")
            assert noted["scope"] is None
            theirs = await result(
                bob, "save_memory", content="bob keeps the launch plan", scope="team:b:plans"
            )
            # What Alice saved does not exist for Bob: not found, not "forbidden".
            assert "not found" in await refused(bob, "get_memory", id=mine["id"])
            assert "not found" in await refused(bob, "delete_memory", id=mine["id"])
            await refused(bob, "search_memory", query="launch", scope="user:alice")
            found = await result(bob, "search_memory", query="launch", scope="team:b:plans")
            assert [h["content"] for h in found["hits"]] == ["bob keeps the launch plan"]
            listed = await result(bob, "list_scopes")
            assert {s["scope"] for s in listed["scopes"]} == {"team:b:plans", None}
        async with mcp_session(port, token=tokens["alice"]) as alice:
            found = await result(alice, "search_memory", query="launch")
            assert [h["content"] for h in found["hits"]] == ["alice keeps the launch codes"]
            assert "not found" in await refused(alice, "get_memory", id=theirs["id"])
            await refused(alice, "search_memory", query="launch", scope="team:b:plans")
            listed = await result(alice, "list_scopes")
            assert listed["scopes"] == [{"scope": "user:alice", "entries": 1}]
            assert (await result(alice, "get_memory", id=mine["id"]))["content"].startswith("alice")
    assert_no_token_logged(db, tokens)


async def test_missing_wrong_and_expired_tokens_get_401(
    db: Path, token_file: Path, tokens: dict[str, str]
) -> None:
    async with http_server(db, "--tokens", str(token_file), policy=()) as port:
        assert (await post_initialize(port, bearer(tokens["alice"]))).status_code == 200
        refusals = [
            {},
            bearer(token()),
            bearer(tokens["expired"]),
            bearer(tokens["alice"][:-1]),
            bearer(tokens["alice"] + "x"),
            {"Authorization": f"Basic {tokens['alice']}"},
            {"Authorization": tokens["alice"]},
        ]
        for headers in refusals:
            answer = await post_initialize(port, headers)
            assert answer.status_code == 401, headers
            assert answer.headers["www-authenticate"].startswith("Bearer ")
            assert not any(t in answer.text for t in tokens.values())
        with pytest.raises(Exception) as refusal:
            async with mcp_session(port, token=tokens["expired"]):
                pass
        assert leaves(refusal.value)  # the official client fails to connect at all
    assert_no_token_logged(db, tokens)


async def test_a_session_is_bound_to_the_token_that_opened_it(
    db: Path, token_file: Path, tokens: dict[str, str]
) -> None:
    """Another valid token cannot ride on a session it did not open."""
    async with http_server(db, "--tokens", str(token_file), policy=()) as port:
        opened = await post_initialize(port, bearer(tokens["alice"]))
        session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                f"http://127.0.0.1:{port}/mcp",
                json=call,
                timeout=30,
                headers={
                    "Accept": "application/json, text/event-stream",
                    "mcp-session-id": session,
                    "mcp-protocol-version": "2025-06-18",
                    **bearer(tokens["bob"]),
                },
            )
        assert answer.status_code == 404


async def test_sighup_rotates_the_tokens_without_dropping_other_clients(
    db: Path, token_file: Path, tokens: dict[str, str]
) -> None:
    async with (
        http_server(db, "--tokens", str(token_file), policy=()) as port,
        mcp_session(port, token=tokens["bob"]) as bob,
    ):
        await result(bob, "save_memory", content="before the rotation", scope="team:b:x")
        assert (await post_initialize(port, bearer(tokens["carol"]))).status_code == 401
        # Alice's token is revoked, Carol's added, Bob's kept with a narrower grant.
        write_tokens(
            token_file,
            {
                tokens["bob"]: {"name": "bob", "scope_prefixes": ["team:b:"]},
                tokens["carol"]: {"name": "carol", "scopes": ["user:carol"]},
            },
        )
        os.kill(server_pid(port), signal.SIGHUP)
        with anyio.fail_after(30):
            while (await post_initialize(port, bearer(tokens["carol"]))).status_code != 200:
                await anyio.sleep(0.1)
        assert (await post_initialize(port, bearer(tokens["alice"]))).status_code == 401
        # Bob's open session goes on, under his new grant: global entries are gone.
        await result(bob, "save_memory", content="after the rotation", scope="team:b:x")
        await refused(bob, "save_memory", content="no longer allowed", scope=None)
        found = await result(bob, "search_memory", query="rotation", scope="team:b:x")
        assert len(found["hits"]) == 2
        # A file that no longer loads keeps the tokens loaded before.
        token_file.write_text("{not json")
        os.kill(server_pid(port), signal.SIGHUP)
        await anyio.sleep(1)
        assert (await post_initialize(port, bearer(tokens["carol"]))).status_code == 200
        await result(bob, "search_memory", query="rotation", scope="team:b:x")
    assert "kept the previous tokens" in (db.parent / "http.log").read_text()
    assert_no_token_logged(db, tokens)


def server_pid(port: int) -> int:
    """The pid of the process listening on ``port`` (the server, not a wrapper)."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":  # LISTEN
                inode = fields[9]
    assert inode is not None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
            except OSError:
                continue
    raise AssertionError(f"no process listens on {port}")


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "is not JSON"),
        ("[]", "must be a JSON object"),
        ({"T" * 20: {"scopes": ["user:a"], "expires_at": 0}}, "positive Unix time"),
        ({"short-token": {"scopes": ["user:a"]}}, "at least 16 characters"),
        ({"T" * 20: {"scopes": ["user:*"]}}, "wildcard"),
        ({"T" * 20: {}}, "give the scopes"),
        ({"T" * 20: {"scope": ["user:a"]}}, "unknown field(s) scope"),
        ({"T" * 20: {"scopes": "user:a"}}, "list of strings"),
        ({"T" * 20: {"scopes": ["user:a"], "expires_at": "tomorrow"}}, "expires_at"),
        ({"T" * 20: {"scopes": ["a"], "name": "x"}, "U" * 20: {"scopes": ["b"], "name": "x"}}, "x"),
    ],
)
def test_a_bad_tokens_file_is_refused_before_anything_opens(
    db: Path, tmp_path: Path, document: Any, message: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    started = run_server(db, "--http", "--tokens", str(path), "--port", str(free_port()))
    assert started.returncode == 2, started.stderr
    assert started.stderr.startswith("Error: ") and message in started.stderr
    assert "T" * 20 not in started.stderr and "short-token" not in started.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--tokens", "{file}"],  # without --http
        ["--http", "--tokens", "{file}", "--scope", "user:a"],
        ["--http", "--tokens", "{file}", "--allow-global"],
        ["--http", "--tokens", "{file}", "--insecure-no-auth"],
        ["--http", "--tokens", "{missing}"],
    ],
)
def test_tokens_flag_conflicts_are_refused(
    db: Path, token_file: Path, tmp_path: Path, flags: list[str]
) -> None:
    given = [f.format(file=token_file, missing=tmp_path / "missing.json") for f in flags]
    started = run_server(db, *given, "--port", str(free_port()))
    assert started.returncode == 2, started.stderr
    assert started.stderr.startswith("Error: ")
    assert not db.exists()


def test_a_public_bind_is_allowed_with_tokens_only() -> None:
    check_bind("0.0.0.0", insecure_no_auth=False, authenticated=True)
    with pytest.raises(InsecureBind, match="--tokens"):
        check_bind("0.0.0.0", insecure_no_auth=False, authenticated=False)


def test_the_grant_rule() -> None:
    policy = ScopePolicy.create(["user:a", "user:b"], ["team:x:"], allow_global=True)
    assert grants(policy) == [
        "memory:scope:user:a",
        "memory:scope:user:b",
        "memory:prefix:team:x:",
        GLOBAL_GRANT,
    ]
    assert policy_from_grants(grants(policy)) == policy
    assert policy_from_grants(["openid", "profile"]) is None  # grants nothing: refused
    assert policy_from_grants(["memory:scope:user:*"]) is None  # a wildcard: refused whole
    assert policy_from_grants(["memory:scope:"]) is None
    only = policy_from_grants(["openid", "memory:prefix:team:y"])
    assert only is not None and only.allows("team:y:1") and not only.allows("team:yy")


async def test_the_token_file_compares_whole_tokens(tmp_path: Path) -> None:
    secret = token()
    verifier = TokenFile(write_tokens(tmp_path / "t.json", {secret: {"scopes": ["user:a"]}}))
    verified = await verifier.verify_token(secret)
    assert verified is not None and verified.scopes == ["memory:scope:user:a"]
    assert secret not in repr(verified) and secret not in repr(verifier)
    for wrong in (secret[:-1], secret + "a", secret.upper(), "", " " + secret):
        assert await verifier.verify_token(wrong) is None
    # Expired by the file's own clock check, whatever the SDK does with the time.
    write_tokens(tmp_path / "t.json", {secret: {"scopes": ["user:a"], "expires_at": 1}})
    assert verifier.reload() and await verifier.verify_token(secret) is None
    # An empty file revokes everyone (a reload that fails would keep the tokens).
    write_tokens(tmp_path / "t.json", {})
    assert verifier.reload() and len(verifier) == 0
    with pytest.raises(TokenFileError):
        TokenFile(tmp_path / "missing.json")


# An OAuth resource server: the SDK's TokenVerifier hook with a JWT verifier, as a
# deployment with an authorization server would write one. Served by `serve()`.
OAUTH_SERVER = """
import sys, jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from contextforge.mcp_server import serve

KEY, ISSUER, DB, PORT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

class JwtVerifier:
    async def verify_token(self, token):
        try:
            claims = jwt.decode(token, KEY, algorithms=["HS256"], issuer=ISSUER,
                                audience=f"http://127.0.0.1:{PORT}/mcp")
        except jwt.InvalidTokenError:
            return None
        return AccessToken(token="jwt", client_id=claims["sub"], subject=claims["sub"],
                           scopes=claims.get("scope", "").split(), expires_at=claims["exp"],
                           claims={"iss": claims["iss"]})

serve(DB, http=True, port=PORT, token_verifier=JwtVerifier(),
      auth_settings=AuthSettings(issuer_url=ISSUER, resource_server_url=f"http://127.0.0.1:{PORT}/mcp",
                                 validate_token_resource=False))
"""


@asynccontextmanager
async def oauth_server(tmp_path: Path, key: str, issuer: str) -> AsyncIterator[int]:
    script = tmp_path / "oauth_server.py"
    script.write_text(textwrap.dedent(OAUTH_SERVER))
    port = free_port()
    log = tmp_path / "oauth.log"
    with log.open("w") as out:
        server = await anyio.open_process(
            [sys.executable, str(script), key, issuer, str(tmp_path / "memory.db"), str(port)],
            stdout=out,
            stderr=out,
        )
    async with serving(server, port, log):
        yield port


async def test_an_oauth_token_verifier_maps_claims_to_scopes(tmp_path: Path) -> None:
    key, issuer = secrets.token_hex(32), "https://auth.example"
    async with oauth_server(tmp_path, key, issuer) as port:
        audience = f"http://127.0.0.1:{port}/mcp"

        def issue(sub: str, scope: str, lifetime: int = 600, signer: str = key) -> str:
            now = int(time.time())
            claims = {"sub": sub, "iss": issuer, "aud": audience, "scope": scope}
            return jwt.encode({**claims, "iat": now, "exp": now + lifetime}, signer, "HS256")

        dana = issue("dana", "openid memory:scope:user:dana")
        erin = issue("erin", "memory:prefix:team:e:")
        async with mcp_session(port, token=dana) as session:
            saved = await result(session, "save_memory", content="dana's oauth memory")
            assert saved["scope"] == "user:dana"
            await refused(session, "search_memory", query="memory", scope="team:e:1")
        async with mcp_session(port, token=erin) as session:
            assert "not found" in await refused(session, "get_memory", id=saved["id"])
            await result(session, "save_memory", content="erin's", scope="team:e:1")
        for refused_token in (
            issue("dana", "memory:scope:user:dana", lifetime=-120),  # expired
            issue("dana", "memory:scope:user:dana", signer=secrets.token_hex(32)),  # forged
            issue("frank", "openid profile"),  # grants no memory scope
        ):
            assert (await post_initialize(port, bearer(refused_token))).status_code == 401
        async with httpx.AsyncClient() as client:
            metadata = await client.get(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=30
            )
        assert metadata.status_code == 200
        # mcp 1 writes the issuer with a trailing slash
        assert [s.rstrip("/") for s in metadata.json()["authorization_servers"]] == [issuer]
        refusal = await post_initialize(port, {})
        assert "oauth-protected-resource" in refusal.headers["www-authenticate"]
