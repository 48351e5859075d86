"""Importing parsed records: validated in full first, then saved in batches, and
idempotent, so a re-run (or a resumed, interrupted run) adds only what is missing.

Idempotence without changing what is stored: every record is first saved into a
scratch in-memory store with the same settings, which validates it with the
engine's own rules and shows it exactly as it will be stored (secrets scrubbed,
metadata normalised). Its identity is then (scope, kind, session, content,
metadata, expiry, timestamp) as stored, the timestamp left out when the file gave none;
a record whose identity already occurs in the target store (as many times as the
file holds it) is skipped. Exported entries therefore round-trip exactly, and
transcript messages are told apart by the ``source_line`` and ``message_index``
their metadata carries.

Entries whose ``expires_at`` has already passed are skipped and counted: the store
would never return them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .._core import Hit
from ..config import Config
from ..errors import InvalidInputError
from ..sync import ContextForgeSync
from .progress import Progress
from .records import Record, RecordError

__all__ = ["Summary", "import_records"]

# scope, kind, session, content, metadata, expiry (µs), timestamp (µs, or None)
Key = tuple[str | None, str, str | None, str, str, int | None, int | None]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)
_ITEM = re.compile(r"^item (\d+): (.*)$", re.DOTALL)


@dataclass(frozen=True)
class Summary:
    """How many records were added (or would be, for a dry run), how many the
    store already held, and how many had already expired."""

    added: int
    present: int
    expired: int = 0


def import_records(
    store: ContextForgeSync,
    records: Sequence[Record],
    *,
    batch_size: int,
    dedupe: bool,
    dry_run: bool,
    progress: bool,
) -> Summary:
    """Saves the records the store does not hold yet.

    Raises:
        RecordError: for the first record the engine rejects; nothing is saved.
    """
    now = datetime.now(timezone.utc)
    live = [r for r in records if r.item.get("expires_at") is None or r.item["expires_at"] > now]
    expired = len(records) - len(live)
    timed = _assign_times(live)
    keys = _stored_keys(store.config, timed, batch_size, progress)
    existing = _existing_keys(store, timed)
    pending = [r for r, key in zip(timed, keys) if not _claim(existing, key, r.timed)]
    present = len(timed) - len(pending)
    if dry_run or not pending:
        return Summary(added=len(pending) if dry_run else 0, present=present, expired=expired)
    before = store.count() if dedupe else 0
    bar = Progress("importing", len(pending), enabled=progress)
    try:
        for batch in _batches(pending, batch_size):
            store.save_many([{**r.item, "dedupe": dedupe} for r in batch])
            bar.advance(len(batch))
    finally:
        bar.close()
    added = store.count() - before if dedupe else len(pending)
    return Summary(added=added, present=present, expired=expired)


def _assign_times(records: Sequence[Record]) -> list[Record]:
    """Records without a time get this import's start plus their position in
    microseconds, so the file's order survives as time order."""
    start = datetime.now(timezone.utc)
    return [
        r if r.timed else Record(r.line, {**r.item, "timestamp": start + i * _MICRO}, False)
        for i, r in enumerate(records)
    ]


def _stored_keys(
    config: Config, records: Sequence[Record], batch_size: int, progress: bool
) -> list[Key]:
    """Each record's identity as the store will hold it, via a scratch store in
    memory with the target's settings (its scrubbing above all)."""
    keys: list[Key] = []
    bar = Progress("checking ", len(records), enabled=progress)
    scratch_config = dataclasses.replace(config, path=":memory:", index_dir=None, auth_token=None,
                                         max_entries_per_scope=None)
    try:
        with ContextForgeSync.open(scratch_config) as scratch:
            for batch in _batches(records, batch_size):
                try:
                    ids = scratch.save_many([{**r.item, "dedupe": False} for r in batch])
                except InvalidInputError as err:
                    raise _located(err, batch) from None
                for record, hit in zip(batch, scratch.get_many(ids)):
                    assert hit is not None
                    keys.append(_key(hit, record.timed))
                scratch.clear_all(confirm=True)
                bar.advance(len(batch))
    finally:
        bar.close()
    return keys


def _located(err: InvalidInputError, batch: Sequence[Record]) -> RecordError:
    """The engine's "item 3: ..." as an error on the record's line."""
    found = _ITEM.match(str(err))
    if found and int(found.group(1)) < len(batch):
        return RecordError(batch[int(found.group(1))].line, found.group(2))
    return RecordError(batch[0].line, str(err))


def _existing_keys(store: ContextForgeSync, records: Sequence[Record]) -> tuple[Counter[Key], Counter[Key]]:
    """Identities already stored in the scopes the records go to, with and without
    their timestamp. Scopes whose records all carry times are read only over the
    time range the records span."""
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
    full: Counter[Key] = Counter()
    partial: Counter[Key] = Counter()
    for scope, span in spans.items():
        since, until = (None, None) if span is None else (span[0], span[1] + _MICRO)
        for hit in store.list(scope=scope, since=since, until=until):
            full[_key(hit, True)] += 1
            partial[_key(hit, False)] += 1
    return full, partial


def _claim(existing: tuple[Counter[Key], Counter[Key]], key: Key, timed: bool) -> bool:
    """Whether the store already holds this record, consuming one occurrence."""
    full, partial = existing
    if timed:
        if full[key] <= 0:
            return False
        full[key] -= 1
        partial[key[:6] + (None,)] -= 1
        return True
    if partial[key] <= 0:
        return False
    partial[key] -= 1
    return True


def _key(hit: Hit, timed: bool) -> Key:
    metadata = json.dumps(hit.metadata, sort_keys=True, ensure_ascii=False)
    expires = None if hit.expires_at is None else (hit.expires_at - _EPOCH) // _MICRO
    micros = (hit.timestamp - _EPOCH) // _MICRO if timed else None
    return (hit.scope, hit.kind, hit.session_id, hit.content, metadata, expires, micros)


def _batches(records: Sequence[Record], size: int) -> Iterator[Sequence[Record]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]
