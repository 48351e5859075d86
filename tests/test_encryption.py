"""Encryption at rest: ``Config(encryption_key=...)`` on a real libSQL file.

Every byte of every file in the store's folder is searched for the saved texts
(the database, its WAL, anything else beside it), after a close and in the middle
of a save burst; a wrong key, no key and a key for a plain store are refused
without changing a byte; ``rekey`` survives a SIGKILL midway."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from contextforge import (
    ALL_SCOPES,
    Config,
    ContextForge,
    ContextForgeSync,
    EncryptionKeyError,
    InvalidInputError,
    InvalidTypeError,
    RetryableStorageError,
)

KEY = "correct horse battery staple"
MARKERS = [f"zq{n}marker{n * 7919}" for n in range(40)]
#: Current entries `fill` leaves: 20 notes, 1 current fact, 2 linked, 16 bulk.
FILLED = 39


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (recursively), by relative path."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def leaked(folder: Path, markers: list[str]) -> list[tuple[str, str]]:
    """(file, marker) for every marker found in any file under ``folder``, as UTF-8
    or UTF-16 (the way SQLite or a tokenizer might store it)."""
    found = []
    for name, data in folder_bytes(folder).items():
        for marker in markers:
            for encoded in (marker.encode(), marker.encode("utf-16-le")):
                if encoded in data:
                    found.append((name, marker))
    return found


def assert_sealed(index: Path) -> None:
    """Every file of the index folder is sealed (AES-256-GCM), but for empty lock
    files and the clean-close mark, which holds the last commit's stamp."""
    assert index.is_dir()
    files = [p for p in index.rglob("*") if p.is_file()]
    assert any(p.name == "meta.json" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not data or path.name == "closed-cleanly" or data.startswith(b"CFSEAL1\0"), path


def digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in folder_bytes(folder).items()}


async def fill(cf: ContextForge, markers: list[str]) -> None:
    """Every kind of row a marker can reach: plain entries with vectors, a keyed
    fact and its correction, a derived entry with sources, and the read audit."""
    rng = np.random.default_rng(7)
    for i, marker in enumerate(markers[:20]):
        vector = rng.standard_normal(8).astype(np.float32)
        await cf.save(f"the note {marker} about deploys", scope="team:a", embedding=vector)
    await cf.save(f"user lives in {markers[20]}", scope="team:a", key="user.city")
    await cf.save(f"user lives in {markers[21]}", scope="team:a", key="user.city")
    first = await cf.save(f"meeting notes {markers[22]}", scope="team:a")
    await cf.save(f"summary of {markers[23]}", scope="team:a", sources=[first])
    await cf.save_many([{"content": f"bulk {m}", "scope": "team:b"} for m in markers[24:]])
    await cf.query(markers[0], "team:a")  # recorded by the read audit, query text included


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


def encrypted(folder: Path, **options: object) -> Config:
    return Config(
        path=str(folder / "memory.db"),
        encryption_key=KEY,
        audit_reads=True,
        audit_query_text=True,
        **options,  # type: ignore[arg-type]
    )


async def test_no_file_holds_a_saved_text_and_the_key_finds_them_again(folder: Path) -> None:
    async with await ContextForge.open(encrypted(folder)) as cf:
        assert cf.encrypted
        await fill(cf, MARKERS)
        await cf.flush()
    assert leaked(folder, MARKERS) == []
    assert_sealed(folder / "memory.db.index")
    plain = folder.parent / "plain"
    plain.mkdir()
    async with await ContextForge.open(
        Config(path=str(plain / "memory.db"), audit_reads=True, audit_query_text=True)
    ) as cf:
        assert not cf.encrypted
        await fill(cf, MARKERS)
    assert leaked(plain, MARKERS)  # the same grep finds them in a plain store

    async with await ContextForge.open(encrypted(folder)) as cf:
        for marker in (MARKERS[0], MARKERS[21], MARKERS[30]):
            hits = await cf.query(marker, ALL_SCOPES)
            assert any(marker in h.content for h in hits), marker
        assert [h.content for h in await cf.history("user.city", "team:a")][-1].endswith(
            MARKERS[21]
        )
    with ContextForgeSync.open(encrypted(folder, read_only=True)) as cf:
        assert cf.count(ALL_SCOPES) == FILLED
    assert leaked(folder, MARKERS) == []


async def test_no_file_holds_a_saved_text_during_a_save_burst(folder: Path) -> None:
    markers = [f"burst{n}zz{n * 31}" for n in range(600)]
    async with await ContextForge.open(encrypted(folder)) as cf:
        done = asyncio.Event()

        async def burst() -> None:
            for start in range(0, len(markers), 50):
                await asyncio.gather(
                    *(cf.save(f"burst entry {m}", scope="s") for m in markers[start : start + 50])
                )
            done.set()

        saving = asyncio.create_task(burst())
        looks = 0
        while not done.is_set():
            assert leaked(folder, markers) == []
            looks += 1
            await asyncio.sleep(0.01)
        await saving
        assert leaked(folder, markers) == []
        assert looks >= 2 and await cf.count("s") == len(markers)


async def test_a_wrong_or_missing_key_changes_nothing(folder: Path) -> None:
    async with await ContextForge.open(encrypted(folder)) as cf:
        await fill(cf, MARKERS)
    before = digests(folder)
    for config in (
        Config(path=str(folder / "memory.db"), encryption_key="wrong key"),
        Config(path=str(folder / "memory.db"), encryption_key=b"\x00" * 32),
        Config(path=str(folder / "memory.db")),
        Config(path=str(folder / "memory.db"), read_only=True),
    ):
        with pytest.raises(EncryptionKeyError) as refused:
            await ContextForge.open(config)
        assert "wrong key" not in str(refused.value)
        assert digests(folder) == before, "a refused open changed the folder"
    async with await ContextForge.open(encrypted(folder)) as cf:
        assert await cf.count(ALL_SCOPES) == FILLED


async def test_a_key_for_a_plain_store_is_refused(folder: Path) -> None:
    path = str(folder / "memory.db")
    async with await ContextForge.open(path) as cf:
        await cf.save("a plain note")
    before = digests(folder)
    with pytest.raises(EncryptionKeyError, match="not encrypted"):
        await ContextForge.open(Config(path=path, encryption_key=KEY))
    assert digests(folder) == before
    async with await ContextForge.open(path) as cf:
        assert await cf.count(None) == 1


async def test_keys_as_bytes_str_or_a_callable(folder: Path) -> None:
    calls = []

    def from_keyring() -> bytes:
        calls.append(1)
        return KEY.encode()

    path = str(folder / "memory.db")
    async with await ContextForge.open(Config(path=path, encryption_key=from_keyring)) as cf:
        await cf.save("opened with a callable")
        assert "horse" not in repr(cf.config) and "from_keyring" not in repr(cf.config)
    assert calls == [1]
    for key in (KEY, KEY.encode(), lambda: KEY):
        async with await ContextForge.open(Config(path=path, encryption_key=key)) as cf:
            assert await cf.count(None) == 1
    with pytest.raises(InvalidTypeError):
        await ContextForge.open(Config(path=path, encryption_key=lambda: 42))  # type: ignore[arg-type, return-value]
    with pytest.raises(InvalidTypeError):
        await ContextForge.open(Config(path=path, encryption_key=42))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="empty"):
        await ContextForge.open(Config(path=path, encryption_key=""))


@pytest.mark.parametrize(
    "config",
    [
        Config(path=":memory:", encryption_key=KEY),
        Config(path="http://127.0.0.1:9/", encryption_key=KEY),
    ],
)
async def test_encryption_applies_to_files_only(config: Config) -> None:
    with pytest.raises(InvalidInputError, match="database file"):
        await ContextForge.open(config)


async def test_an_index_dir_elsewhere_is_sealed_too(folder: Path) -> None:
    elsewhere = folder.parent / "cache" / "idx"
    async with await ContextForge.open(encrypted(folder, index_dir=str(elsewhere))) as cf:
        await fill(cf, MARKERS)
    assert_sealed(elsewhere)
    assert leaked(folder.parent, MARKERS) == []
    async with await ContextForge.open(encrypted(folder, index_dir=str(elsewhere))) as cf:
        assert any(MARKERS[3] in h.content for h in await cf.query(MARKERS[3], "team:a"))


async def test_a_damaged_or_foreign_sealed_index_is_rebuilt(folder: Path) -> None:
    async with await ContextForge.open(encrypted(folder)) as cf:
        await fill(cf, MARKERS)
    index = folder / "memory.db.index"
    biggest = max((p for p in index.iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
    data = bytearray(biggest.read_bytes())
    data[len(data) // 2] ^= 0x40  # one flipped bit: the file no longer opens
    biggest.write_bytes(bytes(data))
    async with await ContextForge.open(encrypted(folder)) as cf:
        for marker in (MARKERS[5], MARKERS[30]):
            assert any(marker in h.content for h in await cf.query(marker, ALL_SCOPES))
    # Another encrypted store's index (sealed under its own key) in this one's place.
    other = folder.parent / "other"
    other.mkdir()
    async with await ContextForge.open(encrypted(other)) as cf:
        await cf.save("another tenant's memory", scope="team:a")
    shutil.rmtree(index)
    shutil.copytree(other / "memory.db.index", index)
    async with await ContextForge.open(encrypted(folder)) as cf:
        hits = await cf.query("memory", ALL_SCOPES)
        assert all("another tenant" not in h.content for h in hits)
        assert any(MARKERS[22] in h.content for h in await cf.query(MARKERS[22], "team:a"))
    assert_sealed(index)


async def test_rekey(folder: Path) -> None:
    async with await ContextForge.open(encrypted(folder)) as cf:
        await fill(cf, MARKERS)
        await cf.rekey(lambda: b"the new key")
        assert await cf.count(ALL_SCOPES) == FILLED  # the same handle goes on
        await cf.save(f"after the rekey {MARKERS[0]}", scope="team:c")
        assert cf.config.encryption_key is not None
    assert leaked(folder, MARKERS) == []
    with pytest.raises(EncryptionKeyError):
        await ContextForge.open(encrypted(folder))
    async with await ContextForge.open(
        Config(path=str(folder / "memory.db"), encryption_key=b"the new key")
    ) as cf:
        assert await cf.count(ALL_SCOPES) == FILLED + 1
    async with await ContextForge.open(str(folder.parent / "plain.db")) as plain:
        with pytest.raises(EncryptionKeyError):
            await plain.rekey("anything")


def test_rekey_is_refused_while_another_process_has_the_store_open(folder: Path) -> None:
    with ContextForgeSync.open(encrypted(folder)) as cf:
        cf.save("shared")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder / "memory.db"), KEY],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with ContextForgeSync.open(encrypted(folder, busy_timeout_ms=200)) as cf:
            with pytest.raises(RetryableStorageError, match="another process"):
                cf.rekey("new")
            assert cf.count(None) == 1
            cf.save("still writable")
    finally:
        holder.kill()
        holder.communicate()
    with ContextForgeSync.open(encrypted(folder)) as cf:
        assert cf.count(None) == 2


SAVER = """
import sys
from contextforge import Config, ContextForgeSync
with ContextForgeSync.open(Config(path=sys.argv[1], encryption_key=sys.argv[2])) as cf:
    done = 0
    while True:
        cf.save_many({"content": f"acknowledged {done + i} before the crash", "scope": "s"}
                     for i in range(200))
        done += 200
        print(done, flush=True)
"""


def test_a_wrong_key_after_a_crash_damages_nothing(folder: Path) -> None:
    """A crash leaves committed pages in the WAL; opening with a wrong key must not
    roll them into the file through the wrong key (a writable connection would, as
    it closes), nor lose them."""
    path = str(folder / "memory.db")
    child = subprocess.Popen(
        [sys.executable, "-c", SAVER, path, KEY], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = 0
    while acknowledged < 3000:
        acknowledged = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert (folder / "memory.db-wal").stat().st_size > 0

    def files() -> dict[str, str]:
        """The database and its WAL; the wal-index (-shm) is rebuilt by whoever opens."""
        return {k: v for k, v in digests(folder).items() if not k.endswith("-shm")}

    before = files()
    for wrong in ("wrong key", KEY + "x", KEY[:-1]):
        with pytest.raises(EncryptionKeyError):
            ContextForgeSync.open(Config(path=path, encryption_key=wrong))
        assert files() == before, "a wrong key changed the database or its WAL"
    with ContextForgeSync.open(Config(path=path, encryption_key=KEY)) as cf:
        assert cf.count("s") >= acknowledged
        found = cf.query(f"acknowledged {acknowledged - 1} before", "s")
        assert any(h.content == f"acknowledged {acknowledged - 1} before the crash" for h in found)


HOLD = """
import sys
from contextforge import Config, ContextForgeSync
with ContextForgeSync.open(Config(path=sys.argv[1], encryption_key=sys.argv[2])) as cf:
    cf.count(None)
    print("open", flush=True)
    sys.stdin.read()
"""

REKEY = """
import sys
from contextforge import Config, ContextForgeSync
with ContextForgeSync.open(Config(path=sys.argv[1], encryption_key=sys.argv[2])) as cf:
    print("rekeying", flush=True)
    cf.rekey(sys.argv[3])
    print("rekeyed", flush=True)
"""


def test_a_sigkill_during_rekey_leaves_the_old_key_or_the_new(folder: Path) -> None:
    path = str(folder / "memory.db")
    total = 20_000
    with ContextForgeSync.open(Config(path=path, encryption_key="key-0")) as cf:
        for start in range(0, total, 5_000):
            cf.save_many(
                {"content": f"entry {n} with some words to fill the pages", "scope": "s"}
                for n in range(start, start + 5_000)
            )
    outcomes = []
    current = "key-0"
    for attempt, delay in enumerate([0.0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.4, 5.0]):
        new = f"key-{attempt + 1}"
        child = subprocess.Popen(
            [sys.executable, "-c", REKEY, path, current, new],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "rekeying"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.communicate()
        opened: list[str] = []
        # The new key first: trying a key must never damage a file under the other.
        for key in (new, current):
            try:
                with ContextForgeSync.open(Config(path=path, encryption_key=key)) as cf:
                    assert cf.count("s") == total
                opened.append(key)
            except EncryptionKeyError:
                pass
        assert len(opened) == 1, (delay, opened, os.listdir(folder))
        assert not (folder / "memory.db.rekey").exists()  # a killed rekey's copy is cleared
        outcomes.append(opened[0] == new)
        current = opened[0]
    assert outcomes[-1], "the rekey given five seconds never finished"
    assert leaked(folder, ["entry 123 with some words"]) == []


def test_the_cli_takes_the_key_from_the_environment_or_a_file(folder: Path) -> None:
    path = str(folder / "memory.db")
    with ContextForgeSync.open(Config(path=path, encryption_key=KEY)) as cf:
        cf.save("the vault code is in the blue folder", scope="s")
    key_file = folder.parent / "key"
    key_file.write_text(KEY + "\n")

    def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTFORGE_")}
        return subprocess.run(
            [sys.executable, "-m", "contextforge.cli.main", "--db", path, *args],
            env={**clean, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    for env in (
        {"CONTEXTFORGE_ENCRYPTION_KEY": KEY},
        {"CONTEXTFORGE_ENCRYPTION_KEY_FILE": str(key_file)},
    ):
        found = cli("query", "vault code", "--scope", "s", **env)
        assert found.returncode == 0, found.stderr
        assert "blue folder" in found.stdout and KEY not in found.stdout + found.stderr
    refused = cli("query", "vault code", "--scope", "s")
    assert refused.returncode != 0 and "encryption_key" in refused.stderr
    wrong = cli("scopes", CONTEXTFORGE_ENCRYPTION_KEY="not it")
    assert wrong.returncode != 0 and "does not open" in wrong.stderr
    assert "not it" not in wrong.stderr
    assert leaked(folder, ["vault code", "blue folder"]) == []
