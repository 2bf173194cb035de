"""How a verdict reads recorded measurements: the small, strict accessors every rule in core shares (a count is
an int that is not a bool, a number is finite, a wanted value must match in type too).

Stdlib only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Rule = Callable[[dict[str, Any]], list[str]]


def get(record: Any, path: str) -> Any:
    """record["a"]["b"] for "a.b"; None where any part is missing or not an object."""
    for key in path.split("."):
        if not isinstance(record, dict):
            return None
        record = record.get(key)
    return record


def obj(record: Any, key: str) -> dict[str, Any]:
    """record[key] when it is an object, else an empty one."""
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


def number(value: Any) -> bool:
    """A finite number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def count(value: Any) -> bool:
    """A count: a non-negative int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def need(prefix: str, check: dict[str, Any], path: str, wanted: Any) -> list[str]:
    """A problem naming `prefix.path` unless its value is `wanted`, of the same type."""
    value = get(check, path)
    if value is wanted or (value == wanted and type(value) is type(wanted)):
        return []
    return [f"{prefix}.{path} is {value!r}, a pass needs {wanted!r}"]

