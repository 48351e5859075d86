"""The audit trail and provenance on the surfaces: ``contextforge changes``
(``--follow`` too), ``sources``/``derived`` and ``save --source``, sources
carried by export/import, and the MCP ``memory_sources`` tool and
``save_memory(sources=)`` under the scope policy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any

import pytest
from contextforge import ContextForge, ContextForgeSync
from contextforge.mcp_server import ScopePolicy, build_server
from contextforge.provenance import Link

from .test_cli import CLI, ok, run, write_jsonl
from .test_mcp import field, in_memory


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- changes ----------------------------------------------------------------------


def test_changes_prints_the_trail_and_filters_by_scope_and_seq(db: Path) -> None:
    with ContextForgeSync.open(str(db)) as store:
        a = store.save("alpha", scope="u:1", key="user.city")
        b = store.save("beta")
        store.update(int(b), content="beta two")
        store.delete(int(b))
        c = store.save("gamma", scope="u:1")
        receipt = store.forget(ids=[int(c)])
    trail = jsonl(ok("changes", "--json", db=db))
    assert [(c["op"], c["entry_id"]) for c in trail] == [
        ("insert", a),
        ("insert", b),
        ("update", b),
        ("delete", b),
        ("insert", c),
        ("forget", c),
    ]
    assert [x["seq"] for x in trail] == sorted(x["seq"] for x in trail)
    assert trail[0]["scope"] == "u:1" and trail[0]["key"] == "user.city"
    assert trail[-1]["forget"] == receipt.id and trail[0]["forget"] is None
    assert all(x["at"].endswith("+00:00") for x in trail)
    assert set(trail[0]) == {"seq", "at", "op", "entry_id", "scope", "key", "forget"}
    assert "alpha" not in ok("changes", db=db)  # never content

    scoped = jsonl(ok("changes", "--json", "--scope", "u:1", db=db))
    assert [x["entry_id"] for x in scoped] == [a, c, c]
    only_global = jsonl(ok("changes", "--json", "--global", db=db))
    assert {x["entry_id"] for x in only_global} == {b}
    after = jsonl(ok("changes", "--json", "--since", str(trail[2]["seq"]), db=db))
    assert [x["seq"] for x in after] == [x["seq"] for x in trail[3:]]

    lines = ok("changes", db=db).splitlines()
    assert lines[0].split()[:4] == ["seq", "at", "(UTC)", "op"]
    assert len(lines) == 7
    assert lines[-1].split()[3:] == ["forget", str(c), "u:1", "-", receipt.id]

    done = run("changes", "--since", str(trail[-1]["seq"]), db=db)
    assert done.returncode == 1 and done.stdout == "" and "no changes" in done.stderr
    both = run("changes", "--scope", "x", "--global", db=db)
    assert both.returncode == 2


class _Lines:
    """Reads a pipe's lines on a thread, so a test can wait for each with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: Queue[str] = Queue()
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)

    def next(self, timeout: float = 30.0) -> str:
        try:
            return self._queue.get(timeout=timeout)
        except Empty:
            raise AssertionError("no line from changes --follow") from None


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_changes_follow_prints_new_changes_until_stopped(
    db: Path, stop: signal.Signals, caplog: pytest.LogCaptureFixture
) -> None:
    with ContextForgeSync.open(str(db)) as store:
        first = store.save("first")
    with subprocess.Popen(
        [*CLI, "changes", "--follow", "--json", "--interval", "0.1", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    ) as follower:
        try:
            assert follower.stdout is not None and follower.stderr is not None
            lines = _Lines(follower.stdout)
            assert json.loads(lines.next())["entry_id"] == first
            with ContextForgeSync.open(str(db)) as store:
                second = store.save("second", scope="s")
                store.delete(int(first))
            new = [json.loads(lines.next()) for _ in range(2)]
            assert [(c["op"], c["entry_id"], c["scope"]) for c in new] == [
                ("insert", second, "s"),
                ("delete", first, None),
            ]
            time.sleep(0.5)
            follower.send_signal(stop)
            code = follower.wait(timeout=30)
            lines.thread.join(timeout=30)
            errors = follower.stderr.read()
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
    # The follower reads the store read-only: a writer opening it meanwhile
    # keeps its search index on disk.
    assert "in use by another process" not in caplog.text
    if stop == signal.SIGINT:  # Ctrl-C: a quiet, clean exit
        assert code == 0, errors
        assert "Traceback" not in errors and "Aborted" not in errors


# --- sources, derived, save --source ----------------------------------------------


def test_save_source_and_the_sources_and_derived_commands(db: Path) -> None:
    base = int(ok("save", "the report", "--scope", "p", db=db))
    mid = int(
        ok(
            "save",
            "a summary",
            "--scope",
            "p",
            "--source",
            str(base),
            "--source",
            "https://example.com/a@b?x=1@5:17",
            "--source",
            "slack:C1/170.1",
            db=db,
        )
    )
    top = int(ok("save", "a conclusion", "--scope", "p", "--source", f"{mid}@0:9", db=db))
    with ContextForgeSync.open(str(db)) as store:
        assert store.sources(mid, depth=1) == [
            Link(mid, base, None, None, 1),
            Link(mid, None, "https://example.com/a@b?x=1", (5, 17), 1),
            Link(mid, None, "slack:C1/170.1", None, 1),
        ]
        expected_up = store.sources(top)
        expected_down = store.derived(base)
    up = json.loads(ok("sources", str(top), "--json", db=db))
    assert up == [
        {
            "entry_id": link.entry_id,
            "source_id": link.source_id,
            "ref": link.ref,
            "span": list(link.span) if link.span else None,
            "depth": link.depth,
        }
        for link in expected_up
    ]
    assert [
        d["depth"] for d in json.loads(ok("sources", str(top), "--depth", "1", "--json", db=db))
    ] == [1]
    down = json.loads(ok("derived", str(base), "--json", db=db))
    assert [(d["entry_id"], d["depth"]) for d in down] == [
        (link.entry_id, link.depth) for link in expected_down
    ]
    assert [(d["entry_id"], d["depth"]) for d in down] == [(mid, 1), (top, 2)]

    table = ok("sources", str(top), db=db).splitlines()
    assert table[0].split() == ["depth", "entry", "span", "source"]
    assert table[1].split() == ["1", str(top), "0:9", "entry", str(mid)]
    assert "a summary" not in "\n".join(table)  # ids and references only

    none = run("sources", str(base), db=db)
    assert none.returncode == 1 and "no sources" in none.stderr
    missing = run("derived", "999", db=db)
    assert missing.returncode == 1 and "not found: 999" in missing.stderr
    assert run("sources", "1", "--depth", "33", db=db).returncode == 2


@pytest.mark.parametrize(
    "source",
    ["999", "@1:2", "0", "x@5:2"],
)
def test_save_refuses_bad_sources_and_saves_nothing(db: Path, source: str) -> None:
    ok("save", "other scope", "--scope", "q", db=db)
    bad = run("save", "text", "--scope", "p", "--source", source, db=db)
    assert bad.returncode == 2, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    with ContextForgeSync.open(str(db)) as store:
        assert store.count() == 1


def test_save_refuses_a_source_entry_of_another_scope(db: Path) -> None:
    other = ok("save", "elsewhere", "--scope", "q", db=db).strip()
    bad = run("save", "text", "--scope", "p", "--source", other, db=db)
    assert bad.returncode == 2 and "scope" in bad.stderr


# --- export and import --------------------------------------------------------------


def _provenance(db: Path, ids: dict[int, int] | None = None) -> dict[int, Any]:
    """Every entry's sources and derivations, by id, with ids mapped through ``ids``."""
    mapping = ids or {}

    def m(i: int) -> int:
        return mapping.get(i, i)

    with ContextForgeSync.open(str(db)) as store:
        out: dict[int, Any] = {}
        for hit in store.list(include_superseded=True):
            out[m(hit.id)] = (
                [
                    (m(x.entry_id), x.source_id and m(x.source_id), x.ref, x.span, x.depth)
                    for x in store.sources(hit.id)
                ],
                [
                    (m(x.entry_id), x.source_id and m(x.source_id), x.ref, x.span, x.depth)
                    for x in store.derived(hit.id)
                ],
            )
        return out


def _build(db: Path) -> dict[str, int]:
    with ContextForgeSync.open(str(db)) as store:
        doc = int(store.save("the document", scope="p"))
        other = int(store.save("in another scope", scope="q"))
        note = int(
            store.save(
                "a note on it",
                scope="p",
                sources=[doc, ("msg:1", 0, 4), ("https://x.example/", 2, 9)],
            )
        )
        cross = int(
            store.save("cites across", scope="p", sources=[note, other], cross_scope_sources=True)
        )
        v1 = int(store.save("city: Paris", scope="p", key="city", sources=[doc]))
        v2 = int(store.save("city: Lyon", scope="p", key="city", sources=[v1, (note, 1, 2)]))
    return {"doc": doc, "other": other, "note": note, "cross": cross, "v1": v1, "v2": v2}


def test_export_writes_direct_sources_and_import_restores_them_at_kept_ids(
    tmp_path: Path,
) -> None:
    source_db, target_db = tmp_path / "a.db", tmp_path / "b.db"
    ids = _build(source_db)
    dump = tmp_path / "dump.jsonl"
    ok("export", str(dump), db=source_db)
    records = {r["id"]: r for r in jsonl(dump.read_text())}
    assert sorted(records[ids["note"]]["sources"], key=json.dumps) == sorted(
        [
            {"entry": ids["doc"], "ref": None, "span": None},
            {"entry": None, "ref": "msg:1", "span": [0, 4]},
            {"entry": None, "ref": "https://x.example/", "span": [2, 9]},
        ],
        key=json.dumps,
    )
    assert "sources" not in records[ids["doc"]]

    summary = json.loads(ok("import", str(dump), "--json", db=target_db))
    assert summary["ids"] == "kept" and summary["sources_dropped"] == 0
    assert _provenance(target_db) == _provenance(source_db)
    # Idempotent: a second run adds nothing, and no link twice.
    again = json.loads(ok("import", str(dump), "--json", db=target_db))
    assert again["added"] == 0
    assert _provenance(target_db) == _provenance(source_db)


def test_import_remaps_source_ids_when_renumbering(tmp_path: Path) -> None:
    source_db, target_db = tmp_path / "a.db", tmp_path / "b.db"
    _build(source_db)
    dump = tmp_path / "dump.jsonl"
    ok("export", str(dump), db=source_db)
    with ContextForgeSync.open(str(target_db)) as store:
        store.save("already here", scope="z")
        store.save("and this", scope="z")
    id_map = tmp_path / "map.jsonl"
    out = json.loads(
        ok(
            "import",
            str(dump),
            "--json",
            "--id-map",
            str(id_map),
            "--batch-size",
            "100",
            db=target_db,
        )
    )
    assert out["ids"] == "renumbered" and out["sources_dropped"] == 0
    mapping = {m["old"]: m["new"] for m in jsonl(id_map.read_text())}
    assert any(old != new for old, new in mapping.items())
    restored = _provenance(target_db)
    for old, links in _provenance(source_db, mapping).items():
        assert restored[old] == links


def test_import_drops_a_source_entry_outside_the_file_and_counts_it(tmp_path: Path) -> None:
    source_db = tmp_path / "a.db"
    ids = _build(source_db)
    dump = tmp_path / "p.jsonl"
    ok("export", str(dump), "--scope", "p", db=source_db)  # "other" (scope q) left out
    assert ids["other"] not in {r["id"] for r in jsonl(dump.read_text())}

    # Kept ids: the store holds only this file's entries, so no entry at that id.
    fresh = tmp_path / "fresh.db"
    out = json.loads(ok("import", str(dump), "--json", db=fresh))
    assert out["ids"] == "kept" and out["sources_dropped"] == 1
    with ContextForgeSync.open(str(fresh)) as store:
        assert [x.source_id for x in store.sources(ids["cross"], depth=1)] == [ids["note"]]
        assert store.get(ids["other"]) is None

    # Renumbered: an entry that happens to hold the old id is not the source.
    busy = tmp_path / "busy.db"
    with ContextForgeSync.open(str(busy)) as store:
        for n in range(3):
            store.save(f"unrelated {n}", scope="q")
    text = ok("import", str(dump), db=busy)
    assert "1 source link to entries not in the file dropped" in text
    with ContextForgeSync.open(str(busy)) as store:
        cross = next(h for h in store.list(scope="p") if h.content == "cites across")
        [kept] = store.sources(cross.id, depth=1)
        note = next(h for h in store.list(scope="p") if h.content == "a note on it")
        assert kept.source_id == note.id


def test_import_refuses_malformed_sources(tmp_path: Path, db: Path) -> None:
    for sources, message in [
        ("x", "'sources' must be a list"),
        ([{"entry": 1, "ref": "r"}], "give one of"),
        ([{}], "give one of"),
        ([{"ref": "r", "span": [1]}], "'span' must be"),
        ([{"ref": "r", "extra": 1}], "unknown field 'extra'"),
        ([{"entry": 0}], "positive integer"),
    ]:
        path = write_jsonl(tmp_path / "bad.jsonl", {"content": "c", "sources": sources})
        bad = run("import", str(path), db=db)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    # A span the store refuses names the line; nothing is saved.
    path = write_jsonl(
        tmp_path / "span.jsonl",
        {"content": "ok"},
        {"content": "c", "sources": [{"ref": "r", "span": [5, 2]}]},
    )
    bad = run("import", str(path), db=db)
    assert bad.returncode == 2 and ":2:" in bad.stderr, bad.stderr


# --- MCP ----------------------------------------------------------------------------


async def _call(store: ContextForge, policy: ScopePolicy, tool: str, **args: Any) -> Any:
    async with in_memory(build_server(store, policy)) as session:
        return await session.call_tool(tool, args)


async def test_mcp_memory_sources_and_save_memory_sources(mem: ContextForge) -> None:
    policy = ScopePolicy.create(["user:1"], [], allow_global=False)
    doc = await mem.save("the document", scope="user:1")
    hidden = await mem.save("someone else's", scope="user:2")
    note = await mem.save(
        "a note", scope="user:1", sources=[hidden, ("ref:x", 0, 3)], cross_scope_sources=True
    )

    saved = await _call(
        mem, policy, "save_memory", content="a summary", sources=[int(doc), int(note), "msg:7"]
    )
    assert not field(saved, "is_error"), saved.content
    summary = field(saved, "structured_content")["id"]
    assert [(x.source_id, x.ref) for x in await mem.sources(summary, depth=1)] == [
        (doc, None),
        (note, None),
        (None, "msg:7"),
    ]

    answer = await _call(mem, policy, "memory_sources", id=summary)
    assert not field(answer, "is_error"), answer.content
    links = field(answer, "structured_content")["links"]
    assert [(x["entry_id"], x["source_id"], x["ref"], x["span"], x["depth"]) for x in links] == [
        (summary, doc, None, None, 1),
        (summary, note, None, None, 1),
        (summary, None, "msg:7", None, 1),
        (note, None, "ref:x", [0, 3], 2),
    ]  # the link to the entry of user:2 is left out
    assert "someone" not in json.dumps(field(answer, "structured_content"))
    assert all(x["source_id"] != hidden for x in links)

    down = await _call(mem, policy, "memory_sources", id=int(doc), derived=True)
    assert [(x["entry_id"], x["depth"]) for x in field(down, "structured_content")["links"]] == [
        (summary, 1)
    ]
    # The hidden entry: "not found", exactly like a missing one, both ways.
    for entry in (int(hidden), 999):
        refused = await _call(mem, policy, "memory_sources", id=entry)
        assert field(refused, "is_error") and f"memory {entry} not found" in refused.content[0].text
    # Nothing derived from user:1's entries is shown from user:2's side either.
    other = ScopePolicy.create(["user:2"], [], allow_global=False)
    theirs = await _call(mem, other, "memory_sources", id=int(hidden), derived=True)
    assert field(theirs, "structured_content")["links"] == []

    # save_memory cannot cite an entry of another scope (the core refuses it).
    count = await mem.count()
    refused = await _call(mem, policy, "save_memory", content="x", sources=[int(hidden)])
    assert field(refused, "is_error")
    assert await mem.count() == count
