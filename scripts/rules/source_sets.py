"""Which sources a result must name, and which format version it must carry, as facts of a source root (a
checkout), never of the result: the gate's sources (what its processes import, rules.gate_sources) and the
version its `result_format.py` writes, the reprise's `CODE_FILES` and `VERIFY_FILES`. Read from the root's own
files with `ast` (import statements, literals), never by importing them: a checkout under judgement is data, and
its code does not run in the judge.

A result bound to a root names exactly that root's list (a missing or an extra path is named) and declares
exactly that root's version (a gate result without `schema_version` declares version 1, the only gate that
wrote none). Otherwise it is not authentic: a result cut down to an older gate's list, or relabelled to an
older version, claims to be what the sources it is compared with did not make.

Stdlib only. The judge's, not the gate's: the gate never loads it, so it is not among the gate's sources.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import imports
from common.imports import NotReadable

from rules.gate_sources import REGISTRY, gate_sources
from rules.result_format import EARLIER_PATHS, FIELDS_SINCE, SCHEMA_VERSION, V2_SOURCES, set_problems

# Where a checkout from before the list was derived keeps it, by hand, as a literal.
GATE_LIST = ("scripts/platform_runtime/sources.py", "GATE_SOURCES")
GATE_VERSION = ("scripts/rules/result_format.py", "SCHEMA_VERSION")
REPRISE_CODE = ("scripts/reprise/reprise_common.py", "CODE_FILES")
REPRISE_VERIFY = ("scripts/reprise/verify_resume.py", "VERIFY_FILES")
REPRISE_DATA = "data.csv"  # the verification also fingerprints the data it trained on
# The lists of earlier versions a root of today judges a result of that version against: version 2's (its fields
# are today's, so such a result is no older claim; version 1's results lack fields, and are judged against a
# checkout of the gate that made them).
EARLIER_LISTS = {2: (V2_SOURCES, "the version-2 gate hashed (V2_SOURCES)")}
assert all(FIELDS_SINCE <= v < SCHEMA_VERSION for v in EARLIER_LISTS)
# What is recorded of a root (an index's `source_root.sets`) and read back from it.
FIELDS = ("gate_sources", "gate_result_version", "reprise_code", "reprise_verify")


class SourceRootError(ValueError):
    """The root's lists cannot be read as literals: the root is not a checkout this judge can compare with."""


def literal_of(root: Path, where: tuple[str, str]) -> Any:
    """The value of the top-level `NAME = <literal>` (or `NAME: T = <literal>`) of a file under root, read by
    common.imports.literal_of (with `ast`: the root's code never runs here)."""
    relative, name = where
    path = root / relative
    try:
        return imports.literal_of(path, name)
    except NotReadable as error:
        rest = str(error).removeprefix(path.name)  # "<name>: ..." or "<name> cannot be read: ..."
        said = f"{relative} at the source root{rest}" if rest.startswith(":") else \
            f"{relative} at the source root {rest.strip()}"
        if "not a literal" in rest:
            said += ": the list cannot be read without running the root's code"
        raise SourceRootError(said) from None


def _names(root: Path, where: tuple[str, str]) -> list[str]:
    value = literal_of(root, where)
    if not isinstance(value, (tuple, list)) or not value or not all(isinstance(v, str) for v in value):
        raise SourceRootError(f"{where[0]}: {where[1]} is {str(value)[:80]}, not a list of paths")
    return sorted(set(value))


def gate_list(root: Path) -> list[str]:
    """The gate's sources at root: what its processes import, derived from the root's files by the function the
    gate derives its own list with (rules.gate_sources), where the root has the registry; a checkout from before
    (its sources.py keeping the list by hand) is read as that literal."""
    if not (root / REGISTRY[0]).is_file():
        return _names(root, GATE_LIST)
    try:
        return gate_sources(root)
    except NotReadable as error:
        raise SourceRootError(f"the gate's sources at the source root cannot be derived: {error}") from None


def read_root_facts(root: Path) -> dict[str, Any]:
    """The facts of FIELDS at root. A gate whose list does not hash result_format.py predates format versions
    and wrote none: version 1. A root without the reprise has no reprise lists (None)."""
    gate = gate_list(root)
    # A checkout from before the rules moved keeps the file where its gate hashed it.
    written = next((p for p in (GATE_VERSION[0], EARLIER_PATHS[GATE_VERSION[0]]) if p in gate), None)
    version = literal_of(root, (written, GATE_VERSION[1])) if written else 1
    if type(version) is not int or version < 1:
        raise SourceRootError(f"{written}: {GATE_VERSION[1]} is {version!r}, not a version number")
    reprise = (root / REPRISE_CODE[0]).is_file()
    return {"gate_sources": gate, "gate_result_version": version,
            "reprise_code": _names(root, REPRISE_CODE) if reprise else None,
            "reprise_verify": _names(root, REPRISE_VERIFY) if reprise else None}


def recorded_problems(sets: Any) -> list[str]:
    """What is wrong with root facts as an index records them (`source_root.sets`)."""
    if not isinstance(sets, dict) or sorted(sets) != sorted(FIELDS):
        return [f"source_root.sets is {str(sets)[:120]}: not the facts {', '.join(FIELDS)} of a source root"]
    lists = [sets[k] for k in FIELDS if k != "gate_result_version"]
    if not isinstance(sets["gate_sources"], list) or type(sets["gate_result_version"]) is not int or not all(
            v is None or (isinstance(v, list) and all(isinstance(p, str) for p in v)) for v in lists):
        return ["source_root.sets: its lists are not lists of paths, or its version is not a number"]
    return []


def declared_version(result: dict[str, Any]) -> Any:
    """The version a gate result declares: its `schema_version`, or 1 where it records none."""
    return result.get("schema_version", 1)


def root_problems(kind: str, document: Any, sets: dict[str, Any]) -> list[str]:
    """A result of `kind` against the facts of the root it is compared with (read_root_facts' dict)."""
    if not isinstance(document, dict):
        return []
    source = document.get("source") if isinstance(document.get("source"), dict) else {}
    files = source.get("files")
    if kind == "gate":
        declared, version = declared_version(document), sets["gate_result_version"]
        if type(declared) is int and declared in EARLIER_LISTS and version > declared:
            # A result of an earlier version whose fields a later gate still writes (rules.result_format): judged
            # against its own version's list, which a root that derives its list keeps (committed evidence).
            listed, whose = EARLIER_LISTS[declared]
            return set_problems("source.files", files, sorted(listed), whose)
        problems = set_problems("source.files", files, sets["gate_sources"],
                                "the gate at the source root hashes (GATE_SOURCES)")
        if declared != version or type(declared) is not int:
            shown = f"{declared!r}" if "schema_version" in document else "absent (version 1)"
            problems.append(f"schema_version is {shown}, the gate at the source root writes version {version}")
        return problems
    if kind not in ("reprise-summary", "reprise-verification"):
        return []  # diagnostic, training-run check, NFS harness records: they name no sources
    if sets["reprise_code"] is None:
        return [f"source.files: the source root has no {REPRISE_CODE[0]}, so the reprise sources this result "
                "names were not made there"]
    expected = sets["reprise_code"] + (sets["reprise_verify"] + [REPRISE_DATA] if kind == "reprise-verification"
                                       else [])
    return set_problems("source.files", files, sorted(expected),
                        "the reprise at the source root fingerprints (CODE_FILES"
                        + (", VERIFY_FILES, data.csv)" if kind == "reprise-verification" else ")"))
