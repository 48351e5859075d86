"""``forget`` on the command line and over MCP (issue 23): ``contextforge forget``
run through its real entry point, and the ``forget_memory`` tool through the MCP
SDK's stdio client, under the same scope policy as every other tool. What a
forget removes from the files is proven in test_forget.py; here, who may ask
for it and what they are told."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from contextforge import ContextForge, ContextForgeSync
from contextforge.cli.forget import _UNSET, _preview

from .test_cli import CLI, one_line_error, run
from .test_cli import snapshot as cli_snapshot
from .test_mcp import OUTSIDE, call, connect, field, refused, result, snapshot, text

RECEIPT = {
    "id",
    "at",
    "entries",
    "ids",
    "vectors",
    "reindexed",
    "segments",
    "storage_scrubbed",
    "not_found",
}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def seed_people(db: Path) -> dict[str, int]:
    """Entries about two users, in two scopes and global, some in a session."""
    with ContextForgeSync.open(str(db)) as store:
        rows: dict[str, Any] = {
            "a1": ("u-42 paid with card 4242", "support", "t1", {"user": "u-42"}),
            "a2": ("u-42 asked for a refund", "support", "t1", {"user": "u-42"}),
            "a3": ("printer jam on floor 3", "support", "t2", {"user": "u-7"}),
            "b1": ("u-42 likes green tea", "user:42", None, {"user": "u-42"}),
            "g1": ("u-42 global note", None, None, {"user": "u-42"}),
            "g2": ("office closes at 6", None, None, {}),
        }
        return {
            name: int(store.save(content, scope=scope, session_id=session, metadata=meta))
            for name, (content, scope, session, meta) in rows.items()
        }


def remaining(db: Path) -> set[int]:
    with ContextForgeSync.open(str(db)) as store:
        return {h.id for h in store.list(include_superseded=True)}


def forget(*args: str, db: Path, stdin: str | None = "") -> subprocess.CompletedProcess[str]:
    return run("forget", *args, db=db, stdin=stdin)


# --- the command line -------------------------------------------------------------


def test_forget_with_yes_prints_the_receipt(db: Path) -> None:
    ids = seed_people(db)
    done = forget("--metadata", '{"user": "u-42"}', "--scope", "support", "--yes", db=db)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert set(lines) == {"forget", "at", "entries", "vectors", "reindexed", "segments"}
    assert lines["entries"] == f"2 ({ids['a1']}, {ids['a2']})"
    assert len(lines["forget"]) == 32
    assert remaining(db) == set(ids.values()) - {ids["a1"], ids["a2"]}

    receipt = json.loads(
        forget("--metadata", '{"user": "u-42"}', "--global", "-y", "--json", db=db).stdout
    )
    assert set(receipt) == RECEIPT
    assert receipt["ids"] == [ids["g1"]] and receipt["entries"] == 1
    assert receipt["not_found"] == [] and receipt["at"].endswith("+00:00")
    assert receipt["storage_scrubbed"] is True
    assert remaining(db) == {ids["a3"], ids["b1"], ids["g2"]}


def test_forget_by_session_key_and_id(db: Path) -> None:
    ids = seed_people(db)
    with ContextForgeSync.open(str(db)) as store:
        berlin = int(store.save("lives in Berlin", scope="user:42", key="city"))
        paris = int(store.save("lives in Paris", scope="user:42", key="city"))
    done = forget("--session", "t1", "--scope", "support", "--yes", "--json", db=db)
    assert json.loads(done.stdout)["ids"] == [ids["a1"], ids["a2"]]
    # Every version of a key, the superseded one too.
    done = forget("--key", "city", "--scope", "user:42", "--yes", "--json", db=db)
    assert json.loads(done.stdout)["ids"] == [berlin, paris]
    done = forget("--id", str(ids["a3"]), "--id", str(ids["g2"]), "--yes", "--json", db=db)
    assert json.loads(done.stdout)["ids"] == [ids["a3"], ids["g2"]]
    assert remaining(db) == {ids["b1"], ids["g1"]}


def test_nothing_matched_and_missing_ids_exit_1(db: Path) -> None:
    ids = seed_people(db)
    before = cli_snapshot(db)
    nothing = forget("--metadata", '{"user": "nobody"}', "--yes", db=db)
    assert nothing.returncode == 1 and "nothing matched" in nothing.stderr
    # An id that exists but does not match every criterion is not forgotten.
    outside = forget("--id", str(ids["b1"]), "--scope", "support", "--yes", "--json", db=db)
    assert outside.returncode == 1
    assert json.loads(outside.stdout)["not_found"] == [ids["b1"]]
    assert one_line_error(outside, 1).endswith(
        f"not forgotten (no such entry matched): {ids['b1']}"
    )
    assert cli_snapshot(db) == before

    partly = forget("--id", str(ids["g2"]), "--id", "999999", "--yes", db=db)
    assert partly.returncode == 1 and "999999" in partly.stderr
    assert f"entries    1 ({ids['g2']})" in partly.stdout
    assert ids["g2"] not in remaining(db)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "say what to forget"),
        (["--yes"], "say what to forget"),
        (["--scope", "support", "--global", "--yes"], "not both"),
        (["--scope", "", "--yes"], "must not be empty"),
        (["--session", "", "--yes"], "must not be empty"),
        (["--key", "", "--yes"], "must not be empty"),
        (["--metadata", "{}", "--yes"], "every entry"),
        (["--metadata", "[1]", "--yes"], "JSON object"),
        (["--metadata", "{bad", "--yes"], "not valid JSON"),
        (["--metadata", '{"user": {"id": 1}}', "--yes"], "can be matched"),
        (["--id", "x", "--yes"], "not a valid integer"),
        # No terminal to ask on and no --yes: refused before the store is touched.
        (["--scope", "support"], "pass --yes"),
        (["--metadata", '{"user": "u-42"}', "--json"], "pass --yes"),
    ],
)
def test_bad_or_unconfirmed_calls_are_one_line_exit_2(
    db: Path, args: list[str], expected: str
) -> None:
    seed_people(db)
    before = cli_snapshot(db)
    assert expected in one_line_error(forget(*args, db=db), 2)
    assert cli_snapshot(db) == before


def _on_a_terminal(db: Path, answer: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    """``contextforge forget ARGS`` with a pseudo-terminal for stdin, answering ``answer``."""
    leader, follower = os.openpty()
    try:
        os.write(leader, answer)
        return subprocess.run(
            [*CLI, "forget", *args, "--db", str(db)],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
        os.close(leader)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_asks_on_a_terminal_first(db: Path) -> None:
    ids = seed_people(db)
    before = cli_snapshot(db)
    declined = _on_a_terminal(db, b"n\n", "--metadata", '{"user": "u-42"}')
    assert declined.returncode == 130, declined.stderr
    assert "4 entries match, in 3 scopes: (global), support, user:42" in declined.stderr
    assert "Forget 4 entries? [y/N]" in declined.stderr and "Aborted." in declined.stderr
    assert declined.stdout == ""
    assert cli_snapshot(db) == before

    nothing = _on_a_terminal(db, b"y\n", "--metadata", '{"user": "nobody"}')
    assert nothing.returncode == 1 and "nothing matches" in nothing.stderr
    assert "Forget" not in nothing.stderr

    agreed = _on_a_terminal(db, b"y\n", "--metadata", '{"user": "u-42"}', "--json")
    assert agreed.returncode == 0, agreed.stderr
    receipt = json.loads(agreed.stdout)  # the prompt went to stderr: stdout is JSON only
    assert receipt["ids"] == sorted([ids["a1"], ids["a2"], ids["b1"], ids["g1"]])
    assert remaining(db) == {ids["a3"], ids["g2"]}


# Entries (scope, session, metadata, key) for the preview's agreement with the store;
# the keyed ones make superseded versions.
STORED: list[tuple[str | None, str | None, dict[str, Any], str | None]] = [
    ("s", "t", {"n": 1}, None),
    ("s", "t", {"n": 1.0}, None),
    ("s", None, {"n": "1"}, "city"),
    ("s", None, {"n": True}, "city"),
    (None, "t", {"n": None}, "city"),
    (None, "t", {"n": 1, "tag": "x"}, "city"),
    ("s2", "t", {"tag": "x", "n": 0}, None),
    ("s2", None, {"n": False}, None),
    (None, None, {}, None),
]


@pytest.mark.parametrize(
    "case",
    [
        {"metadata": {"n": 1}},
        {"metadata": {"n": 1.0}},
        {"metadata": {"n": "1"}},
        {"metadata": {"n": None}},
        {"metadata": {"n": 0}},
        {"metadata": {"n": 1, "tag": "x"}},
        {"metadata": {"n": True}},
        {"metadata": {"n": False}},
        {"key": "city"},
        {"key": "city", "scope": None},
        {"scope": None},
        {"scope": "s"},
        {"session_id": "t"},
        {"session_id": "t", "scope": "s"},
        {"ids": [1, 3, 5, 999]},
        {"ids": [1, 4], "metadata": {"n": 1}},
        {"ids": [1, 2], "metadata": {"n": 1}},
    ],
    ids=json.dumps,
)
def test_the_preview_selects_what_forget_forgets(case: dict[str, Any]) -> None:
    """The count shown before asking comes from list/get_many filtered in
    Python; it must agree with the store's own selection, JSON comparison of
    metadata and superseded versions included."""
    with ContextForgeSync.open(":memory:") as store:
        for i, (scope, session, meta, key) in enumerate(STORED):
            store.save(f"entry {i}", scope=scope, session_id=session, metadata=meta, key=key)
        assert store.count(include_superseded=True) > store.count()  # versions superseded
        shown = _preview(
            store,
            tuple(case.get("ids", ())),
            case.get("scope", _UNSET),
            case.get("session_id"),
            case.get("key"),
            case.get("metadata"),
        )
        assert shown, "every case matches something"
        receipt = store.forget(**case)
        assert sorted(h.id for h in shown) == list(receipt.ids)


# --- MCP --------------------------------------------------------------------------


async def seed_scopes(db: Path) -> dict[str | None, int]:
    """The same user's entry, in the same session, in "user:42" and in scopes an
    agent confined to it must never reach, and global."""
    scopes: list[str | None] = ["user:42", *OUTSIDE, "team:ab", None]
    async with await ContextForge.open(str(db)) as store:
        saved = await store.save_many(
            [
                {
                    "content": f"the card number of u-42 in {scope or 'everyone'}",
                    "scope": scope,
                    "session_id": "s1",
                    "metadata": {"user": "u-42"},
                }
                for scope in scopes
            ]
        )
    return dict(zip(scopes, map(int, saved)))


async def test_forget_memory_in_an_allowed_scope(db: Path) -> None:
    async with connect(db, "--scope", "user:42", "--scope", "user:42:work") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        tool = tools["forget_memory"]
        assert tool.annotations is not None
        assert field(tool.annotations, "destructive_hint") is True
        assert "ONE scope" in (tool.description or "")
        assert field(tool, "output_schema") is not None

        kept = await result(session, "save_memory", content="likes green tea")
        card = await result(
            session, "save_memory", content="card 4242 4242", metadata={"user": "u-42"}
        )
        work = await result(
            session,
            "save_memory",
            content="work card 4242",
            scope="user:42:work",
            metadata={"user": "u-42"},
        )
        receipt = await result(session, "forget_memory", ids=[card["id"]])
        assert receipt["ids"] == [card["id"]] and receipt["entries"] == 1
        assert receipt["scope"] == "user:42" and len(receipt["forget_id"]) == 32
        # Not "segments": a forget rewrites the segments other scopes' deletes left.
        assert set(receipt) == {
            "forget_id",
            "at",
            "scope",
            "ids",
            "entries",
            "vectors",
            "reindexed",
            "storage_scrubbed",
        }
        assert receipt["storage_scrubbed"] is True
        assert f"memory {card['id']} not found" in await refused(
            session, "get_memory", id=card["id"]
        )
        found = await result(session, "search_memory", query="card 4242")
        assert found["hits"] == [] and "4242" not in found["context"]

        # An id in another granted scope is named, and forgotten once that scope is given.
        error = await refused(session, "forget_memory", ids=[work["id"]])
        assert "not in scope 'user:42'" in error
        receipt = await result(
            session, "forget_memory", metadata={"user": "u-42"}, scope="user:42:work"
        )
        assert receipt["ids"] == [work["id"]] and receipt["scope"] == "user:42:work"

        # A whole scope only when it is named.
        assert "say what to forget" in await refused(session, "forget_memory")
        assert (await result(session, "get_memory", id=kept["id"]))["id"] == kept["id"]
        receipt = await result(session, "forget_memory", scope="user:42")
        assert receipt["ids"] == [kept["id"]]
    assert await snapshot(db) == []


async def test_forget_memory_never_reaches_other_scopes(db: Path) -> None:
    ids = await seed_scopes(db)
    before = await snapshot(db)
    async with connect(db, "--scope", "user:42") as session:
        # Ids outside the grants are "not found", exactly like ids that do not exist,
        # alone or beside an allowed one (nothing is forgotten then).
        missing = await refused(session, "forget_memory", ids=[10**6])
        assert missing.endswith("memory 1000000 not found")
        for scope, entry_id in ids.items():
            if scope == "user:42":
                continue
            for extra in ({}, {"metadata": {"user": "u-42"}}, {"session_id": "s1"}):
                error = await refused(session, "forget_memory", ids=[entry_id], **extra)
                assert error == missing.replace("1000000", str(entry_id))
                assert (scope or "everyone") not in error
            error = await refused(session, "forget_memory", ids=[ids["user:42"], entry_id])
            assert error == missing.replace("1000000", str(entry_id))
            # Naming the scope is refused as a search there is.
            if scope is not None:
                error = await refused(session, "forget_memory", ids=[entry_id], scope=scope)
                assert "not allowed" in error
                assert "not allowed" in await refused(
                    session, "forget_memory", metadata={"user": "u-42"}, scope=scope
                )
        for trick in ("*", "%", "user:4*", "", " user:42", "USER:42", "user:42\n"):
            assert "not allowed" in await refused(
                session, "forget_memory", session_id="s1", scope=trick
            )
        assert await snapshot(db) == before

        # Criteria without a scope act in the default scope only, though the same
        # user's entries in the same session are everywhere.
        receipt = await result(session, "forget_memory", metadata={"user": "u-42"}, session_id="s1")
        assert receipt["ids"] == [ids["user:42"]] and receipt["scope"] == "user:42"
        again = await result(session, "forget_memory", metadata={"user": "u-42"})
        assert again["ids"] == [] and again["entries"] == 0
        assert (await result(session, "forget_memory", key="no.such.key"))["ids"] == []
    after = await snapshot(db)
    assert after == [row for row in before if row[0] != ids["user:42"]]


async def test_forget_memory_under_prefix_and_global_policies(db: Path) -> None:
    ids = await seed_scopes(db)
    async with await ContextForge.open(str(db)) as store:
        team = int(await store.save("u-42 in team a", scope="team:a:x", metadata={"user": "u-42"}))
    async with connect(db, "--scope-prefix", "team:a:") as session:
        assert "scope is required" in await refused(
            session, "forget_memory", metadata={"user": "u-42"}
        )
        for other in (ids[None], ids["team:ab"], ids["user:42"], team + 100):
            assert f"memory {other} not found" in await refused(
                session, "forget_memory", ids=[other], scope="team:a:x"
            )
        receipt = await result(
            session, "forget_memory", metadata={"user": "u-42"}, scope="team:a:x"
        )
        assert receipt["ids"] == [ids["team:a:x"], team]
    async with connect(db, "--allow-global") as session:
        # The default is global entries: only they are reached.
        receipt = await result(session, "forget_memory", metadata={"user": "u-42"})
        assert receipt["ids"] == [ids[None]] and receipt["scope"] is None
        assert "not found" in await refused(session, "forget_memory", ids=[ids["user:42"]])
    left = {row[0] for row in await snapshot(db)}
    assert left == {i for s, i in ids.items() if s not in (None, "team:a:x")}


async def test_forget_memory_malformed_arguments(db: Path) -> None:
    await seed_scopes(db)
    before = await snapshot(db)
    malformed: list[dict[str, Any]] = [
        {"ids": []},
        {"ids": "1"},
        {"ids": ["abc"]},
        {"ids": list(range(1, 1002))},
        {"metadata": {}},
        {"metadata": {"user": {"id": 1}}},
        {"metadata": {"user": ["u-42"]}},
        {"metadata": "user"},
        {"session_id": ""},
        {"key": ""},
        {"session_id": 5},
    ]
    async with connect(db, "--scope", "user:42") as session:
        for arguments in malformed:
            answer = await call(session, "forget_memory", **arguments)
            assert field(answer, "is_error"), (arguments, field(answer, "structured_content"))
            assert text(answer)
    assert await snapshot(db) == before
