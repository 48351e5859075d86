"""Writes ``store_v6.db``: a small store as schema version 6 wrote it, kept as
test data so that later schema versions are tested against a real old file
(``tests/test_store_compat.py``), and ``store_v6.json``, what it holds.

Run from the repository root with the library at schema 6 (commit 397c47c or
any commit before migration 7); never regenerate it with a newer library:

    .venv/bin/python tests/data/make_store_v6.py
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from contextforge import ContextForge

HERE = Path(__file__).resolve().parent
DB = HERE / "store_v6.db"
MANIFEST = HERE / "store_v6.json"
START = datetime(2024, 3, 4, 9, 30, tzinfo=timezone.utc)
# Far ahead, so that the entries stay unexpired whenever the test runs.
FAR = datetime(2200, 1, 1, tzinfo=timezone.utc)

ENTRIES: list[dict[str, Any]] = [
    {"content": "Alice moved to Lisbon in March", "scope": "user:alice", "session_id": "s1"},
    {"content": "Alice prefers window seats on flights", "scope": "user:alice", "kind": "fact"},
    {
        "content": "Bob's deploy failed: missing env var DATABASE_URL",
        "scope": "project:demo",
        "kind": "incident",
        "metadata": {"severity": 2, "tags": ["deploy", "env"]},
    },
    {
        "content": "the staging cluster runs kubernetes 1.29",
        "scope": "project:demo",
        "expires_at": FAR,
    },
    {"content": "global note: the office is closed on public holidays"},
    {
        "content": "Carol's favourite tea is genmaicha",
        "scope": "user:carol",
        "session_id": "s9",
        "metadata": {"source": "chat"},
    },
]


async def main() -> None:
    for path in (DB, Path(f"{DB}-wal"), Path(f"{DB}-shm")):
        path.unlink(missing_ok=True)
    index = Path(f"{DB}.index")
    saved = []
    async with await ContextForge.open(str(DB)) as cf:
        for i, item in enumerate(ENTRIES):
            fields = dict(item)
            when = START + timedelta(days=i)
            vector = [1.0 if j == i else 0.0 for j in range(len(ENTRIES))]
            entry_id = await cf.save(timestamp=when, embedding=vector, **fields)
            saved.append(
                {**fields, "id": int(entry_id), "timestamp": when.isoformat(), "embedding": vector}
            )
    for item in saved:
        expires = item.get("expires_at")
        if isinstance(expires, datetime):
            item["expires_at"] = expires.isoformat()
    with sqlite3.connect(DB) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
    MANIFEST.write_text(json.dumps({"schema_version": version, "entries": saved}, indent=1) + "\n")
    if index.exists():
        shutil.rmtree(index)


if __name__ == "__main__":
    asyncio.run(main())
