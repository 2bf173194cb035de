"""How a rule reads recorded values: the small, strict accessors and value checks every rule shares, each written
once (an integer is a JSON integer, never a bool; a count is such an integer that is not negative; a number is
finite; a wanted value must match in type too).

Stdlib only."""

from __future__ import annotations

import math
from typing import Any


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


def is_int(value: Any, *codes: int) -> bool:
    """An integer as a program writes one into JSON (an exit code, a count): never a boolean (json reads `true` as
    True, and True == 1, False == 0, so a flag written where a number belongs would compare equal), and one of
    `codes` where any are given."""
    return type(value) is int and (not codes or value in codes)


def count(value: Any) -> bool:
    """A count: an int, not a bool, not negative."""
    return is_int(value) and value >= 0


is_count = count


def int_or_none(value: Any) -> int | None:
    """The value when it is an integer (never a bool), else None."""
    return value if is_int(value) else None


def count_or_none(value: Any) -> int | None:
    """The value when it is a count, else None."""
    return value if count(value) else None


def count_or_zero(value: Any) -> int:
    """The value when it is a count, else 0 (a sum over records that may lack one)."""
    return value if count(value) else 0


def positive(value: Any) -> bool:
    """An integer above 0 (a bool is not one)."""
    return is_int(value) and value > 0


def whole_in(value: Any, low: int, high: int | None = None) -> bool:
    """An integer from `low` to `high` (no bound above when None)."""
    return is_int(value) and value >= low and (high is None or value <= high)


def need(prefix: str, check: dict[str, Any], path: str, wanted: Any) -> list[str]:
    """A problem naming `prefix.path` unless its value is `wanted`, of the same type."""
    value = get(check, path)
    if value is wanted or (value == wanted and type(value) is type(wanted)):
        return []
    return [f"{prefix}.{path} is {value!r}, a pass needs {wanted!r}"]

