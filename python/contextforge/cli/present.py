"""Which records of an import the store already holds: what makes ``import``
idempotent, so a re-run (or a resumed, interrupted run) adds only what is missing.

Every record is first saved into a scratch in-memory store with the target's
settings, which validates it with the engine's own rules and shows it exactly as
it will be stored (secrets scrubbed, metadata normalised). Its identity is then
(scope, kind, session, content, metadata, expiry, timestamp) as stored, the
timestamp left out when the file gave none, and its key and ``valid_from`` (left
out with the timestamp). A record whose identity is held by a live entry of the
target store, superseded or not, is *already present*, as many times as the
store holds it; it is not saved again, and its id is that entry's (the entry
with the record's own id when there is a choice).

An entry already present is also a duplicate under ``save``'s dedupe rule
(equal content, scope, session, kind, metadata, expiry and end, and alive): this
check is the stricter one, so a record it lets through may still be found a
duplicate when it is saved.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone

from .._core import Hit
from ..config import Config
from ..errors import InvalidInputError
from ..sync import ContextForgeSync
from .fields import Record, RecordError
from .progress import Progress

__all__ = ["Key", "Present", "batches", "located", "stored_keys"]

# scope, kind, session, content, metadata, expiry (µs), timestamp (µs, or None),
# key, valid_from (µs, or None with the timestamp)
Key = tuple[str | None, str, str | None, str, str, int | None, int | None, str | None, int | None]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROSECOND = timedelta(microseconds=1)
_ITEM = re.compile(r"^item (\d+): (.*)$", re.DOTALL)


def stored_keys(
    config: Config, records: Sequence[Record], batch_size: int, progress: bool
) -> list[Key]:
    """Each record's identity as the store will hold it, via a scratch store in
    memory with the target's settings (its scrubbing above all).

    Raises:
        RecordError: for the first record the engine rejects.
    """
    keys: list[Key] = []
    bar = Progress("checking ", len(records), enabled=progress)
    scratch_config = dataclasses.replace(
        config, path=":memory:", index_dir=None, auth_token=None, max_entries_per_scope=None
    )
    try:
        with ContextForgeSync.open(scratch_config) as scratch:
            for batch in batches(records, batch_size):
                try:
                    ids = scratch.save_many([{**r.item, "dedupe": False} for r in batch])
                except InvalidInputError as err:
                    raise located(err, batch) from None
                held = scratch.get_many(ids, include_superseded=True)
                for record, hit in zip(batch, held):
                    assert hit is not None
                    keys.append(key_of(hit, record.timed))
                scratch.clear_all(confirm=True)
                bar.advance(len(batch))
    finally:
        bar.close()
    return keys


class Present:
    """The live entries of the store that records may be, by identity, with and
    without their timestamp; each can be claimed by one record only."""

    def __init__(self, store: ContextForgeSync, records: Sequence[Record]) -> None:
        self._full: dict[Key, list[int]] = {}
        self._partial: dict[Key, list[int]] = {}
        self._taken: set[int] = set()
        for scope, (since, until) in _spans(records).items():
            for hit in store.list(scope=scope, since=since, until=until, include_superseded=True):
                self._full.setdefault(key_of(hit, True), []).append(hit.id)
                self._partial.setdefault(key_of(hit, False), []).append(hit.id)

    def claim_all(self, records: Sequence[Record], keys: Sequence[Key]) -> list[int | None]:
        """For each record, the id of a stored entry it is (each entry claimed once),
        or ``None``. Records whose own id holds an equal entry claim it first, so
        that a resumed restore finds every entry at its id."""
        claimed: list[int | None] = [
            self._claim(key, r.timed, r.id, own_only=True) if r.id is not None else None
            for r, key in zip(records, keys)
        ]
        return [
            entry if entry is not None else self._claim(key, r.timed, r.id)
            for r, key, entry in zip(records, keys, claimed)
        ]

    def _claim(
        self, key: Key, timed: bool, own_id: int | None, own_only: bool = False
    ) -> int | None:
        """The id of a stored entry this record is, now taken; ``None`` if none is."""
        pool = self._full.get(key) if timed else self._partial.get(_untimed(key))
        if not pool:
            return None
        if own_id is not None and own_id not in self._taken and own_id in pool:
            chosen = own_id
        elif own_only:
            return None
        else:
            while pool and pool[-1] in self._taken:
                pool.pop()
            if not pool:
                return None
            chosen = pool.pop()
        self._taken.add(chosen)
        return chosen


def _spans(records: Sequence[Record]) -> dict[str | None, tuple[datetime | None, datetime | None]]:
    """The scopes the records go to, each with the time range to read: the span of
    its records' times, or everything when one of them has no time of its own."""
    spans: dict[str | None, tuple[datetime, datetime] | None] = {}
    for r in records:
        scope = r.item["scope"]
        when: datetime = r.item["timestamp"]
        if scope in spans and spans[scope] is None:
            continue
        if not r.timed:
            spans[scope] = None
            continue
        old = spans.get(scope)
        spans[scope] = (when, when) if old is None else (min(old[0], when), max(old[1], when))
    return {
        scope: (None, None) if span is None else (span[0], span[1] + MICROSECOND)
        for scope, span in spans.items()
    }


def key_of(hit: Hit, timed: bool) -> Key:
    metadata = json.dumps(hit.metadata, sort_keys=True, ensure_ascii=False)
    expires = None if hit.expires_at is None else _micros(hit.expires_at)
    micros = _micros(hit.timestamp) if timed else None
    starts = _micros(hit.valid_from) if timed else None
    return (
        hit.scope,
        hit.kind,
        hit.session_id,
        hit.content,
        metadata,
        expires,
        micros,
        hit.key,
        starts,
    )


def _untimed(key: Key) -> Key:
    """The identity without the record's times (for a record the file gave none)."""
    return (*key[:6], None, key[7], None)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // MICROSECOND


def located(err: InvalidInputError, batch: Sequence[Record]) -> RecordError:
    """The engine's "item 3: ..." as an error on the record's line."""
    found = _ITEM.match(str(err))
    if found and int(found.group(1)) < len(batch):
        return RecordError(batch[int(found.group(1))].line, found.group(2))
    return RecordError(batch[0].line, str(err))


def batches(records: Sequence[Record], size: int) -> Iterator[Sequence[Record]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]
