"""``Opening``: what ``ContextForge.open`` returns, awaitable and usable in ``async with``."""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Opening"]


class _Closable(Protocol):
    async def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


class Opening(Generic[S]):
    """A store being opened. Either await it (``cf = await ContextForge.open(p)``)
    or enter it (``async with ContextForge.open(p) as cf:``), which closes the
    store on the way out. It opens the store once, whichever is used."""

    __slots__ = ("_opening", "_store")

    def __init__(self, opening: Coroutine[Any, Any, S]) -> None:
        self._opening = opening
        self._store: S | None = None

    def __await__(self) -> Generator[Any, None, S]:
        return self._opening.__await__()

    async def __aenter__(self) -> S:
        self._store = await self._opening
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            await self._store.close()
