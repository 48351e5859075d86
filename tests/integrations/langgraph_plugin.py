"""A pytest plugin for tests/integrations/langgraph_suite.py: runs the test
modules of langgraph-checkpoint-sqlite against ``ContextForgeStore``.

Those modules build their stores through the names ``SqliteStore`` and
``AsyncSqliteStore`` (``from_conn_string(conn, *, index=None, ttl=None)``,
then ``setup()``); an autouse fixture swaps in the two classes below, which
open a contextforge store at the same path instead. Only the construction and
the names of the async TTL methods differ: every test op goes through
``ContextForgeStore`` itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from contextforge import Config, ContextForge, ContextForgeSync
from contextforge.integrations.langgraph import ContextForgeStore
from langgraph.store.base import TTLConfig


class _Embedder:
    """A LangChain ``Embeddings`` (the tests' ``CharacterEmbeddings``) as a
    contextforge ``Embedder``: LangGraph's ``index`` config becomes
    ``Config.embedder`` plus the adapter's ``fields``."""

    def __init__(self, embeddings: Any, dim: int) -> None:
        self.embeddings = embeddings
        self.dim = dim
        self.name = f"langchain:{type(embeddings).__name__}:{dim}"

    def __call__(self, texts: list[str]) -> Any:
        return self.embeddings.embed_documents(texts)


def _target(conn_string: str, index: Any) -> Any:
    # ":memory:" or the test's temporary file (empty: a new store)
    if index is None:
        return conn_string
    return Config(path=conn_string, embedder=_Embedder(index["embed"], index["dims"]))


def _fields(index: Any) -> Any:
    return None if index is None else index.get("text_fields")


class SyncStore(ContextForgeStore):
    """``SqliteStore``'s constructor over a contextforge store."""

    __slots__ = ()

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: TTLConfig | None = None
    ) -> Iterator[SyncStore]:
        with ContextForgeSync.open(_target(conn_string, index)) as cf:
            store = cls(cf.aio, ttl=ttl, fields=_fields(index))
            try:
                yield store
            finally:
                store.close()

    def setup(self) -> None:
        pass


class AsyncStore(ContextForgeStore):
    """``AsyncSqliteStore``'s constructor over a contextforge store, with its
    async TTL methods under the names the tests call."""

    __slots__ = ()

    @classmethod
    @contextlib.asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: TTLConfig | None = None
    ) -> AsyncIterator[AsyncStore]:
        async with ContextForge.open(_target(conn_string, index)) as cf:
            store = cls(cf, ttl=ttl, fields=_fields(index))
            try:
                yield store
            finally:
                await store.astop_ttl_sweeper()
                store.close()

    async def setup(self) -> None:
        pass

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await self.asweep_ttl()

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Any:  # type: ignore[override]
        return await self.astart_ttl_sweeper(sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return await self.astop_ttl_sweeper(timeout)


@pytest.fixture(autouse=True)
def _contextforge_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    module = request.module
    if hasattr(module, "SqliteStore"):
        monkeypatch.setattr(module, "SqliteStore", SyncStore)
    if hasattr(module, "AsyncSqliteStore"):
        monkeypatch.setattr(module, "AsyncSqliteStore", AsyncStore)
