"""Measurement noise: the fields of a result whose values differ between two honest runs of one commit, in one
environment, on one machine, and what makes them differ. `diff` (scripts/evidence_index/diff.py) counts a change
of such a field as noise ("varied within noise", each listed with --verbose and in its JSON), never as a
difference; every field not declared is compared.

Each field is declared ONCE, as data, beside the rule that reads it (or, where no rule reads it, in the module of
the part of the result it belongs to): that module's `MEASUREMENT_NOISE`, rows of (path, class, why) or (path,
class, why, values). This module reads those rows (the gate never loads it, so it is not among GATE_SOURCES, and
the rule modules import nothing for them) and maps each result kind to its declarations. Declaring a field: add
a row beside its rule, and a row to the classification table in tests/evidence_index/test_measurement_noise.py.
A fact about what ran (a version, a hash, a file system, a start-up file, a count that must be zero, a check's
`ok`) is never noise: leave it undeclared and it is compared.

Stdlib only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from core import (
    device_verdicts,
    kill_record,
    outcomes,
    record_rules,
    result_verdicts,
    sharing_verdicts,
    time_views,
    training_stack,
    trust,
    writer_verdicts,
)

SEED = "seed"
TIMING = "timing"
SCHEDULE = "schedule"
# Each class, in the words a summary prints: why two honest runs differ there.
CLASSES = {
    SEED: "drawn at random in every run",
    TIMING: "a clock reading, which moves with the machine's load",
    SCHEDULE: "what the OS scheduler decided (which process ran when)",
}
ANY = "*"  # in a declared path, one segment: a check's or a role's name, a list item's index


@dataclass(frozen=True)
class Noise:
    """One declared field: its dotted path as `diff` names it (a list of objects with a unique `name` is keyed
    by it: `checks.jsonl_append.roles.w0.ran_s`; other lists by index), its class, and why it varies. `values`,
    when given, bounds it: a change is noise only while both values are among them (a kill that found the old
    or the new version is the scheduler's; one that found a torn file is not)."""

    path: str
    kind: str
    why: str
    values: tuple[Any, ...] | None = None
    owner: str = ""  # the module that declares it


def matches(pattern: str, path: str) -> bool:
    """Whether a dotted `path` is the declared `pattern` (ANY standing for any one segment)."""
    wanted, found = pattern.split("."), path.split(".")
    return len(wanted) == len(found) and all(w in (ANY, f) for w, f in zip(wanted, found))


def noise_of(declared: Iterable[Noise], path: str, old: Any, new: Any) -> Noise | None:
    """The declaration that makes this change noise, or None (then it is compared). A field one run lacks (None)
    is never noise: a result that stopped or started recording it is another gate."""
    if old is None or new is None:
        return None
    for noise in declared:
        if matches(noise.path, path):
            if noise.values is not None and not (_among(old, noise.values) and _among(new, noise.values)):
                return None
            return noise
    return None


def _among(value: Any, values: tuple[Any, ...]) -> bool:
    return any(type(value) is type(v) and value == v for v in values)


def declaration_problems(declared: Iterable[Noise]) -> list[str]:
    """Why a table of declarations is not one decision per field: a path declared twice (or by two patterns that
    name one field), a class that is not one of CLASSES, a declaration without its reason."""
    problems, seen = [], []
    for noise in declared:
        if noise.kind not in CLASSES:
            problems.append(f"{noise.path}: class {noise.kind!r} is not one of {', '.join(CLASSES)}")
        if not noise.why.strip():
            problems.append(f"{noise.path}: no reason given")
        for other in seen:
            if _overlap(noise.path, other.path):
                problems.append(f"{noise.path} and {other.path} name one field: declare it once")
        seen.append(noise)
    return problems


def _overlap(left: str, right: str) -> bool:
    a, b = left.split("."), right.split(".")
    return len(a) == len(b) and all(x == y or ANY in (x, y) for x, y in zip(a, b))


def declared_by(modules: Iterable[ModuleType]) -> tuple[Noise, ...]:
    """Every row of each module's MEASUREMENT_NOISE, as a Noise naming its module."""
    return tuple(Noise(*row, owner=module.__name__) for module in modules
                 for row in getattr(module, "MEASUREMENT_NOISE", ()))


# The modules whose rules read a gate result, each declaring the noise of its fields.
GATE_MODULES = (device_verdicts, trust, writer_verdicts, kill_record, sharing_verdicts, outcomes, record_rules,
                time_views, result_verdicts, training_stack)
# Result kind (core.contract.kind_of) -> its declared noise. A kind without an entry has none: every field of it
# is compared (durations with diff's tolerance).
BY_KIND: dict[str, tuple[Noise, ...]] = {"gate": declared_by(GATE_MODULES)}
