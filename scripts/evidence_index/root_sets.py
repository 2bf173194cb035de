"""The source lists and result format version of the checkout an index compares with (rules.source_sets), read
once by the builder (recorded as `source_root.sets`) and again by `verify --source-root`, and applied to every
bound result that names sources: a result naming another list, or another version, than that checkout's is not
authentic, whichever list or version it declares for itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rules.source_sets import SourceRootError, read_root_facts

from .common import InputError, index_rule
from .results import parse_json


def root_facts(root: Path) -> dict[str, Any]:
    """read_root_facts, a root it cannot read being the user's mistake (exit 2)."""
    try:
        return read_root_facts(root)
    except SourceRootError as error:
        raise InputError(f"--source-root {root}: {error}") from None


def usable(sets: Any) -> dict[str, Any] | None:
    """The recorded facts when well-formed (a malformed record is a verdict reason: index_verdict.py)."""
    return sets if sets is not None and not index_rule("source_root.recorded")(sets) else None


def bind_to_root(records: list[dict[str, Any]], json: dict[str, Any], sets: Any) -> None:
    """Each record whose document names other sources or another version than the root: not authentic."""
    facts = usable(sets)
    if facts is None:
        return
    for record in records:
        held = json.get(record.get("subject"))
        problems = index_rule("source_root")(str(record.get("kind")), parse_json(held[0]) if held else None, facts)
        if problems:
            record["not_authentic"] = list(record.get("not_authentic") or []) + problems
            record["ok"] = False
            record["reasons"] = list(record.get("reasons") or []) + [f"not authentic: {p}" for p in problems]
