"""The workflow's contract: the platform jobs, the names of the artifacts they upload, the plan job and the one
line it prints. The composite actions' steps, the reusable workflow's expressions and the evidence index all
read these names here.

Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from common import fleet

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
    `cuda (<box>)` is cuda (common.fleet)."""
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
