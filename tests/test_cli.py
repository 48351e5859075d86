"""The ``contextforge`` command, run through its real entry point in a subprocess."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import ContextForgeSync

CLI = [sys.executable, "-m", "contextforge.cli.main"]
T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def run(
    *args: str, db: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [*CLI, *args, *(["--db", str(db)] if db is not None else [])]
    return subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def ok(*args: str, db: Path | None = None, stdin: str | None = None) -> str:
    result = run(*args, db=db, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def as_json(*args: str, db: Path) -> Any:
    return json.loads(ok(*args, "--json", db=db))


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def snapshot(db: Path) -> Counter[tuple[Any, ...]]:
    """Every entry's fields but its id, as a multiset."""
    with ContextForgeSync.open(str(db)) as store:
        return Counter(
            (
                h.content,
                h.kind,
                h.scope,
                h.session_id,
                json.dumps(h.metadata, sort_keys=True),
                h.timestamp,
            )
            for h in store.list()
        )


def write_jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


# --- help and basics ---------------------------------------------------------------


def test_help_lists_every_command_and_each_has_help() -> None:
    out = ok("--help")
    commands = [
        "save",
        "query",
        "get",
        "delete",
        "forget",
        "changes",
        "sources",
        "derived",
        "scopes",
        "stats",
        "import",
        "export",
        "distill",
        "eval",
        "mcp",
    ]
    for command in commands:
        assert f"  {command} " in out
        assert "usage: contextforge " + command in ok(command, "--help").lower()


def test_every_command_help_has_the_same_form() -> None:
    for command in [
        "save",
        "query",
        "get",
        "delete",
        "forget",
        "changes",
        "sources",
        "derived",
        "scopes",
        "stats",
        "import",
        "export",
        "distill",
        "eval",
        "mcp",
    ]:
        for flag in ("--help", "-h"):
            out = ok(command, flag)
            assert out.startswith(f"Usage: contextforge {command} [OPTIONS]"), out
            assert "\nOptions:\n" in out and "  -h, --help  " in out, out
    assert "docs/eval-spec.md" in ok("eval", "--help")


def test_root_help_documents_every_exit_code() -> None:
    out = ok("--help")
    for code, meaning in [
        (0, "success"),
        (1, "not found"),
        (2, "bad input"),
        (3, "storage error"),
        (4, "model error"),
    ]:
        assert any(
            line.strip().startswith(f"{code}  ") and meaning in line for line in out.splitlines()
        ), (code, out)


def test_installed_script(db: Path) -> None:
    script = Path(sys.executable).with_name("contextforge")
    if not script.exists():
        pytest.skip("the contextforge script is not installed next to this interpreter")
    done = subprocess.run(
        [str(script), "--db", str(db), "save", "via the script"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert as_json("get", done.stdout.strip(), db=db)["content"] == "via the script"


def test_bare_command_prints_help() -> None:
    bare = run()
    assert (
        "Usage: contextforge" in bare.stdout + bare.stderr
        and "Commands:" in bare.stdout + bare.stderr
    )


def test_save_query_get_delete(db: Path) -> None:
    first = int(
        ok(
            "save",
            "the deploy failed: missing env var",
            "--scope",
            "project:demo",
            "--kind",
            "fact",
            "--session",
            "run-1",
            "--metadata",
            '{"source": "ci"}',
            db=db,
        )
    )
    second = as_json(
        "save",
        "deploys happen on Tuesdays",
        "--scope",
        "team:infra",
        "--timestamp",
        "2024-01-02T03:04:05Z",
        db=db,
    )["id"]
    third = int(ok("save", "the rate limit is 100 req/s", db=db))  # global
    assert len({first, second, third}) == 3

    table = ok("query", "deploy", "--scope", "project:demo", db=db)
    assert "missing env var" in table and "Tuesdays" not in table

    hits = as_json("query", "deploy rate limit", db=db)
    assert {h["id"] for h in hits} == {first, second, third}
    assert all({"score", "risks", "tokens", "timestamp", "metadata"} <= set(h) for h in hits)

    scoped = as_json("query", "deploy rate limit", "--scope", "team:infra", "--global", db=db)
    assert {h["id"] for h in scoped} == {second, third}
    only_global = as_json("query", "deploy rate limit", "--global", db=db)
    assert [h["id"] for h in only_global] == [third]
    assert [h["id"] for h in as_json("query", "deploy", "--kind", "fact", db=db)] == [first]
    assert [h["id"] for h in as_json("query", "deploy", "--session", "run-1", db=db)] == [first]
    old = as_json("query", "deploy", "--until", "2024-06-01", db=db)
    assert [h["id"] for h in old] == [second]
    assert second not in {
        h["id"] for h in as_json("query", "deploy", "--since", "1717200000", db=db)
    }

    explained = ok("query", "deploy", "--explain", db=db)
    assert "rank" in explained and "score" in explained and "risks" in explained
    assert "of 2048 tokens" in explained

    entry = as_json("get", str(first), db=db)
    assert entry["content"] == "the deploy failed: missing env var"
    assert entry["scope"] == "project:demo" and entry["kind"] == "fact"
    assert entry["session_id"] == "run-1" and entry["metadata"] == {"source": "ci"}
    assert as_json("get", str(second), db=db)["timestamp"] == "2024-01-02T03:04:05+00:00"
    assert "missing env var" in ok("get", str(first), db=db)

    assert as_json("delete", str(first), db=db) == {"deleted": [first], "not_found": []}
    gone = run("get", str(first), db=db)
    assert one_line_error(gone, 1) == f"Error: not found: {first}"


def test_save_reads_stdin_and_dedupes(db: Path) -> None:
    first = ok("save", "-", "--scope", "u", db=db, stdin="a note from a pipe\n")
    assert ok("save", "a  note from a pipe", "--scope", "u", db=db) == first
    assert ok("save", "a note from a pipe", "--scope", "u", "--no-dedupe", db=db) != first


def test_scopes_and_stats(db: Path) -> None:
    ok("save", "one", "--scope", "a", db=db)
    ok("save", "two", "--scope", "a", db=db)
    ok("save", "three", db=db)
    assert as_json("scopes", db=db) == [{"scope": None, "entries": 1}, {"scope": "a", "entries": 2}]
    assert "(global)" in ok("scopes", db=db)
    stats = as_json("stats", db=db)
    assert stats["entries"] == 3 and stats["db"] == str(db)
    assert stats["scopes"] == [{"scope": None, "entries": 1}, {"scope": "a", "entries": 2}]
    assert stats["bytes"]["database"] > 0
    assert str(db) in ok("stats", db=db)


def test_db_from_env_then_per_user_default(tmp_path: Path) -> None:
    from_env = tmp_path / "env.db"
    result = run("save", "x", env={"CONTEXTFORGE_DB": str(from_env)})
    assert result.returncode == 0 and from_env.exists()

    data_home = tmp_path / "xdg"
    env = {"XDG_DATA_HOME": str(data_home), "CONTEXTFORGE_DB": ""}
    assert run("save", "y", env=env).returncode == 0
    assert (data_home / "contextforge" / "memory.db").exists()
    assert json.loads(run("stats", "--json", env=env).stdout)["entries"] == 1

    assert run("--db", str(from_env), "scopes", env=env).returncode == 0  # before the command too


def test_exit_codes_for_no_results_and_missing(db: Path) -> None:
    ok("save", "something", db=db)
    nothing = run("query", "unrelated", db=db)
    assert nothing.returncode == 1 and nothing.stdout == ""
    assert run("query", "unrelated", "--json", db=db).stdout.strip() == "[]"
    assert one_line_error(run("delete", "999", db=db), 1) == "Error: not found: 999"


@pytest.mark.parametrize(
    "args",
    [
        ["query", "x", "--since", "tomorrow"],
        ["query", "x", "--budget", "0"],
        ["save", "x", "--metadata", "[1, 2]"],
        ["save", "x", "--metadata", "{oops"],
        ["save", "   "],
        ["save", "x", "--scope", ""],
        ["get", "abc"],
        ["frobnicate"],
    ],
)
def test_bad_arguments_are_one_line_exit_2(db: Path, args: list[str]) -> None:
    one_line_error(run(*args, db=db), 2)
    assert not db.exists() or snapshot(db) == Counter()


def test_storage_errors_exit_3(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database file at all" * 100)
    assert "not a database" in one_line_error(run("scopes", db=junk), 3)


def test_missing_db_directory_is_bad_input(tmp_path: Path) -> None:
    assert "does not exist" in one_line_error(run("scopes", db=tmp_path / "no" / "x.db"), 2)


def test_distill_saves_facts_and_skips_them_the_second_time(db: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "call.txt"
    transcript.write_text(
        "ann: We decided to move billing to Postgres 16 next quarter.\n"
        "bob: Sounds good.\n"
        "ann: Actually, the deadline is now 14 May.\n",
        encoding="utf-8",
    )
    first = as_json("distill", str(transcript), "--scope", "proj", "--session", "c1", db=db)
    assert first["model"] == "contextforge-extractive" and first["saved"]
    assert any("Postgres 16" in item["text"] for item in first["saved"])
    again = as_json("distill", str(transcript), "--scope", "proj", "--session", "c1", db=db)
    # The same transcript distils to the same summary and facts (the same session
    # too, which dedupe compares): all skipped.
    assert again["saved"] == []
    assert sorted(i["text"] for i in again["skipped"]) == sorted(i["text"] for i in first["saved"])
    assert "--scope" in one_line_error(run("distill", str(transcript), db=db), 2)
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    assert "empty" in one_line_error(run("distill", str(empty), "--scope", "p", db=db), 2)


class _ModelServer(http.server.BaseHTTPRequestHandler):
    """A chat-completions endpoint that fails: 401, or 200 with a body that is not JSON."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body = (401, b'{"error": "bad key"}') if "401" in self.path else (200, b"<html>")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ModelServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(("path", "problem"), [("/401/v1", "answered 401"), ("/v1", "not JSON")])
def test_distill_model_failure_is_its_own_exit_code(
    db: Path, tmp_path: Path, model_server: str, path: str, problem: str
) -> None:
    transcript = tmp_path / "call.txt"
    transcript.write_text("ann: We decided to move billing to Postgres 16.\n", encoding="utf-8")
    result = run(
        "distill",
        str(transcript),
        "--scope",
        "p",
        "--model",
        "m",
        "--base-url",
        model_server + path,
        db=db,
    )
    error = one_line_error(result, 4)
    assert error.startswith("Error: the model failed: ") and problem in error
    assert snapshot(db) == Counter()


def test_counts_agree_with_their_nouns(db: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "call.txt"
    transcript.write_text("ann: We decided to move billing to Postgres 16.\n", encoding="utf-8")
    distilled = run("distill", str(transcript), "--scope", "p", db=db)
    assert distilled.returncode == 0 and "(1 chunk," in distilled.stderr
    single, out = tmp_path / "single.db", tmp_path / "out.jsonl"
    ok("save", "billing moves to Postgres 16", db=single)
    exported = run("export", str(out), db=single)
    assert exported.stderr == f"exported 1 entry to {out}\n"
    assert "imported 0 of 1 record from" in ok("import", str(out), db=single)
    assert "\n1 hit, " in ok("query", "billing Postgres", "--explain", db=single)
    old = write_jsonl(
        tmp_path / "old.jsonl",
        {"content": "gone", "expires_at": 0},
        {"role": "user", "content": ""},
    )
    text = ok("import", str(old), "--scope", "p", db=db)
    assert "1 expired entry skipped" in text and "1 empty message skipped" in text
    for line in (distilled.stderr, exported.stderr, text):
        assert "(s)" not in line and "(ies)" not in line


def test_eval_runs_the_shipped_smoke_spec(tmp_path: Path) -> None:
    spec = Path(__file__).parent.parent / "python" / "contextforge" / "data" / "eval_smoke.json"
    out = tmp_path / "report.json"
    table = ok("eval", str(spec), "--report", str(out))
    assert "recall@5" in table and "eval-smoke: 21 queries" in table
    assert "recall@5" in out.read_text(encoding="utf-8")
    assert json.loads(ok("eval", str(spec), "--json"))["summary"]["all"]["queries"] == 21
    assert "missing.json" in one_line_error(run("eval", str(tmp_path / "missing.json")), 2)


# --- import and export -------------------------------------------------------------


def seed_varied(db: Path) -> None:
    with ContextForgeSync.open(str(db)) as store:
        store.save_many(
            [
                {"content": "plain note"},
                {
                    "content": "a fact",
                    "kind": "fact",
                    "scope": "user:42",
                    "session_id": "s-1",
                    "metadata": {"nested": {"list": [1, 2.5, None, True]}, "ünï": "cödé ✓"},
                    "timestamp": T0,
                },
                {
                    "content": "a fact",
                    "kind": "fact",
                    "scope": "user:42",
                    "session_id": "s-1",
                    "metadata": {"nested": {"list": [1, 2.5, None, True]}, "ünï": "cödé ✓"},
                    "timestamp": T0,
                    "dedupe": False,
                },
                {"content": "line one\nline two\ttabbed", "scope": "team:a", "timestamp": 0},
                {"content": "old", "scope": "team:a", "timestamp": T0 - timedelta(days=4000)},
                {
                    "content": "the password is hunter2",
                    "scope": "user:42",
                    "metadata": {"api_key": "8f3b9c2d7e6a5b4c3d2e1f0a9b8c7d6e"},
                },
            ]
        )


def test_export_then_import_is_lossless(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    seed_varied(source)
    dump = tmp_path / "dump.jsonl"
    assert run("export", str(dump), db=source).returncode == 0
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 6
    assert {"id", "content", "kind", "scope", "session_id", "timestamp", "metadata"} <= set(
        lines[0]
    )

    summary = as_json("import", str(dump), db=target)
    assert summary["added"] == 6 and summary["already_present"] == 0
    assert snapshot(target) == snapshot(source)

    again = as_json("import", str(dump), db=target)
    assert again["added"] == 0 and again["already_present"] == 6
    assert snapshot(target) == snapshot(source)

    # Export to stdout, filtered, matches the file's lines for that scope.
    stdout = ok("export", "--scope", "team:a", db=source)
    assert sorted(stdout.splitlines()) == sorted(
        json.dumps(r, ensure_ascii=False) for r in lines if r["scope"] == "team:a"
    )


def test_import_transcripts(tmp_path: Path, db: Path) -> None:
    chat = write_jsonl(
        tmp_path / "chat.jsonl",
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "ok"},
        {
            "id": "conv-7",
            "messages": [
                {"role": "user", "content": "what's the plan?"},
                {"role": "assistant", "content": [{"type": "text", "text": "ship on Friday"}]},
                {"role": "tool", "content": None},
            ],
        },
        {
            "session_id": "s-9",
            "messages": [{"role": "user", "content": "ok", "timestamp": "2024-05-01T10:00:00"}],
        },
    )
    summary = as_json("import", str(chat), "--scope", "user:42", db=db)
    assert summary["added"] == 5 and summary["empty_messages_skipped"] == 1

    with ContextForgeSync.open(str(db)) as store:
        entries = sorted(store.list(), key=lambda h: h.id)
    assert [e.content for e in entries] == ["ok", "ok", "what's the plan?", "ship on Friday", "ok"]
    assert {e.kind for e in entries} == {"message"} and {e.scope for e in entries} == {"user:42"}
    assert [e.session_id for e in entries] == [None, None, "conv-7", "conv-7", "s-9"]
    assert [e.metadata["role"] for e in entries] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert entries[4].timestamp == datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    assert entries[0].timestamp < entries[1].timestamp < entries[2].timestamp  # file order kept

    assert as_json("import", str(chat), "--scope", "user:42", db=db)["added"] == 0
    with ContextForgeSync.open(str(db)) as store:
        assert store.count() == 5

    session = as_json("import", str(chat), "--scope", "user:7", "--session", "fixed", db=db)
    assert session["added"] == 5
    with ContextForgeSync.open(str(db)) as store:
        assert {h.session_id for h in store.list(scope="user:7")} == {"fixed"}


def test_import_resumes_after_a_partial_run(tmp_path: Path, db: Path) -> None:
    records = [{"content": f"note number {i}", "scope": "u" if i % 2 else "v"} for i in range(40)]
    records += [{"role": "user", "content": "same words"} for _ in range(5)]
    full = write_jsonl(tmp_path / "full.jsonl", *records)
    part = tmp_path / "part.jsonl"
    part.write_text("".join(full.read_text().splitlines(keepends=True)[:17]))

    assert as_json("import", str(part), "--batch-size", "4", db=db)["added"] == 17
    resumed = as_json("import", str(full), "--batch-size", "4", db=db)
    assert resumed == {**resumed, "added": 28, "already_present": 17}
    assert as_json("import", str(full), db=db)["added"] == 0
    with ContextForgeSync.open(str(db)) as store:
        assert store.count() == 45
        assert len({h.content for h in store.list()}) == 41


def test_import_from_stdin_with_progress(db: Path) -> None:
    lines = "".join(json.dumps({"content": f"entry {i}"}) + "\n" for i in range(30))
    result = run("import", "-", "--progress", "--batch-size", "7", db=db, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert "imported 30 of 30" in result.stdout
    assert "importing" in result.stderr and "30/30 100%" in result.stderr
    quiet = run("import", "-", db=db, stdin=lines)  # not a terminal: no bar
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_dry_run_saves_nothing(tmp_path: Path, db: Path) -> None:
    f = write_jsonl(tmp_path / "x.jsonl", {"content": "a"}, {"content": "b"})
    assert as_json("import", str(f), "--dry-run", db=db)["added"] == 2
    assert snapshot(db) == Counter()


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        ('{"content": "fine"}\n{"content": "fine too"}\n{"content": "broken"\n', 3, "invalid JSON"),
        ('{"content": "fine"}\n\n[1, 2]\n', 3, "expected a JSON object"),
        ('{"content": "fine"}\n{"content": "  "}\n', 2, "content must not be empty"),
        ('{"content": "x", "colour": "red"}\n', 1, "unknown field 'colour'"),
        ('{"content": "x"}\n{"content": "x", "timestamp": "soon"}\n', 2, "timestamp"),
        ('{"content": "x", "metadata": {"n": NaN}}\n', 1, "metadata"),
        ('{"content": "x", "kind": ""}\n', 1, "kind must not be empty"),
        ('{"content": 5}\n', 1, "'content' must be a string"),
        ('{"messages": [{"content": "no role"}]}\n', 1, "'role'"),
        ('{"role": "user", "content": {"not": "text"}}\n', 1, "'content'"),
    ],
)
def test_bad_import_names_the_line_and_changes_nothing(
    tmp_path: Path, db: Path, body: str, line: int, problem: str
) -> None:
    ok("save", "already here", "--scope", "keep", db=db)
    before = snapshot(db)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(body, encoding="utf-8")
    error = one_line_error(run("import", str(bad), db=db), 2)
    assert f"bad.jsonl:{line}:" in error and problem in error
    assert snapshot(db) == before


def test_import_missing_or_binary_file(tmp_path: Path, db: Path) -> None:
    assert "cannot read" in one_line_error(run("import", str(tmp_path / "nope.jsonl"), db=db), 2)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b'{"content": "ok"}\n\xff\xfe\x00\n')
    assert "bin.jsonl:2: not UTF-8" in one_line_error(run("import", str(binary), db=db), 2)
