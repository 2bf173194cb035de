"""The contract every part shares: result kinds and their schema ids, the platforms and what proves each,
artifact names, and the ONE rule for "did this document pass" (`judge`).

Stdlib only. Schema validation (jsonschema) is a separate step done by the evidence index; `judge` checks
the rules a schema cannot express (every check present and ok, `ok` agreeing with them). An unknown
document, or a bare `{"ok": true}`, never passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from core import fleet
from core.diagnostic_judge import judge_diagnostic
from core.gate_judge import judge_gate
from core.harness_judge import judge_nfs_harness
from core.platforms import WINDOWS_FS_METHOD, WINDOWS_FS_TYPES, nfs_problems, os_facts, os_problems, windows_problems  # noqa: F401
from core.strict_json import NotStrict, parse_strict  # THE strict reader, re-exported for every caller
from core.trust import injection_problems
from core.verdicts import NFS_TYPES, REQUIRED_GATE_CHECKS  # noqa: F401 - NFS_TYPES re-exported

GATE_SCHEMA_ID = "kernodeck.platform-runtime.result/v1"
DIAGNOSTIC_SCHEMA_ID = "kernodeck.diagnostic.report/v1"
REPRISE_VERIFICATION_SCHEMA_ID = "kernodeck.reprise.verification"  # with "version": 1
REPRISE_SUMMARY_SCHEMA_ID = "kernodeck.reprise.summary"  # with "version": 1
TRAINING_RUN_CHECK_SCHEMA_ID = "kernodeck.training-run-check"  # with "version": 1
NFS_HARNESS_SCHEMA_ID = "kernodeck.nfs-harness/v1"
EVIDENCE_VERDICT_SCHEMA_ID = "kernodeck.evidence-index.verdict/v1"
NFSVM_RUN_SCHEMA_ID = "kernodeck.nfsvm-run/v1"
# The records an NFS VM run judged (tools/nfsvm): each is judged with the nfs-vm-run.json beside it, which the
# index makes again from them (core.vm_run_judge); alone, only what the record itself proves (core.vm_judge).
NFSVM_RECORD_SCHEMA_IDS = ("kernodeck.nfsvm-two-clients/v1", "kernodeck.nfsvm-server-restart/v1",
                           "kernodeck.nfsvm-busy-unmount/v1", "kernodeck.nfsvm-server-gone/v1",
                           "kernodeck.nfsvm-busy-rename/v1", "kernodeck.nfsvm-rename-race/v1",
                           "kernodeck.nfsvm-install/v1",
                           "kernodeck.nfsvm-image/v1", "kernodeck.nfsvm-steps/v1", "kernodeck.nfsvm-versions/v1",
                           "kernodeck.nfs-harness/v1#setup")
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
EVIDENCE_PREDICATE_TYPE = "https://github.com/kernodeck/platform-runtime/evidence-index/v1"

# kind -> (schema id, the `version` field it must carry, or None when the id carries the version)
KINDS: dict[str, tuple[str, int | None]] = {
    "gate": (GATE_SCHEMA_ID, None),
    "diagnostic": (DIAGNOSTIC_SCHEMA_ID, None),
    "reprise-verification": (REPRISE_VERIFICATION_SCHEMA_ID, 1),
    "reprise-summary": (REPRISE_SUMMARY_SCHEMA_ID, 1),
    "training-run-check": (TRAINING_RUN_CHECK_SCHEMA_ID, 1),
    "nfs-harness": (NFS_HARNESS_SCHEMA_ID, None),
    "evidence-verdict": (EVIDENCE_VERDICT_SCHEMA_ID, None),
    "nfsvm-run": (NFSVM_RUN_SCHEMA_ID, None),
}
# Data files of a run folder (a reprise training run's config, its manifest): bound by digest, never judged,
# and accepted only inside a folder, never as a result on their own.
DATA_SCHEMA_IDS = ("kernodeck.reprise.config", "kernodeck.reprise.manifest", "kernodeck.reprise.checkpoint")
# Kinds that restate a verdict rather than prove anything: bound and judged, never enough on their own.
RESTATING_KINDS = ("evidence-verdict",)
# kind -> file under schemas/ (kinds without one are judged by their rules only)
SCHEMA_FILES = {
    "gate": "platform-runtime-result.schema.json",
    "diagnostic": "kernodeck-diagnostic-report.schema.json",
    "reprise-verification": "reprise-verification.schema.json",
    "reprise-summary": "reprise-summary.schema.json",
    "training-run-check": "training-run-check.schema.json",
    "nfs-harness": "nfs-harness.schema.json",  # helper E's schema; validated once the file exists
}
GATE_CHECKS = REQUIRED_GATE_CHECKS
PLATFORMS = ("linux", "windows", "mps", "cuda", "nfs")


ARTIFACT_PREFIX = "platform-runtime"


def artifact_name(parts: str | Sequence[str], attempt: int | str, prefix: str = ARTIFACT_PREFIX) -> str:
    """The ONE naming rule for uploaded results, `<prefix>-<part>...-attempt-<n>` (a platform job's parts are
    its platform name). scripts/steps/result_dir.py applies it and every YAML expression reads its output."""
    words = [parts] if isinstance(parts, str) else list(parts)
    return "-".join([prefix, *words, "attempt", str(attempt)])


def artifact_of_job(job: Any) -> dict[str, Any] | None:
    """The artifact a platform job exported, from its outputs as `toJSON(needs)` shows them (artifact-id,
    artifact-name, artifact-digest, attempt, job-id) and its result; None when it uploaded nothing. The one
    reading of those outputs, for the evidence job's record and the builder's --platform-artifacts."""
    job = job if isinstance(job, dict) else {}
    outputs = job.get("outputs") if isinstance(job.get("outputs"), dict) else {}
    if not outputs.get("artifact-name"):
        return None
    attempt, job_id = str(outputs.get("attempt") or ""), str(outputs.get("job-id") or "")
    return {
        "artifact_id": outputs.get("artifact-id") or None,
        "artifact_name": outputs["artifact-name"],
        "artifact_digest": outputs.get("artifact-digest") or None,
        "attempt": int(attempt) if attempt.isdigit() else None,
        "job_result": job.get("result") or "missing",
        "job_id": int(job_id) if job_id.isdigit() else None,
    }


# The reusable workflow's job that selects the platforms (`name: plan`), and the one line its step prints to
# the job log: the selection in bytes GitHub keeps, which the evidence index binds and reads back.
PLAN_JOB = "plan"
PLAN_LOG_MARK = "platform-runtime plan: "


def plan_log_line(platforms: Sequence[str]) -> str:
    return PLAN_LOG_MARK + json.dumps({"platforms": list(platforms)}, separators=(",", ":"))


def is_plan_job(job_name: str) -> bool:
    """`plan`, or `caller / plan` through a reusable workflow."""
    return job_name.rsplit(" / ", 1)[-1].strip() == PLAN_JOB


def platform_of(job_name: str) -> str | None:
    """`linux`, or `platform-runtime / linux` through a reusable workflow: the last segment names it; a fleet's
    `cuda (<box>)` is cuda (core.fleet)."""
    last = job_name.rsplit(" / ", 1)[-1].strip()
    if last in PLATFORMS:
        return last
    return "cuda" if fleet.box_of(last) else None


def job_label(platform: str, box: str | None) -> str:
    """What a platform job is called in the index's verdict and summary: its platform, or `cuda (<box>)`."""
    return f"{platform} ({box})" if box else platform


def result_artifact_name(platform: str, box: str | None, attempt: int | str, prefix: str = ARTIFACT_PREFIX) -> str:
    """The artifact a platform job uploads: `<prefix>-<platform>-attempt-<n>`, a fleet box's
    `<prefix>-cuda-<box>-attempt-<n>`."""
    return artifact_name(fleet.artifact_parts(box) if box else platform, attempt, prefix)


def gate_result_name(platform: str) -> str:
    return f"platform-runtime-{platform}.json"


SCHEMAS = Path(__file__).resolve().parent.parent.parent / "schemas"


@dataclass
class Judgement:
    kind: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    schema_valid: bool | None = None  # set by judge_bytes: None when the kind has no schema
    schema_errors: list[str] = field(default_factory=list)
    document: Any = None  # the parsed document (judge_bytes)
    error: str | None = None  # judge_bytes: why the bytes are not a document at all (not JSON, a BOM...)
    # Recorded flags its own measurements contradict (field and both values): the document is not authentic.
    forged: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "ok": self.ok, "reasons": list(self.reasons)}


def kind_of(document: Any) -> str:
    """The result kind a document declares by its schema id; "unknown" when it declares none we know."""
    if not isinstance(document, dict):
        return "unknown"
    if document.get("_type") == STATEMENT_TYPE:
        return "evidence-index"
    schema = document.get("schema")
    for kind, (schema_id, _) in KINDS.items():
        if schema == schema_id:
            return kind
    if schema in NFSVM_RECORD_SCHEMA_IDS:
        return "nfsvm-record"
    return "unknown"


def judge(document: Any, kind: str | None = None) -> Judgement:
    """Did this document pass, by its kind's rules. `kind`, when given, must be the one it declares."""
    declared = kind_of(document)
    if kind is not None and kind != declared:
        return Judgement(kind, False, [f"expected a {kind} result, the document declares {declared}"])
    rule = RULES.get(declared)
    if rule is None:
        return Judgement(declared, False, [f"not a result this project knows (schema {_schema_of(document)!r}): "
                                           "an unknown document never passes"])
    reasons = []
    version = KINDS.get(declared, ("", None))[1]
    if version is not None and document.get("version") != version:
        reasons.append(f"version is {document.get('version')!r}, this judge knows {version}")
    found = rule(document)
    forged = list(found[1]) if isinstance(found, tuple) else []
    reasons += [f"not authentic: {why}" for why in forged]
    reasons += found[0] if isinstance(found, tuple) else found
    return Judgement(declared, not reasons, reasons, forged=forged)


@cache
def _validator(schema_file: str) -> Any:
    try:
        import jsonschema  # only where a result is judged with its schema
    except ImportError as error:
        raise RuntimeError("jsonschema is not installed (pip install -r requirements/runtime.txt): "
                           "the result could not be validated") from error
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_check(kind: str, document: Any) -> tuple[bool | None, list[str]]:
    """(valid, first errors) against the kind's schema; (None, []) for a kind without one. Raises
    RuntimeError when jsonschema is missing or the schema file is absent."""
    schema_file = SCHEMA_FILES.get(kind)
    if schema_file is None:
        return None, []
    if not (SCHEMAS / schema_file).is_file():
        raise RuntimeError(f"the schema file schemas/{schema_file} is missing: the result could not be validated")
    errors = sorted(_validator(schema_file).iter_errors(document), key=lambda e: list(e.absolute_path))
    return not errors, [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}" for e in errors[:10]]


def judge_bytes(data: bytes) -> Judgement:
    """THE rule for a result file, used by the evidence index and the composite actions' summaries alike:
    parse strictly, recognise the kind, validate against its schema, judge by its rules. Never raises."""
    try:
        document = parse_strict(data)
    except NotStrict as error:  # no writer of ours makes these bytes: not authentic, not merely failing
        return Judgement("unknown", False, [f"not authentic: {str(error)[:300]}"], error=str(error)[:300],
                         forged=[str(error)[:300]])
    except ValueError as error:
        return Judgement("unknown", False, [str(error)[:300]], error=str(error)[:300])
    judgement = judge(document)
    judgement.document = document
    try:
        judgement.schema_valid, judgement.schema_errors = schema_check(judgement.kind, document)
    except RuntimeError as error:
        judgement.reasons.insert(0, f"was not validated: {error}")
    if judgement.schema_valid is False:
        judgement.reasons.insert(0, "does not validate against its schema: " + "; ".join(judgement.schema_errors[:2]))
    judgement.ok = not judgement.reasons
    return judgement


def judge_file(path: Path) -> Judgement:
    """judge_bytes on a file's bytes; an unreadable file fails with the reason."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return Judgement("unknown", False, [f"unreadable: {error.strerror or type(error).__name__}"])
    return judge_bytes(data)


def _schema_of(document: Any) -> Any:
    return document.get("schema") if isinstance(document, dict) else type(document).__name__


def _flags(document: dict[str, Any], **wanted: Any) -> list[str]:
    return [f"{key} is {document.get(key)!r}, a pass needs {value!r}"
            for key, value in wanted.items() if document.get(key) != value]


def _judge_reprise_verification(document: dict[str, Any]) -> list[str]:
    reasons = _flags(document, ok=True, exit_code=0, completed=True, all_checks_passed=True, positive=True,
                     negative_divergence_detected=True, errors=[])
    if document.get("ok") != document.get("all_checks_passed"):
        reasons.append("ok disagrees with all_checks_passed")
    return reasons


def _judge_reprise_summary(document: dict[str, Any]) -> list[str]:
    # A summary states where a run stands; it passes when it records at least one step and its checkpoint.
    steps = document.get("steps_done")
    reasons = [] if isinstance(steps, int) and steps >= 1 else [f"steps_done is {steps!r}"]
    if not isinstance(document.get("checkpoint"), dict):
        reasons.append("checkpoint is not recorded")
    return reasons


def _judge_training_run_check(document: dict[str, Any]) -> list[str]:
    reasons = _flags(document, ok=True, problems=[])
    checks = document.get("checks")
    if not isinstance(checks, dict) or not checks:
        reasons.append("checks is empty")
    else:
        reasons += [f"checks.{name} did not pass" for name, check in checks.items()
                    if not isinstance(check, dict) or check.get("ok") is not True]
    return reasons


def _judge_evidence_verdict(document: dict[str, Any]) -> list[str]:
    reasons = _flags(document, ok=True, reasons=[])
    if not isinstance(document.get("index_sha256"), str):
        reasons.append("index_sha256 is missing")
    return reasons


def _judge_nfsvm_run(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    from core.vm_run_judge import judge_vm_run  # only where a VM run is judged: the gate never loads it

    return judge_vm_run(document)


def _judge_install(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    from core.vm_judge import judge_install_record

    return judge_install_record(document)


def _judge_nfsvm_record(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What a VM record proves alone: the phases that need no other file, by their facts. The rest (a fault
    phase's gate and harness beside it, the image, the steps) is judged with the run (evidence_index.vmrun)."""
    from core import vm_judge
    from core.harness_judge import judge_setup
    from core.rename_race import judge_rename_race

    alone = {"kernodeck.nfsvm-two-clients/v1": vm_judge.judge_two_clients,
             "kernodeck.nfsvm-busy-unmount/v1": vm_judge.judge_busy_unmount,
             "kernodeck.nfsvm-busy-rename/v1": vm_judge.judge_busy_rename,
             "kernodeck.nfsvm-rename-race/v1": judge_rename_race,
             "kernodeck.nfsvm-install/v1": _judge_install,
             "kernodeck.nfs-harness/v1#setup": judge_setup}
    rule = alone.get(document.get("schema"))
    return rule(document) if rule is not None else ([], [])


# A rule answers its reasons, or (reasons, forged) where it recomputes recorded flags (core.gate_judge).
RULES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "gate": judge_gate,
    "diagnostic": judge_diagnostic,
    "reprise-verification": _judge_reprise_verification,
    "reprise-summary": _judge_reprise_summary,
    "training-run-check": _judge_training_run_check,
    "nfs-harness": judge_nfs_harness,
    "evidence-verdict": _judge_evidence_verdict,
    "nfsvm-run": _judge_nfsvm_run,
    "nfsvm-record": _judge_nfsvm_record,
}


def _requirement_held(document: dict[str, Any], name: str) -> bool:
    requirements = document.get("requirements") if isinstance(document.get("requirements"), list) else []
    return any(isinstance(r, dict) and r.get("name") == name and r.get("ok") is True for r in requirements)


def prove_platform(platform: str, gate: Any) -> list[str]:
    """Why this gate result does not prove `platform` ran (empty when it does): a platform is proven only
    by a result that shows that platform, never by the job's or the artifact's name."""
    if not isinstance(gate, dict):
        return [f"{platform}: no gate result to prove it"]
    facts = gate.get("platform") if isinstance(gate.get("platform"), dict) else {}
    device = gate.get("device") if isinstance(gate.get("device"), dict) else {}
    fs = gate.get("filesystem") if isinstance(gate.get("filesystem"), dict) else {}
    system = facts.get("system")
    # Every recorded fact that speaks to the OS. The index's claims keep the platform and file-system ones;
    # the judge applies the same rules to the whole result (core.requirements), so a requirement is held in an
    # index only when all of them agree.
    recorded = os_facts(gate)
    wanted: list[tuple[bool, str]] = []
    if platform in ("windows", "mps", "cuda", "nfs"):
        wanted.append((_requirement_held(gate, platform), f"the {platform!r} requirement did not hold"))
    if platform == "linux":
        wanted.append((system == "Linux", f"platform.system is {system!r}, not Linux"))
        wanted += [(False, why) for why in os_problems(recorded, "Linux")]
    elif platform == "windows":
        wanted += [(False, why) for why in windows_problems(facts, fs, recorded)]
    elif platform == "mps":
        wanted.append((device.get("type") == "mps", f"device.type is {device.get('type')!r}, not mps"))
        wanted += [(False, why) for why in os_problems(recorded, "Darwin")]
    elif platform == "cuda":
        wanted.append((device.get("type") == "cuda", f"device.type is {device.get('type')!r}, not cuda"))
    elif platform == "nfs":
        wanted += [(False, why) for why in nfs_problems(facts, fs, recorded, options_recorded="mount_options" in fs)]
    else:
        return [f"{platform}: not a platform this project knows"]
    wanted += [(False, why) for why in injection_problems(gate)]  # its view may have been rewritten
    return [f"{platform} not proven: {why}" for held, why in wanted if not held]
