"""Faults: SIGKILL during mixed writes, a damaged index directory, a full disk.

Profiles: the crash loop runs ``CONTEXTFORGE_CRASH_ROUNDS`` rounds (default 5) in
CI; the long profile (``CONTEXTFORGE_LONG=1``, set by ``make soak``) adds a
20-round run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from contextforge import ALL_SCOPES, Config, ContextForge, ContextForgeError, StorageError

SCOPES = ("s0", "s1", "s2")
BIG = 10**9

# Sequential writer: at most one operation is in flight when the kill lands.
# Before each op it prints "P <n> <op> <id>", after it "A <n> <op> <id> <scope>".
WRITER = textwrap.dedent(
    """
    import asyncio, json, random, sys
    from contextforge import Config, ContextForge

    SCOPES = ("s0", "s1", "s2")

    async def main(path, start, seed, live_file):
        rng = random.Random(seed)
        with open(live_file) as fh:
            live = [int(x) for x in json.load(fh)]
        cf = await ContextForge.open(Config(path=path, flush_entries=16, flush_ms=5))
        print("R", flush=True)
        n = start
        while True:
            roll = rng.random()
            if roll < 0.55 or len(live) < 5:
                scope = rng.choice(SCOPES)
                print("P", n, "save", -1, flush=True)
                entry_id = await cf.save(f"opmark{n} payload words", scope=scope)
                live.append(entry_id)
                print("A", n, "save", entry_id, scope, flush=True)
            elif roll < 0.85:
                entry_id = rng.choice(live)
                print("P", n, "update", entry_id, flush=True)
                if rng.random() < 0.3:
                    scope = rng.choice(SCOPES)
                    hit = await cf.update(entry_id, content=f"opmark{n} updated payload", scope=scope)
                else:
                    hit = await cf.update(entry_id, content=f"opmark{n} updated payload")
                print("A", n, "update", entry_id, hit.scope, flush=True)
            else:
                entry_id = live.pop(rng.randrange(len(live)))
                print("P", n, "delete", entry_id, flush=True)
                existed = await cf.delete(entry_id)
                assert existed, entry_id
                print("A", n, "delete", entry_id, "-", flush=True)
            n += 1

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    """
)


def save_text(n: int) -> str:
    return f"opmark{n} payload words"


def update_text(n: int) -> str:
    return f"opmark{n} updated payload"


@dataclass
class Live:
    marker: int
    scope: str
    content: str


@dataclass
class Model:
    """What the acknowledged operations say the store holds."""

    alive: dict[int, Live] = field(default_factory=dict)
    deleted: dict[int, int] = field(default_factory=dict)  # id -> its last marker
    # The one operation that may or may not have committed: (n, op, id).
    pending: tuple[int, str, int] | None = None


def run_writer(
    path: str, model: Model, start: int, seed: int, after: float, tmp: Path, from_spawn: bool
) -> int:
    """Runs the writer, SIGKILLs it ``after`` seconds after it is ready (or after it
    was spawned, to land kills inside open's catch-up too), folds the acks into
    ``model``. Returns the number of acknowledged operations."""
    live_file = tmp / "live.json"
    live_file.write_text(json.dumps(sorted(model.alive)))
    acked = 0
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, path, str(start), str(seed), str(live_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + after
        if not from_spawn:
            assert proc.stdout.readline() == "R\n", "the writer did not open the store"
            deadline = time.monotonic() + after
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        lines.extend(proc.stdout)
        err = proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL, f"writer died on its own: {err[-2000:]}"
    model.pending = None
    for line in lines:
        parts = line.split()
        if parts == ["R"]:
            continue
        if not line.endswith("\n") or len(parts) < 4:  # cut by the kill: still pending
            continue
        tag, n, op, entry_id = parts[0], int(parts[1]), parts[2], int(parts[3])
        if tag == "P":
            model.pending = (n, op, entry_id)
            continue
        assert model.pending is not None and model.pending[0] == n, line
        model.pending = None
        acked += 1
        if op == "save":
            assert entry_id not in model.alive and entry_id not in model.deleted
            model.alive[entry_id] = Live(n, parts[4], save_text(n))
        elif op == "update":
            model.alive[entry_id] = Live(n, parts[4], update_text(n))
        else:
            model.deleted[entry_id] = model.alive.pop(entry_id).marker
    return acked


async def marker_ids(cf: ContextForge, n: int) -> list[int]:
    return sorted(h.id for h in await cf.query(f"opmark{n}", ALL_SCOPES, BIG, depth=10_000))


async def probe(cf: ContextForge) -> dict[str, list[int]]:
    """Ids per probe query: each scope and everything."""
    out: dict[str, list[int]] = {}
    for scope in (*SCOPES, None):
        for q in ("payload", "updated", "words payload"):
            hits = await cf.query(q, scope, BIG, depth=10_000)
            out[f"{q}@{scope}"] = sorted(h.id for h in hits)
    return out


async def resolve_pending(cf: ContextForge, model: Model) -> None:
    """Folds the operation cut by the kill into the model, whichever way it went,
    after checking that it went wholly one way or the other."""
    if model.pending is None:
        return
    n, op, entry_id = model.pending
    model.pending = None
    if op == "save":
        found = await marker_ids(cf, n)
        assert len(found) <= 1, f"in-flight save {n} is present {len(found)} times"
        if found:
            hit = await cf.get(found[0])
            assert hit is not None and hit.content == save_text(n) and hit.scope is not None
            model.alive[found[0]] = Live(n, hit.scope, hit.content)
    elif op == "update":
        hit = await cf.get(entry_id)
        before = model.alive[entry_id]
        assert hit is not None, f"in-flight update lost entry {entry_id}"
        if hit.content == update_text(n):
            assert hit.scope is not None
            model.alive[entry_id] = Live(n, hit.scope, hit.content)
        else:
            assert (hit.content, hit.scope) == (before.content, before.scope), hit
    else:
        if await cf.get(entry_id) is None:
            model.deleted[entry_id] = model.alive.pop(entry_id).marker


async def probe_ids(cf: ContextForge, scope: str) -> list[int]:
    return sorted(h.id for h in await cf.query("payload", scope, BIG, depth=10_000))


async def check_store(path: str, model: Model, tmp: Path, round_no: int) -> None:
    async with await ContextForge.open(path) as cf:
        await resolve_pending(cf, model)
        ids = sorted(model.alive)
        for entry_id, hit in zip(ids, await cf.get_many(ids)):
            want = model.alive[entry_id]
            assert hit is not None, f"acknowledged entry {entry_id} (op {want.marker}) is lost"
            assert (hit.content, hit.scope) == (want.content, want.scope), (entry_id, hit)
        gone = sorted(model.deleted)
        assert await cf.get_many(gone) == [None] * len(gone), "a deleted entry came back"
        # Exactly once: the store holds the live entries and nothing else.
        assert await cf.count() == len(model.alive)
        for scope in SCOPES:
            want_ids = sorted(i for i, live in model.alive.items() if live.scope == scope)
            assert sorted([h.id async for h in cf.list(scope=scope)]) == want_ids
            assert await probe_ids(cf, scope) == want_ids
        # Markers: each live one is found once, at its entry; dead ones nowhere.
        rng = random.Random(round_no)
        for entry_id in rng.sample(ids, min(60, len(ids))):
            assert await marker_ids(cf, model.alive[entry_id].marker) == [entry_id]
        for entry_id in rng.sample(gone, min(20, len(gone))):
            assert await marker_ids(cf, model.deleted[entry_id]) == []
        seen = await probe(cf)
    # The incrementally maintained index equals one rebuilt from the database.
    rebuilt = tmp / f"rebuilt{round_no}"
    async with await ContextForge.open(Config(path=path, index_dir=str(rebuilt))) as fresh:
        assert await probe(fresh) == seen
    shutil.rmtree(rebuilt)


async def crash_loop(tmp: Path, rounds: int, seed: int) -> None:
    path = str(tmp / "memory.db")
    model = Model()
    rng = random.Random(seed)
    total = 0
    for round_no in range(rounds):
        start = (round_no + 1) * 1_000_000
        from_spawn = round_no % 4 == 3
        after = rng.uniform(0.3, 1.2) + (1.0 if from_spawn else 0.0)
        total += run_writer(path, model, start, rng.randrange(2**32), after, tmp, from_spawn)
        await check_store(path, model, tmp, round_no)
    assert total > 0, "the writer acknowledged nothing"
    print(f"crash loop: {rounds} rounds, {total} acknowledged ops, {len(model.alive)} live")


CRASH_ROUNDS = int(os.environ.get("CONTEXTFORGE_CRASH_ROUNDS", "5"))


async def test_crash_loop_mixed_ops(tmp_path: Path) -> None:
    await crash_loop(tmp_path, CRASH_ROUNDS, seed=1234)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_crash_loop_long(tmp_path: Path) -> None:
    if os.environ.get("CONTEXTFORGE_LONG") != "1":
        pytest.skip("long profile: set CONTEXTFORGE_LONG=1 (make soak does)")
    await crash_loop(tmp_path, 20, seed=99)


# --- A damaged index directory ---------------------------------------------------

WORDS = ("amber", "basalt", "cobalt", "dune", "ember")


async def seeded_store(path: str) -> dict[str, dict[str | None, list[int]]]:
    """Saves entries whose words are known; returns word -> scope -> expected ids."""
    expected: dict[str, dict[str | None, list[int]]] = {w: {} for w in WORDS}
    async with await ContextForge.open(Config(path=path, flush_entries=50, flush_ms=5)) as cf:
        for i in range(300):
            words = [w for j, w in enumerate(WORDS) if (i >> j) & 1] or ["plain"]
            scope = SCOPES[i % 3] if i % 7 else None
            entry_id = await cf.save(f"rec{i} " + " ".join(words), scope=scope)
            for w in words:
                if w in expected:
                    expected[w].setdefault(scope, []).append(entry_id)
        await cf.flush()
    return expected


def index_files(index_dir: Path) -> Iterator[Path]:
    return (p for p in sorted(index_dir.rglob("*")) if p.is_file())


def damage(index_dir: Path, how: str) -> None:
    rng = random.Random(how)
    assert index_dir.is_dir() and any(index_files(index_dir)), "no index to damage"
    if how == "deleted":
        shutil.rmtree(index_dir)
    elif how == "emptied":
        shutil.rmtree(index_dir)
        index_dir.mkdir()
    elif how == "not_a_dir":
        shutil.rmtree(index_dir)
        index_dir.write_bytes(rng.randbytes(4096))
    for f in list(index_files(index_dir)) if index_dir.is_dir() else []:
        size = f.stat().st_size
        is_segment = not f.name.endswith(".json") and not f.name.endswith(".lock")
        if how == "zero" or (how == "segments_zero" and is_segment):
            f.write_bytes(b"")
        elif how == "half" or (how == "segments_half" and is_segment):
            with f.open("r+b") as fh:
                fh.truncate(size // 2)
        elif how == "garbage":
            f.write_bytes(rng.randbytes(max(size, 64)))
        elif how == "meta_garbage" and f.name == "meta.json":
            f.write_bytes(
                b'{"segments": [{"segment_id": "zz", "max_doc": -1}], ' + rng.randbytes(50)
            )
        elif how == "segments_garbage" and is_segment:
            f.write_bytes(rng.randbytes(max(size, 64)))
    if how == "junk_files" and index_dir.is_dir():
        for k in range(5):
            (index_dir / f"junk{k}.idx").write_bytes(rng.randbytes(1000))
        (index_dir / "0123456789abcdef0123456789abcdef.store").write_bytes(rng.randbytes(999))


DAMAGE = [
    "deleted",
    "emptied",
    "zero",
    "half",
    "garbage",
    "meta_garbage",
    "segments_zero",
    "segments_half",
    "segments_garbage",
    "junk_files",
    "not_a_dir",
]


async def assert_answers(
    cf: ContextForge, expected: dict[str, dict[str | None, list[int]]]
) -> None:
    for word, by_scope in expected.items():
        everything = sorted(i for ids in by_scope.values() for i in ids)
        assert (
            sorted(h.id for h in await cf.query(word, ALL_SCOPES, BIG, depth=10_000)) == everything
        )
        for scope in (*SCOPES, None):
            hits = await cf.query(word, [scope], BIG, depth=10_000)
            assert sorted(h.id for h in hits) == sorted(by_scope.get(scope, [])), (word, scope)


async def test_index_path_taken_by_a_file_fails_typed(tmp_path: Path) -> None:
    """Until the store replaces it, a file in the index's place at least fails typed."""
    path = str(tmp_path / "memory.db")
    await seeded_store(path)
    damage(Path(path + ".index"), "not_a_dir")
    try:
        async with await ContextForge.open(path) as cf:
            assert await cf.count() == 300
    except ContextForgeError:
        pass


@pytest.mark.parametrize("how", DAMAGE)
async def test_damaged_index_is_rebuilt(tmp_path: Path, how: str) -> None:
    path = str(tmp_path / "memory.db")
    expected = await seeded_store(path)
    damage(Path(path + ".index"), how)
    async with await ContextForge.open(path) as cf:
        await assert_answers(cf, expected)
        # The rebuilt index keeps working: a new save is found, now and after reopening.
        new_id = await cf.save("rec-new amber", scope="s0")
        expected["amber"].setdefault("s0", []).append(new_id)
        await assert_answers(cf, expected)
    async with await ContextForge.open(path) as cf:
        await assert_answers(cf, expected)


@pytest.mark.parametrize("lost", ["meta_rename", "one_segment_file"])
async def test_index_writes_lost_to_a_power_cut_are_found(tmp_path: Path, lost: str) -> None:
    """Index commits are not fsynced (the database alone makes a save durable):
    after a power cut a commit's files, or its meta.json's rename, may be lost
    while other changes (the unlinks of merged-away segments) reached the disk.
    Opening finds either and answers from the database, never from the stale
    index."""
    path = str(tmp_path / "memory.db")
    index_dir = Path(path + ".index")
    expected = await seeded_store(path)
    old_meta = (index_dir / "meta.json").read_bytes()
    old_files = {f.name for f in index_files(index_dir)}
    async with await ContextForge.open(Config(path=path, flush_entries=50, flush_ms=5)) as cf:
        for i in range(3):  # three commits of new segments, merged with the old ones
            saved = await cf.save_many(
                [{"content": f"later{i}-{k} amber", "scope": "s0"} for k in range(1200)]
            )
            expected["amber"].setdefault("s0", []).extend(saved)
    new_files = [f for f in index_files(index_dir) if f.name not in old_files]
    assert new_files, "the later saves wrote no segment"
    if lost == "meta_rename":
        # The unlinks reached the disk, the new meta.json did not.
        (index_dir / "meta.json").write_bytes(old_meta)
    else:
        max(new_files, key=lambda f: f.stat().st_size).unlink()
    async with await ContextForge.open(path) as cf:
        await assert_answers(cf, expected)


async def test_open_counts_entries_unless_a_clean_close_vouches_for_the_index(
    tmp_path: Path,
) -> None:
    """An index whose payload claims a change its segments lack (what a commit that
    half-failed leaves) is found out by the open's count and rebuilt, unless the
    mark of a clean close names that payload: the mark is what spares the count."""
    path = str(tmp_path / "memory.db")
    index = Path(path + ".index")
    mark = index / "closed-cleanly"
    async with await ContextForge.open(path) as cf:
        await cf.save("first walrus", scope="s")
    shutil.copytree(index, tmp_path / "old-index")
    async with await ContextForge.open(path) as cf:
        await cf.save("second walrus", scope="s")
    payload = json.loads((index / "meta.json").read_text())["payload"]
    assert mark.read_text() == payload

    def lose_the_second_save(mark_text: str) -> None:
        shutil.rmtree(index)
        shutil.copytree(tmp_path / "old-index", index)
        meta = json.loads((index / "meta.json").read_text())
        meta["payload"] = payload
        (index / "meta.json").write_text(json.dumps(meta))
        mark.write_text(mark_text)

    lose_the_second_save(payload)  # the mark vouches: trusted, not counted
    async with await ContextForge.open(path) as cf:
        assert not mark.exists()
        assert [h.content for h in await cf.query("walrus", "s", 1000)] == ["first walrus"]
    lose_the_second_save("999999")  # a mark naming another commit: counted, rebuilt
    async with await ContextForge.open(path) as cf:
        found = sorted(h.content for h in await cf.query("walrus", "s", 1000))
        assert found == ["first walrus", "second walrus"]


# --- An index left by another database (issue 19, finding 1) --------------------


def move_database(source: Path, target: Path) -> None:
    """Moves a database file (and its WAL files) over another, leaving the
    target's index directory where it is."""
    for suffix in ("", "-wal", "-shm"):
        src, dst = Path(f"{source}{suffix}"), Path(f"{target}{suffix}")
        if src.exists():
            os.replace(src, dst)
        elif dst.exists():
            dst.unlink()


async def test_an_index_left_by_another_database_is_not_trusted(tmp_path: Path) -> None:
    """The hostile review's reproduction: another database with the same entry
    ids and change numbers, the scopes the other way round, moved over the
    store while its index stays. The index must be rebuilt, not trusted."""
    main, fresh = tmp_path / "memory.db", tmp_path / "fresh.db"
    for path, first, second in (
        (main, "user:alice", "user:bob"),
        (fresh, "user:bob", "user:alice"),
    ):
        async with await ContextForge.open(str(path)) as cf:
            for i in range(40):
                await cf.save(
                    f"shopping list apples item {i}", scope=first if i % 2 == 0 else second
                )
    move_database(fresh, main)
    assert Path(f"{main}.index").is_dir()
    async with await ContextForge.open(str(main)) as cf:
        hits = await cf.query("shopping list apples", "user:bob", BIG, depth=1000)
        assert [h.scope for h in hits if h.scope != "user:bob"] == []
        assert len(hits) == 20
        assert sorted(int(h.content.split()[-1]) for h in hits) == list(range(0, 40, 2))


# --- Damage inside the index's files (issue 19, finding 6) ------------------------

# Opens the store twice (the second open must find nothing left to repair) and
# prints, for each round, the ids every word finds in every scope. It runs in a
# subprocess: a query that spins on the event loop's thread fails the test by
# its timeout instead of hanging the runner.
QUERY_DAMAGED = textwrap.dedent(
    """
    import asyncio, json, logging, sys
    from contextforge import ContextForge

    async def main(path, words, scopes):
        rounds = []
        for _ in range(2):
            found = {}
            async with await ContextForge.open(path) as cf:
                for word in words:
                    for scope in scopes:
                        hits = await cf.query(word, [scope], 10**9, depth=10_000)
                        found[f"{word} {scope}"] = sorted(h.id for h in hits)
            rounds.append(found)
        print(json.dumps(rounds))

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])))
    """
)


def segment_files(index_dir: Path, suffix: str) -> list[Path]:
    files = [p for p in index_files(index_dir) if p.suffix == suffix]
    assert files, f"no {suffix} file to damage"
    return files


async def bulk_store(path: str) -> dict[str, dict[str | None, list[int]]]:
    """``seeded_store``'s words over 3,000 entries saved in one call: segments
    large enough to damage inside their files."""
    expected: dict[str, dict[str | None, list[int]]] = {w: {} for w in WORDS}
    entries: list[tuple[list[str], str | None]] = []
    for i in range(3000):
        words = [w for j, w in enumerate(WORDS) if (i >> j) & 1] or ["plain"]
        entries.append((words, SCOPES[i % 3] if i % 7 else None))
    items = [
        {"content": f"rec{i} " + " ".join(words), "scope": scope}
        for i, (words, scope) in enumerate(entries)
    ]
    async with await ContextForge.open(path) as cf:
        saved = await cf.save_many(items)
    for (words, scope), one in zip(entries, saved):
        for w in words:
            if w in expected:
                expected[w].setdefault(scope, []).append(one.id)
    return expected


# A file's last bytes are its footer: a JSON object holding the CRC, then its
# length and a magic number (121 bytes for this tantivy).
FOOTER = 200


def flip_bytes(files: list[Path], count: int, seed: str) -> None:
    """Flips `count` bytes of each file's body, leaving the footer alone, so
    that only the checksum tells."""
    rng = random.Random(seed)
    flipped = 0
    for f in files:
        data = bytearray(f.read_bytes())
        body = len(data) - FOOTER
        if body < 4 * count:
            continue  # a segment the writer's other thread barely filled
        for at in rng.sample(range(body), count):
            data[at] ^= rng.randrange(1, 256)
        f.write_bytes(bytes(data))
        flipped += 1
    assert flipped, f"no file large enough to damage inside: {[f.name for f in files]}"


def damage_inside(index_dir: Path, how: str) -> None:
    if how.startswith("flip"):
        suffix = "." + how.removeprefix("flip_")
        flip_bytes(segment_files(index_dir, suffix), 64, how)
    elif how == "truncated_pos":
        for f in segment_files(index_dir, ".pos"):
            with f.open("r+b") as fh:
                fh.truncate(f.stat().st_size // 2)
    elif how == "garbage_pos":
        for f in segment_files(index_dir, ".pos"):
            f.write_bytes(random.Random(how).randbytes(max(f.stat().st_size, 64)))
    else:
        raise AssertionError(how)


INSIDE_DAMAGE = ["flip_idx", "flip_fast", "flip_term", "truncated_pos", "garbage_pos"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", INSIDE_DAMAGE)
async def test_damage_inside_index_files_is_found_and_rebuilt(tmp_path: Path, how: str) -> None:
    path = str(tmp_path / "memory.db")
    expected = await bulk_store(path)
    damage_inside(Path(path + ".index"), how)
    scopes: list[str | None] = [*SCOPES, None]
    try:
        proc = subprocess.run(  # noqa: ASYNC221 (the test waits for it)
            [sys.executable, "-c", QUERY_DAMAGED, path, json.dumps(WORDS), json.dumps(scopes)],
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{how}: queries on the damaged index hung")
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = {f"{w} {s}": sorted(expected[w].get(s, [])) for w in WORDS for s in scopes}
    first, second = json.loads(proc.stdout)
    assert first == want
    assert second == want
    # The repair is logged, through the `contextforge` logger.
    assert "rebuilding the search index" in proc.stderr, proc.stderr[-3000:]
    # A panic inside tantivy is handled, not reported as a crash.
    assert "panicked at" not in proc.stderr, proc.stderr[-3000:]


# --- A full disk -----------------------------------------------------------------

# Fills the disk (a 2 MB tmpfs, or RLIMIT_FSIZE) with saves, then gives the space
# back. Prints one JSON object of findings; the tests below judge them.
DISK_FULL = textwrap.dedent(
    """
    import asyncio, json, os, resource, signal, subprocess, sys
    from contextforge import Config, ContextForge, ContextForgeError

    MODE, DIR, INDEX_DIR = sys.argv[1], sys.argv[2], sys.argv[3] or None

    def space_back():
        if MODE == "tmpfs":
            os.remove(os.path.join(DIR, "filler"))
            subprocess.run(["mount", "-o", "remount,size=256m", DIR], check=True)
        else:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    async def ids(cf, q):
        return sorted(h.id for h in await cf.query(q, "s", 10**9, depth=10_000))

    async def main():
        out = {}
        path = os.path.join(DIR, "memory.db")
        cfg = dict(path=path, index_dir=INDEX_DIR)
        acked = {}
        # No background commit: the index commits exactly when flush() is called
        # below, while the disk is still full.
        cf = await ContextForge.open(Config(**cfg, flush_entries=1_000_000, flush_ms=600_000))
        for i in range(20):
            acked[await cf.save(f"early{i} fill", scope="s")] = f"early{i} fill"
        await cf.flush()
        if MODE == "rlimit":
            # Writes past 1 MB fail with EFBIG instead of killing the process.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
        errors = []
        for i in range(2000):
            content = f"bulk{i} fill " + os.urandom(30_000).hex()
            try:
                acked[await cf.save(content, scope="s")] = content
            except ContextForgeError as err:
                errors.append(f"{type(err).__name__}: {err}")
                if len(errors) >= 3:
                    break
        out["errors"] = errors
        if MODE == "tmpfs":
            # What the failed transactions gave back is taken too: the disk is full.
            fd = os.open(os.path.join(DIR, "filler"), os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"x" * 512)
            except OSError:
                pass
            finally:
                os.close(fd)
        try:
            await cf.flush()
            out["flush_while_full"] = "ok"
        except ContextForgeError as err:
            out["flush_while_full"] = f"{type(err).__name__}: {err}"
        # Still usable while full: reads answer, earlier entries are intact.
        got = await cf.get_many(list(acked))
        out["intact_while_full"] = [g.content if g else None for g in got] == list(acked.values())
        out["query_while_full"] = await ids(cf, "early3") == [min(acked) + 3]
        space_back()
        after = await cf.save("after the storm fill", scope="s")
        acked[after] = "after the storm fill"
        out["save_after"] = await ids(cf, "storm") == [after]
        out["live_agrees"] = await ids(cf, "fill") == sorted(acked)
        try:
            await cf.close()
            out["close_after"] = "ok"
        except ContextForgeError as err:
            out["close_after"] = f"{type(err).__name__}: {err}"
        cf = await ContextForge.open(Config(**cfg))
        got = await cf.get_many(list(acked))
        out["intact_after_reopen"] = [g.content if g else None for g in got] == list(acked.values())
        out["count_after_reopen"] = await cf.count("s") == len(acked)
        reopened = await ids(cf, "fill")
        await cf.close()
        fresh = await ContextForge.open(Config(path=path, index_dir=os.path.join(DIR, "fresh")))
        rebuilt = await ids(fresh, "fill")
        await fresh.close()
        out["rebuilt_has_all"] = rebuilt == sorted(acked)
        out["index_agrees_after_reopen"] = reopened == rebuilt
        out["missing_after_reopen"] = sorted(set(rebuilt) - set(reopened))
        out["acked"] = len(acked)
        print(json.dumps(out))

    asyncio.run(main())
    """
)


def run_disk_full(mode: str, directory: Path, index_dir: Path | None) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", DISK_FULL, mode, str(directory), str(index_dir or "")],
        capture_output=True,
        check=False,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0, (
        f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(mode, result)
    return result


def mount_small_tmpfs(directory: Path) -> None:
    directory.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(directory)],
        capture_output=True,
        check=False,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({mounted.stderr.strip()}); "
            "test_disk_full_by_rlimit covers the failure path"
        )


@pytest.fixture(scope="module")
def tmpfs_full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """Database and index on the same 2 MB tmpfs."""
    directory = tmp_path_factory.mktemp("full") / "small"
    mount_small_tmpfs(directory)
    try:
        yield run_disk_full("tmpfs", directory, None)
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def assert_survived(result: dict[str, object]) -> None:
    errors = result["errors"]
    assert isinstance(errors, list) and errors, "the disk never filled"
    # A typed error, never a crash (the child would have died) or another type.
    assert all(str(e).startswith("StorageError") for e in errors), errors
    for check in (
        "intact_while_full",
        "query_while_full",
        "save_after",
        "intact_after_reopen",
        "count_after_reopen",
        "rebuilt_has_all",
    ):
        assert result[check] is True, (check, result)


def test_disk_full_on_tmpfs_fails_typed_and_recovers(tmpfs_full: dict[str, object]) -> None:
    assert_survived(tmpfs_full)


def test_disk_full_on_tmpfs_index_agrees(tmpfs_full: dict[str, object]) -> None:
    assert tmpfs_full["live_agrees"] is True, tmpfs_full
    assert tmpfs_full["close_after"] == "ok", tmpfs_full
    assert tmpfs_full["index_agrees_after_reopen"] is True, tmpfs_full["missing_after_reopen"]


def test_disk_full_database_only(tmp_path: Path) -> None:
    """Only the database's disk fills (the index lives elsewhere): everything holds."""
    directory = tmp_path / "small"
    mount_small_tmpfs(directory)
    try:
        result = run_disk_full("tmpfs", directory, tmp_path / "index")
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)
    assert_survived(result)
    assert result["close_after"] == "ok", result
    assert result["live_agrees"] is True and result["index_agrees_after_reopen"] is True, result


def test_disk_full_by_rlimit(tmp_path: Path) -> None:
    """RLIMIT_FSIZE (EFBIG), reachable without mount privileges."""
    result = run_disk_full("rlimit", tmp_path, None)
    assert_survived(result)
    assert result["close_after"] == "ok", result
    assert result["live_agrees"] is True and result["index_agrees_after_reopen"] is True, result


def test_storage_error_is_the_documented_type() -> None:
    assert issubclass(StorageError, ContextForgeError) and issubclass(StorageError, OSError)
