"""Provenance through a real libSQL server (sqld): sources saved against the
server read back both ways, and a store's links survive a move from a local
file to the server and back (export, import), ids remapped consistently.

The CLI's ``--db`` takes a file path only: it refuses a server URL ("the
directory of --db http://... does not exist", from ``cli.paths.prepare_db``).
The local legs run the real ``contextforge`` command; the server legs run the
same ``export`` and ``import`` commands in-process with that check lifted for a
URL, so that every other line of them is the CLI's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from contextforge import ALL_SCOPES, ContextForgeSync, Link
from contextforge.cli import paths
from contextforge.cli import store as cli_store
from contextforge.cli.main import cli

from .sqld import Sqld, sqld_shared_fixture  # noqa: F401  (the fixture)
from .test_cli import ok

SCOPES = ("p", "q")  # what these tests write; the server is shared by the module

Row = tuple[int, int | None, str | None, tuple[int, int] | None, int]


@pytest.fixture(scope="module")
def server(sqld_shared: Sqld) -> Sqld:
    """One sqld for the module."""
    return sqld_shared


def rows(links: list[Link], m: dict[int, int]) -> list[Row]:
    return [
        (
            m.get(x.entry_id, x.entry_id),
            None if x.source_id is None else m.get(x.source_id, x.source_id),
            x.ref,
            x.span,
            x.depth,
        )
        for x in links
    ]


def provenance(
    path: str, scopes: tuple[str, ...] = SCOPES, ids: dict[int, int] | None = None
) -> dict[int, tuple[list[Row], list[Row]]]:
    """Every entry's ``sources()`` and ``derived()`` (every depth), by id, with
    ids mapped through ``ids``."""
    m = ids or {}
    with ContextForgeSync.open(path) as store:
        out = {}
        for scope in scopes:
            for hit in store.list(scope=scope, include_superseded=True):
                out[m.get(hit.id, hit.id)] = (
                    rows(store.sources(hit.id), m),
                    rows(store.derived(hit.id), m),
                )
        return out


def build(path: str) -> dict[str, int]:
    """Entry-id sources, external references, spans, a chain (message -> fact ->
    summary), a cross-scope source, and a key whose versions cite each other."""
    with ContextForgeSync.open(path) as s:
        doc = int(s.save("the design document", scope="p"))
        other = int(s.save("in another scope", scope="q"))
        msg = int(s.save("I moved to Lisbon last week", "message", scope="p", session_id="c1"))
        fact = int(
            s.save(
                "user lives in Lisbon",
                "fact",
                scope="p",
                sources=[(msg, 0, 27), "https://example.com/relocation"],
            )
        )
        summary = int(s.save("the user relocated", "summary", scope="p", sources=[fact]))
        note = int(
            s.save(
                "a note on it",
                scope="p",
                sources=[doc, ("msg:1", 0, 4), ("https://x.example/", 2, 9)],
            )
        )
        cross = int(
            s.save("cites across", scope="p", sources=[note, other], cross_scope_sources=True)
        )
        v1 = int(s.save("city: Paris", scope="p", key="city", sources=[doc]))
        v2 = int(s.save("city: Lyon", scope="p", key="city", sources=[v1, (note, 1, 2)]))
        ext = int(s.save("from slack", "fact", scope="p", sources=["slack:C1/17.1"]))
    return {
        "doc": doc,
        "other": other,
        "msg": msg,
        "fact": fact,
        "summary": summary,
        "note": note,
        "cross": cross,
        "v1": v1,
        "v2": v2,
        "ext": ext,
    }


def check_chain(path: str, ids: dict[str, int]) -> None:
    """The links ``build`` made, read back through ``sources`` and ``derived``."""
    msg, fact, summary, note, doc = (ids[k] for k in ("msg", "fact", "summary", "note", "doc"))
    with ContextForgeSync.open(path) as s:
        assert s.sources(summary) == [
            Link(summary, fact, None, None, 1),
            Link(fact, msg, None, (0, 27), 2),
            Link(fact, None, "https://example.com/relocation", None, 2),
        ]
        assert s.sources(summary, depth=1) == [Link(summary, fact, None, None, 1)]
        assert [(d.entry_id, d.depth) for d in s.derived(msg)] == [(fact, 1), (summary, 2)]
        assert sorted(rows(s.sources(note, depth=1), {}), key=repr) == sorted(
            [
                (note, doc, None, None, 1),
                (note, None, "msg:1", (0, 4), 1),
                (note, None, "https://x.example/", (2, 9), 1),
            ],
            key=repr,
        )
        assert {d.entry_id for d in s.derived(doc, depth=1)} == {note, ids["v1"]}
        assert {x.source_id for x in s.sources(ids["cross"], depth=1)} == {note, ids["other"]}
        assert s.sources(ids["ext"]) == [Link(ids["ext"], None, "slack:C1/17.1", None, 1)]


def cli_on_server(monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    """Runs a ``contextforge`` command against a server URL (``--db`` among ``args``)."""
    real = paths.prepare_db

    def prepare(path: str, is_default: bool) -> str | None:
        return None if path.startswith(("http://", "https://")) else real(path, is_default)

    monkeypatch.setattr(cli_store, "prepare_db", prepare)
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def id_map(path: Path) -> dict[int, int]:
    return {m["old"]: m["new"] for m in jsonl(path)}


def test_sources_saved_against_the_server_read_back(server: Sqld) -> None:
    ids = build(server.url)
    check_chain(server.url, ids)  # a new connection and a fresh index: the server's rows
    with ContextForgeSync.open(server.url) as s:
        # Forgetting by source and with cascade follows the server's links.
        assert s.forget(source="slack:C1/17.1").ids == (ids["ext"],)
        assert s.forget(ids=[ids["msg"]], cascade=True).ids == (
            ids["msg"],
            ids["fact"],
            ids["summary"],
        )
        assert s.derived(ids["msg"]) == [] and s.get(ids["fact"]) is None
        assert {x.source_id for x in s.sources(ids["cross"], depth=1)} == {
            ids["note"],
            ids["other"],
        }
        s.forget(scope="p")
        s.forget(scope="q")
        assert s.count(ALL_SCOPES) == 0  # the next test starts from an empty server


def test_provenance_survives_a_move_to_the_server_and_back(
    server: Sqld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, back = tmp_path / "local.db", tmp_path / "back.db"
    ids = build(str(local))
    before = provenance(str(local))

    # Local file -> JSONL -> server, which holds an entry already: ids renumbered.
    with ContextForgeSync.open(server.url) as s:
        s.save("already on the server", scope="z")
    dump = tmp_path / "local.jsonl"
    ok("export", str(dump), db=local)
    to_server = tmp_path / "to-server.map"
    summary = json.loads(
        cli_on_server(
            monkeypatch,
            "import", str(dump), "--json", "--id-map", str(to_server), "--db", server.url,
        )
    )  # fmt: skip
    assert summary["added"] == len(before) and summary["sources_dropped"] == 0
    assert summary["ids"] == "renumbered"
    there = id_map(to_server)
    assert sorted(there) == sorted(before) and any(old != new for old, new in there.items())
    assert provenance(server.url) == provenance(str(local), ids=there)
    check_chain(server.url, {k: there[v] for k, v in ids.items()})

    # Server -> JSONL -> a fresh local file.
    dump2 = tmp_path / "server.jsonl"
    scoped = [a for s in SCOPES for a in ("--scope", s)]
    cli_on_server(monkeypatch, "export", str(dump2), *scoped, "--db", server.url)
    back_map = tmp_path / "back.map"
    summary = json.loads(ok("import", str(dump2), "--json", "--id-map", str(back_map), db=back))
    assert summary["added"] == len(before) and summary["sources_dropped"] == 0
    assert summary["ids"] == "kept"  # an empty file: the server's ids
    home = id_map(back_map)
    assert provenance(str(back)) == provenance(server.url, ids=home)
    round_trip = {old: home[new] for old, new in there.items()}
    assert provenance(str(back)) == provenance(str(local), ids=round_trip)
    check_chain(str(back), {k: round_trip[v] for k, v in ids.items()})

    # The two files say the same, ids aside.
    def same(records: list[dict[str, Any]], m: dict[int, int]) -> list[str]:
        out = []
        for r in records:
            r = {**r, "id": m[r["id"]], "superseded_by": m.get(r["superseded_by"])}
            for link in r.get("sources", []):
                if link["entry"] is not None:
                    link["entry"] = m[link["entry"]]
            out.append(json.dumps(r, sort_keys=True))
        return sorted(out)

    assert same(jsonl(dump), there) == same(jsonl(dump2), {v: v for v in there.values()})
