"""Peer: tantivy-py for BM25 with sqlite3 as the source of truth.

Each save commits to SQLite, then adds the document to tantivy, commits the
index and reloads the searcher, so the next query sees it. Queries take the
best 100 by BM25 (scope as a MUST term), read id, timestamp and token count
from fast fields, apply the recency boost, pack, and fetch content from SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tantivy
from tokens import count
from workload import Entry

from systems.base import DEPTH, Candidate, Hit, Id, SqliteStore, SyncSystem, rank_and_pack

WRITER_HEAP = 128 * 1024 * 1024


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("content", tokenizer_name="default", index_option="freq")
    builder.add_text_field("scope", tokenizer_name="raw", index_option="basic")
    builder.add_float_field("ts", fast=True)
    builder.add_integer_field("tokens", fast=True)
    return builder.build()


class TantivySqlite(SyncSystem):
    name = "tantivy"

    def _open(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "index").mkdir(exist_ok=True)
        self.schema = build_schema()
        self.index = tantivy.Index(self.schema, path=str(path / "index"), reuse=True)
        self.store = SqliteStore(path / "memory.db")
        self.writer: tantivy.IndexWriter | None = None
        self.searcher = self.index.searcher()

    def _writer(self) -> tantivy.IndexWriter:
        if self.writer is None:
            self.writer = self.index.writer(WRITER_HEAP, 1)
        return self.writer

    def _ingest(self, entries: Sequence[Entry]) -> list[Id]:
        tokens = [count(e.content) for e in entries]
        ids = self.store.insert(
            [(e.content, e.scope, e.timestamp, t) for e, t in zip(entries, tokens)]
        )
        writer = self._writer()
        for entry_id, entry, n in zip(ids, entries, tokens):
            doc = tantivy.Document(id=entry_id, content=entry.content, ts=entry.timestamp, tokens=n)
            if entry.scope is not None:
                doc.add_text("scope", entry.scope)
            writer.add_document(doc)
        writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()
        return list(ids)

    def _save(self, entry: Entry) -> Id:
        return self._ingest([entry])[0]

    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        candidates = self.candidates(self.search(self.parse(text, scope)))
        packed = rank_and_pack(candidates, now, budget)
        contents = self.store.contents([int(c.id) for c, _ in packed])
        return [Hit(c.id, score, c.tokens, contents[int(c.id)]) for c, score in packed]

    # The steps of a query, apart so that `breakdown.py` can time each.

    def parse(self, text: str, scope: str | None) -> tantivy.Query:
        query = self.index.parse_query_lenient(text, ["content"])[0]
        if scope is None:
            return query
        scoped = tantivy.Query.term_query(self.schema, "scope", scope)
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, query), (tantivy.Occur.Must, scoped)]
        )

    def search(self, query: tantivy.Query) -> list[tuple[float, tantivy.DocAddress]]:
        return list(self.searcher.search(query, DEPTH, count=False).hits)

    def candidates(self, hits: list[tuple[float, tantivy.DocAddress]]) -> list[Candidate]:
        """Each hit with its id, timestamp and token count from the fast fields."""
        addresses = [address for _, address in hits]
        ids = self.searcher.fast_field_values("id", addresses)
        stamps = self.searcher.fast_field_values("ts", addresses)
        counts = self.searcher.fast_field_values("tokens", addresses)
        return [
            Candidate(int(i or 0), score, float(ts or 0.0), int(n or 0))
            for (score, _), i, ts, n in zip(hits, ids, stamps, counts)
        ]

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.wait_merging_threads()
            self.writer = None
        self.store.close()
