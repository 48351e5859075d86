"""LangGraph's long-term memory store, backed by contextforge.

``ContextForgeStore(cf)`` is a ``langgraph.store.base.BaseStore``: give it to
``StateGraph(...).compile(store=...)`` (nodes reach it as ``runtime.store``), to
LangMem's memory tools, or call ``put``/``get``/``search``/``list_namespaces``
(and their ``a`` twins) yourself.

How LangGraph's model maps onto contextforge:

- A namespace (a tuple of labels) is a scope: each label escaped (``%`` as
  ``%25``, ``/`` as ``%2F``, control characters as ``%XX``) and the labels
  joined with ``/``, so a namespace prefix is a ``scope_prefix`` and
  ``("team", "a")`` never sees ``("team", "ab")``.
- An item is an entry of kind ``"langgraph"`` saved under its key
  (``save(key=...)``): a put supersedes the key's current version atomically and
  keeps the old ones (``created_at`` is the first version's time,
  ``updated_at`` the current version's). Its value is the entry's metadata,
  under ``"value"``, stored exactly as given (``scrub=False``); the entry's
  text (what a query ranks) is the value as JSON, or the fields ``index``
  names.
- ``search`` filters are metadata filters on the value (``{"a.b": {"$gte":
  1}}``); a query ranks (``score``), no query lists newest first.
- ``ttl`` (minutes) is the entry's expiry; expired items are never returned,
  ``sweep_ttl()`` purges them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import threading
import unicodedata
from collections.abc import Generator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar, cast

from contextforge.integrations import escape_label, require, store_of

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from contextforge.errors import ClosedError, NotFound
from contextforge.memory import ContextForge
from contextforge.sync import ContextForgeSync

__all__ = ["KIND", "ROOT", "ContextForgeStore", "namespace_to_scope", "scope_to_namespace"]

KIND = "langgraph"
"""The kind of the entries that hold the store's items."""
ROOT = "langgraph"
"""The scope every namespace lives under: the store's items never share a
scope, nor a key, with entries saved otherwise, and ``list_namespaces`` sees
only its own (LangGraph refuses ``langgraph`` as a namespace's first label)."""

_BUDGET = 1 << 30  # tokens: a search is bounded by its limit, never by a budget
_DEPTH = 100


# Namespaces and keys as labels -----------------------------------------------------------


def _unescape(text: str) -> str:
    if "%" not in text:
        return text
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and _is_hex(text[i + 1 : i + 3]):
            raw.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(text[i].encode("utf-8"))
            i += 1
    return raw.decode("utf-8", errors="surrogateescape")


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def namespace_to_scope(namespace: Sequence[str]) -> str:
    """The scope that holds ``namespace``'s items: under ``ROOT``, its labels
    escaped (``%`` as ``%25``, ``/`` as ``%2F``, control characters as
    ``%XX``) and joined by ``/``; the empty namespace is ``ROOT`` itself."""
    return "/".join([ROOT, *(escape_label(label) for label in namespace)])


def scope_to_namespace(scope: str) -> tuple[str, ...]:
    """The namespace that ``namespace_to_scope`` turned into ``scope``."""
    if scope == ROOT:
        return ()
    if not scope.startswith(ROOT + "/"):
        raise ValueError(f"scope {scope!r} holds no LangGraph namespace (not under {ROOT!r})")
    return tuple(_unescape(label) for label in scope[len(ROOT) + 1 :].split("/"))


def _key_label(key: str) -> str:
    """The entry key for an item key: the key itself when contextforge keeps it
    exactly (non-empty, NFC, no control characters, no ``%``), else ``%`` and
    the key percent-encoded (keys are compared after NFC, so an NFD key must
    not meet its NFC twin)."""
    if (
        key
        and "%" not in key
        and unicodedata.is_normalized("NFC", key)
        and not any(unicodedata.category(ch) == "Cc" for ch in key)
    ):
        return key
    return "%" + "".join(
        ch if ch.isascii() and (ch.isalnum() or ch in "-_.~") else _quote(ch) for ch in key
    )


def _quote(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8"))


def _item_key(label: str) -> str:
    return _unescape(label[1:]) if label.startswith("%") else label


# Values, filters, text -----------------------------------------------------------------


def _text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """What a query ranks: the fields named (``$`` is the whole value; dotted paths,
    ``[*]`` for every element of a list) or, without fields, the value as JSON."""
    if not fields:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    parts: list[str] = []
    for field in fields:
        for found in _pick(value, field):
            parts.append(found if isinstance(found, str) else json.dumps(found, default=str))
    return "\n".join(parts) or json.dumps(value, ensure_ascii=False, default=str)


def _pick(value: Any, path: str) -> list[Any]:
    if path in ("$", ""):
        return [value]
    found = [value]
    for segment in path.replace("[", ".[").split("."):
        if not segment:
            continue
        nxt: list[Any] = []
        for v in found:
            if segment in ("[*]",) and isinstance(v, list):
                nxt.extend(v)
            elif segment.startswith("[") and segment.endswith("]") and isinstance(v, list):
                try:
                    nxt.append(v[int(segment[1:-1])])
                except (ValueError, IndexError):
                    pass
            elif isinstance(v, Mapping) and segment in v:
                nxt.append(v[segment])
        found = nxt
    return found


_MAX = 1.7976931348623157e308  # the largest float: JSON holds no infinity or NaN
_NEVER: dict[str, Any] = {"$in": []}
_ALWAYS: dict[str, Any] = {"$nin": []}


def _filter(given: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A LangGraph filter on the value as a contextforge metadata filter on
    ``value.<key>``: dotted keys are paths, a nested object (no operators)
    matches its leaves, and infinite or NaN bounds become what they mean for
    finite numbers (``{"$lt": inf}``: every number; ``{"$eq": nan}``: nothing).

    Raises ``ValueError("Invalid filter key ...")`` for a key with an empty
    path segment or a segment that starts with ``$``.
    """
    if not given:
        return None
    conditions: list[dict[str, Any]] = []

    def add(path: str, cond: Any) -> None:
        if isinstance(cond, Mapping) and cond and not any(str(k).startswith("$") for k in cond):
            for sub, inner in cond.items():
                add(f"{path}.{_checked_key(sub)}", inner)
        elif isinstance(cond, Mapping) and cond:
            conditions.extend({path: _finite(op, v)} for op, v in cond.items())
        else:
            conditions.append({path: _finite("$eq", cond)})

    for key, cond in given.items():
        add(f"value.{_checked_key(key)}", cond)
    if len(conditions) == 1:
        return conditions[0]
    return {"$and": conditions}


def _checked_key(key: object) -> str:
    if not isinstance(key, str) or any(not s or s.startswith("$") for s in key.split(".")):
        raise ValueError(f"Invalid filter key: {key!r} (a dotted path of non-empty names)")
    return key


def _finite(op: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, float) or math.isfinite(value):
        return {op: value}
    if math.isnan(value):
        return _ALWAYS if op == "$ne" else _NEVER
    if op in ("$eq", "$ne"):
        return _ALWAYS if op == "$ne" else _NEVER
    up = value > 0
    if op in ("$lt", "$lte"):
        return {"$lte": _MAX} if up else {"$lt": -_MAX}
    if op in ("$gt", "$gte"):
        return {"$gt": _MAX} if up else {"$gte": -_MAX}
    return {op: value}  # an unknown operator: contextforge refuses it


def _minutes(metadata: Mapping[str, Any]) -> float | None:
    ttl = metadata.get("ttl")
    return float(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else None


class ContextForgeStore(BaseStore):
    """A LangGraph ``BaseStore`` over an open ``ContextForge``.

    ``ContextForgeStore(cf)`` (or ``store=cf``); ``ttl`` is LangGraph's
    ``TTLConfig`` (``default_ttl`` and ``sweep_interval_minutes`` in minutes,
    ``refresh_on_read``); ``fields`` names the parts of a value that make an
    item's text (what a query ranks and ``Config.embedder`` embeds: dotted
    paths, ``$`` for the whole value; default the whole value as JSON), which
    a put's ``index=[...]`` overrides. ``batch`` runs through ``ContextForgeSync.sharing(cf)``,
    ``abatch`` on ``cf`` itself: both reach the same store.
    """

    supports_ttl: bool = True
    __slots__ = ("_aio", "_asweeper", "_fields", "_stop", "_sweeper", "_sync", "ttl_config")

    def __init__(
        self,
        cf: ContextForge | ContextForgeSync | None = None,
        *,
        store: ContextForge | ContextForgeSync | None = None,
        ttl: TTLConfig | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        given = store_of(cf, store, "ContextForgeStore")
        self._aio: ContextForge = given
        self._sync: ContextForgeSync = ContextForgeSync.sharing(given)
        self.ttl_config = ttl
        self._fields = None if fields is None else list(fields)
        self._sweeper: concurrent.futures.Future[None] | None = None
        self._stop = threading.Event()
        self._asweeper: asyncio.Task[None] | None = None

    @property
    def _refreshes(self) -> bool:
        # As LangGraph's SQLite store: reads renew a TTL only
        # when the TTL config asks for it (``refresh_on_read``).
        return bool(self.ttl_config and self.ttl_config.get("refresh_on_read", False))

    @property
    def contextforge(self) -> ContextForge:
        """The ``ContextForge`` behind the store."""
        return self._aio

    # batch / abatch --------------------------------------------------------------------
    # Each op is written once, as a generator of the store calls it makes (see _Call);
    # batch makes them on the blocking twin, abatch awaits them on the store itself.

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        steps = self._execute(_checked(ops))
        try:
            call = next(steps)
            while True:
                try:
                    made = getattr(self._sync, call.name)(*call.args, **call.kwargs)
                except Exception as err:  # noqa: BLE001 - raised at the op's own step
                    call = steps.throw(err)
                else:
                    call = steps.send(made)
        except StopIteration as done:
            return cast("list[Result]", done.value)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        steps = self._execute(_checked(ops))
        try:
            call = next(steps)
            while True:
                try:
                    made = await getattr(self._aio, call.name)(*call.args, **call.kwargs)
                except Exception as err:  # noqa: BLE001 - raised at the op's own step
                    call = steps.throw(err)
                else:
                    call = steps.send(made)
        except StopIteration as done:
            return cast("list[Result]", done.value)

    def _execute(self, ops: list[Op]) -> _Steps[list[Result]]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op)))
            elif isinstance(op, PutOp):
                yield from self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op)))
            else:  # pragma: no cover - _checked refuses these
                raise TypeError(f"unknown op {type(op).__name__}")
        return results

    # The ops ---------------------------------------------------------------------------

    def _versions(self, namespace: tuple[str, ...], key: str) -> _Steps[tuple[str, str, list[Any]]]:
        scope = namespace_to_scope(namespace)
        label = _key_label(key)
        versions = yield _Call.of("history", label, scope)
        return scope, label, versions

    def _get(self, op: GetOp) -> _Steps[Item | None]:
        _, _, versions = yield from self._versions(tuple(op.namespace), op.key)
        live = [v for v in versions if v.valid_to is None and v.kind == KIND]
        if not live:
            return None
        hit = live[-1]
        if op.refresh_ttl and self._refreshes:
            yield from self._refresh(hit, versions)
        return Item(
            value=hit.metadata.get("value", {}),
            key=op.key,
            namespace=tuple(op.namespace),
            created_at=versions[0].timestamp,
            updated_at=hit.timestamp,
        )

    def _refresh(self, hit: Any, versions: Sequence[Any]) -> _Steps[None]:
        minutes = _minutes(hit.metadata)
        if minutes is None or hit.expires_at is None:
            return
        try:
            renewed = yield _Call.of("update", hit.id, ttl=minutes * 60)
        except NotFound:  # deleted (or swept) since it was read: nothing to renew
            return
        yield from self._align(renewed.expires_at, [v for v in versions if v.id != hit.id])

    def _align(self, expires_at: datetime | None, older: Sequence[Any]) -> _Steps[None]:
        # Deleting (or expiring) a version gives its interval back to the one it
        # superseded: the older versions expire with the current one, never after.
        for v in older:
            if v.expires_at != expires_at:
                try:
                    yield _Call.of("update", v.id, expires_at=expires_at)
                except NotFound:  # swept or deleted meanwhile: nothing left to align
                    continue

    def _put(self, op: PutOp) -> _Steps[None]:
        scope, label, versions = yield from self._versions(tuple(op.namespace), op.key)
        if op.value is None:
            if versions:
                yield _Call.of("delete_many", [v.id for v in versions])
            return
        fields = op.index if isinstance(op.index, list) else self._fields
        metadata: dict[str, Any] = {"value": dict(op.value)}
        if op.ttl is not None:
            metadata["ttl"] = op.ttl
        if versions:
            metadata["created_at"] = versions[0].timestamp.isoformat()
        saved = yield _Call.of(
            "save",
            _text(op.value, fields),
            KIND,
            scope=scope,
            key=label,
            metadata=metadata,
            ttl=None if op.ttl is None else op.ttl * 60,
            dedupe=False,
            scrub=False,
        )
        if versions:
            [hit] = yield _Call.of("get_many", [saved])
            yield from self._align(None if hit is None else hit.expires_at, versions)

    def _search(self, op: SearchOp) -> _Steps[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        text = op.query or ""
        hits = yield _Call.of(
            "query",
            text,
            budget=_BUDGET,
            limit=op.limit,
            offset=op.offset,
            kinds=[KIND],
            metadata=_filter(op.filter),
            depth=max(_DEPTH, op.limit) if text.strip() else None,  # offset is added
            **_selection(prefix),
        )
        items = []
        for hit in hits:
            if hit.key is None or hit.scope is None:
                continue
            meta = hit.metadata
            if op.refresh_ttl and self._refreshes and _minutes(meta) is not None:
                yield from self._refresh_search(hit)
            created = meta.get("created_at")
            items.append(
                SearchItem(
                    namespace=scope_to_namespace(hit.scope),
                    key=_item_key(hit.key),
                    value=meta.get("value", {}),
                    created_at=(
                        datetime.fromisoformat(created)
                        if isinstance(created, str)
                        else hit.timestamp
                    ),
                    updated_at=hit.timestamp,
                    score=hit.score,
                )
            )
        return items

    def _refresh_search(self, hit: Any) -> _Steps[None]:
        assert hit.key is not None
        versions = yield _Call.of("history", hit.key, hit.scope)
        yield from self._refresh(hit, versions)

    def _list_namespaces(self, op: ListNamespacesOp) -> _Steps[list[tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        literal: list[str] = []
        for cond in conditions:
            if cond.match_type == "prefix":
                head = []
                for label in cond.path:
                    if label == "*":
                        break
                    head.append(label)
                if len(head) > len(literal):
                    literal = head
        scopes = yield _Call.of("scopes", namespace_to_scope(literal))
        found = set()
        for scope in scopes:
            if scope is None or scope == ROOT:
                continue
            ns = scope_to_namespace(scope)
            if all(_matches(ns, cond) for cond in conditions):
                found.add(ns if op.max_depth is None else ns[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # TTL ---------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Deletes the expired entries now and returns how many (each version of
        an item counts). Expired items are never returned anyway."""
        return self._sync.purge_expired()

    async def asweep_ttl(self) -> int:
        """``sweep_ttl`` for async callers."""
        return await self._aio.purge_expired()

    def _interval(self, minutes: float | None) -> float:
        if minutes is None and self.ttl_config:
            minutes = self.ttl_config.get("sweep_interval_minutes")
        return (minutes if minutes else 5.0) * 60

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweeps every ``sweep_interval_minutes`` (default: the TTL config's, else
        5) in a daemon thread until ``stop_ttl_sweeper``; the future completes
        when it stops."""
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper
        interval = self._interval(sweep_interval_minutes)
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop.clear()

        def run() -> None:
            try:
                while not self._stop.wait(interval):
                    self.sweep_ttl()
            except ClosedError:  # the store was closed: the sweeper ends
                future.set_result(None)
            except BaseException as err:  # noqa: BLE001 - the future holds it
                future.set_exception(err)
            else:
                future.set_result(None)

        threading.Thread(target=run, name="contextforge-ttl-sweeper", daemon=True).start()
        self._sweeper = future
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper thread; whether it stopped within ``timeout`` seconds."""
        if self._sweeper is None:
            return True
        self._stop.set()
        try:
            self._sweeper.exception(timeout)
        except concurrent.futures.TimeoutError:
            return False
        self._sweeper = None
        return True

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """``start_ttl_sweeper`` as a task of the running loop."""
        if self._asweeper is not None and not self._asweeper.done():
            return self._asweeper
        interval = self._interval(sweep_interval_minutes)

        async def run() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.asweep_ttl()
                except ClosedError:  # the store was closed: the sweeper ends
                    return

        self._asweeper = asyncio.get_running_loop().create_task(run())
        return self._asweeper

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper task; whether it stopped within ``timeout`` seconds."""
        task, self._asweeper = self._asweeper, None
        if task is None:
            return True
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=timeout)
        return bool(done)

    def close(self) -> None:
        """Stops the sweepers and this store's sync thread (the ``ContextForge``
        stays open: its owner closes it)."""
        ContextForgeStore.stop_ttl_sweeper(self)  # a subclass may make it a coroutine
        if self._asweeper is not None:
            self._asweeper.cancel()
            self._asweeper = None
        self._sync.close()


class _Call(NamedTuple):
    """One call of a ``ContextForge`` method (the twin's has the same name)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @classmethod
    def of(cls, name: str, *args: Any, **kwargs: Any) -> _Call:
        return cls(name, args, kwargs)


_T = TypeVar("_T")
_Steps = Generator[_Call, Any, _T]


def _selection(prefix: tuple[str, ...]) -> dict[str, Any]:
    # Never every scope: the empty prefix is every namespace, under ROOT.
    return {"scope_prefix": namespace_to_scope(prefix)}


def _matches(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    if cond.match_type == "prefix":
        pairs = zip(ns, path)
    else:
        pairs = zip(reversed(ns), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


def _checked(ops: Iterable[Op]) -> list[Op]:
    """The ops as a list, every namespace checked before any op runs."""
    todo = list(ops)
    for op in todo:
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise TypeError(f"unknown op {type(op).__name__}")
        validate_op_namespace(op)
        if isinstance(op, PutOp) and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
    return todo
