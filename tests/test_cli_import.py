"""``import`` after issue 20, through the real entry point: ids survive a backup
and restore (#2), import dedupes as ``save`` does (#1), and chat transcripts keep
their times, drop system prompts and may be one JSON array (#9)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import Config, ContextForgeSync
from contextforge.cli.lines import MAX_LINE_BYTES

from .test_cli import T0, as_json, ok, one_line_error, run, snapshot, write_jsonl


def entries(db: Path) -> dict[int, tuple[Any, ...]]:
    """Every entry by id: its fields but the id."""
    with ContextForgeSync.open(str(db)) as store:
        return {
            h.id: (
                h.content,
                h.kind,
                h.scope,
                h.session_id,
                json.dumps(h.metadata, sort_keys=True),
                h.timestamp,
                h.expires_at,
            )
            for h in store.list()
        }


def seed_with_gaps(db: Path) -> None:
    """Seven entries, then 2 and 5 deleted: ids 1, 3, 4, 6, 7, two of them equal
    but for their id (saved with dedupe=False)."""
    with ContextForgeSync.open(str(db)) as store:
        store.save_many(
            [
                {"content": "the first note", "scope": "user:1", "timestamp": T0},
                {"content": "deleted later", "timestamp": T0},
                {
                    "content": "a fact",
                    "kind": "fact",
                    "scope": "user:1",
                    "session_id": "s1",
                    "metadata": {"k": [1, 2]},
                    "timestamp": T0 + timedelta(seconds=1),
                },
                {
                    "content": "a fact",
                    "kind": "fact",
                    "scope": "user:1",
                    "session_id": "s1",
                    "metadata": {"k": [1, 2]},
                    "timestamp": T0 + timedelta(seconds=1),
                    "dedupe": False,
                },
                {"content": "deleted too", "timestamp": T0},
                {
                    "content": "expires one day",
                    "scope": "team:a",
                    "timestamp": T0,
                    "expires_at": datetime.now(timezone.utc) + timedelta(days=30),
                },
                {"content": "the newest note", "timestamp": T0 + timedelta(days=1)},
            ]
        )
        assert store.delete_many([2, 5]) == [True, True]


def read_map(path: Path) -> list[dict[str, int]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- #2 ids survive export and import -------------------------------------------------


def test_import_into_an_empty_store_keeps_every_id(tmp_path: Path) -> None:
    source, target, dump = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "dump.jsonl"
    seed_with_gaps(source)
    ok("export", str(dump), db=source)
    assert (
        next(json.loads(line)["id"] for line in dump.read_text().splitlines()) == 7
    )  # newest first

    summary = as_json("import", str(dump), db=target)
    assert summary == {**summary, "added": 5, "ids": "kept", "remapped": 0, "duplicates": 0}
    assert entries(target) == entries(source)  # the same ids, the gaps too
    assert sorted(entries(target)) == [1, 3, 4, 6, 7]

    again = as_json("import", str(dump), db=target)  # idempotent: nothing to do
    assert again == {**again, "added": 0, "already_present": 5, "ids": "kept", "remapped": 0}
    assert entries(target) == entries(source)


def test_a_resumed_restore_still_keeps_ids(tmp_path: Path) -> None:
    source, target, dump = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "dump.jsonl"
    seed_with_gaps(source)
    ok("export", str(dump), db=source)
    part = tmp_path / "part.jsonl"
    part.write_text("".join(dump.read_text().splitlines(keepends=True)[:2]))  # ids 7 and 4
    assert as_json("import", str(part), db=target)["ids"] == "kept"

    resumed = as_json("import", str(dump), db=target)
    assert resumed == {**resumed, "added": 3, "already_present": 2, "ids": "kept"}
    assert entries(target) == entries(source)


def test_import_into_a_non_empty_store_renumbers_in_id_order_and_maps_the_ids(
    tmp_path: Path,
) -> None:
    source, target, dump = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "dump.jsonl"
    seed_with_gaps(source)
    ok("export", str(dump), db=source)
    ok("save", "already in the target", "--scope", "x", db=target)
    ok("save", "also in the target", "--scope", "x", db=target)
    mapping = tmp_path / "ids.jsonl"

    summary = as_json("import", str(dump), "--id-map", str(mapping), db=target)
    # Ids 3 and 4 hold equal entries: dedupe (the default) keeps one, and both map
    # to it. New ids follow the old ones' order; 4 happens to stay 4.
    assert summary == {
        **summary,
        "added": 4,
        "duplicates": 1,
        "ids": "renumbered",
        "remapped": 4,
        "id_map": str(mapping),
    }
    pairs = read_map(mapping)
    assert [(p["old"], p["new"]) for p in pairs] == [(1, 3), (3, 4), (4, 4), (6, 5), (7, 6)]
    before, after = entries(source), entries(target)
    for pair in pairs:  # a citation [mem:old] becomes [mem:new]
        assert after[pair["new"]] == before[pair["old"]]

    text = run("import", str(dump), db=target)  # a re-run: nothing to add; no map asked for
    assert text.returncode == 0, text.stderr
    assert (
        "imported 0 of 5 records" in text.stdout and "4 already present, 1 duplicate" in text.stdout
    )

    copies = tmp_path / "c.db"
    ok("save", "already in the target", db=copies)
    kept = as_json(
        "import", str(dump), "--no-dedupe", "--id-map", str(mapping), "--force", db=copies
    )
    assert kept == {**kept, "added": 5, "duplicates": 0, "remapped": 3}  # 3 and 4 stay
    assert [p["new"] for p in read_map(mapping)] == [2, 3, 4, 5, 6]


def test_renumbering_without_a_map_warns_and_a_duplicate_maps_to_the_stored_entry(
    tmp_path: Path,
) -> None:
    target = tmp_path / "b.db"
    ok("save", "unrelated", db=target)
    equal = ok(
        "save", "the office is in Lyon", "--scope", "u", "--timestamp", "2020-01-01", db=target
    )
    dump = write_jsonl(
        tmp_path / "dump.jsonl",
        {"id": 9, "content": "the office is  in Lyon", "scope": "u", "timestamp": T0.isoformat()},
        {"id": 4, "content": "new text", "scope": "u", "timestamp": T0.isoformat()},
    )
    result = run("import", str(dump), db=target)
    assert result.returncode == 0, result.stderr
    assert "imported 1 of 2 records" in result.stdout and "1 duplicate" in result.stdout
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("Warning: 2 entries got a new id")

    mapping = tmp_path / "map.jsonl"
    write_jsonl(
        dump,
        {
            "id": 9,
            "content": "the office is  in Lyon",
            "scope": "u",
            "timestamp": (T0 + timedelta(hours=1)).isoformat(),
        },
    )
    summary = as_json("import", str(dump), "--id-map", str(mapping), db=target)
    assert summary == {**summary, "added": 0, "duplicates": 1, "remapped": 1}
    assert read_map(mapping) == [{"old": 9, "new": int(equal)}]


@pytest.mark.parametrize(
    ("records", "line", "problem"),
    [
        ([{"content": "a", "id": 0}], 1, "'id' must be a positive integer"),
        ([{"content": "a", "id": "5"}], 1, "'id' must be a positive integer, got a string"),
        ([{"content": "a", "id": True}], 1, "'id' must be a positive integer"),
        ([{"content": "a", "id": 2**63}], 1, "below 2**63"),
        (
            [{"content": "a", "id": 3}, {"content": "b", "id": 3}],
            2,
            "id 3 was already given on line 1",
        ),
    ],
)
def test_bad_ids_are_refused(
    tmp_path: Path, records: list[object], line: int, problem: str
) -> None:
    db = tmp_path / "m.db"
    ok("save", "keep me", db=db)
    before = snapshot(db)
    error = one_line_error(
        run("import", str(write_jsonl(tmp_path / "f.jsonl", *records)), db=db), 2
    )
    assert f"f.jsonl:{line}:" in error and problem in error
    assert snapshot(db) == before


def test_id_map_is_written_safely(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    dump = write_jsonl(tmp_path / "f.jsonl", {"id": 1, "content": "a"})
    assert "database" in one_line_error(run("import", str(dump), "--id-map", str(db), db=db), 2)
    taken = tmp_path / "taken.jsonl"
    taken.write_text("precious\n")
    assert "--force" in one_line_error(run("import", str(dump), "--id-map", str(taken), db=db), 2)
    assert taken.read_text() == "precious\n"
    assert not as_json("scopes", db=db)  # nothing was imported
    assert "--dry-run" in one_line_error(
        run("import", str(dump), "--id-map", str(tmp_path / "new.jsonl"), "--dry-run", db=db), 2
    )
    ok("import", str(dump), "--id-map", str(taken), "--force", db=db)
    assert read_map(taken) == [{"old": 1, "new": 1}]


# --- #1 import dedupes as save does ---------------------------------------------------


def test_import_dedupes_by_default_with_saves_rule(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ok("save", "ok", "--scope", "u", "--session", "s1", "--timestamp", T0.isoformat(), db=db)
    later = (T0 + timedelta(minutes=5)).isoformat()
    records = [
        {"content": "ok", "scope": "u", "session_id": "s1", "timestamp": T0.isoformat()},  # exact
        {"content": "ok", "scope": "u", "session_id": "s1", "timestamp": later},  # same but time
        {"content": " ok\n", "scope": "u", "session_id": "s1"},  # same but spaces, no time
        {"content": "ok", "scope": "u", "session_id": "s2", "timestamp": later},  # other session
        {"content": "ok", "scope": "u", "session_id": "s1", "kind": "fact"},  # other kind
        {"content": "ok", "scope": "u", "session_id": "s1", "metadata": {"a": 1}},  # other metadata
    ]
    f = write_jsonl(tmp_path / "f.jsonl", *records)

    dry = as_json("import", str(f), "--dry-run", db=db)
    assert dry == {**dry, "added": 5, "already_present": 1, "duplicates": None}
    summary = as_json("import", str(f), db=db)
    assert summary == {**summary, "added": 3, "already_present": 1, "duplicates": 2}
    assert as_json("scopes", db=db) == [{"scope": "u", "entries": 4}]
    text = ok("import", str(f), db=db)  # a re-run: the duplicates are found again
    assert "imported 0 of 6 records" in text and "(4 already present, 2 duplicates)" in text

    kept = as_json("import", str(f), "--no-dedupe", db=db)
    assert kept == {**kept, "added": 2, "already_present": 4, "duplicates": 0}
    assert as_json("scopes", db=db) == [{"scope": "u", "entries": 6}]


def test_save_says_whether_it_stored_the_entry(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = as_json("save", "ok", "--scope", "u", "--session", "s1", db=db)
    assert first["created"] is True
    assert as_json("save", "ok ", "--scope", "u", "--session", "s1", db=db) == {
        **first,
        "created": False,
    }
    other = as_json("save", "ok", "--scope", "u", "--session", "s2", db=db)
    assert other["created"] is True and other["id"] != first["id"]
    again = run("save", "ok", "--scope", "u", "--session", "s1", db=db)
    assert again.stdout.strip() == str(first["id"])
    assert (
        again.stderr.startswith(f"already stored as {first['id']}")
        and again.stderr.count("\n") == 1
    )
    assert as_json("save", "ok", "--scope", "u", "--session", "s1", "--no-dedupe", db=db)["created"]


# --- #9 chat transcripts ---------------------------------------------------------------


def messages(db: Path) -> list[Any]:
    with ContextForgeSync.open(str(db)) as store:
        return sorted(store.list(kind="message"), key=lambda h: h.id)


def test_messages_read_created_at_and_create_time(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    f = write_jsonl(
        tmp_path / "chat.jsonl",
        {"role": "user", "content": "iso", "created_at": "2024-05-01T10:00:00Z"},
        {"role": "user", "content": "unix", "create_time": 1714557600.5},
        {"role": "user", "content": "both", "timestamp": 0, "created_at": "2030-01-01"},
    )
    ok("import", str(f), "--scope", "u", db=db)
    assert [m.timestamp for m in messages(db)] == [
        datetime(2024, 5, 1, 10, tzinfo=timezone.utc),
        datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=timezone.utc),
        datetime(1970, 1, 1, tzinfo=timezone.utc),  # timestamp comes first
    ]
    bad = write_jsonl(
        tmp_path / "bad.jsonl", {"role": "user", "content": "x", "create_time": "soon"}
    )
    assert "bad.jsonl:1: 'create_time'" in one_line_error(
        run("import", str(bad), "--scope", "u", db=db), 2
    )


def test_undated_messages_take_their_neighbours_time_in_order(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    t1, t2 = "2024-05-01T10:00:00+00:00", "2024-05-01T11:00:00+00:00"
    f = write_jsonl(
        tmp_path / "chat.jsonl",
        {
            "id": "c1",
            "messages": [
                {"role": "user", "content": "before any date"},
                {"role": "assistant", "content": "dated one", "created_at": t1},
                {"role": "user", "content": "undated middle"},
                {"role": "assistant", "content": "dated two", "created_at": t2},
                {"role": "user", "content": "undated last"},
            ],
        },
        # Loose lines of one session are one transcript too.
        {"role": "user", "content": "loose undated", "session_id": "s"},
        {"role": "user", "content": "loose dated", "session_id": "s", "timestamp": t1},
    )
    ok("import", str(f), "--scope", "u", db=db)
    got = {m.content: m.timestamp.isoformat() for m in messages(db)}
    assert got == {
        "before any date": t1,
        "dated one": t1,
        "undated middle": t1,
        "dated two": t2,
        "undated last": t2,
        "loose undated": t1,
        "loose dated": t1,
    }
    with ContextForgeSync.open(str(db)) as store:  # newest first, ties by the higher id
        listed = [h.content for h in store.list(session_id="c1")]
    assert listed == ["undated last", "dated two", "undated middle", "dated one", "before any date"]
    assert as_json("import", str(f), "--scope", "u", db=db)["already_present"] == 7


def test_system_messages_are_skipped_unless_asked(tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "chat.jsonl",
        {
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "developer", "content": "Answer briefly."},
                {"role": "user", "content": "hello"},
            ]
        },
        {"role": "System", "content": "loose system prompt"},
    )
    db = tmp_path / "m.db"
    summary = as_json("import", str(f), "--scope", "u", db=db)
    assert summary == {**summary, "added": 1, "system_messages_skipped": 3}
    assert [m.content for m in messages(db)] == ["hello"]
    assert "3 system messages skipped" in ok("import", str(f), "--scope", "v", db=db)

    every = as_json("import", str(f), "--scope", "w", "--include-system", db=db)
    assert every == {**every, "added": 4, "system_messages_skipped": 0}


def test_a_json_array_of_messages_is_one_transcript(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    chat = [
        {"role": "user", "content": "what's the plan?", "created_at": "2024-05-01T10:00:00Z"},
        {"role": "assistant", "content": "ship on Friday"},
        {"role": "system", "content": "be brief"},
    ]
    f = tmp_path / "chat.json"
    f.write_text("\ufeff" + json.dumps(chat, indent=2), encoding="utf-8")  # several lines, a BOM
    summary = as_json("import", str(f), "--scope", "u", "--session", "c", db=db)
    assert summary == {**summary, "added": 2, "system_messages_skipped": 1}
    got = messages(db)
    assert [m.content for m in got] == ["what's the plan?", "ship on Friday"]
    assert {m.timestamp for m in got} == {datetime(2024, 5, 1, 10, tzinfo=timezone.utc)}
    assert [m.metadata["message_index"] for m in got] == [0, 1] and {m.session_id for m in got} == {
        "c"
    }
    assert (
        as_json("import", str(f), "--scope", "u", "--session", "c", db=db)["already_present"] == 2
    )

    stdin = run("import", "-", "--scope", "v", "--json", db=db, stdin=json.dumps(chat))
    assert json.loads(stdin.stdout)["added"] == 2


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        ('[{"role": "user", "content": "a"}, 5]', 1, "[1]: expected a message object"),
        ('\n[{"content": "no role"}]', 2, "[0]: 'role' must be a non-empty string"),
        ('[\n  {"role": "user", "content": "a"},\n]', 1, "invalid JSON"),
        ('[{"role": "user", "content": "a"}]\n[]', 1, "invalid JSON: Extra data (line 2"),
    ],
)
def test_a_bad_json_array_is_refused(tmp_path: Path, body: str, line: int, problem: str) -> None:
    db = tmp_path / "m.db"
    ok("save", "keep me", db=db)
    before = snapshot(db)
    f = tmp_path / "chat.json"
    f.write_text(body, encoding="utf-8")
    error = one_line_error(run("import", str(f), "--scope", "u", db=db), 2)
    assert f"chat.json:{line}:" in error and problem in error
    assert snapshot(db) == before


def test_a_json_array_file_is_capped_like_a_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    message = json.dumps({"role": "user", "content": "x" * 1000})
    f = tmp_path / "big.json"
    with f.open("w", encoding="utf-8") as out:  # many short lines, more than the cap in all
        out.write("[\n")
        for _ in range(MAX_LINE_BYTES // len(message) + 1):
            out.write(message + ",\n")
        out.write(message + "\n]\n")
    error = one_line_error(run("import", str(f), "--scope", "u", db=db), 2)
    assert "big.json:1: a JSON array file longer than 16 MiB" in error
    assert not db.exists()  # refused before the store was opened


def test_a_transcript_without_scope_warns_once(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    f = write_jsonl(
        tmp_path / "chat.jsonl",
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    )
    result = run("import", str(f), "--json", db=db)
    assert result.returncode == 0 and json.loads(result.stdout)["added"] == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Warning: 2 chat messages without --scope")
    assert run("import", str(f), "--scope", "u", db=db).stderr == ""
    notes = write_jsonl(tmp_path / "notes.jsonl", {"content": "a note"})
    assert run("import", str(notes), db=db).stderr == ""  # entries carry their own scope


def test_reimport_into_a_store_that_scrubs_pii_finds_its_records_present(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with ContextForgeSync.open(Config(path=str(db), scrub_pii=True)) as store:  # the application
        store.save("seed")
    f = write_jsonl(tmp_path / "f.jsonl", {"content": "mail ann@example.com", "timestamp": 0})
    assert as_json("import", str(f), db=db)["added"] == 1  # no --scrub-pii: the store's setting
    again = as_json("import", str(f), "--no-dedupe", db=db)
    assert again == {**again, "added": 0, "already_present": 1}
