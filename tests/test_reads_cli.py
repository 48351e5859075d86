"""``contextforge reads`` (the read audit, ``--follow`` too) and ``contextforge
distill-session``, run through the real entry point in a subprocess."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, Config, ContextForgeSync

from .test_audit_surfaces import _Lines
from .test_cli import CLI, ok, one_line_error, run, snapshot


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def audited(db: Path, *, text: bool = False) -> ContextForgeSync:
    return ContextForgeSync.open(Config(path=str(db), audit_reads=True, audit_query_text=text))


# --- reads ------------------------------------------------------------------------


def test_reads_prints_the_read_audit_and_resumes(db: Path) -> None:
    with audited(db) as store:
        a = store.save("deploy notes", scope="u")
        store.save("deploy secret", scope="v")
        store.query("deploy", "u")
        store.context("deploy", ["u", None], 512)
        store.query("nothing matches this", ALL_SCOPES)
        expected = list(store.reads())
    trail = jsonl(ok("reads", "--json", db=db))
    assert trail == [
        {
            "seq": r.seq,
            "at": r.at.isoformat(),
            "scopes": None if r.scopes is None else list(r.scopes),
            "query_hash": r.query_hash,
            "query": None,
            "ids": list(r.ids),
        }
        for r in expected
    ]
    assert trail[0]["scopes"] == ["u"] and trail[0]["ids"] == [a]
    assert trail[1]["scopes"] == ["u", None] and trail[2]["scopes"] is None
    assert all(x["at"].endswith("+00:00") for x in trail)
    assert "deploy" not in ok("reads", db=db)  # neither content nor (not kept) query text

    lines = ok("reads", db=db).splitlines()
    assert lines[0].split() == ["seq", "at", "(UTC)", "scopes", "query", "hash", "ids", "query"]
    assert len(lines) == 4
    assert lines[1].split()[3:] == ["u", expected[0].query_hash, str(a), "-"]
    assert lines[2].split()[3] == "u,(global)" and lines[3].split()[3] == "(all)"

    after = jsonl(ok("reads", "--json", "--since", str(trail[0]["seq"]), db=db))
    assert [x["seq"] for x in after] == [x["seq"] for x in trail[1:]]
    done = run("reads", "--since", str(trail[-1]["seq"]), db=db)
    assert done.returncode == 1 and done.stdout == "" and "no reads" in done.stderr
    assert run("reads", "--since", "-1", db=db).returncode == 2


def test_reads_shows_the_query_text_when_the_store_keeps_it(db: Path) -> None:
    with audited(db, text=True) as store:
        store.save("deploy notes", scope="u")
        store.query("when is the deploy?", "u")
    [record] = jsonl(ok("reads", "--json", db=db))
    assert record["query"] == "when is the deploy?"
    assert ok("reads", db=db).splitlines()[1].endswith("when is the deploy?")


def test_reads_on_a_store_that_does_not_audit_them(db: Path) -> None:
    with ContextForgeSync.open(str(db)) as store:
        store.save("deploy notes", scope="u")
        store.query("deploy", "u")
    assert ok("query", "deploy", "--scope", "u", db=db)  # the CLI records none either
    empty = run("reads", db=db)
    assert empty.returncode == 1 and empty.stdout == ""
    assert "no reads" in empty.stderr and "audit_reads=True" in empty.stderr
    assert run("reads", "--json", db=db).stdout == ""


def test_reads_follow_prints_new_reads_until_stopped(db: Path) -> None:
    with audited(db) as store:
        store.save("deploy notes", scope="u")
        store.query("deploy", "u")
    with subprocess.Popen(
        [*CLI, "reads", "--follow", "--json", "--interval", "0.1", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    ) as follower:
        try:
            assert follower.stdout is not None and follower.stderr is not None
            lines = _Lines(follower.stdout)
            first = json.loads(lines.next())
            assert first["scopes"] == ["u"]
            with audited(db) as store:  # written when it closes
                store.query("deploy", "v")
                store.query("deploy", "u")
            new = [json.loads(lines.next()) for _ in range(2)]
            assert [r["scopes"] for r in new] == [["v"], ["u"]]
            assert [r["seq"] for r in new] == sorted(r["seq"] for r in new)
            assert new[0]["seq"] > first["seq"]
            follower.send_signal(signal.SIGINT)
            code = follower.wait(timeout=30)
            lines.thread.join(timeout=30)
            errors = follower.stderr.read()
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
    assert code == 0, errors
    assert "Traceback" not in errors and "Aborted" not in errors


# --- distill-session --------------------------------------------------------------


def seed_session(db: Path) -> dict[str, list[int]]:
    """The same session id in two scopes, and an unrelated session."""
    rows = [
        ("proj", "c1", "ann", "We decided to move billing to Postgres 16 next quarter."),
        ("proj", "c1", "bob", "Actually, the deadline is now 14 May."),
        ("proj", "c2", "ann", "We decided the office moves to Berlin."),
        ("other", "c1", "eve", "We decided the vault password rotates every Friday."),
    ]
    out: dict[str, list[int]] = {}
    with ContextForgeSync.open(str(db)) as store:
        for scope, session, who, text in rows:
            entry = store.save(text, scope=scope, session_id=session, metadata={"role": who})
            out.setdefault(f"{scope}/{session}", []).append(int(entry))
    return out


def distilled(*args: str, db: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(ok("distill-session", "--json", *args, db=db))
    return out


def test_distill_session_saves_linked_facts_and_skips_them_the_second_time(db: Path) -> None:
    messages = seed_session(db)
    first = distilled("--scope", "proj", "--session", "c1", db=db)
    assert first["model"] == "contextforge-extractive" and first["skipped"] == []
    texts = [i["text"] for i in first["saved"]]
    assert any("Postgres 16" in t for t in texts)
    assert not any("vault" in t or "Berlin" in t for t in texts)  # one scope, one session
    with ContextForgeSync.open(str(db)) as store:
        for item in first["saved"]:
            hit = store.get(item["id"])
            assert hit is not None and (hit.scope, hit.session_id) == ("proj", "c1")
            linked = [link.source_id or 0 for link in store.sources(item["id"], depth=1)]
            assert linked and set(linked) <= set(messages["proj/c1"]), linked
            assert sorted(item["sources"]) == sorted(linked)
    again = distilled("--scope", "proj", "--session", "c1", db=db)
    assert again["saved"] == []
    assert sorted(i["id"] for i in again["skipped"]) == sorted(i["id"] for i in first["saved"])

    table = run("distill-session", "--scope", "proj", "--session", "c2", db=db)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["id", "kind", "fact", "kind", "status", "text"]
    assert "Berlin" in table.stdout and "saved" in table.stdout
    assert "already there" in table.stderr


def test_distill_session_errors(db: Path) -> None:
    seed_session(db)
    before = snapshot(db)
    missing = one_line_error(run("distill-session", "--scope", "proj", "--session", "c9", db=db), 2)
    assert "has no messages" in missing
    wrong_scope = run("distill-session", "--scope", "nope", "--session", "c1", db=db)
    assert "has no messages" in one_line_error(wrong_scope, 2)
    assert "--scope" in one_line_error(run("distill-session", "--session", "c1", db=db), 2)
    assert "--session" in one_line_error(run("distill-session", "--scope", "proj", db=db), 2)
    alone = run("distill-session", "--scope", "proj", "--session", "c1", "--model", "m", db=db)
    assert "go together" in one_line_error(alone, 2)
    blank = run("distill-session", "--scope", " ", "--session", "c1", db=db)
    assert one_line_error(blank, 2)
    assert snapshot(db) == before


class _FailingModel(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"error": "bad key"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_model() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FailingModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_distill_session_model_failure_is_exit_4(db: Path, failing_model: str) -> None:
    seed_session(db)
    before = snapshot(db)
    result = run(
        "distill-session",
        "--scope",
        "proj",
        "--session",
        "c1",
        "--model",
        "m",
        "--base-url",
        failing_model,
        db=db,
    )
    error = one_line_error(result, 4)
    assert error.startswith("Error: the model failed: ") and "401" in error
    assert snapshot(db) == before


def test_help_lists_the_new_commands() -> None:
    out = ok("--help")
    for command in ("reads", "distill-session"):
        assert f"  {command} " in out
        for flag in ("--help", "-h"):
            text = ok(command, flag)
            assert text.startswith(f"Usage: contextforge {command} [OPTIONS]"), text
            assert "\nOptions:\n" in text and "  -h, --help  " in text
