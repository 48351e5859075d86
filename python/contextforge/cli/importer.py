"""Importing parsed records: validated in full first, then saved in batches.

**Already present.** A record the store already holds (see :mod:`.present`) is
skipped, so an import can be run again, or resumed after an interruption.

**Duplicates.** The others are saved with ``save``'s dedupe rule (unless
``dedupe`` is false): a record equal to a live entry in content (after Unicode
and whitespace normalisation), scope, session, kind, metadata and expiry, at
another time, is not saved again and gets that entry's id.

**Ids.** Records that carry an ``id`` (as ``export`` writes them) are saved in
the order of those ids, before the records without one, which keep the file's
order. When the store holds nothing but records of this file at their own ids
(it is empty, or an import of this file into an empty store was interrupted),
every record keeps its id: a restore from ``export`` gives the same ids back, so
``[mem:N]`` citations stay valid. Otherwise every record gets a new id, rising
with the old ones, and :attr:`Summary.id_map` says which; a record that is
already present or a duplicate maps to the entry it matched. Records kept at
their ids are saved as they are, without dedupe.

Entries whose ``expires_at`` has already passed are skipped and counted: the store
would never return them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from ..errors import InvalidInputError
from ..sync import ContextForgeSync
from .fields import Record
from .present import MICROSECOND, Present, batches, located, stored_keys
from .progress import Progress

__all__ = ["IdMode", "Summary", "import_records"]

#: What happened to the ids records carry: kept, renumbered, or ``None`` when no
#: record carries one.
IdMode = Literal["kept", "renumbered"]


@dataclass(frozen=True)
class Summary:
    """What an import did (or, for a dry run, would do).

    Attributes:
        added: Records saved as new entries.
        present: Records the store already held (see :mod:`.present`).
        duplicates: Records not saved because they duplicate a stored entry;
            ``None`` for a dry run, which cannot tell.
        expired: Records whose expiry had passed.
        ids: ``"kept"`` or ``"renumbered"``; ``None`` when no record has an id.
        remapped: Records whose id changed; ``None`` when not known (a dry run
            that would renumber).
        id_map: ``(old, new)`` for every record with an id, by old id (empty for
            a dry run).
    """

    added: int
    present: int
    duplicates: int | None
    expired: int = 0
    ids: IdMode | None = None
    remapped: int | None = 0
    id_map: tuple[tuple[int, int], ...] = ()


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
    ordered = sorted(_assign_times(live), key=lambda r: (r.id is None, r.id or 0))
    keys = stored_keys(store.config, ordered, batch_size, progress)
    present = Present(store, ordered)
    claimed = present.claim_all(ordered, keys)
    pending = [r for r, entry in zip(ordered, claimed) if entry is None]
    held = len(ordered) - len(pending)
    mode = _id_mode(store, ordered, claimed, pending)
    mapping = {
        r.id: entry for r, entry in zip(ordered, claimed) if r.id is not None and entry is not None
    }
    if dry_run:
        return Summary(
            added=len(pending),
            present=held,
            duplicates=None,
            expired=expired,
            ids=mode,
            remapped=None if mode == "renumbered" else 0,
        )
    added = duplicates = 0
    bar = Progress("importing", len(pending), enabled=progress)
    try:
        for batch in batches(pending, batch_size):
            try:
                saved = store.save_many([_item(r, dedupe, keep=mode == "kept") for r in batch])
            except InvalidInputError as err:
                raise located(err, batch) from None
            for record, entry in zip(batch, saved):
                added += entry.created
                duplicates += not entry.created
                if record.id is not None:
                    mapping[record.id] = int(entry)
            bar.advance(len(batch))
    finally:
        bar.close()
    id_map = tuple(sorted(mapping.items()))
    return Summary(
        added=added,
        present=held,
        duplicates=duplicates,
        expired=expired,
        ids=mode,
        remapped=sum(old != new for old, new in id_map),
        id_map=id_map,
    )


def _item(record: Record, dedupe: bool, *, keep: bool) -> dict[str, Any]:
    if keep and record.id is not None:
        return {**record.item, "id": record.id}
    return {**record.item, "dedupe": dedupe}


def _id_mode(
    store: ContextForgeSync,
    records: Sequence[Record],
    claimed: Sequence[int | None],
    pending: Sequence[Record],
) -> IdMode | None:
    """``"kept"`` when the store holds only records of this file, each at its own id
    (or none), and no id still to save is in use; else ``"renumbered"``."""
    if all(r.id is None for r in records):
        return None
    in_use = {entry for entry in claimed if entry is not None}
    if store.count() != len(in_use):
        return "renumbered"
    if any(
        entry is not None and r.id is not None and entry != r.id
        for r, entry in zip(records, claimed)
    ):
        return "renumbered"
    if any(r.id in in_use for r in pending):
        return "renumbered"
    return "kept"


def _assign_times(records: Sequence[Record]) -> list[Record]:
    """Records without a time get this import's start plus their position in
    microseconds, so the file's order survives as time order."""
    start = datetime.now(timezone.utc)
    return [
        r
        if r.item["timestamp"] is not None
        else Record(r.line, {**r.item, "timestamp": start + i * MICROSECOND}, False, r.id)
        for i, r in enumerate(records)
    ]
