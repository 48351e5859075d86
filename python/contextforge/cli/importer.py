"""Importing parsed records: validated in full first, then saved in batches.

**Already present.** A record the store already holds (see :mod:`.present`) is
skipped, so an import can be run again, or resumed after an interruption.

**Duplicates.** The others are saved with ``save``'s dedupe rule (unless
``dedupe`` is false): a record equal to a live entry in content (after Unicode
and whitespace normalisation), scope, session, kind, metadata, expiry and end, at
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

**Keys, intervals and corrections.** An entry's ``key``, ``valid_from`` and
``valid_to`` are saved as the file gives them. The versions of a key link
themselves: saved in the order of their ids, each lands in its key's timeline
by its ``valid_from`` (docs/keyed-facts.md), which rebuilds every
``superseded_by`` the export had, a version that arrived out of order included
(its ``superseded_by`` names a lower id). An entry without a key that another
one superseded (its ``superseded_by``) is linked by saving that other one with
``supersedes``: the entry it corrects always has the lower id (a correction is
saved after it, so the store gave it a higher id), so it is saved first. A link
whose other end is not in the file (left out of the export, or expired) cannot
be restored; both entries keep their intervals. A file naming a link that no
store could have made (a correction with a key, in another scope, with a lower
id, or starting before the entry it corrects) is refused.

**Sources.** An entry's ``sources`` (as ``export`` writes them) are saved with
it: references as they are, source entries of the file as the ids they were
saved at (an entry is never in a batch with its source entries when ids are
renumbered). A source entry not in the file (left out of the export, or
deleted before it) is kept with kept ids when the store holds an entry at
that id; otherwise the link is dropped and counted in
:attr:`Summary.sources_dropped`. Records already present keep the sources they
have.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal

from ..errors import InvalidInputError
from ..sync import ContextForgeSync
from .fields import Record, RecordError, Source
from .present import MICROSECOND, Present, located, stored_keys
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
        sources_dropped: Source links to entries that could not be restored
            (the source is neither in the file nor, with kept ids, in the store).
    """

    added: int
    present: int
    duplicates: int | None
    expired: int = 0
    ids: IdMode | None = None
    remapped: int | None = 0
    id_map: tuple[tuple[int, int], ...] = ()
    sources_dropped: int = 0


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
    links = _links(ordered)
    keys = stored_keys(store.config, ordered, batch_size, progress)
    present = Present(store, ordered)
    claimed = present.claim_all(ordered, keys)
    pending = [r for r, entry in zip(ordered, claimed) if entry is None]
    held = len(ordered) - len(pending)
    mode = _id_mode(store, ordered, claimed, pending)
    mapping = {
        r.id: entry for r, entry in zip(ordered, claimed) if r.id is not None and entry is not None
    }
    keep = mode == "kept"
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
    cited = _Cited(store, ordered, keep)
    bar = Progress("importing", len(pending), enabled=progress)
    try:
        for batch in _linked_batches(pending, batch_size, links, split=not keep):
            here = {r.id for r in batch if r.id is not None}
            items = []
            before: set[int] = set()
            for r in batch:
                item = _item(
                    r, dedupe, keep=keep, supersedes=_corrected(store, r, links, mapping, here)
                )
                if r.sources:
                    item.update(cited.resolve(r, mapping, before))
                items.append(item)
                if r.id is not None:
                    before.add(r.id)
            try:
                saved = store.save_many(items)
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
        sources_dropped=cited.dropped,
    )


class _Cited:
    """Restores records' sources. A source entry of the file is the entry it was
    saved as (or, with kept ids, the one saved just before in the same
    transaction); one not in the file is kept, with kept ids, when the store
    holds an entry at that id, and dropped (and counted) otherwise. A source
    entry of another scope is allowed (``cross_scope_sources``): the export
    had the link."""

    def __init__(self, store: ContextForgeSync, records: Sequence[Record], keep: bool) -> None:
        self._store = store
        self._scopes = {r.id: r.item["scope"] for r in records if r.id is not None}
        self._keep = keep
        self.dropped = 0

    def resolve(
        self, record: Record, mapping: Mapping[int, int], before: set[int]
    ) -> dict[str, Any]:
        scope = record.item["scope"]
        found: list[int | str | tuple[int | str, int, int]] = []
        cross = False
        for source in record.sources:
            what = self._entry(source, mapping, before) if source.entry is not None else source.ref
            if what is None:
                self.dropped += 1
                continue
            if isinstance(what, int):
                cross = cross or self._scope_of(source, what) != scope
            found.append(what if source.span is None else (what, *source.span))
        return {"sources": found, **({"cross_scope_sources": True} if cross else {})}

    def _entry(self, source: Source, mapping: Mapping[int, int], before: set[int]) -> int | None:
        old = source.entry
        assert old is not None
        if old in mapping:
            return mapping[old]
        if self._keep and old in before:
            return old
        if self._keep and old not in self._scopes:
            hit = self._store.get(old, include_superseded=True)
            return old if hit is not None else None
        return None

    def _scope_of(self, source: Source, entry: int) -> str | None:
        if source.entry in self._scopes:
            scope: str | None = self._scopes[source.entry]
            return scope
        hit = self._store.get(entry, include_superseded=True)
        return hit.scope if hit is not None else None


def _item(
    record: Record, dedupe: bool, *, keep: bool, supersedes: int | None = None
) -> dict[str, Any]:
    if keep and record.id is not None:
        item = {**record.item, "id": record.id}
    else:
        item = {**record.item, "dedupe": dedupe}
    if supersedes is not None:
        item["supersedes"] = supersedes
    return item


def _starts(record: Record) -> datetime:
    found: datetime = record.item.get("valid_from") or record.item["timestamp"]
    return found


def _links(records: Sequence[Record]) -> dict[int, Record]:
    """For each correction without a key in the file (by id), the record of the
    entry it corrects: the one whose ``superseded_by`` names it.

    Raises:
        RecordError: for a link no store could have made.
    """
    by_id = {r.id: r for r in records if r.id is not None}
    links: dict[int, Record] = {}
    for old in records:
        new_id = old.superseded_by
        if old.id is None or new_id is None or "key" in old.item:
            continue  # the versions of a key link themselves
        new = by_id.get(new_id)
        if new is None:
            continue  # not in the file: the link cannot be restored
        problem = None
        if "key" in new.item:
            problem = f"entry {new_id} has a key, and a correction of an entry without one cannot"
        elif new.item["scope"] != old.item["scope"]:
            problem = f"entry {new_id} is in another scope"
        elif new_id <= old.id:
            problem = (
                f"entry {new_id} has a lower id, and a correction is saved after what it corrects"
            )
        elif _starts(new) < _starts(old):
            problem = f"entry {new_id} starts to hold before this one (valid_from)"
        elif new_id in links:
            problem = f"entry {new_id} already corrects entry {links[new_id].id}"
        if problem is not None:
            raise RecordError(old.line, f"'superseded_by' {new_id}: {problem}")
        links[new_id] = old
    return links


def _corrected(
    store: ContextForgeSync,
    record: Record,
    links: Mapping[int, Record],
    mapping: Mapping[int, int],
    here: set[int],
) -> int | None:
    """The stored id of the entry ``record`` corrects, or ``None`` when it
    corrects none, or when that entry cannot take the link (it is not in the
    store, or already corrected there by another entry)."""
    old = links.get(record.id) if record.id is not None else None
    if old is None or old.id is None:
        return None
    if old.id in here:
        return old.id  # saved at its own id just before, in the same transaction
    entry = mapping.get(old.id)
    if entry is None:
        return None
    hit = store.get(entry, include_superseded=True)
    if (
        hit is None
        or hit.key is not None
        or hit.superseded_by is not None
        or hit.scope != record.item["scope"]
        or hit.valid_from > _starts(record)
    ):
        return None
    return entry


def _linked_batches(
    records: Sequence[Record], size: int, links: Mapping[int, Record], *, split: bool
) -> Iterator[Sequence[Record]]:
    """Batches of at most ``size``; with ``split``, a correction never shares a
    batch with the entry it corrects, nor an entry with its source entries,
    whose new ids are known only once saved."""
    batch: list[Record] = []
    inside: set[int] = set()
    for r in records:
        old = links.get(r.id) if r.id is not None else None
        needs = {s.entry for s in r.sources if s.entry is not None}
        if old is not None and old.id is not None:
            needs.add(old.id)
        if batch and (len(batch) >= size or (split and not needs.isdisjoint(inside))):
            yield batch
            batch, inside = [], set()
        batch.append(r)
        if r.id is not None:
            inside.add(r.id)
    if batch:
        yield batch


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
    if store.count(include_superseded=True) != len(in_use):
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
        else replace(r, item={**r.item, "timestamp": start + i * MICROSECOND}, timed=False)
        for i, r in enumerate(records)
    ]
