"""Keyed facts on the command line (issue 22): ``save --key``, ``history``,
``query --as-of`` and ``--all-versions``, ``get`` cards, and keys, intervals and
supersession links through ``export`` and ``import``, through the real entry
point."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, ContextForgeSync

from .test_cli import as_json, ok, one_line_error, run, write_jsonl

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def iso(n: float) -> str:
    return day(n).isoformat()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def save(db: Path, content: str, *args: str) -> int:
    saved = as_json("save", content, "--scope", "u", *args, db=db)
    assert saved["created"] is True
    return int(saved["id"])


def test_save_history_query_and_get(db: Path) -> None:
    berlin = save(db, "Alice lives in Berlin", "--key", "city", "--timestamp", iso(0))
    paris = save(db, "Alice lives in Paris", "--key", "city", "--timestamp", iso(30))
    rome = save(db, "Alice lived in Rome", "--key", "city", "--valid-from", iso(10))
    wrong = save(db, "standup is at nine", "--timestamp", iso(0))
    right = save(db, "standup is at ten", "--supersedes", str(wrong), "--timestamp", iso(1))
    save(db, "the office is closed", "--valid-from", iso(200), "--valid-to", iso(214))

    # The same content as the version that holds adds none.
    again = as_json("save", "Alice  lives in Paris", "--scope", "u", "--key", "city", db=db)
    assert again == {"id": paris, "created": False}

    history = as_json("history", "city", "--scope", "u", db=db)
    assert [(h["id"], h["valid_from"], h["valid_to"], h["current"]) for h in history] == [
        (berlin, iso(0), iso(10), False),
        (rome, iso(10), iso(30), False),
        (paris, iso(30), None, True),
    ]
    assert [h["superseded_by"] for h in history] == [rome, paris, None]
    table = ok("history", "city", "--scope", "u", db=db).splitlines()
    assert table[0].split() == ["id", "valid", "current", "kind", "content"]
    assert [line.split()[0] for line in table[1:]] == [str(berlin), str(rome), str(paris)]
    assert "2024-01-11 00:00:00 .. 2024-01-31 00:00:00  no" in table[2]
    assert table[3].rstrip().endswith("Alice lives in Paris") and "  yes  " in table[3]

    # Current truth by default; what held then with --as-of; every version with --all-versions.
    def found(*args: str) -> list[Any]:
        return as_json("query", "Alice standup office", "--scope", "u", *args, db=db)  # type: ignore[no-any-return]

    assert {h["id"] for h in found()} == {paris, right}
    assert {h["id"] for h in found("--as-of", iso(15))} == {rome, right}
    assert {h["id"] for h in found("--as-of", iso(0.5))} == {berlin, wrong}
    every = {h["id"]: h for h in found("--all-versions")}
    assert len(every) == 6
    assert {i for i, h in every.items() if h["current"]} == {paris, right}
    assert every[berlin]["key"] == "city" and every[wrong]["superseded_by"] == right
    rows = ok("query", "Alice", "--scope", "u", "--all-versions", db=db).splitlines()
    assert rows[0].split() == ["id", "scope", "kind", "key", "valid", "current", "content"]
    assert len(rows) == 4
    explained = ok("query", "standup", "--all-versions", "--explain", db=db).splitlines()
    assert "current" in explained[0].split()
    error = one_line_error(run("query", "x", "--as-of", iso(1), "--all-versions", db=db), 2)
    assert "not both" in error

    # A card shows the key, the interval and the newer version; superseded entries are found.
    card = ok("get", str(berlin), db=db)
    assert "key        city" in card and "superseded by " + str(rome) in card
    assert f"valid      {iso(0)} .. {iso(10)}" in card and "current    no" in card
    plain = ok("get", str(right), db=db)
    assert "key " not in plain and "valid " not in plain  # an entry that holds for good
    got = as_json("get", str(wrong), db=db)
    assert (got["valid_to"], got["superseded_by"], got["current"]) == (iso(1), right, False)


def test_bad_keys_and_links_are_usage_errors(db: Path) -> None:
    berlin = save(db, "Alice lives in Berlin", "--key", "city", "--timestamp", iso(0))
    for args in (
        ["--key", ""],
        ["--key", "a\nb"],
        ["--supersedes", str(berlin)],  # a version of a key: saved under the key
        ["--supersedes", "999"],
        ["--supersedes", "0"],
        ["--valid-from", iso(5), "--valid-to", iso(5)],
        ["--valid-to", "not a time"],
    ):
        one_line_error(run("save", "x", "--scope", "u", *args, db=db), 2)
    assert "no versions of key 'city' in scope 'other'" in one_line_error(
        run("history", "city", "--scope", "other", db=db), 1
    )
    assert as_json("stats", db=db)["entries"] == 1


def test_stats_counts_every_version(db: Path) -> None:
    save(db, "v1", "--key", "k", "--timestamp", iso(0))
    save(db, "v2", "--key", "k", "--timestamp", iso(1))
    stats = as_json("stats", db=db)
    assert (stats["entries"], stats["current"]) == (2, 1)
    assert stats["scopes"] == [{"scope": "u", "entries": 2}]


# --- export and import ------------------------------------------------------------------


def seed(db: Path, *, chain: bool = True) -> None:
    """Two keys in two scopes (one with a version saved out of order, one with a
    version for a period), a correction chain without a key, plain entries and a
    fact for a period, with a deleted entry leaving a gap in the ids; and two
    entries that look plain but are in a timeline, so hold only from their
    timestamp: one saved with that start, one whose correction was deleted."""
    with ContextForgeSync.open(str(db)) as cf:
        cf.save("Alice lives in Berlin", "fact", scope="u", key="city", timestamp=day(0))
        cf.save("a plain note about Alice", scope="u", timestamp=day(1))
        cf.save("Alice lives in Paris", "fact", scope="u", key="city", timestamp=day(30))
        cf.save("Alice lived in Rome", "fact", scope="u", key="city", timestamp=day(10))
        gone = cf.save("deleted later", scope="u", timestamp=day(2))
        cf.save("deadline is May 1", scope="team", key="deadline", timestamp=day(3))
        cf.save(
            "deadline is June 1",
            scope="team",
            key="deadline",
            timestamp=day(5),
            valid_to=day(9),
            metadata={"source": "mail"},
        )
        cf.save("deadline is July 1", scope="team", key="deadline", timestamp=day(20))
        if chain:
            wrong = cf.save("standup is at nine", scope="team", timestamp=day(0))
            cf.delete(gone)
            right = cf.supersede(wrong, "standup is at ten", timestamp=day(2))
            cf.supersede(right, "standup is at half past ten", timestamp=day(4))
        cf.save("the office is closed", scope=None, valid_from=day(40), valid_to=day(54))
        cf.save("a global note", timestamp=day(6))
        cf.save("a note that holds from day 7", timestamp=day(7), valid_from=day(7))
        if chain:
            lone = cf.save("a note corrected, then not", timestamp=day(8))
            cf.delete(cf.supersede(lone, "the correction, deleted", timestamp=day(9)))


def everything(db: Path) -> dict[str, Any]:
    """What the store says about every entry, key and chain."""
    with ContextForgeSync.open(str(db)) as cf:
        hits = list(cf.list(include_superseded=True))
        return {
            "entries": sorted((h.to_dict() for h in hits), key=lambda d: d["id"]),
            "current": sorted(h.id for h in hits if h.current),
            "history": {
                (scope, key): [h.to_dict() for h in cf.history(key, scope)]
                for scope, key in (("u", "city"), ("team", "deadline"))
            },
            "versions": {h.id: [v.id for v in cf.versions(h.id)] for h in hits},
            "query": sorted(
                (
                    h.to_dict()
                    for h in cf.query(
                        "Alice deadline standup office note later",
                        ALL_SCOPES,
                        4096,
                        include_superseded=True,
                        # A fixed clock: a score's recency part must not
                        # depend on when each store is read.
                        now=day(100),
                    )
                ),
                key=lambda d: d["id"],
            ),
            "as_of": {
                n: sorted(
                    h.id
                    for h in cf.query(
                        "Alice deadline standup office note later", ALL_SCOPES, 4096, as_of=day(n)
                    )
                )
                for n in (-1, 0.5, 3, 6, 7.5, 8.5, 12, 25, 45)
            },
        }


def restore(source: Path, tmp_path: Path, name: str, *args: str) -> tuple[Path, Any]:
    backup = tmp_path / f"{name}.jsonl"
    ok("export", str(backup), db=source)
    target = tmp_path / f"{name}.db"
    result = run("import", str(backup), "--json", *args, db=target)
    return target, result


def test_keys_and_intervals_round_trip_with_their_ids(db: Path, tmp_path: Path) -> None:
    seed(db, chain=False)
    target, result = restore(db, tmp_path, "restored")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ids"] == "kept" and summary["added"] == summary["records"] == 11
    before, after = everything(db), everything(target)
    assert after == before
    # Plain entries hold at every time; the one saved with a start does not.
    assert [e["content"] for e in after["entries"] if e["id"] in after["as_of"][-1]] == [
        "a plain note about Alice",
        "deleted later",
        "a global note",
    ]
    # The out-of-order version points to a lower id, and came back so.
    rome = next(e for e in after["entries"] if e["content"] == "Alice lived in Rome")
    assert rome["superseded_by"] < rome["id"]
    # Importing again adds nothing: every version, superseded ones too, is present.
    again = json.loads(ok("import", str(tmp_path / "restored.jsonl"), "--json", db=target))
    assert again == {**again, "added": 0, "already_present": 11, "ids": "kept"}
    assert everything(target) == before


def test_a_correction_chain_round_trips_with_its_ids(db: Path, tmp_path: Path) -> None:
    seed(db)
    target, result = restore(db, tmp_path, "restored")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ids"] == "kept"
    assert everything(target) == everything(db)


def test_a_correction_chain_round_trips_into_a_store_in_use(db: Path, tmp_path: Path) -> None:
    """Into a store that is not empty, ids are renumbered: the links follow them."""
    seed(db)
    target = tmp_path / "busy.db"
    with ContextForgeSync.open(str(target)) as cf:
        cf.save("already here", scope="elsewhere")
    backup = tmp_path / "backup.jsonl"
    ok("export", str(backup), db=db)
    id_map = tmp_path / "map.jsonl"
    # A batch of 1: each correction is saved after the entry it corrects has its new id.
    for size in ("1", "1000"):
        fresh = tmp_path / f"busy-{size}.db"
        fresh.write_bytes(target.read_bytes())
        summary = as_json(
            "import",
            str(backup),
            "--id-map",
            str(id_map),
            "--force",
            "--batch-size",
            size,
            db=fresh,
        )
        assert summary["ids"] == "renumbered" and summary["added"] == 14
        new = {r["old"]: r["new"] for r in map(json.loads, id_map.read_text().splitlines())}
        # Scores are left out: the entry already there changes the BM25 statistics.
        assert _unscored(everything(fresh)) == _unscored(_renumbered(everything(db), new, fresh))


def _unscored(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "query": [{**d, "score": None} for d in state["query"]]}


def _renumbered(state: dict[str, Any], new: dict[int, int], db: Path) -> dict[str, Any]:
    """``state`` with every id (and link) mapped to its new one, plus the entry
    that was already in the store."""

    def entry(d: dict[str, Any]) -> dict[str, Any]:
        sb = d["superseded_by"]
        return {**d, "id": new[d["id"]], "superseded_by": None if sb is None else new[sb]}

    with ContextForgeSync.open(str(db)) as cf:
        [here] = [h for h in cf.list(scope="elsewhere")]

    def ids(old: list[int]) -> list[int]:
        return sorted(new[x] for x in old)

    return {
        "entries": sorted([*map(entry, state["entries"]), here.to_dict()], key=lambda d: d["id"]),
        "current": sorted([*ids(state["current"]), here.id]),
        "history": {k: list(map(entry, v)) for k, v in state["history"].items()},
        "versions": {
            **{new[i]: [new[v] for v in vs] for i, vs in state["versions"].items()},
            here.id: [here.id],
        },
        "query": sorted(map(entry, state["query"]), key=lambda d: d["id"]),
        "as_of": {n: ids(xs) for n, xs in state["as_of"].items()},
    }


def test_links_no_store_could_make_are_refused(db: Path, tmp_path: Path) -> None:
    base = {"kind": "note", "scope": "u", "timestamp": iso(0)}
    cases = {
        "has a lower id": [
            {**base, "id": 5, "content": "old", "superseded_by": 3},
            {**base, "id": 3, "content": "new", "timestamp": iso(1)},
        ],
        "in another scope": [
            {**base, "id": 1, "content": "old", "superseded_by": 2},
            {**base, "id": 2, "content": "new", "scope": "v"},
        ],
        "starts to hold before": [
            {**base, "id": 1, "content": "old", "superseded_by": 2, "timestamp": iso(3)},
            {**base, "id": 2, "content": "new"},
        ],
        "has a key": [
            {**base, "id": 1, "content": "old", "superseded_by": 2},
            {**base, "id": 2, "content": "new", "key": "k"},
        ],
    }
    for reason, records in cases.items():
        path = write_jsonl(tmp_path / "bad.jsonl", *records)
        error = one_line_error(run("import", str(path), db=db), 2)
        assert f"bad.jsonl:1: 'superseded_by' {records[0]['superseded_by']}" in error
        assert reason in error
    bad = write_jsonl(tmp_path / "bad.jsonl", {"content": "x", "superseded_by": "2"})
    assert "'superseded_by' must be a positive integer" in one_line_error(
        run("import", str(bad), db=db), 2
    )
    with ContextForgeSync.open(str(db)) as cf:
        assert cf.count(include_superseded=True) == 0
    # A link whose other end is not in the file is left out; the interval stays.
    alone = write_jsonl(
        tmp_path / "alone.jsonl",
        {**base, "id": 4, "content": "old", "valid_to": iso(2), "superseded_by": 9},
    )
    ok("import", str(alone), db=db)
    with ContextForgeSync.open(str(db)) as cf:
        hit = cf.get(4, include_superseded=True)
        assert hit is not None and (hit.valid_to, hit.superseded_by) == (day(2), None)
