"""Result JSON documents: what kind each is, whether it says ok, whether it validates against its schema.

The digest is taken from the very bytes that are parsed, so what is judged is what is bound.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common.strict_json import parse_strict
from rules.kinds import DATA_SCHEMA_IDS

from evidence_index.documents import judge_bytes

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
MAX_RESULT_BYTES = 32 * 1024 * 1024
SIDECAR_SUFFIX = ".sha256"  # a checkpoint's fingerprint file, read for the cross-file facts (crossfile.py)
MAX_SIDECAR_BYTES = 4096


def keep_max(name: str) -> int:
    """How many bytes of a bound file the judge keeps: a result's, a .sha256 file's, none of anything else."""
    return MAX_RESULT_BYTES if name.endswith(".json") else MAX_SIDECAR_BYTES if name.endswith(SIDECAR_SUFFIX) else 0


def is_result(relative: str, document: Any) -> bool:
    """Which bound files are results to judge: every *.json, except a known data file of a run folder (a
    reprise run's config.json declares kernodeck.reprise.config) lying below the top level. So a deeper JSON
    that is truncated, BOM-prefixed or of no known kind is judged, and fails naming the file. Decided from
    the bytes alone."""
    if not relative.endswith(".json"):
        return False
    if "/" not in relative:
        return True
    return not (isinstance(document, dict) and document.get("schema") in DATA_SCHEMA_IDS)


def parse_json(data: bytes | None) -> Any:
    """The document, or None when the bytes are not JSON (or were too large to read)."""
    if data is None:
        return None
    try:
        return parse_strict(data)
    except ValueError:
        return None


def gate_documents(records: list[dict[str, Any]], json_bytes: dict[str, tuple]) -> Iterator[tuple[dict, dict]]:
    """Each gate record with its result parsed from the bytes the index read (subject -> (bytes, ...)), for those
    that parse to an object: the one walk the judge's second views share."""
    for record in records:
        entry = json_bytes.get(record.get("subject") or "")
        if record.get("kind") != "gate" or not entry:
            continue
        document = parse_json(entry[0])
        if isinstance(document, dict):
            yield record, document


def unreadable(name: str, why: str) -> dict[str, Any]:
    """A result that should be there and cannot be judged (missing, refused, unreadable): it fails."""
    return {"name": name, "subject": None, "sha256": None, "size": None, "kind": "unknown", "ok": False,
            "schema_valid": None, "reasons": [why], "error": why}


def too_large(name: str, sha256: str, size: int) -> dict[str, Any]:
    why = f"{size} bytes is over the {MAX_RESULT_BYTES}-byte cap for a result"
    return {"name": name, "sha256": sha256, "size": size, "kind": "unknown", "ok": False,
            "schema_valid": None, "reasons": [why], "error": why}


def read_result_bytes(data: bytes, name: str) -> dict[str, Any]:
    """The same from bytes already in memory: evidence_index.documents.judge_bytes parses, recognises the kind,
    validates and judges (the one rule the composite actions' summaries use too)."""
    record: dict[str, Any] = {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    judgement = judge_bytes(data)
    document = judgement.document
    if judgement.error is not None:
        record.update(kind="unknown", ok=False, schema_valid=None, reasons=[judgement.error], error=judgement.error)
        if judgement.forged:
            record["not_authentic"] = list(judgement.forged)
        return record
    record.update(kind=judgement.kind, ok=judgement.ok, schema_valid=judgement.schema_valid,
                  schema_errors=judgement.schema_errors, reasons=judgement.reasons)
    if judgement.forged:  # recorded flags its own measurements contradict: verify answers not authentic
        record["not_authentic"] = list(judgement.forged)
    if isinstance(document, dict):
        source = document.get("source")
        files = source.get("files") if isinstance(source, dict) else None
        record["source_files"] = files if isinstance(files, dict) else None
        record["source_git"] = source.get("git") if isinstance(source, dict) else None
        if judgement.kind == "gate":
            record["claims"] = _gate_claims(document)
    return record


def _gate_claims(document: dict[str, Any]) -> dict[str, Any]:
    """The gate's own statements about where it ran, kept small (no paths, no host names); enough for
    rules.registry.prove_platform, which reads the same field names."""
    def pick(obj: Any, *keys: str) -> dict[str, Any]:
        return {key: obj.get(key) for key in keys} if isinstance(obj, dict) else {}

    checks = document.get("checks")
    claims = {
        "exit_code": document.get("exit_code"),
        "platform": {**pick(document.get("platform"), "system", "release", "machine", "python", "windows_version"),
                     **_recorded(document.get("platform"), "wine")},
        "ok": document.get("ok"),
        "device": pick(document.get("device"), "requested", "resolved", "type"),
        "filesystem": pick(document.get("filesystem"), "type", "method", "nfs_version", "mount_id"),
        "checks": {name: bool(check.get("ok")) for name, check in checks.items() if isinstance(check, dict)}
        if isinstance(checks, dict) else None,
        "workspace_cleanup": pick(document.get("workspace_cleanup"), "status"),
        "requirements": [pick(req, "name", "ok") for req in document.get("requirements", [])
                         if isinstance(req, dict)] if isinstance(document.get("requirements"), list) else None,
        "github": document.get("github") if isinstance(document.get("github"), dict) else None,
        **_isolation_claims(document),
    }
    box = _box_claims(document)
    if box is not None:
        claims["box"] = box
    return claims


def _recorded(obj: Any, *keys: str) -> dict[str, Any]:
    """The keys a result records, and only those: a fact added to results later (`platform.wine`) is claimed only
    by results that hold it, so an index built before it still matches its results' claims."""
    return {key: obj[key] for key in keys if key in obj} if isinstance(obj, dict) else {}


def _box_claims(document: dict[str, Any]) -> dict[str, Any] | None:
    """What tells one box of a fleet from another in the summary: its GPU, driver, torch build and the
    collective check (the gate's own words, judged like the rest by the registry (rules.registry)); None for a gate that
    saw no GPU and ran no collective check (the CPU results recorded before fleets stay as they were)."""
    device = document.get("device") if isinstance(document.get("device"), dict) else {}
    cuda = device.get("cuda") if isinstance(device.get("cuda"), dict) else {}
    build = device.get("torch_build") if isinstance(device.get("torch_build"), dict) else {}
    checks = document.get("checks") if isinstance(document.get("checks"), dict) else {}
    collective = checks.get("collectives") if isinstance(checks.get("collectives"), dict) else None
    if not cuda.get("available") and collective is None:
        return None
    return {
        "gpu": cuda.get("name"), "gpus": cuda.get("device_count"),
        "driver": cuda.get("kernel_driver") or cuda.get("driver_version"),
        "torch_build": build.get("version"),
        "collectives": None if collective is None else {
            key: collective.get(key) for key in ("ok", "status", "world_size", "backend", "library_version")},
    }


def _isolation_claims(document: dict[str, Any]) -> dict[str, Any]:
    """The injection vectors of a gate that judges them (it records `isolation.allowed`), for
    rules.trust.injection_problems; older results record `present` as information only and carry none."""
    isolation = document.get("isolation")
    if not isinstance(isolation, dict) or not isinstance(isolation.get("allowed"), bool):
        return {}
    return {"isolation": {"present": isolation.get("present"), "allowed": isolation["allowed"]}}

