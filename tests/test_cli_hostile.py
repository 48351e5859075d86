"""The CLI findings of the hostile review (issue 19), through the real entry point.

Export never replaces what it must not, keeps every field and permission; import
confines to --scope and refuses hostile input with exit 2; human output cannot
drive the terminal; --db refuses empty and dangling paths; --scrub-pii works.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from contextforge import Config, ContextForgeSync
from contextforge.cli.lines import MAX_LINE_BYTES

from .test_cli import CLI, as_json, ok, one_line_error, run, snapshot, write_jsonl

# What must never reach a terminal raw: C0 but \n, C1, DEL and the bidi controls.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    ok("save", "the one entry", "--scope", "user:1", db=path)
    return path


def unchanged(db: Path, before: Counter[tuple[object, ...]]) -> None:
    assert snapshot(db) == before


# --- #2 export refuses to destroy data ----------------------------------------------


def test_export_refuses_the_database_and_its_files(tmp_path: Path, db: Path) -> None:
    before = snapshot(db)
    hard = tmp_path / "hard.db"
    os.link(db, hard)
    soft = tmp_path / "soft.jsonl"
    soft.symlink_to(db)
    targets = [
        str(db),
        f"{db}-wal",
        f"{db}-shm",
        f"{db}-journal",
        str(hard),
        str(soft),
        os.path.relpath(db),
        str(tmp_path / "." / "memory.db"),
        f"{db}.index/meta.json",
    ]
    for target in targets:
        for force in ([], ["--force"]):
            error = one_line_error(run("export", target, *force, db=db), 2)
            assert "refusing" in error or "exists" in error, error
    unchanged(db, before)
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"
    assert not Path(f"{db}-journal").exists()


def test_export_to_stdout_appended_to_the_database_is_refused(db: Path) -> None:
    before = snapshot(db)
    with open(db, "ab") as out:
        done = subprocess.run(
            [*CLI, "export", "--db", str(db)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2 and "stdout is that file" in done.stderr
    unchanged(db, before)


def test_export_refuses_what_is_not_a_regular_file(tmp_path: Path, db: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("keep me\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = {link: "symbolic link", dangling: "symbolic link", fifo: "FIFO", folder: "directory"}
    for target, kind in cases.items():
        assert kind in one_line_error(run("export", str(target), "--force", db=db), 2)
    assert link.is_symlink() and real.read_text() == "keep me\n"
    assert dangling.is_symlink() and not (tmp_path / "nowhere.jsonl").exists()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert "directory" in one_line_error(run("export", f"{tmp_path}/new/", db=db), 2)
    assert not (tmp_path / "new").exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_export_refuses_a_device_node(tmp_path: Path, db: Path) -> None:
    full = tmp_path / "full"
    try:
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    except PermissionError:
        pytest.skip("creating a device node needs root")
    assert "character device" in one_line_error(run("export", str(full), "--force", db=db), 2)
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_export_replaces_an_existing_file_only_with_force_and_keeps_its_mode(
    tmp_path: Path, db: Path
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("previous export\n")
    out.chmod(0o640)
    assert "--force" in one_line_error(run("export", str(out), db=db), 2)
    assert out.read_text() == "previous export\n"

    assert run("export", str(out), "--force", db=db).returncode == 0
    assert json.loads(out.read_text())["content"] == "the one entry"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640

    fresh = tmp_path / "fresh.jsonl"
    umask = os.umask(0)
    os.umask(umask)
    assert run("export", str(fresh), db=db).returncode == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


def test_export_does_not_create_the_database(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    one_line_error(run("export", str(missing), db=missing), 2)
    assert list(tmp_path.iterdir()) == []


# --- #5 export keeps expires_at -----------------------------------------------------


def test_expiry_survives_export_and_import(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    later = datetime.now(timezone.utc).replace(microsecond=654321) + timedelta(days=3)
    with ContextForgeSync.open(str(source)) as store:
        store.save("forget me in three days", scope="u", expires_at=later)
        store.save("forget me in an hour", scope="u", ttl=3600)
        store.save("keep me", scope="u")
    dump = tmp_path / "dump.jsonl"
    assert run("export", str(dump), db=source).returncode == 0
    records = {r["content"]: r for r in map(json.loads, dump.read_text().splitlines())}
    assert records["forget me in three days"]["expires_at"] == later.isoformat()
    assert records["keep me"]["expires_at"] is None

    assert as_json("import", str(dump), db=target)["added"] == 3
    with ContextForgeSync.open(str(source)) as a, ContextForgeSync.open(str(target)) as b:
        expiry = {h.content: h.expires_at for h in a.list()}
        assert {h.content: h.expires_at for h in b.list()} == expiry
    assert expiry["forget me in three days"] == later and expiry["keep me"] is None
    again = as_json("import", str(dump), db=target)
    assert again["added"] == 0 and again["already_present"] == 3

    assert as_json("get", "1", db=source)["expires_at"] == later.isoformat()
    assert "expires" in ok("get", "1", db=source)


def test_import_skips_entries_already_expired(tmp_path: Path) -> None:
    target = tmp_path / "t.db"
    old = write_jsonl(
        tmp_path / "old.jsonl",
        {"content": "long gone", "expires_at": "2001-01-01T00:00:00Z"},
        {"content": "still here", "expires_at": "2999-01-01T00:00:00Z"},
    )
    summary = as_json("import", str(old), db=target)
    assert summary["added"] == 1 and summary["expired_skipped"] == 1
    with ContextForgeSync.open(str(target)) as store:
        assert [h.content for h in store.list()] == ["still here"]
    bad = write_jsonl(tmp_path / "bad.jsonl", {"content": "x", "expires_at": "someday"})
    assert "bad.jsonl:1: 'expires_at'" in one_line_error(run("import", str(bad), db=target), 2)


# --- #9 import --scope confines -----------------------------------------------------


@pytest.mark.parametrize("foreign", ["user:2", None, "user:1 "])
def test_import_scope_refuses_records_naming_another_scope(
    tmp_path: Path, db: Path, foreign: str | None
) -> None:
    before = snapshot(db)
    file = write_jsonl(
        tmp_path / "x.jsonl",
        {"content": "mine", "scope": "user:1"},
        {"content": "no scope given"},
        {"content": "theirs", "scope": foreign},
    )
    error = one_line_error(run("import", str(file), "--scope", "user:1", db=db), 2)
    assert "x.jsonl:3:" in error and "--keep-scopes" in error
    unchanged(db, before)

    kept = as_json("import", str(file), "--scope", "user:1", "--keep-scopes", db=db)
    assert kept["added"] == 3
    with ContextForgeSync.open(str(db)) as store:
        assert store.count("user:1") == 3
        assert [h.content for h in store.list(scope=foreign)] == ["theirs"]


def test_import_scope_confines_records_without_one_and_messages(tmp_path: Path, db: Path) -> None:
    file = write_jsonl(
        tmp_path / "x.jsonl",
        {"content": "no scope"},
        {"role": "user", "content": "hello", "scope": "user:2"},
        {"messages": [{"role": "user", "content": "hi"}]},
    )
    assert as_json("import", str(file), "--scope", "user:1", db=db)["added"] == 3
    assert as_json("scopes", db=db) == [{"scope": "user:1", "entries": 4}]
    assert "--keep-scopes needs --scope" in one_line_error(
        run("import", str(file), "--keep-scopes", db=db), 2
    )


# --- #10 terminal injection ---------------------------------------------------------

HOSTILE = (
    "clear\x1b[2J\x1b[H title\x1b]0;pwned\x07 link\x1b]8;;http://evil.example\x1b\\here"
    "\x1b]8;;\x1b\\ c1\x9b31m del\x7f cr\rover bidi\u202eevil\u2066x\u2069\u200f"
)


def test_human_output_shows_control_and_bidi_characters_as_escapes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with ContextForgeSync.open(str(db)) as store:
        # Labels cannot hold control characters (the engine refuses them), but bidi ones.
        entry = str(
            int(
                store.save(
                    HOSTILE,
                    "kind\u202e",
                    scope="user\u202e:1",
                    session_id="s\u2066",
                    metadata={"note": "\x1b]0;t\x07\x9b\u202e"},
                )
            )
        )
    outputs = [
        ok("query", "clear", db=db),
        ok("query", "clear", "--explain", db=db),
        ok("get", entry, db=db),
        ok("scopes", db=db),
    ]
    for out in outputs:
        assert not RAW.search(out), repr(out)
    card = outputs[2]
    assert "clear\\x1b[2J" in card and "\\x1b]0;pwned\\x07" in card and "\\x1b]8;;" in card
    assert "\\x9b31m" in card and "del\\x7f" in card and "cr\\rover" in card
    assert "bidi\\u202eevil\\u2066x\\u2069\\u200f" in card and "kind\\u202e" in card
    assert "s\\u2066" in card and "\\u001b]0;t\\u0007\\x9b\\u202e" in card  # metadata as JSON
    assert "user\\u202e:1" in outputs[0] and "user\\u202e:1" in outputs[3]

    exact = as_json("get", entry, db=db)
    assert exact["content"] == HOSTILE and exact["kind"] == "kind\u202e"
    assert exact["metadata"] == {"note": "\x1b]0;t\x07\x9b\u202e"}
    assert as_json("query", "clear", db=db)[0]["content"] == HOSTILE
    assert json.loads(ok("export", db=db))["content"] == HOSTILE


def test_multiline_content_keeps_its_lines_in_get(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    entry = ok("save", "first line\n\tsecond line", db=db).strip()
    assert ok("get", entry, db=db).endswith("first line\n\tsecond line\n")


def test_errors_show_hostile_text_as_escapes(tmp_path: Path, db: Path) -> None:
    file = write_jsonl(tmp_path / "x.jsonl", {"content": "x", "scope": "\x1b]0;pwned\x07\u202e"})
    error = one_line_error(run("import", str(file), "--scope", "user:1", db=db), 2)
    assert not RAW.search(error) and "\\x1b]0;pwned\\x07\\u202e" in error
    bad_time = run("query", "x", "--since", "\x1b[2J\u202e", db=db)
    assert not RAW.search(one_line_error(bad_time, 2))
    name = str(tmp_path / "\x1b]0;pwned\x07\u202e.jsonl")  # missing files, quoted raw before
    for args in (["import", name], ["distill", name, "--scope", "p"]):
        error = one_line_error(run(*args, db=db), 2)
        assert not RAW.search(error) and "\\x1b]0;pwned\\x07\\u202e.jsonl" in error, error


# --- #11 hostile input: nesting, endless lines, bad --db --------------------------


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            '{"content": "x", "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}\n",
            "nested too deeply",
        ),
        ('{"content": "x", "metadata": {"a": ' + "[" * 500 + "]" * 500 + "}}\n", "nested deeper"),
        ('{"content": "x", "metadata": {"n": ' + "9" * 5000 + "}}\n", "invalid JSON"),
    ],
)
def test_hostile_json_is_bad_input(tmp_path: Path, db: Path, body: str, problem: str) -> None:
    before = snapshot(db)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n' + body)
    error = one_line_error(run("import", str(bad), db=db), 2)
    assert "bad.jsonl:2:" in error and problem in error
    unchanged(db, before)


def test_a_line_longer_than_the_cap_is_refused_after_reading_the_cap(db: Path) -> None:
    """An endless stream without newlines: the import stops once the cap is read,
    so the writer sees the pipe close long before it has written everything."""
    before = snapshot(db)
    chunk = b"x" * (1 << 20)
    offered = 4 * MAX_LINE_BYTES // len(chunk)
    written = 0
    with subprocess.Popen(
        [*CLI, "import", "-", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdin is not None and proc.stderr is not None
        stdin = proc.stdin

        def feed() -> None:
            nonlocal written
            with contextlib.suppress(BrokenPipeError):
                for _ in range(offered):
                    stdin.write(chunk)
                    written += 1
                stdin.close()

        writer = threading.Thread(target=feed)
        writer.start()
        stderr = proc.stderr.read()  # until the import exits
        proc.wait(timeout=120)
        writer.join(timeout=120)
        with contextlib.suppress(BrokenPipeError):
            stdin.close()
    message = stderr.decode()
    assert proc.returncode == 2, message
    assert f"stdin:1: line longer than {MAX_LINE_BYTES // 2**20} MiB" in message
    assert written < offered  # it stopped reading: the rest never went in
    unchanged(db, before)
    assert f"{MAX_LINE_BYTES // 2**20} MiB" in ok("import", "--help")


def test_a_line_at_the_cap_is_fine(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    record = json.dumps({"content": "y", "metadata": {"pad": ""}})
    pad = MAX_LINE_BYTES - len(record)
    line = record.replace('"pad": ""', '"pad": "' + "p" * pad + '"')
    assert len(line) == MAX_LINE_BYTES
    big = tmp_path / "big.jsonl"
    big.write_text(line + "\r\n")
    assert as_json("import", str(big), db=db)["added"] == 1
    big.write_text(line + " \n")
    assert "big.jsonl:1: line longer" in one_line_error(run("import", str(big), db=db), 2)


def test_stdin_and_transcripts_are_read_up_to_the_cap(tmp_path: Path, db: Path) -> None:
    before = snapshot(db)
    endless = "word " * (MAX_LINE_BYTES // 5 + 1)
    assert "stdin is longer than" in one_line_error(run("save", "-", db=db, stdin=endless), 2)
    transcript = tmp_path / "call.txt"
    transcript.write_text(endless)
    error = one_line_error(run("distill", str(transcript), "--scope", "p", db=db), 2)
    assert "call.txt is longer than" in error
    unchanged(db, before)


def test_empty_db_is_refused_not_the_default(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "CONTEXTFORGE_DB": str(tmp_path / "env.db")}
    done = run("--db", "", "save", "where does this go?", env=env)
    assert "--db" in one_line_error(done, 2) and "empty" in done.stderr
    assert "empty" in one_line_error(run("save", "x", "--db", "", env=env), 2)
    assert list(tmp_path.iterdir()) == []


def test_dangling_db_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "memory.db"
    link.symlink_to(tmp_path / "elsewhere" / "target.db")
    (tmp_path / "elsewhere").mkdir()
    error = one_line_error(run("save", "x", db=link), 2)
    assert "symbolic link" in error and "does not exist" in error
    assert list((tmp_path / "elsewhere").iterdir()) == []
    real = tmp_path / "elsewhere" / "target.db"
    ok("save", "x", db=real)
    assert as_json("stats", db=link)["entries"] == 1  # a link to a store that exists is fine


def test_db_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)  # opening it would block forever
    assert "FIFO" in one_line_error(run("scopes", db=fifo), 2)
    assert "directory" in one_line_error(run("scopes", db=tmp_path), 2)


# --- #12 --scrub-pii ----------------------------------------------------------------


def test_scrub_pii_flag(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    raw = ok("save", "mail alice@example.com", db=db).strip()
    scrubbed = ok("save", "mail bob@example.com", "--scrub-pii", db=db).strip()
    before_command = ok("--scrub-pii", "save", "mail carol@example.com", db=db).strip()
    assert as_json("get", raw, db=db)["content"] == "mail alice@example.com"
    for entry in (scrubbed, before_command):
        content = as_json("get", entry, db=db)["content"]
        assert "@example.com" not in content and "REDACTED" in content

    lines = write_jsonl(
        tmp_path / "pii.jsonl",
        {"content": "call dave@example.com"},
        {"role": "user", "content": "I am erin@example.com"},
    )
    target = tmp_path / "t.db"
    assert as_json("import", str(lines), "--scrub-pii", db=target)["added"] == 2
    with ContextForgeSync.open(Config(path=str(target))) as store:
        assert not any("@example.com" in h.content for h in store.list())
    again = as_json("import", str(lines), "--scrub-pii", db=target)
    assert again["added"] == 0 and again["already_present"] == 2
