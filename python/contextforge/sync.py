"""``ContextForgeSync``: the blocking twin of the asyncio API, for scripts and notebooks."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import inspect
import re
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from .config import Config
from .errors import ClosedError, InvalidTypeError
from .memory import ContextForge

__all__ = ["ContextForgeSync"]

P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


# The twins ------------------------------------------------------------------------------
# Each public ContextForge method's twin is made from it by one of these. ``functools.wraps``
# carries its name, docstring and signature (``inspect.signature`` follows ``__wrapped__``),
# and the ParamSpec ``P`` lets mypy see its exact parameters.


def _blocking(
    method: Callable[Concatenate[ContextForge, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[ContextForgeSync, P], T]:
    """The twin of a coroutine method: runs it on the instance's loop, returns its result."""
    loose: Callable[..., Coroutine[Any, Any, T]] = method
    positions, names = _iterable_parameters(method)

    @_named_after(method)
    def call(self: ContextForgeSync, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if not (positions or names):
            return self._run(method(self._async, *args, **kwargs))
        # Iterable arguments: a one-shot iterator is consumed here (see _here).
        given = list(args)
        for i in positions:
            if i < len(given):
                given[i] = _here(given[i])
        named: dict[str, Any] = kwargs
        for name in names:
            if name in named:
                named[name] = _here(named[name])
        return self._run(loose(self._async, *given, **named))

    return call


def _iterating(
    method: Callable[Concatenate[ContextForge, P], AsyncIterator[T]], *, page: str
) -> Callable[Concatenate[ContextForgeSync, P], Iterator[T]]:
    """The twin of an async generator method: a plain iterator that fetches a page of
    items per round trip to the loop; ``page`` names the page size parameter."""
    signature = inspect.signature(method)
    page_size = signature.parameters[page]
    assert page_size.kind is page_size.KEYWORD_ONLY, "the page size is read from kwargs"

    @_named_after(method, returns=_sync_iterator(signature.return_annotation))
    def call(self: ContextForgeSync, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        items = method(self._async, *args, **kwargs)  # raises TypeError for a wrong argument
        size = kwargs.get(page, page_size.default)
        # A bad page size is the async layer's to reject, on the first pull.
        return self._pages(items, size if isinstance(size, int) and size > 0 else 1)

    return call


def _opening(
    method: Callable[P, Awaitable[ContextForge]],
) -> Callable[Concatenate[type[ContextForgeSync], P], ContextForgeSync]:
    """The twin of the ``open`` classmethod (to wrap in ``classmethod``): starts the
    instance's loop thread and opens the store on it."""

    @_named_after(method, returns="ContextForgeSync")
    def call(cls: type[ContextForgeSync], /, *args: P.args, **kwargs: P.kwargs) -> ContextForgeSync:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=_serve, args=(loop,), name="contextforge-sync", daemon=True
        )
        thread.start()
        try:
            opening = _awaited(method(*args, **kwargs))
            store = _wait(asyncio.run_coroutine_threadsafe(opening, loop))
        except BaseException:
            _stop(loop, thread)
            raise
        return cls(store, loop, thread)

    return call


def _named_after(source: Callable[..., Any], returns: str | None = None) -> Callable[[F], F]:
    """Gives a twin ``source``'s name, docstring and signature (with ``returns`` as its
    return annotation, when given), as a member of ``ContextForgeSync``."""

    origin = getattr(source, "__func__", source)  # a classmethod's function, with ``cls``

    def name(twin: F) -> F:
        functools.update_wrapper(twin, origin)
        twin.__module__ = __name__
        twin.__qualname__ = f"ContextForgeSync.{origin.__name__}"
        if returns is not None:
            twin.__annotations__ = {**origin.__annotations__, "return": returns}
            signature = inspect.signature(origin).replace(return_annotation=returns)
            twin.__signature__ = signature  # type: ignore[attr-defined]
        return twin

    return name


def _sync_iterator(annotation: object) -> str:
    """``"Iterator[X]"`` for an ``AsyncIterator[X]`` or ``AsyncGenerator[X, None]``."""
    text = annotation if isinstance(annotation, str) else repr(annotation)
    found = re.fullmatch(r"(?:[\w.]+\.)?Async(?:Iterator|Generator)\[(.*?)(?:, None)?\]", text)
    return f"Iterator[{found.group(1)}]" if found else "Iterator[Any]"


def _iterable_parameters(method: Callable[..., Any]) -> tuple[set[int], set[str]]:
    """The positions (after ``self``) and names of the parameters typed ``Iterable[...]``."""
    positions: set[int] = set()
    names: set[str] = set()
    kind = inspect.Parameter
    for i, param in enumerate(list(inspect.signature(method).parameters.values())[1:]):
        text = param.annotation if isinstance(param.annotation, str) else repr(param.annotation)
        if not re.match(r"(?:[\w.]+\.)?Iterable\[", text):
            continue
        if param.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD):
            positions.add(i)
        if param.kind in (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY):
            names.add(param.name)
    return positions, names


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

    One store can serve both kinds of caller, as a framework with a sync and
    an async path needs: :meth:`sharing` makes a twin of an open
    ``ContextForge``, and :attr:`aio` is the ``ContextForge`` behind a twin.
    Both handles reach the same engine, index and connections, so what one
    writes the other reads at once.
    """

    __slots__ = ("__weakref__", "_async", "_lock", "_loop", "_owns", "_thread")

    def __init__(
        self,
        store: ContextForge,
        loop: asyncio.AbstractEventLoop,
        thread: threading.Thread,
        *,
        owns: bool = True,
    ) -> None:
        """Use :meth:`open` or :meth:`sharing`."""
        self._async = store
        self._loop: asyncio.AbstractEventLoop | None = loop  # None once closed
        self._thread = thread
        self._owns = owns
        self._lock = threading.Lock()
        _open_stores.add(self)

    @classmethod
    def sharing(cls, store: ContextForge) -> ContextForgeSync:
        """A blocking twin of the open ``store``: the same engine, index and
        connections, driven from a thread of its own, so it may be called from
        any thread, an event loop's included (it never runs ``store``'s
        coroutines on the caller's loop). Closing the twin stops only its
        thread; closing ``store`` closes the store for both."""
        if not isinstance(store, ContextForge):
            raise InvalidTypeError(
                f"sharing() takes an open ContextForge, not {type(store).__name__}"
            )
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=_serve, args=(loop,), name="contextforge-sync", daemon=True
        )
        thread.start()
        return cls(store, loop, thread, owns=False)

    @property
    def aio(self) -> ContextForge:
        """The ``ContextForge`` behind this twin, for async callers: awaited on
        any event loop, it reaches the same store."""
        return self._async

    # Each public method is made from its ContextForge namesake (see "The twins" above):
    # the same signature and docstring, so the twin cannot drift.
    open = classmethod(_opening(ContextForge.open))
    save = _blocking(ContextForge.save)
    save_many = _blocking(ContextForge.save_many)
    query = _blocking(ContextForge.query)
    context = _blocking(ContextForge.context)
    distill_and_save = _blocking(ContextForge.distill_and_save)
    distill_session = _blocking(ContextForge.distill_session)
    get = _blocking(ContextForge.get)
    get_many = _blocking(ContextForge.get_many)
    update = _blocking(ContextForge.update)
    supersede = _blocking(ContextForge.supersede)
    history = _blocking(ContextForge.history)
    versions = _blocking(ContextForge.versions)
    keys = _blocking(ContextForge.keys)
    reembed = _blocking(ContextForge.reembed)
    forget = _blocking(ContextForge.forget)
    changes = _iterating(ContextForge.changes, page="page_size")
    reads = _iterating(ContextForge.reads, page="page_size")
    sources = _blocking(ContextForge.sources)
    derived = _blocking(ContextForge.derived)
    delete = _blocking(ContextForge.delete)
    delete_many = _blocking(ContextForge.delete_many)
    delete_where = _blocking(ContextForge.delete_where)
    purge_expired = _blocking(ContextForge.purge_expired)
    clear_scope = _blocking(ContextForge.clear_scope)
    clear_all = _blocking(ContextForge.clear_all)
    scopes = _blocking(ContextForge.scopes)
    list = _iterating(ContextForge.list, page="page_size")
    count = _blocking(ContextForge.count)
    count_tokens = _blocking(ContextForge.count_tokens)
    sync = _blocking(ContextForge.sync)
    rekey = _blocking(ContextForge.rekey)
    flush = _blocking(ContextForge.flush)

    @property
    def config(self) -> Config:
        return self._async.config

    @property
    def closed(self) -> bool:
        return self._async.closed

    @property
    def encrypted(self) -> bool:
        """Whether the database file is encrypted at rest."""
        return self._async.encrypted

    def __enter__(self) -> ContextForgeSync:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @_named_after(ContextForge.close)
    def close(self) -> None:
        with self._lock:  # calls from other threads wait, then find the store closed
            loop = self._loop
            if loop is None:
                return
            try:
                if self._owns:
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
            if not self._owns:  # the store may be open; this twin is not
                coro.close()
                raise ClosedError(
                    "this sync twin is closed (the store it shared may still be open)"
                )
            return _run_closed(coro)
        return _wait(future)

    def _pages(self, items: AsyncIterator[T], size: int) -> Iterator[T]:
        """Pulls ``items`` from the loop ``size`` at a time (one round trip per page)."""
        while True:
            batch = self._run(_take(items, size))
            yield from batch
            if len(batch) < size:
                return


# The loop thread -----------------------------------------------------------------------


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


async def _awaited(awaitable: Awaitable[T]) -> T:
    """A coroutine for ``run_coroutine_threadsafe``, of an awaitable that is none."""
    return await awaitable


async def _take(items: AsyncIterator[T], n: int) -> list[T]:
    """The next ``n`` items (fewer only at the end), leaving ``items`` open."""
    batch: list[T] = []
    async for item in items:
        batch.append(item)
        if len(batch) == n:
            break
    return batch


def _here(values: object) -> object:
    """Consumes a one-shot iterator (a generator, a DB cursor) in the caller's
    thread, where it may rely on thread-bound resources; collections pass as given."""
    return list(values) if isinstance(values, Iterator) else values


_open_stores: weakref.WeakSet[ContextForgeSync] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    # Registered after ``_core``'s hook (imported by .memory), so it runs first, while
    # the engine still delivers results.
    for store in list(_open_stores):
        with contextlib.suppress(Exception):  # entries are durable already
            store.close()
