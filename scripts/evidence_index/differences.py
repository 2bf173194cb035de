"""The judge's one field-by-field comparison of what an index (or a result) records with what its bytes give:
every difference named by its path, the recorded value and the recomputed one."""

from __future__ import annotations

from typing import Any


def differences(recorded: Any, recomputed: Any, path: str = "predicate") -> list[str]:
    """Every field where the recorded predicate says something other than its bytes, by path."""
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        found = []
        for key in sorted(set(recorded) | set(recomputed), key=str):
            where = f"{path}.{key}"
            if key not in recomputed:
                found.append(f"{where}: recorded {_short(recorded[key])}, not derived from the bytes")
            elif key not in recorded:
                found.append(f"{where}: missing, the bytes say {_short(recomputed[key])}")
            else:
                found += differences(recorded[key], recomputed[key], where)
        return found
    if isinstance(recorded, list) and isinstance(recomputed, list):
        if len(recorded) != len(recomputed):
            found = [f"{path}: recorded {len(recorded)} item(s), the bytes give {len(recomputed)}"]
            found += [f"{path}: the bytes add {_short(item, 300)}" for item in recomputed if item not in recorded][:5]
            found += [f"{path}: recorded {_short(item, 300)}, the bytes do not give it"
                      for item in recorded if item not in recomputed][:5]
            return found
        found = []
        for index, (left, right) in enumerate(zip(recorded, recomputed)):
            found += differences(left, right, f"{path}[{_label(right, index)}]")
        return found
    if recorded != recomputed or type(recorded) is not type(recomputed):
        return [f"{path}: recorded {_short(recorded)}, the bytes say {_short(recomputed)}"]
    return []


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in ("subject", "platform", "name"):
            if isinstance(item.get(key), str):
                return f"{index}:{item[key]}"
    return str(index)


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
