"""``ContextForgeSync``: the blocking twin of the asyncio API, for scripts and notebooks."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar

from . import _core
from ._convert import ContextOrder, InjectionPolicy, Timestamp
from .saved import Saved
from .scope import ALL_SCOPES, Scope, ScopeFilter
from .config import Config, PathLike
from .errors import ClosedError
from ._vectors import Vector
from .hits import Hits

if TYPE_CHECKING:
    from .distill import Distiller, Transcript
    from .distill.run import DistillResult
from .memory import _PAGE, _UNSET, ContextForge

__all__ = ["ContextForgeSync"]

T = TypeVar("T")


class ContextForgeSync:
    """Durable, scoped, searchable memory, without ``await``.

    The same methods, arguments, results and errors as :class:`ContextForge`::

        with ContextForgeSync.open("memory.db") as cf:
            cf.save("the deploy failed: missing env var", scope="project:demo")
            hits = cf.query("deploy failure", "project:demo", 2048)

    Each instance drives a ``ContextForge`` on its own event loop in a daemon
    thread, so it works even where this thread already runs a loop (Jupyter),
    which ``asyncio.run`` would refuse. ``list`` returns a plain iterator that
    fetches a page at a time. One instance may be shared between threads. Close
    it (or use ``with``) to stop its thread; one that is garbage-collected or
    still open at interpreter exit is closed then.
    """

    __slots__ = ("__weakref__", "_async", "_lock", "_loop", "_thread")

    def __init__(
        self, store: ContextForge, loop: asyncio.AbstractEventLoop, thread: threading.Thread
    ) -> None:
        """Use :meth:`open`."""
        self._async = store
        self._loop: asyncio.AbstractEventLoop | None = loop  # None once closed
        self._thread = thread
        self._lock = threading.Lock()
        _open_stores.add(self)

    @classmethod
    def open(
        cls,
        target: Config | PathLike = ":memory:",
        *,
        reembed: bool = False,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> ContextForgeSync:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=_serve, args=(loop,), name="contextforge-sync", daemon=True
        )
        thread.start()
        try:
            opening = ContextForge._open(target, reembed, on_progress)
            store = _wait(asyncio.run_coroutine_threadsafe(opening, loop))
        except BaseException:
            _stop(loop, thread)
            raise
        return cls(store, loop, thread)

    @property
    def config(self) -> Config:
        return self._async.config

    @property
    def closed(self) -> bool:
        return self._async.closed

    def __enter__(self) -> ContextForgeSync:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def save(
        self,
        content: str,
        kind: str = "note",
        *,
        scope: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: Timestamp | None = None,
        dedupe: bool = True,
        ttl: float | timedelta | None = None,
        expires_at: Timestamp | None = None,
        embedding: Vector | None = None,
        scrub: bool = True,
    ) -> Saved:
        return self._run(
            self._async.save(
                content,
                kind,
                scope=scope,
                session_id=session_id,
                metadata=metadata,
                timestamp=timestamp,
                dedupe=dedupe,
                ttl=ttl,
                expires_at=expires_at,
                embedding=embedding,
                scrub=scrub,
            )
        )

    def save_many(self, items: Iterable[Mapping[str, Any]]) -> list[Saved]:
        return self._run(self._async.save_many(_here(items)))

    def query(
        self,
        q: str,
        scope: Scope = None,
        budget: int = 2048,
        *,
        limit: int | None = None,
        now: Timestamp | None = None,
        depth: int | None = None,
        kinds: Sequence[str] | None = None,
        session_id: str | None = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_injection: InjectionPolicy = "flag",
        explain: bool = False,
        embedding: Vector | None = None,
    ) -> Hits:
        return self._run(
            self._async.query(
                q,
                scope,
                budget,
                limit=limit,
                now=now,
                depth=depth,
                kinds=kinds,
                session_id=session_id,
                since=since,
                until=until,
                metadata=metadata,
                on_injection=on_injection,
                explain=explain,
                embedding=embedding,
            )
        )

    def context(
        self,
        q: str,
        scope: Scope = None,
        budget: int = 2048,
        *,
        order: ContextOrder = "score",
        limit: int | None = None,
        now: Timestamp | None = None,
        depth: int | None = None,
        kinds: Sequence[str] | None = None,
        session_id: str | None = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_injection: InjectionPolicy = "flag",
        embedding: Vector | None = None,
    ) -> _core.Context:
        return self._run(
            self._async.context(
                q,
                scope,
                budget,
                order=order,
                limit=limit,
                now=now,
                depth=depth,
                kinds=kinds,
                session_id=session_id,
                since=since,
                until=until,
                metadata=metadata,
                on_injection=on_injection,
                embedding=embedding,
            )
        )

    def distill_and_save(
        self,
        transcript: Transcript,
        *,
        scope: str,
        session_id: str | None = None,
        distiller: Distiller | None = None,
        max_chunk_tokens: int | None = None,
        summary: Literal["structural", "model"] = "structural",
    ) -> DistillResult:
        return self._run(
            self._async.distill_and_save(
                transcript,
                scope=scope,
                session_id=session_id,
                distiller=distiller,
                max_chunk_tokens=max_chunk_tokens,
                summary=summary,
            )
        )

    def get(self, id: int) -> _core.Hit | None:
        return self._run(self._async.get(id))

    def get_many(self, ids: Iterable[int]) -> list[_core.Hit | None]:
        return self._run(self._async.get_many(_here(ids)))

    def update(
        self,
        id: int,
        *,
        content: str | None = None,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = _UNSET,
        scope: str | None = _UNSET,
        embedding: Vector | None = None,
        ttl: float | timedelta | None = _UNSET,
        expires_at: Timestamp | None = _UNSET,
        scrub: bool = True,
    ) -> _core.Hit:
        # A left-out argument stays the async layer's "unset" sentinel.
        return self._run(
            self._async.update(
                id, content=content, kind=kind, metadata=metadata, scope=scope,
                embedding=embedding, ttl=ttl, expires_at=expires_at, scrub=scrub,
            )
        )

    def reembed(self, *, on_progress: Callable[[int, int], None] | None = None) -> int:
        return self._run(self._async.reembed(on_progress=on_progress))

    def delete(self, id: int) -> bool:
        return self._run(self._async.delete(id))

    def delete_many(self, ids: Iterable[int]) -> list[bool]:
        return self._run(self._async.delete_many(_here(ids)))

    def purge_expired(self, *, now: Timestamp | None = None) -> int:
        return self._run(self._async.purge_expired(now=now))

    def clear_scope(self, scope: str) -> int:
        return self._run(self._async.clear_scope(scope))

    def clear_all(self, *, confirm: bool) -> int:
        return self._run(self._async.clear_all(confirm=confirm))

    def scopes(self) -> dict[str | None, int]:
        return self._run(self._async.scopes())

    def list(
        self,
        *,
        scope: ScopeFilter = ALL_SCOPES,
        kind: str | None = None,
        session_id: str | None = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        page_size: int = _PAGE,
    ) -> Iterator[_core.Hit]:
        entries = self._async.list(
            scope=scope,
            kind=kind,
            session_id=session_id,
            since=since,
            until=until,
            page_size=page_size,
        )
        # One round trip per page; a bad page_size is rejected by the first pull.
        chunk = page_size if isinstance(page_size, int) and page_size > 0 else 1
        while True:
            batch = self._run(_take(entries, chunk))
            yield from batch
            if len(batch) < chunk:
                return

    def count(self, scope: ScopeFilter = ALL_SCOPES) -> int:
        return self._run(self._async.count(scope))

    def flush(self) -> None:
        self._run(self._async.flush())

    def close(self) -> None:
        with self._lock:  # calls from other threads wait, then find the store closed
            loop = self._loop
            if loop is None:
                return
            try:
                _wait(asyncio.run_coroutine_threadsafe(self._async.close(), loop))
            finally:
                self._loop = None
                _open_stores.discard(self)
                _stop(loop, self._thread)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<ContextForgeSync {self._async.config.path!r} ({state})>"

    def __del__(self) -> None:
        # Guarded: a failed open leaves no loop; at interpreter shutdown the
        # daemon thread is frozen, so waiting for it would hang (the atexit hook
        # below has closed every store by then); and the loop's own thread must
        # not wait for itself, so it only asks the loop to stop.
        loop = getattr(self, "_loop", None)
        if loop is None or sys.is_finalizing():
            return
        if threading.current_thread() is self._thread:
            loop.call_soon_threadsafe(loop.stop)
            return
        with contextlib.suppress(Exception):
            self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs one async-layer call on the loop and waits for its result or error."""
        with self._lock:
            loop = self._loop
            future = None if loop is None else asyncio.run_coroutine_threadsafe(coro, loop)
        if future is None:
            return _run_closed(coro)
        return _wait(future)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The loop thread. After ``close`` stops the loop, calls still in flight finish."""
    try:
        loop.run_forever()
        loop.run_until_complete(_drain())
    finally:
        loop.close()


async def _drain() -> None:
    # Their callers collect their results; here they only need to end. Pending
    # ``list`` generators are left open on purpose: pulling one after ``close``
    # raises ``ClosedError``, as it does in the async layer.
    this = asyncio.current_task()
    await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not this), return_exceptions=True)


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join()


def _wait(future: concurrent.futures.Future[T]) -> T:
    """The result, or the async layer's exception itself, unchanged."""
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted (Ctrl-C): abandon the call; no-op once done
        raise


def _run_closed(coro: Coroutine[Any, Any, T]) -> T:
    """Runs a call once the loop is gone. A closed engine refuses every call before
    anything is awaited, so the coroutine ends at its first step, raising exactly
    what the async layer raises (``ClosedError``, or a validation error first)."""
    try:
        coro.send(None)
    except StopIteration as done:  # finished without touching the engine
        result: T = done.value
        return result
    coro.close()  # unreachable while the engine refuses synchronously
    raise ClosedError("this ContextForge instance is closed")


async def _take(entries: AsyncIterator[_core.Hit], n: int) -> list[_core.Hit]:
    """The next ``n`` entries (fewer only at the end), leaving ``entries`` open."""
    batch: list[_core.Hit] = []
    async for entry in entries:
        batch.append(entry)
        if len(batch) == n:
            break
    return batch


def _here(values: Iterable[T]) -> Iterable[T]:
    """Consumes a one-shot iterator (a generator, a DB cursor) in the caller's
    thread, where it may rely on thread-bound resources; collections pass as given."""
    return list(values) if isinstance(values, Iterator) else values


_open_stores: weakref.WeakSet[ContextForgeSync] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    # Registered after ``_core``'s hook (imported above), so it runs first, while
    # the engine still delivers results.
    for store in list(_open_stores):
        with contextlib.suppress(Exception):  # entries are durable already
            store.close()


# Every public member carries its ContextForge namesake's docstring, so they cannot drift.
for _name, _member in vars(ContextForgeSync).items():
    _source = vars(ContextForge).get(_name)
    if _name.startswith("_") or _source is None:
        continue
    if isinstance(_member, classmethod):
        _member.__func__.__doc__ = _source.__func__.__doc__
    else:  # a function or a property
        _member.__doc__ = _source.__doc__
del _name, _member, _source
