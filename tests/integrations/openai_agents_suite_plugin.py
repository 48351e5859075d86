"""A pytest plugin for tests/integrations/openai_agents_suite.py: runs the
session tests of openai-agents against ``ContextForgeSession``.

Those modules build their sessions, and the sessions their ``EncryptedSession``
and ``OpenAIResponsesCompactionSession`` wrap, through the name
``SQLiteSession`` (``SQLiteSession(session_id, db_path=":memory:", ...,
session_settings=None)``, later ``close()``); an autouse fixture swaps in the
class below, which opens a contextforge store at the same path instead.
Sessions on one file share one store, as ``SQLiteSession``s share one
database; each ``":memory:"`` session has a store of its own. Only the
construction and ``close`` differ: every session op goes through
``ContextForgeSession`` itself.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from contextforge import ContextForgeSync
from contextforge.integrations.openai_agents import ContextForgeSession

_lock = threading.Lock()
_shared: dict[str, tuple[ContextForgeSync, int]] = {}  # file -> (store, sessions open on it)


def _acquire(db_path: str | Path) -> tuple[ContextForgeSync, str | None]:
    if str(db_path) == ":memory:":
        return ContextForgeSync.open(":memory:"), None
    key = str(Path(db_path).resolve())
    with _lock:
        store, users = _shared.get(key) or (ContextForgeSync.open(key), 0)
        _shared[key] = (store, users + 1)
    return store, key


def _release(store: ContextForgeSync, key: str | None) -> None:
    if key is not None:
        with _lock:
            users = _shared[key][1] - 1
            if users:
                _shared[key] = (store, users)
                return
            del _shared[key]
    store.close()


class SQLiteSession(ContextForgeSession):
    """``SQLiteSession``'s constructor over a contextforge store."""

    made = 0  # how many were constructed: the runner counts the tests that made one

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        SQLiteSession.made += 1
        self._sqlite_store: tuple[ContextForgeSync, str | None] | None = _acquire(db_path)
        try:
            super().__init__(session_id, self._sqlite_store[0], session_settings=session_settings)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        owned, self._sqlite_store = self._sqlite_store, None
        if owned is not None:
            _release(*owned)


@pytest.fixture(autouse=True)
def _contextforge_session(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(request.module, "SQLiteSession"):
        monkeypatch.setattr(request.module, "SQLiteSession", SQLiteSession)
