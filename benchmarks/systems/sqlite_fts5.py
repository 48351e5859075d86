"""Peer: SQLite FTS5 through the standard library's sqlite3.

bm25() ranks, the scope filter sits in the WHERE clause, and the recency boost is
folded into the ORDER BY so the best 100 are chosen after it, as contextforge does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokens import count
from workload import Entry

from systems.base import (
    DEPTH,
    HALF_LIFE_SECONDS,
    RECENCY_WEIGHT,
    Candidate,
    Hit,
    Id,
    SqliteStore,
    SyncSystem,
    rank_and_pack,
    words,
)

FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    content, content='entries', content_rowid='id', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO fts(rowid, content) VALUES (new.id, new.content);
END;
"""

# bm25() is lower-is-better (negative); the boost multiplies the positive relevance.
_SELECT = f"""
SELECT e.id, e.content, e.ts, e.tokens, -bm25(fts) AS relevance
FROM fts JOIN entries e ON e.id = fts.rowid
WHERE fts MATCH :match {{scope}}
ORDER BY -bm25(fts) * (1 + {RECENCY_WEIGHT} * pow(0.5, (:now - e.ts) / {HALF_LIFE_SECONDS})) DESC
LIMIT {DEPTH}
"""
SELECT_ALL = _SELECT.format(scope="")
SELECT_SCOPED = _SELECT.format(scope="AND e.scope = :scope")


def match_expression(text: str) -> str:
    """OR of the query's words, each quoted so no word is read as FTS5 syntax."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words(text))


class SqliteFts5(SyncSystem):
    name = "sqlite_fts5"

    def _open(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.store = SqliteStore(path / "memory.db", FTS_SCHEMA)

    def _ingest(self, entries: Sequence[Entry]) -> list[Id]:
        rows = [(e.content, e.scope, e.timestamp, count(e.content)) for e in entries]
        return list(self.store.insert(rows))

    def _save(self, entry: Entry) -> Id:
        return self._ingest([entry])[0]

    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        params = {"match": match_expression(text), "now": now, "scope": scope}
        sql = SELECT_ALL if scope is None else SELECT_SCOPED
        rows = self.store.conn.execute(sql, params).fetchall()
        contents = {row[0]: row[1] for row in rows}
        candidates = [Candidate(row[0], row[4], row[2], row[3]) for row in rows]
        return [
            Hit(c.id, score, c.tokens, contents[c.id])
            for c, score in rank_and_pack(candidates, now, budget)
        ]

    def _close(self) -> None:
        self.store.close()
