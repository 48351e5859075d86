"""mem0 compatibility: the constants, filter translation and record layout
``contextforge.compat.mem0`` builds on (its module docstring says what maps to what)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any, Final

from .._core import Hit

logger = logging.getLogger("contextforge.compat.mem0")

#: The entity ids mem0 scopes by, in the order of the scope's levels.
ENTITY_IDS: Final = ("user_id", "agent_id", "run_id")
_LEVEL: Final = {"user_id": "user", "agent_id": "agent", "run_id": "run"}
#: Payload keys mem0 shows beside ``memory`` instead of inside ``metadata``.
_PROMOTED: Final = (
    "user_id",
    "agent_id",
    "run_id",
    "actor_id",
    "role",
    "attributed_to",
    "expiration_date",
)
#: The metadata key holding a memory's mem0 id (the same on all its versions).
ID_KEY: Final = "mem0_id"
_CORE: Final = frozenset(
    {"data", "hash", "created_at", "updated_at", "id", "text_lemmatized", ID_KEY, *_PROMOTED}
)
_IDENTITY: Final = frozenset({*ENTITY_IDS, "actor_id"})
#: Keys the adapter writes itself: caller metadata cannot set them.
_RESERVED: Final = frozenset({"data", "hash", "created_at", "updated_at", ID_KEY})
_OPERATORS: Final = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"})
_NEGATED: Final = {"$eq": "$ne", "$ne": "$eq", "$in": "$nin", "$nin": "$in"}
#: Large enough that no memory is left out for the token budget.
_BUDGET: Final = 1_000_000_000
_UNSET: Final[Any] = object()


class UnsupportedFilterError(ValueError):
    """A mem0 filter that contextforge's filters cannot express."""


# ---------------------------------------------------------------- filters


def _entity_id(value: object, name: str) -> str:
    """mem0's validation: coerced to ``str``, trimmed, non-empty, no whitespace."""
    text = value if isinstance(value, str) else str(value)
    text = text.strip()
    if not text:
        raise ValueError(f"Invalid {name}: cannot be empty or whitespace-only.")
    if any(c.isspace() for c in text):
        raise ValueError(f"Invalid {name}: cannot contain whitespace.")
    return text


def _condition(key: object, value: Any) -> dict[str, Any]:
    """One ``key: condition`` of a mem0 filter as a contextforge clause."""
    if not isinstance(key, str) or not key:
        raise UnsupportedFilterError(f"filter keys must be non-empty strings, got {key!r}")
    if key.startswith("$"):
        raise UnsupportedFilterError(
            f"{key!r}: mem0 filters have no '$' keys; use AND, OR, NOT and "
            "operators without '$' ({'gte': 1})"
        )
    if isinstance(value, Mapping):
        if not value:
            raise UnsupportedFilterError(f"{key!r}: an empty condition")
        ops: dict[str, Any] = {}
        for op, operand in value.items():
            if op in _OPERATORS:
                ops["$" + op] = operand
            elif op in ("contains", "icontains"):
                raise UnsupportedFilterError(
                    f"{key!r}: {op!r} (substring match) is not supported: contextforge "
                    "filters compare whole values; use eq or in"
                )
            else:
                raise UnsupportedFilterError(f"{key!r}: unsupported filter operator {op!r}")
        return {key: ops}
    if isinstance(value, (list, tuple, set)):
        raise UnsupportedFilterError(f"{key!r}: a list is not a value; use {{'in': [...]}}")
    if isinstance(value, str) and value == "*":
        return {key: {"$exists": True}}
    if key in ENTITY_IDS:
        return {key: _entity_id(value, key)}
    return {key: value}


def _merge(clauses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The conjunction of clauses, keeping top-level keys plain where they do
    not repeat (top-level equalities filter inside the search index)."""
    merged: dict[str, Any] = {}
    rest: list[Any] = []
    for clause in clauses:
        for key, value in clause.items():
            if key == "$and":
                rest.extend(value)
            elif key in merged:
                rest.append({key: value})
            else:
                merged[key] = value
    if rest:
        merged["$and"] = rest
    return merged


def _conditions(value: object, op: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not value:
        raise UnsupportedFilterError(f"{op} takes a non-empty list of conditions")
    for item in value:
        if not isinstance(item, Mapping) or not item:
            raise UnsupportedFilterError(f"{op} takes non-empty filter objects, got {item!r}")
    return value


def _translate(filters: Mapping[str, Any]) -> dict[str, Any]:
    clauses: list[Mapping[str, Any]] = []
    for key, value in filters.items():
        if key == "AND":
            clauses.extend(_translate(c) for c in _conditions(value, "AND"))
        elif key == "OR":
            clauses.append({"$or": [_translate(c) for c in _conditions(value, "OR")]})
        elif key == "NOT":
            clauses.extend(_negate(c) for c in _conditions(value, "NOT"))
        else:
            clauses.append(_condition(key, value))
    return _merge(clauses)


def _either(alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    return alternatives[0] if len(alternatives) == 1 else {"$or": alternatives}


def _negate(filters: Mapping[str, Any]) -> dict[str, Any]:
    """NOT of a filter (the AND of its conditions): the OR of their negations."""
    alternatives: list[dict[str, Any]] = []
    for key, value in filters.items():
        if key == "AND":
            alternatives.extend(_negate(c) for c in _conditions(value, "AND"))
        elif key == "OR":
            alternatives.append(_merge([_negate(c) for c in _conditions(value, "OR")]))
        elif key == "NOT":
            alternatives.extend(_translate(c) for c in _conditions(value, "NOT"))
        else:
            [(name, cond)] = _condition(key, value).items()
            ops = cond if isinstance(cond, dict) else {"$eq": cond}
            for op, operand in ops.items():
                if op == "$exists":
                    alternatives.append({name: {"$exists": not operand}})
                elif op in _NEGATED:
                    alternatives.append({name: {_NEGATED[op]: operand}})
                else:
                    raise UnsupportedFilterError(
                        f"NOT of {key!r} {op[1:]!r} is not supported (a missing key or a "
                        "value of another type would match it); state the opposite range"
                    )
    return _either(alternatives)


def translate_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """A mem0 ``filters=`` dict as a contextforge ``metadata=`` filter.

    ``{"k": v}`` stays an equality, ``{"k": {"gte": 1}}`` becomes
    ``{"k": {"$gte": 1}}`` (likewise ``eq ne gt lt lte in nin``), ``"*"``
    becomes ``{"$exists": True}``, ``AND``/``OR`` become ``$and``/``$or``, and
    ``NOT`` is pushed down to the conditions (``eq``/``ne``, ``in``/``nin`` and
    ``"*"`` swap). Raises :class:`UnsupportedFilterError` (a ``ValueError``)
    for ``contains``/``icontains``, ``NOT`` of a range, ``$`` keys, unknown
    operators and lists given as values."""
    if not isinstance(filters, Mapping):
        raise UnsupportedFilterError(f"filters must be a dict, got {type(filters).__name__}")
    return _translate(filters)


# ---------------------------------------------------------------- layout


def _label(value: str) -> str:
    return value.replace("%", "%25").replace("/", "%2F")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _hash(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _expiration(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError as err:
            raise ValueError("expiration_date must be a valid date in YYYY-MM-DD format.") from err
    raise ValueError("expiration_date must be a date string in YYYY-MM-DD format.")


def _unexpired() -> dict[str, Any]:
    today = datetime.now(timezone.utc).date().isoformat()
    return {
        "$or": [
            {"expiration_date": {"$exists": False}},
            {"expiration_date": {"$gte": today}},
        ]
    }


def _caller_metadata(metadata: Mapping[str, Any] | None, context: str) -> dict[str, Any]:
    """Caller metadata without the keys that only entity ids and the adapter set."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    clean: dict[str, Any] = {}
    for key, value in metadata.items():
        if key in _IDENTITY or key in _RESERVED:
            logger.warning("%s: ignoring metadata[%r]: the adapter sets it", context, key)
        else:
            clean[key] = value
    return clean


def _item(hit: Hit, *, score: bool) -> dict[str, Any]:
    """A stored entry in mem0's result shape."""
    meta = hit.metadata
    item: dict[str, Any] = {
        "id": meta.get(ID_KEY, str(hit.id)),
        "memory": hit.content,
        # Of the content as stored (scrubbed): a hash of what was given could
        # fingerprint a secret the scrubber took out.
        "hash": _hash(hit.content),
        "metadata": None,
    }
    if score:
        item["score"] = hit.score
    item["created_at"] = meta.get("created_at", hit.timestamp.isoformat())
    item["updated_at"] = meta.get("updated_at", item["created_at"])
    for key in _PROMOTED:
        if key in meta:
            item[key] = meta[key]
    extra = {k: v for k, v in meta.items() if k not in _CORE}
    if extra:
        item["metadata"] = extra
    return item


def _messages(messages: Any) -> list[Mapping[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        return [messages]
    if isinstance(messages, (list, tuple)):
        return list(messages)
    raise TypeError(f"messages must be str, dict, or list[dict], got {type(messages).__name__}")


def _reject_entity_kwargs(kwargs: Mapping[str, Any], method: str) -> None:
    entities = set(ENTITY_IDS) & set(kwargs)
    if entities:
        raise ValueError(
            f"Top-level entity parameters {sorted(entities)} are not supported in "
            f"{method}(). Use filters={{'user_id': '...'}} instead."
        )
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword arguments {sorted(kwargs)}")


def _top_k(top_k: object) -> int:
    if not isinstance(top_k, int) or isinstance(top_k, bool):
        raise ValueError("top_k must be a valid integer")  # noqa: TRY004 (as mem0)
    if top_k < 0:
        raise ValueError(f"Invalid top_k: {top_k}. Must be a non-negative integer.")
    return top_k
