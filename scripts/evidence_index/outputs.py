"""--platform-artifacts: which artifact holds each platform's evidence, as the platform jobs' outputs say.

Two shapes are accepted. The plain one, {platform: {artifact_id, artifact_name, artifact_digest, attempt,
job_result[, job_id]}}; or the workflow's `toJSON(needs)` as it is, {job: {result, outputs: {artifact-id,
artifact-name, artifact-digest, attempt, job-id}}}, so the evidence job needs no code of its own to
convert it (jobs that are not platforms, and those that uploaded nothing, are left out: `--platforms`
fails a selected one as missing). Outputs survive "Re-run failed
jobs" for the jobs that were not re-run, which is why the artifact is found by these ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common.fleet import box_of
from common.strict_json import parse_strict
from common.workflow import PLATFORMS, artifact_of_job

from .common import InputError


def from_needs(needs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The plain shape from a `toJSON(needs)` object, read as the evidence job reads it
    (common.workflow.artifact_of_job): jobs that are not platforms or uploaded nothing are left out."""
    entries = {job: artifact_of_job(value) for job, value in needs.items() if job in PLATFORMS}
    return {job: entry for job, entry in entries.items() if entry is not None}


def _is_needs(document: dict[str, Any]) -> bool:
    return any(isinstance(v, dict) and "result" in v for v in document.values())


def check(document: Any) -> dict[str, dict[str, Any]]:
    """The plain shape, every entry checked; InputError (exit 2) for anything else."""
    if not isinstance(document, dict):
        raise InputError("--platform-artifacts must hold a JSON object {platform: {...}} or toJSON(needs)")
    plain = from_needs(document) if _is_needs(document) else document
    for platform, entry in plain.items():
        # a platform, or one box of a cuda fleet as its job is named: `cuda (<box>)` (common.fleet)
        if not (platform in PLATFORMS or box_of(platform)) or not isinstance(entry, dict):
            raise InputError(f"--platform-artifacts: {platform!r} is not a platform with an object")
        artifact_id, name = entry.get("artifact_id"), entry.get("artifact_name")
        if artifact_id not in (None, "") and not str(artifact_id).isdigit():
            raise InputError(f"--platform-artifacts: {platform}'s artifact_id {artifact_id!r} is not a number")
        plain_name = isinstance(name, str) and "/" not in name and "\\" not in name and name not in (".", "..")
        if name not in (None, "") and not plain_name:
            raise InputError(f"--platform-artifacts: {platform}'s artifact_name {name!r} is not a plain name")
        if artifact_id in (None, "") and name in (None, ""):
            entry = dict(entry, artifact_name=None)  # the job uploaded nothing: its artifact is missing
        plain[platform] = entry
    return plain


def load(path: Path | None) -> dict[str, dict[str, Any]] | None:
    if path is None:
        return None
    try:
        document = parse_strict(path.read_bytes())
    except (OSError, ValueError) as error:
        raise InputError(f"--platform-artifacts {path}: not a readable strict JSON file ({error})") from error
    return check(document)
