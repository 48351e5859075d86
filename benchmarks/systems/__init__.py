"""The systems under test, by name.

Python systems run in benchmarks/worker.py; `context_forge_crate` is the Rust
harness binary (see systems/crate_harness.py). Each import is deferred so that a
missing optional package only skips that one system.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from systems.base import System


@dataclass(frozen=True)
class Spec:
    name: str
    module: str  # under systems/
    cls: str
    requires: str  # the import that must work
    max_size: int | None = None  # larger stores are skipped


PYTHON_SYSTEMS: dict[str, Spec] = {
    spec.name: spec
    for spec in (
        Spec("contextforge", "contextforge_py", "ContextForgePy", "contextforge"),
        # The same with the read audit on: its cost, as a ratio, in the same run.
        Spec("contextforge_audit", "contextforge_py", "ContextForgeAudited", "contextforge"),
        Spec("sqlite_fts5", "sqlite_fts5", "SqliteFts5", "sqlite3"),
        Spec("tantivy", "tantivy_sqlite", "TantivySqlite", "tantivy"),
        Spec("bm25s", "bm25s_peer", "Bm25sPeer", "bm25s"),
        Spec("rank_bm25", "rank_bm25_peer", "RankBm25Peer", "rank_bm25", max_size=10_000),
    )
}
CRATE = "context_forge_crate"
ALL = [*PYTHON_SYSTEMS, CRATE]


def create(name: str) -> System:
    spec = PYTHON_SYSTEMS[name]
    module = importlib.import_module(f"systems.{spec.module}")
    system: System = getattr(module, spec.cls)()
    return system
