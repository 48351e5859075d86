"""Secrets never reach the database or the index; scrubbing is on by default."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from contextforge import Config, ContextForge
from contextforge.errors import InvalidInputError

# Built at run time so that no scanner mistakes this file for a leak.
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_ID = "AKIA" + "Q3EGRSXN7ZK5WM2P"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Zq81vQ2mLpT9"
STRIPE = "sk_live_" + "51HxT9q2eZvKYlo2Cq8w7rPtQ3mN"
DB_PASSWORD = "Tr0ub4dor&3xq"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEA7bq98"
    + "Xk2jL0pQ9vZ\n" * 4
    + "-----END RSA PRIVATE KEY-----"
)
SECRETS = [GITHUB, AWS_ID, AWS_SECRET, STRIPE, DB_PASSWORD, "MIIEowIBAAKCAQEA7bq98"]

LEAKY = [
    f"use the token {GITHUB} for the release bot",
    f"aws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}",
    f"billing uses {STRIPE} in prod",
    f"connect with postgres://app:{DB_PASSWORD}@db.internal:5432/main",
    f"the deploy key is\n{PEM}\nkeep it safe",
]


async def test_secrets_are_redacted_with_labels(mem: ContextForge) -> None:
    ids = await mem.save_many([{"content": text, "scope": "s"} for text in LEAKY])
    entries = await mem.get_many(ids)
    contents = [e.content for e in entries if e is not None]
    joined = "\n".join(contents)
    for secret in SECRETS:
        assert secret not in joined
    assert "[REDACTED:github_token]" in contents[0]
    assert "[REDACTED:aws_access_key_id]" in contents[1]
    assert contents[1].count("[REDACTED:") == 2
    assert "[REDACTED:stripe_secret_key]" in contents[2]
    assert (
        contents[3]
        == "connect with postgres://app:[REDACTED:url_credentials]@db.internal:5432/main"
    )
    assert "[REDACTED:private_key]" in contents[4] and contents[4].endswith("keep it safe")
    # The rest of the text is still searchable.
    assert [h.id for h in await mem.query("release bot", "s")] == [ids[0]]


async def test_update_and_metadata_are_scrubbed(mem: ContextForge) -> None:
    entry_id = await mem.save("nothing secret", metadata={"password": "hunter2", "n": 1})
    hit = await mem.get(entry_id)
    assert hit is not None
    assert hit.metadata == {"password": "[REDACTED:password_assignment]", "n": 1}
    updated = await mem.update(entry_id, content=f"now with {GITHUB}", metadata={"k": GITHUB})
    assert GITHUB not in updated.content and GITHUB not in str(updated.metadata)


async def test_scrubbing_can_be_turned_off_explicitly() -> None:
    async with await ContextForge.open(Config(scrub=False)) as cf:
        entry_id = await cf.save(LEAKY[0], metadata={"token": GITHUB})
        hit = await cf.get(entry_id)
        assert hit is not None and GITHUB in hit.content and hit.metadata == {"token": GITHUB}
    async with await ContextForge.open(Config(scrub_metadata=False)) as cf:
        entry_id = await cf.save(LEAKY[0], metadata={"token": GITHUB})
        hit = await cf.get(entry_id)
        assert hit is not None and GITHUB not in hit.content and hit.metadata == {"token": GITHUB}


async def test_pii_is_opt_in() -> None:
    text = "mail jane.doe@example.com or call +44 20 7946 0958, card 4111 1111 1111 1111"
    async with await ContextForge.open() as cf:
        hit = await cf.get(await cf.save(text))
        assert hit is not None and hit.content == text
    async with await ContextForge.open(Config(scrub_pii=True)) as cf:
        hit = await cf.get(await cf.save(text))
        assert hit is not None
        for private in ("jane.doe@example.com", "7946 0958", "4111 1111 1111 1111"):
            assert private not in hit.content


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


async def test_no_secret_reaches_the_files_on_disk(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with await ContextForge.open(str(db)) as cf:
        await cf.save_many([{"content": t, "metadata": {"api_key": STRIPE}} for t in LEAKY])
        await cf.save(f"one more {GITHUB}")
        await cf.flush()
    files = files_under(tmp_path)
    assert any(p.parent.name == "memory.db.index" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret[:6]}... leaked into {path.name}"


# Turning scrubbing down warns (tested with the warning); here only the record counts.
@pytest.mark.filterwarnings("ignore::contextforge.errors.ScrubbingWeakenedWarning")
async def test_the_setting_is_recorded_in_the_database(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    for config, expected in [
        (Config(path=db), "secrets+metadata"),
        (Config(path=db, scrub=False), "off"),
        (Config(path=db, scrub_pii=True, scrub_metadata=False), "secrets+pii"),
    ]:
        async with await ContextForge.open(config):
            pass
        with sqlite3.connect(db) as conn:
            [(value,)] = conn.execute("SELECT value FROM meta WHERE key = 'scrub'").fetchall()
        conn.close()
        assert value == expected


# --- Issue 19: metadata kept exactly, inline forms, disguised tokens, labels ---


async def test_metadata_keeps_numbers_and_key_order_when_a_string_is_redacted(
    mem: ContextForge,
) -> None:
    metadata = {
        "z": 1,
        "a": 2**64 + 1,
        "f": 1.5e300,
        "tok": GITHUB,
        "neg": -(2**70),
        "nested": {"y": [1, 0.1, GITHUB], "b": True, GITHUB: None},
    }
    hit = await mem.get(await mem.save("metadata check", metadata=metadata))
    assert hit is not None
    got = hit.metadata
    assert list(got) == ["z", "a", "f", "tok", "neg", "nested"]
    assert got["a"] == 2**64 + 1 and type(got["a"]) is int
    assert got["neg"] == -(2**70) and type(got["neg"]) is int
    assert got["f"] == 1.5e300
    assert got["tok"] == "[REDACTED:github_token]"
    # A key holding a secret is redacted where it stands, not moved to the end.
    assert list(got["nested"]) == ["y", "b", "[REDACTED:github_token]"]
    assert got["nested"]["y"] == [1, 0.1, "[REDACTED:github_token]"]
    updated = await mem.update(hit.id, metadata={"z": 2**64 + 1, "a": GITHUB})
    assert list(updated.metadata) == ["z", "a"] and updated.metadata["z"] == 2**64 + 1


PASSWORD = "S3cure!Pass" + "2024"
INLINE_FORMS = [
    f"docker run -e POSTGRES_PASSWORD={PASSWORD} postgres",
    f"PGPASSWORD={PASSWORD} psql -h db",
    f"DB_PASSWORD={PASSWORD} ./run",
    f"environment:\n  - POSTGRES_PASSWORD={PASSWORD}\n",
    f"<password>{PASSWORD}</password>",
    f"wifi pw: {PASSWORD}",
    f"sshpass -p '{PASSWORD}' ssh host",
    f"mysql -p{PASSWORD}",
    f"htpasswd -b .htpasswd admin {PASSWORD}",
    f"requirepass {PASSWORD}",
    f"CREATE ROLE app WITH PASSWORD '{PASSWORD}';",
    f"CREATE USER app IDENTIFIED BY '{PASSWORD}';",
    f"the root pw is {PASSWORD}",
    f"login with admin / {PASSWORD}",
    f"the passphrase for the backup is {PASSWORD}",
]


async def test_inline_password_forms_are_redacted(mem: ContextForge) -> None:
    ids = await mem.save_many([{"content": text} for text in INLINE_FORMS])
    for text, entry in zip(INLINE_FORMS, await mem.get_many(ids)):
        assert entry is not None
        assert PASSWORD not in entry.content, text


async def test_disguised_and_cut_short_tokens_are_redacted_whole(mem: ContextForge) -> None:
    head, tail = GITHUB[:20], GITHUB[20:]
    fullwidth = "".join(chr(ord(c) - 0x21 + 0xFF01) for c in "ghp_")
    forms = [
        f"{head}\u200b{tail}",
        f"{head}\n{tail}",
        GITHUB.replace("_", "%5F"),
        fullwidth + GITHUB[4:],
        f"{GITHUB[:24]}…",
    ]
    ids = await mem.save_many([{"content": f"key {form} end"} for form in forms])
    for form, entry in zip(forms, await mem.get_many(ids)):
        assert entry is not None
        # The whole token goes, and only the token: the words around it stay.
        assert entry.content.startswith("key [REDACTED:github_token]"), (form, entry.content)
        assert entry.content.endswith(" end")
        assert GITHUB[4:20] not in entry.content and tail[-8:] not in entry.content


async def test_cookies_and_otp_secrets_are_redacted(mem: ContextForge) -> None:
    session = AWS_SECRET[:24]
    texts = [
        f"Cookie: sessionid={session}; theme=dark",
        "otpauth://totp/acme?secret=JBSWY3DPEHPK3PXP&issuer=acme",
    ]
    ids = await mem.save_many([{"content": t} for t in texts])
    contents = [e.content for e in await mem.get_many(ids) if e is not None]
    assert contents == [
        "Cookie: [REDACTED:cookie]",
        "otpauth://totp/acme?secret=[REDACTED:otp_secret]&issuer=acme",
    ]


async def test_labels_holding_a_secret_are_refused(mem: ContextForge) -> None:
    for field in ("scope", "session_id", "kind"):
        with pytest.raises(InvalidInputError, match=field):
            label: dict[str, Any] = {field: f"user:{GITHUB}"}
            await mem.save("note", **label)
    entry_id = await mem.save("note", scope="user:alice", session_id="sess_01HZX3K9V2")
    with pytest.raises(InvalidInputError, match="scope"):
        await mem.update(entry_id, scope=GITHUB)
    assert await mem.count("user:alice") == 1
