"""Read one input of `diff` or `report`: an evidence index, verified first exactly as `verify` does, or one
result file judged by the registry (rules.registry). What is compared is the bytes verify hashed: each result's
bytes are read again and must have its subject's SHA-256.

Raises InputError (exit 2: unreadable, a folder missing, --logs needed) or Unauthentic (exit 3: the index
does not verify, or a result's recorded `ok` is not what the judge says of its measurements).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.strict_json import parse_strict
from rules.kinds import STATEMENT_TYPE

from evidence_index.documents import judge_bytes

from .common import InputError
from .diff import PlatformSide, Side
from .results import MAX_RESULT_BYTES
from .verify import Report, _open_subject, verify


class Unauthentic(Exception):
    """An input this tool cannot vouch for (exit 3); its problems are the message's lines."""

    def __init__(self, label: str, problems: list[str]) -> None:
        super().__init__(f"{label} is not authentic: " + "; ".join(problems[:5]))
        self.problems = problems


@dataclass
class Loaded:
    side: Side
    statement: dict[str, Any] | None = None  # an index's Statement
    report: Report | None = None  # verify's report of it
    judgement: Any = None  # a result file's rules.registry Judgement


def _read(path: Path, label: str) -> bytes:
    try:
        if path.stat().st_size > MAX_RESULT_BYTES:
            raise InputError(f"{label} {path.name} is over {MAX_RESULT_BYTES} bytes")
        return path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {label} {path}: {error.strerror or type(error).__name__}") from error


def is_index(data: bytes) -> bool:
    try:
        document = parse_strict(data)
    except ValueError:
        return False
    return isinstance(document, dict) and document.get("_type") == STATEMENT_TYPE


def load(path: Path, artifacts: Path | None, logs: Path | None, label: str, allow_offline: bool = False) -> Loaded:
    """An index (needs `artifacts`, and `logs` when it binds job logs) or one result file."""
    data = _read(path, label)
    if is_index(data):
        return load_index(parse_strict(data), hashlib.sha256(data).hexdigest(), artifacts, logs, label,
                          allow_offline)
    if artifacts is not None or logs is not None:
        raise InputError(f"{label} {path.name} is a result file, not an index: it takes no artifacts or logs folder")
    return load_result(data, path.name, label)


def load_result(data: bytes, name: str, label: str) -> Loaded:
    judgement = judge_bytes(data)
    if judgement.error is not None or judgement.kind in (None, "unknown"):
        raise InputError(f"{label} {name} is neither an evidence index nor a result of a known kind: "
                         f"{judgement.error or 'unknown schema'}")
    claim = claimed_pass(judgement.document)
    if claim is not None and not judgement.ok:
        raise Unauthentic(label, [f"{name} records {claim}; its own measurements say: "
                                  + "; ".join(str(r) for r in judgement.reasons[:3])])
    side = Side(kind=judgement.kind, sha256=hashlib.sha256(data).hexdigest())
    side.platforms[platform_of_result(judgement.kind, judgement.document)] = PlatformSide(
        results={name: (judgement.kind, judgement.document)})
    return Loaded(side=side, judgement=judgement)


def claimed_pass(document: Any) -> str | None:
    """How a result says it passed (`ok: true`, or a diagnostic's `status: "passed"`), None when it does
    not: a claim its own measurements refute is not authentic, whichever field carries it."""
    if not isinstance(document, dict):
        return None
    if document.get("ok") is True:
        return "ok true"
    if document.get("status") == "passed":
        return "status passed"
    return None


def platform_of_result(kind: str, document: Any) -> str:
    """The platform a lone gate result proves (the registry's rule), else the name of where it ran."""
    from common.workflow import PLATFORMS
    from rules.registry import prove_platform

    if kind == "gate" and isinstance(document, dict):
        for name in sorted(PLATFORMS, key=lambda p: p == "linux"):  # the specific ones before plain linux
            if not prove_platform(name, document):
                return name
        github = document.get("github")
        if isinstance(github, dict) and github.get("job") in PLATFORMS:
            return str(github["job"])
    return "local"


def _roots(statement: dict[str, Any], artifacts: Path | None, logs: Path | None, label: str) -> dict[str, Path | None]:
    if artifacts is None:
        raise InputError(f"{label} is an evidence index: give its artifacts folder (as verify --artifacts takes it)")
    if not artifacts.is_dir():
        raise InputError(f"the artifacts folder of {label} ({artifacts}) is not a folder")
    if logs is not None and not logs.is_dir():
        raise InputError(f"the logs folder of {label} ({logs}) is not a folder")
    subjects = statement.get("subject") if isinstance(statement.get("subject"), list) else []
    if logs is None and any(isinstance(s, dict) and str(s.get("name", "")).startswith("logs/") for s in subjects):
        raise InputError(f"{label} binds job logs: give its logs folder so they can be re-scanned")
    return {"artifacts": artifacts, "logs": logs}


def _document(root: Path, subject: str, digest: str | None) -> Any:
    """A bound result's document from the bytes that have the subject's digest (verify just hashed them)."""
    opened, _ = _open_subject(root, "artifacts", subject[len("artifacts/"):])
    if opened is None:
        return None
    with opened as stream:
        data = stream.read(MAX_RESULT_BYTES + 1)
    if len(data) > MAX_RESULT_BYTES:  # judged as too large to read; nothing to compare field by field
        return None
    if hashlib.sha256(data).hexdigest() != digest:
        raise Unauthentic("an input", [f"{subject} changed while it was read"])
    try:
        return parse_strict(data)
    except ValueError:
        return None


def load_index(statement: dict[str, Any], sha256: str, artifacts: Path | None, logs: Path | None, label: str,
               allow_offline: bool = False) -> Loaded:
    roots = _roots(statement, artifacts, logs, label)
    report = verify(statement, roots, allow_offline=allow_offline)
    if report.outcome == "not-authentic":
        raise Unauthentic(label, report.problems)
    assert artifacts is not None
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    predicate = statement["predicate"]
    verdict = report.verdict or {}
    side = Side(kind="index", sha256=sha256, verdict={"pass": verdict.get("pass"), "reasons": verdict.get("reasons")},
                pair_by_kind=predicate.get("kind") == "local")
    # What ran is each result's own `source` (compared result by result) and, for a run, its head commit.
    # Who built the index, where and against which checkout (indexer, host, built_at, source_root) is about
    # the indexing, not the run: left out (a source_root that differs from what ran fails the verdict,
    # and the verdict is compared).
    if predicate.get("kind") != "local":
        run = predicate.get("run") or {}
        side.context["run"] = {"head_sha": run.get("head_sha"), "workflow_path": run.get("workflow_path")}

    def results(records: list[Any]) -> dict[str, tuple[str, Any]]:
        found = {}
        for record in records:
            if isinstance(record, dict) and record.get("subject"):
                found[str(record["name"])] = (str(record.get("kind")),
                                              _document(artifacts, record["subject"], digests.get(record["subject"])))
        return found

    if predicate.get("kind") == "local":
        for record in predicate.get("results") or []:
            if isinstance(record, dict):
                name = str(record.get("name"))
                side.platforms[name] = PlatformSide(verdict={"ok": record.get("ok"), "reasons": record.get("reasons")},
                                                    results=results([record]))
        return Loaded(side=side, statement=statement, report=report)
    platform_verdicts = verdict.get("platforms") or {}
    for entry in predicate.get("platforms") or []:
        if not isinstance(entry, dict) or not entry.get("selected"):
            continue
        name = str(entry.get("platform"))
        runner = entry.get("runner") or {}
        side.platforms[name] = PlatformSide(verdict=platform_verdicts.get(name), results=results(entry.get("results")
                                            or []), runner={k: runner.get(k) for k in ("image", "image_version",
                                                                                       "os_from_log", "labels")})
    return Loaded(side=side, statement=statement, report=report)
