"""forget through a real libSQL server (sqld): what docs/forgetting.md promises
for a file, checked byte by byte on both sides of the wire: every file in the
server's data directory (its database, WAL, replication log ``wallog``,
``snapshots/``, ``to_compact/``, ``tmp/``) and every file of the client's index
cache (``Config(index_dir=...)``).

The client's side is the library's own, and holds no byte. The server's side
is not within a client's reach (sqld serves neither ``secure_delete`` nor a
checkpoint): the receipt says so, and the operator's procedure in the docs is
checked to leave no byte.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from contextforge import ALL_SCOPES, Config, ContextForgeSync, Forgotten

from .sqld import Sqld, hrana, sqld_fixture, sqld_shared_fixture  # noqa: F401  (the fixtures)

# Lowercase and unstemmable: the index keeps each as typed. One per criterion,
# so a hit says which forget left it behind.
BY_IDS = "zqxjvkw"
BY_METADATA = "pqzvxjk"
BY_SESSION = "wvkqzjx"
MARKERS = (BY_IDS, BY_METADATA, BY_SESSION)


def copies(folder: Path, needle: str) -> dict[str, int]:
    """Every file under ``folder`` whose bytes hold ``needle``, and how many times."""
    raw = needle.encode()
    found = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            n = p.read_bytes().count(raw)
            if n:
                found[str(p.relative_to(folder))] = n
    return found


def segments_with_deletes(index_dir: Path) -> list[str]:
    meta = json.loads((index_dir / "meta.json").read_text())
    return [s["segment_id"] for s in meta["segments"] if s.get("deletes")]


@pytest.fixture(scope="module")
def server(sqld_shared: Sqld) -> Sqld:
    """One sqld for the module (each test uses markers of its own)."""
    return sqld_shared


@dataclass
class Run:
    """What one seed-and-forget through the server did, for the tests to check."""

    server_dir: Path
    cache: Path
    config: Config
    ids: dict[str, list[int]] = field(default_factory=dict)
    receipts: dict[str, Forgotten] = field(default_factory=dict)
    before: dict[str, dict[str, int]] = field(default_factory=dict)
    while_open: dict[str, object] = field(default_factory=dict)


def seed_and_forget(cf: ContextForgeSync, run: Run) -> None:
    """Entries holding a marker (and entries that do not), then forgets by ids,
    by metadata and by session."""
    run.ids["garden"] = [
        int(cf.save(f"unrelated note {n} about gardening", scope="other", session_id="s9"))
        for n in range(3)
    ]
    turns = [
        f"my account number is {BY_IDS}{BY_IDS} please remember",
        "ok, noted your account details",
        "thanks, what time is the meeting",
        "the meeting is at noon",
    ]
    run.ids["chat-1"] = [int(cf.save(t, scope="u", session_id="chat-1")) for t in turns]
    run.ids["tickets"] = [
        int(
            cf.save(
                f"ticket: card number {BY_METADATA}", scope="support", metadata={"user": "u-42"}
            )
        ),
        int(cf.save("ticket: printer jam on floor two", scope="support", metadata={"user": "u-7"})),
    ]
    run.ids["chat-2"] = [
        int(cf.save(f"my passphrase is {BY_SESSION} {BY_SESSION}", scope="u", session_id="chat-2")),
        int(cf.save(f"got it, {BY_SESSION} is stored", scope="u", session_id="chat-2")),
    ]
    run.ids["filler"] = [
        int(i)
        for i in cf.save_many([{"content": f"filler entry {n}", "scope": "u"} for n in range(40)])
    ]
    cf.flush()
    run.before = {m: copies(run.server_dir, m) for m in MARKERS}

    run.receipts["ids"] = cf.forget(ids=[run.ids["chat-1"][0]])
    run.receipts["metadata"] = cf.forget(metadata={"user": "u-42"})
    run.receipts["session"] = cf.forget(session_id="chat-2", scope="u")
    run.while_open = {
        "marker hits": {m: [h.id for h in cf.query(m, ALL_SCOPES, 4096)] for m in MARKERS},
        "gone": [
            cf.get(i) for i in (run.ids["chat-1"][0], run.ids["tickets"][0], *run.ids["chat-2"])
        ],
        "noted": [h.id for h in cf.query("noted account details", "u", 4096)],
        "client files": {m: copies(run.cache, m) for m in MARKERS},
        "deletes": segments_with_deletes(index_of(run.cache)),
    }


def index_of(cache: Path) -> Path:
    (index,) = cache.iterdir()  # a subdirectory named by a hash of the URL
    assert index.name.startswith("remote-")
    return index


@pytest.fixture(scope="module")
def run(server: Sqld, tmp_path_factory: pytest.TempPathFactory) -> Run:
    cache = tmp_path_factory.mktemp("index-cache")
    config = Config(path=server.url, index_dir=str(cache), flush_entries=4)
    done = Run(server_dir=server.directory, cache=cache, config=config)
    with ContextForgeSync.open(config) as cf:
        seed_and_forget(cf, done)
    return done


def test_the_markers_reached_the_server(run: Run) -> None:
    # Else the byte checks below prove nothing.
    for marker in MARKERS:
        assert run.before[marker], f"{marker} was never written to the server's files"


def test_receipts_and_reads_while_open(run: Run) -> None:
    by_ids, by_meta, by_session = (run.receipts[k] for k in ("ids", "metadata", "session"))
    assert by_ids.ids == (run.ids["chat-1"][0],) and by_ids.entries == 1
    assert by_ids.reindexed == 2  # the next two turns held its words as context
    assert by_meta.ids == (run.ids["tickets"][0],)
    assert sorted(by_session.ids) == sorted(run.ids["chat-2"]) and by_session.reindexed == 0
    assert all(len(r.id) == 32 for r in (by_ids, by_meta, by_session))
    assert run.while_open["marker hits"] == {m: [] for m in MARKERS}
    assert run.while_open["gone"] == [None] * 4
    noted = run.while_open["noted"]
    assert isinstance(noted, list) and noted[0] == run.ids["chat-1"][1]
    assert run.while_open["client files"] == {m: {} for m in MARKERS}, "forgotten while open"
    assert run.while_open["deletes"] == []


def test_the_client_index_keeps_no_byte_and_no_deleted_document(run: Run) -> None:
    assert {m: copies(run.cache, m) for m in MARKERS} == {m: {} for m in MARKERS}
    assert segments_with_deletes(index_of(run.cache)) == []


def test_the_other_entries_are_still_found(run: Run, server: Sqld) -> None:
    # Through the cached index (it catches up from the server's change log), and
    # through a fresh index built in RAM from the server's rows.
    for config in (run.config, Config(path=server.url)):
        with ContextForgeSync.open(config) as cf:
            for marker in MARKERS:
                assert list(cf.query(marker, ALL_SCOPES, 4096)) == []
            [first, *_] = cf.query("noted account details", "u", 4096)
            assert first.id == run.ids["chat-1"][1]
            assert [h.id for h in cf.query("printer jam", "support", 4096)] == [
                run.ids["tickets"][1]
            ]
            assert {h.id for h in cf.query("gardening", "other", 4096)} == set(run.ids["garden"])
            assert cf.count(ALL_SCOPES) == 3 + 3 + 1 + 40
            assert cf.scopes() == {"other": 3, "u": 43, "support": 1}
    assert segments_with_deletes(index_of(run.cache)) == []


def test_the_receipt_says_the_server_keeps_its_own_bytes(run: Run) -> None:
    """The server's files are the server's (next test): every receipt through
    a server says its storage was not scrubbed, so a caller can tell."""
    assert [r.storage_scrubbed for r in run.receipts.values()] == [False] * 3


def test_what_a_client_can_ask_the_server_to_erase(server: Sqld) -> None:
    """Why the server keeps forgotten bytes: the statements that would erase
    them are not served to a client (sqld 0.24). If this starts failing, the
    store can use them (rust/src/store/forget.rs runs them for files only)."""
    refused = "PRAGMA secure_delete = ON", "PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM"
    for sql in refused:
        [result] = hrana(server.url, sql)
        assert result["type"] == "error", (sql, result)
        assert "unsupported statement" in str(result["error"]), (sql, result)
    # Reading it is served: off, on every connection.
    [result] = hrana(server.url, "PRAGMA secure_delete")
    assert result["type"] == "ok"
    assert result["response"]["result"]["rows"] == [[{"type": "integer", "value": "0"}]]  # type: ignore[index]


def test_the_operator_procedure_scrubs_the_server(sqld: Sqld, tmp_path: Path) -> None:
    """docs/forgetting.md, "Remote stores": with the server stopped, VACUUM its
    database file and remove its replication log and snapshots; after that no
    file of the server holds the forgotten bytes, and what was kept is intact."""
    config = Config(path=sqld.url, index_dir=str(tmp_path / "cache"), flush_entries=4)
    with ContextForgeSync.open(config) as cf:
        keep = int(cf.save("the printer on floor two jams", scope="s"))
        gone = int(cf.save(f"the vault code is {BY_IDS}", scope="s", metadata={"user": "u-42"}))
        assert copies(sqld.directory, BY_IDS)
        assert cf.forget(metadata={"user": "u-42"}).ids == (gone,)
    sqld.stop()
    [data] = sqld.directory.rglob("dbs/default/data")
    with closing(sqlite3.connect(data)) as db:
        db.execute("VACUUM")
    for leftover in ("wallog", "snapshots", "to_compact", "tmp"):
        path = data.parent / leftover
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    assert copies(sqld.directory, BY_IDS) == {}
    sqld.start()
    with ContextForgeSync.open(config) as cf:
        assert [h.id for h in cf.query("printer", "s", 4096)] == [keep]
        assert cf.get(gone) is None
        assert cf.save("a write after the scrub", scope="s")
    assert copies(sqld.directory, BY_IDS) == {}
