"""An earlier run's evidence, fetched through the REST API so `diff` can verify it and compare.

The baseline must be a run of the same workflow (its `path` is the one GITHUB_WORKFLOW_REF names) in the
same repository. Its evidence artifact (`<prefix>-evidence-attempt-<n>`, the latest attempt that has one)
holds the index and the job logs; each platform artifact the index binds (`artifacts/<name>.zip`) is
downloaded by the id the run's artifact list gives that name, as GitHub stored it. Everything lands
under `work`; the zips are read by `verify` as they are (an entry of a zip is a subject's bytes).

Every way this can fail raises BaselineError with one sentence saying why (the run is gone, another
workflow's, its artifacts expired, a zip unsafe): the caller reports it and the run's verdict stands.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import FetchError, InputError, is_safe_relative, newest_first
from .github import GitHubClient
from .zipsafe import Caps, UnsafeArchive, safe_extract

INDEX_NAME = "platform-runtime-evidence.json"  # the evidence job's --output, inside its artifact
MAX_ZIP_BYTES = 1 << 30


class BaselineError(Exception):
    """The baseline cannot be fetched (why, in one sentence)."""


@dataclass
class Fetched:
    run: dict[str, Any]
    index: Path
    artifacts: Path
    logs: Path | None


def workflow_path(workflow_ref: str | None) -> str | None:
    """`.github/workflows/x.yml` from GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/x.yml@ref`)."""
    if not workflow_ref or "@" not in workflow_ref:
        return None
    parts = workflow_ref.split("@", 1)[0].split("/", 2)
    return parts[2] if len(parts) == 3 else None


def evidence_artifact(artifacts: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    """The evidence artifact of the latest attempt that uploaded one and has not expired."""
    pattern = re.compile(rf"^{re.escape(prefix)}-evidence-attempt-(\d+)$")
    found = [(int(m.group(1)), a) for a in artifacts if (m := pattern.match(str(a.get("name", ""))))]
    if not found:
        raise BaselineError(f"the run has no {prefix}-evidence-attempt-<n> artifact")
    alive = [(n, a) for n, a in found if not a.get("expired")]
    if not alive:
        raise BaselineError(f"its evidence artifact {found[0][1].get('name')} has expired")
    return max(alive, key=lambda pair: pair[0])[1]


def _download(client: GitHubClient, repository: str, artifact: dict[str, Any], dest: Path) -> None:
    try:
        client.download(f"/repos/{repository}/actions/artifacts/{int(artifact['id'])}/zip", dest, MAX_ZIP_BYTES)
    except FetchError as error:
        why = "has expired" if error.status == 410 else f"could not be downloaded ({error})"
        raise BaselineError(f"its artifact {artifact.get('name')} {why}") from error
    except (KeyError, TypeError, ValueError) as error:
        raise BaselineError(f"the artifact list names {artifact.get('name')!r} without an id") from error


def check_index_run(statement: Any, repository: str, run_id: str, run_path: Any) -> None:
    """The index in the artifact must be of the very run asked for: an index copied from another repository's
    run (or another run), its zips uploaded beside it, verifies, and is still not this baseline."""
    predicate = statement.get("predicate") if isinstance(statement, dict) else None
    run = predicate.get("run") if isinstance(predicate, dict) else None
    if not isinstance(predicate, dict) or predicate.get("kind") != "github-run" or not isinstance(run, dict):
        raise BaselineError("its index is of run (none): not the index of a GitHub run")
    recorded = (str(run.get("repository")), str(run.get("run_id")), run.get("workflow_path"))
    if recorded[0].lower() != repository.lower() or recorded[1] != run_id or (run_path and recorded[2] != run_path):
        raise BaselineError(f"its index is of run {recorded[1]} of {recorded[0]} ({recorded[2]}), not of run "
                            f"{run_id} of {repository} ({run_path})")


def fetch_baseline(client: GitHubClient, repository: str, run_id: str, work: Path, prefix: str,
                   expected_path: str | None) -> Fetched:
    """Download run `run_id`'s evidence artifact and the platform artifacts its index binds into `work`."""
    if not re.fullmatch(r"[1-9]\d{0,19}", run_id):
        raise BaselineError(f"baseline-run-id {run_id!r} is not a run id (digits)")
    base = f"/repos/{repository}/actions/runs/{run_id}"
    try:
        run, _ = client.get_json(base)
        listed = client.paginate(f"{base}/artifacts", "artifacts")
    except (FetchError, InputError) as error:
        raise BaselineError(f"run {run_id} of {repository} cannot be read: {error}") from error
    if not isinstance(run, dict):
        raise BaselineError(f"run {run_id}: the API's answer is not a run")
    if expected_path and run.get("path") != expected_path:
        raise BaselineError(f"run {run_id} is a run of {run.get('path')!r}, not of this workflow ({expected_path})")
    owner = run.get("repository") if isinstance(run.get("repository"), dict) else {}
    if owner.get("full_name") and str(owner["full_name"]).lower() != repository.lower():
        raise BaselineError(f"run {run_id} is a run of {owner['full_name']}, not of {repository}")
    artifacts = [a for a in listed if isinstance(a, dict)]
    work.mkdir(parents=True, exist_ok=True)
    evidence_zip = work / "evidence.zip"
    _download(client, repository, evidence_artifact(artifacts, prefix), evidence_zip)
    try:
        safe_extract(evidence_zip, work / "evidence", Caps())
    except UnsafeArchive as error:
        raise BaselineError(f"its evidence artifact cannot be unpacked safely: {error}") from error
    index = work / "evidence" / INDEX_NAME
    try:
        statement = json.loads(index.read_text(encoding="utf-8"))
        subjects = [s["name"] for s in statement["subject"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise BaselineError(f"its evidence artifact holds no readable {INDEX_NAME}") from error
    check_index_run(statement, repository, run_id, run.get("path"))
    by_name: dict[str, dict[str, Any]] = {}
    for artifact in newest_first(a for a in artifacts if not a.get("expired")):
        by_name.setdefault(str(artifact.get("name")), artifact)  # a repeated name: its newest copy
    (work / "artifacts").mkdir(exist_ok=True)
    for subject in subjects:
        name = subject[len("artifacts/"):-len(".zip")] if isinstance(subject, str) and subject.startswith(
            "artifacts/") and subject.endswith(".zip") and subject.count("/") == 1 else None
        if name is None:
            continue
        if not is_safe_relative(name) or name not in by_name:
            raise BaselineError(f"its artifact {name} is gone (expired or deleted): the index cannot be verified")
        _download(client, repository, by_name[name], work / "artifacts" / f"{name}.zip")
    logs = work / "evidence" / "logs"
    return Fetched(run=run, index=index, artifacts=work / "artifacts", logs=logs if logs.is_dir() else None)
