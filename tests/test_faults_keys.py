"""SIGKILL during keyed saves (docs/keyed-facts.md): nothing acknowledged is
lost, no key ends up with two versions that hold at once, and every key's
timeline is the one the acknowledged operations say, in the database and in the
index alike."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from contextforge import ALL_SCOPES, Config, ContextForge

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
KEYS = [(f"s{s}", f"k{k}") for s in range(2) for k in range(3)]

# Before each op it prints "P <n> <op> <id>", after it "A <n> <op> <id> <scope> <key> <day>".
WRITER = textwrap.dedent(
    """
    import asyncio, json, random, sys
    from datetime import datetime, timedelta, timezone
    from contextforge import Config, ContextForge

    T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    KEYS = [(f"s{s}", f"k{k}") for s in range(2) for k in range(3)]

    async def main(path, start, seed, live_file):
        rng = random.Random(seed)
        with open(live_file) as fh:
            live = [int(x) for x in json.load(fh)]
        cf = await ContextForge.open(Config(path=path, flush_entries=8, flush_ms=5))
        print("R", flush=True)
        n = start
        while True:
            if rng.random() < 0.8 or not live:
                scope, key = rng.choice(KEYS)
                day = rng.randrange(100)
                print("P", n, "save", -1, flush=True)
                saved = await cf.save(
                    f"keymark{n} value of {key}", scope=scope, key=key,
                    timestamp=T0 + timedelta(days=day),
                )
                assert saved.created
                live.append(int(saved))
                print("A", n, "save", int(saved), scope, key, day, flush=True)
            else:
                entry_id = live.pop(rng.randrange(len(live)))
                print("P", n, "delete", entry_id, flush=True)
                assert await cf.delete(entry_id)
                print("A", n, "delete", entry_id, flush=True)
            n += 1

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    """
)


@dataclass
class Version:
    id: int
    marker: int
    day: int


@dataclass
class Model:
    versions: dict[tuple[str, str], list[Version]] = field(
        default_factory=lambda: {k: [] for k in KEYS}
    )
    deleted: set[int] = field(default_factory=set)
    pending: tuple[int, str, int] | None = None

    def live(self) -> list[int]:
        return sorted(v.id for vs in self.versions.values() for v in vs)

    def drop(self, entry_id: int) -> None:
        for key, vs in self.versions.items():
            self.versions[key] = [v for v in vs if v.id != entry_id]
        self.deleted.add(entry_id)


def run_writer(path: str, model: Model, start: int, seed: int, after: float, tmp: Path) -> int:
    live_file = tmp / "live.json"
    live_file.write_text(json.dumps(model.live()))
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, path, str(start), str(seed), str(live_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
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
    acked = 0
    model.pending = None
    for line in lines:
        parts = line.split()
        if not line.endswith("\n") or len(parts) < 4:
            continue
        tag, n, op, entry_id = parts[0], int(parts[1]), parts[2], int(parts[3])
        if tag == "P":
            model.pending = (n, op, entry_id)
            continue
        assert model.pending is not None and model.pending[0] == n, line
        model.pending = None
        acked += 1
        if op == "save":
            model.versions[(parts[4], parts[5])].append(Version(entry_id, n, int(parts[6])))
        else:
            model.drop(entry_id)
    return acked


async def resolve_pending(cf: ContextForge, model: Model) -> None:
    """The operation the kill cut: wholly done or wholly not."""
    if model.pending is None:
        return
    n, op, entry_id = model.pending
    model.pending = None
    if op == "save":
        hits = await cf.query(f"keymark{n}", ALL_SCOPES, 10**9, include_superseded=True)
        assert len(hits) <= 1, f"in-flight save {n} is present {len(hits)} times"
        if hits:
            hit = hits[0]
            assert hit.scope is not None and hit.key is not None
            day = (hit.valid_from - T0).days
            model.versions[(hit.scope, hit.key)].append(Version(hit.id, n, day))
    elif await cf.get(entry_id, include_superseded=True) is None:
        model.drop(entry_id)


async def check(path: str, model: Model, tmp: Path, round_no: int) -> None:
    async with await ContextForge.open(path) as cf:
        await resolve_pending(cf, model)
        seen: dict[str, list[int]] = {}
        for (scope, key), versions in model.versions.items():
            versions.sort(key=lambda v: (v.day, v.id))
            history = await cf.history(key, scope)
            assert [h.id for h in history] == [v.id for v in versions], (scope, key)
            for i, h in enumerate(history):
                ends = T0 + timedelta(days=versions[i + 1].day) if i + 1 < len(versions) else None
                assert h.valid_to == ends, (scope, key, i)
            assert sum(h.valid_to is None for h in history) <= 1, "two open versions"
            # The current version answers, alone. (Another key's versions
            # share the words "value of": they answer when this key has none.)
            hits = await cf.query(f"value of {key}", scope, 10**9, depth=10_000)
            want = [versions[-1].id] if versions else []
            assert [h.id for h in hits if h.key == key] == want, (scope, key)
            seen[f"{scope}/{key}"] = [h.id for h in hits]
            for day in (5, 50, 95):
                at = T0 + timedelta(days=day, hours=12)
                hits = await cf.query(f"value of {key}", scope, 10**9, depth=10_000, as_of=at)
                holding = [v.id for v in versions if v.day <= day]
                assert [h.id for h in hits if h.key == key] == holding[-1:], (scope, key, day)
        deleted = sorted(model.deleted)
        assert await cf.get_many(deleted, include_superseded=True) == [None] * len(deleted)
        assert await cf.count(include_superseded=True) == len(model.live())
    rebuilt = tmp / f"rebuilt{round_no}"
    async with await ContextForge.open(Config(path=path, index_dir=str(rebuilt))) as fresh:
        for scope, key in KEYS:
            hits = await fresh.query(f"value of {key}", scope, 10**9, depth=10_000)
            assert [h.id for h in hits] == seen[f"{scope}/{key}"]


async def test_crash_loop_keyed_saves(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    model = Model()
    rng = random.Random(2222)
    total = 0
    for round_no in range(int(os.environ.get("CONTEXTFORGE_CRASH_ROUNDS", "5"))):
        start = (round_no + 1) * 1_000_000
        total += run_writer(
            path, model, start, rng.randrange(2**32), rng.uniform(0.3, 1.0), tmp_path
        )
        await check(path, model, tmp_path, round_no)
    assert total > 0 and model.live(), "the writer acknowledged nothing"
