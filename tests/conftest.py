from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from contextforge import ContextForge

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


@pytest_asyncio.fixture
async def cf(db_path: str) -> AsyncIterator[ContextForge]:
    store = await ContextForge.open(db_path)
    yield store
    await store.close()


@pytest_asyncio.fixture
async def mem() -> AsyncIterator[ContextForge]:
    store = await ContextForge.open()
    yield store
    await store.close()
