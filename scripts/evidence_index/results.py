"""Result JSON documents: what kind each is, whether it says ok, whether it validates against its schema.

The digest is taken from the very bytes that are parsed, so what is judged is what is bound.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMAS = REPO_ROOT / "schemas"
GATE_SCHEMA_ID = "kernodeck.platform-runtime.result/v1"
VERDICT_SCHEMA_ID = "kernodeck.evidence-index.verdict/v1"
MAX_RESULT_BYTES = 32 * 1024 * 1024
# Result kinds whose schema we know: kind -> file in schemas/. Others are bound by digest and `ok` only.
SCHEMA_FILES = {
    "gate": "platform-runtime-result.schema.json",
    "diagnostic": "kernodeck-diagnostic-report.schema.json",
    "training-run-check": "training-run-check.schema.json",
    "reprise-verification": "reprise-verification.schema.json",
}


def kind_of(name: str, document: Any) -> str:
    if isinstance(document, dict):
        schema = str(document.get("schema", ""))
        if schema == GATE_SCHEMA_ID:
            return "gate"
        if document.get("_type") == "https://in-toto.io/Statement/v1":
            return "evidence-index"
        if schema == VERDICT_SCHEMA_ID:
            return "evidence-verdict"
        if "diagnostic" in schema:
            return "diagnostic"
        if "reprise" in schema:
            return "reprise-verification"
        if "training-run" in schema or "training_run" in schema:
            return "training-run-check"
    base = Path(name).name
    if base.startswith("platform-runtime-"):
        return "gate"
    if base.startswith("kernodeck-diagnostic"):
        return "diagnostic"
    if "training-run" in base:
        return "training-run-check"
    if "reprise" in name:
        return "reprise-verification"
    return "other"


def ok_of(document: Any) -> bool | None:
    """True/False from the document's own `ok` (or `status` passed/failed); None when it says neither."""
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("ok"), bool):
        return document["ok"]
    status = document.get("status")
    if status in ("passed", "failed"):
        return status == "passed"
    return None


@cache
def _validator(schema_file: str) -> Any:
    import jsonschema  # only where a schema is checked; the rest of the indexer needs only requests

    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_check(kind: str, document: Any) -> tuple[bool | None, list[str]]:
    """(valid, first errors); (None, [why]) when this kind has no schema or jsonschema is missing."""
    schema_file = SCHEMA_FILES.get(kind)
    if schema_file is None or not (SCHEMAS / schema_file).is_file():
        return None, [f"no schema known for a {kind} result"]
    try:
        validator = _validator(schema_file)
    except ImportError:
        return None, ["jsonschema is not installed: the result could not be validated"]
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    messages = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}" for e in errors[:10]]
    return not errors, messages


def read_result(path: Path, name: str) -> dict[str, Any]:
    """One result file as the index records it: digest, size, kind, ok, schema validity, and its claims."""
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            return too_large(name, _hash_file(path), size)
        data = path.read_bytes()
    except OSError as error:
        return {"name": name, "sha256": None, "size": None, "kind": kind_of(name, None), "ok": None,
                "schema_valid": None, "error": f"unreadable: {error.strerror or type(error).__name__}"}
    return read_result_bytes(data, name)


def too_large(name: str, sha256: str, size: int) -> dict[str, Any]:
    return {"name": name, "sha256": sha256, "size": size, "kind": kind_of(name, None), "ok": None,
            "schema_valid": None, "error": f"{size} bytes is over the {MAX_RESULT_BYTES}-byte cap for a result"}


def read_result_bytes(data: bytes, name: str) -> dict[str, Any]:
    """The same from bytes already in memory (an entry read straight from an artifact zip)."""
    record: dict[str, Any] = {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        record.update(kind=kind_of(name, None), ok=None, schema_valid=None, error=f"not JSON: {error}"[:300])
        return record
    kind = kind_of(name, document)
    valid, schema_errors = schema_check(kind, document)
    record.update(kind=kind, ok=ok_of(document), schema_valid=valid, schema_errors=schema_errors)
    if isinstance(document, dict):
        source = document.get("source")
        files = source.get("files") if isinstance(source, dict) else None
        record["source_files"] = files if isinstance(files, dict) else None
        record["source_git"] = source.get("git") if isinstance(source, dict) else None
        record["failures"] = [str(f)[:300] for f in document.get("failures", [])[:10]] \
            if isinstance(document.get("failures"), list) else None
        if kind == "gate":
            record["claims"] = _gate_claims(document)
    return record


def _gate_claims(document: dict[str, Any]) -> dict[str, Any]:
    """The gate's own statements about where it ran, kept small (no paths, no host names)."""
    def pick(obj: Any, *keys: str) -> dict[str, Any]:
        return {key: obj.get(key) for key in keys} if isinstance(obj, dict) else {}

    checks = document.get("checks")
    return {
        "exit_code": document.get("exit_code"),
        "platform": pick(document.get("platform"), "system", "release", "machine", "python"),
        "device": pick(document.get("device"), "requested", "resolved", "type"),
        "filesystem": pick(document.get("filesystem"), "type", "method", "nfs_version"),
        "checks": {name: bool(check.get("ok")) for name, check in checks.items() if isinstance(check, dict)}
        if isinstance(checks, dict) else None,
        "workspace_cleanup": pick(document.get("workspace_cleanup"), "status"),
        "requirements": [pick(req, "name", "ok") for req in document.get("requirements", [])
                         if isinstance(req, dict)] if isinstance(document.get("requirements"), list) else None,
        "github": document.get("github") if isinstance(document.get("github"), dict) else None,
    }


def _hash_file(path: Path) -> str:
    from .common import sha256_file

    return sha256_file(path)
