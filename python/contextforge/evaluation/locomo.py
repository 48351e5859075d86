"""LoCoMo conversations as an evaluation spec (the project's dev-set protocol).

Every dialogue turn becomes one entry, in conversation order: content
``"Speaker: text"`` plus ``" [shares <caption>]"`` when the turn shared an image,
scope ``locomo:<file stem>``, session ``locomo:<stem>:s<N>``, timestamp the
session's date and time (read as UTC), entry id ``<stem>:<dia_id>`` with the
``dia_id`` and speaker in metadata. Every question of categories 1-4 with
evidence becomes a query in its conversation's scope whose relevant entries are
its evidence turns. Evidence like ``"D8:6; D9:17"`` or ``"D:11:26"`` is repaired;
ids naming no turn are dropped, and the spec's notes say which.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .spec import Entry, Query, Spec, SpecError

__all__ = ["CATEGORIES", "ENV_VAR", "find_locomo_dir", "load_locomo", "parse_locomo_datetime"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ENV_VAR = "CONTEXTFORGE_LOCOMO_DIR"

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_DATETIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTHS = {
    **{m: i for i, m in enumerate(_MONTH_NAMES, 1)},
    **{m[:3]: i for i, m in enumerate(_MONTH_NAMES, 1)},
    "sept": 9,
}


def find_locomo_dir() -> Path | None:
    """The LoCoMo dev directory: ``$CONTEXTFORGE_LOCOMO_DIR`` when set, else
    ``../shared/data/locomo-dev`` beside the repository (or the working directory);
    ``None`` when it is not there."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env) if Path(env).is_dir() else None
    repo = Path(__file__).resolve().parents[3]
    for base in (repo, Path.cwd()):
        candidate = base.parent / "shared" / "data" / "locomo-dev"
        if candidate.is_dir():
            return candidate
    return None


def parse_locomo_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    match = _DATETIME.fullmatch(text)
    month = _MONTHS.get(match[5].lower()) if match else None
    if match is None or month is None or not 1 <= int(match[1]) <= 12:
        raise SpecError(f"unreadable LoCoMo date {text!r}")
    hour = int(match[1]) % 12 + (12 if match[3].lower() == "p" else 0)
    try:
        return datetime(
            int(match[6]), month, int(match[4]), hour, int(match[2]), tzinfo=timezone.utc
        )
    except ValueError as err:
        raise SpecError(f"unreadable LoCoMo date {text!r} ({err})") from None


@dataclass
class _Tally:
    evidence: int = 0
    repaired: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    questions_dropped: list[str] = field(default_factory=list)


def load_locomo(directory: str | os.PathLike[str]) -> Spec:
    """Every ``*.json`` conversation in ``directory`` as one :class:`Spec`.

    Raises:
        SpecError: when the directory holds no conversation or one is malformed.
    """
    files = sorted(Path(directory).glob("*.json"))
    if not files:
        raise SpecError(f"no LoCoMo conversations (*.json) in {os.fspath(directory)}")
    entries: list[Entry] = []
    queries: list[Query] = []
    tally = _Tally()
    for path in files:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        turns = _turns(path.stem, data)
        entries.extend(turns)
        known = {e.metadata["dia_id"] for e in turns}
        queries.extend(_queries(path.stem, data.get("qa", []), known, tally))
    notes = (
        f"{len(files)} conversations, {len(entries)} turns, {len(queries)} questions",
        (
            f"evidence ids: {tally.evidence}, repaired {len(tally.repaired)}, "
            f"dropped {len(tally.dropped)}; questions dropped: {len(tally.questions_dropped)}"
        ),
        *(f"repaired {x}" for x in tally.repaired),
        *(f"dropped {x}" for x in tally.dropped),
        *(f"dropped question {x}" for x in tally.questions_dropped),
    )
    return Spec(f"locomo:{Path(directory).name}", tuple(entries), tuple(queries), notes)


def _turns(stem: str, data: dict[str, Any]) -> list[Entry]:
    conv = data.get("conversation", data)
    sessions = sorted(
        (int(m[1]), key)
        for key in conv
        if (m := _SESSION.fullmatch(key)) and isinstance(conv[key], list)
    )
    out: list[Entry] = []
    for n, key in sessions:
        when = conv.get(f"{key}_date_time")
        if not isinstance(when, str):
            raise SpecError(f"{stem}: {key} has no date_time")
        stamp = parse_locomo_datetime(when)
        for turn in conv[key]:
            content = f"{turn['speaker']}: {turn.get('text', '')}"
            if turn.get("blip_caption"):
                content += f" [shares {turn['blip_caption']}]"
            out.append(
                Entry(
                    id=f"{stem}:{turn['dia_id']}",
                    content=content,
                    scope=f"locomo:{stem}",
                    session_id=f"locomo:{stem}:s{n}",
                    timestamp=stamp,
                    kind="message",
                    metadata={"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
                )
            )
    return out


def _queries(stem: str, qa: list[dict[str, Any]], known: set[str], tally: _Tally) -> list[Query]:
    out = []
    for i, item in enumerate(qa):
        code = item.get("category")
        category = CATEGORIES.get(code) if isinstance(code, int) else None
        evidence = item.get("evidence") or []
        if category is None or not evidence:
            continue
        qid = f"{stem}:q{i}"
        relevant: list[str] = []
        for raw in evidence:
            tally.evidence += 1
            pieces = [p for p in re.split(r"[;,\s]+", str(raw)) if p]
            fixed = [f"D{m[1]}:{m[2]}" for p in pieces if (m := _EVIDENCE.fullmatch(p))]
            good = [d for d in fixed if d in known]
            if good != [raw]:
                if good:
                    tally.repaired.append(f"{qid}: {raw!r} -> {good}")
                if len(good) < max(len(pieces), 1):
                    tally.dropped.append(f"{qid}: {raw!r} (no such turn)")
            relevant.extend(f"{stem}:{d}" for d in good if f"{stem}:{d}" not in relevant)
        if not relevant:
            tally.questions_dropped.append(f"{qid}: no evidence left")
            continue
        out.append(
            Query(
                id=qid,
                text=str(item["question"]),
                scope=f"locomo:{stem}",
                relevant=tuple(relevant),
                category=category,
            )
        )
    return out
