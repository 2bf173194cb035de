"""Where a job ran and what it ran, as GitHub and the runner state it, against what its gate result says.

A gate result uploaded by a job is the job's own claim: any step of the job could have written it. Beside
it the index holds views the job's steps cannot write: the jobs API's answer (the `labels` its `runs-on`
asked for, its name, its window), the run's answer (head_sha, repository, workflow path), the artifact
list (when the artifact was created) and the runner's own "Set up job" lines at the top of the job log
(written before any step: `Operating System` and `Runner Image` groups on GitHub-hosted runners,
`Complete job name:`). Each rule here compares one of those views with the result and names both fields
when they disagree; a view that says nothing (a self-hosted runner's custom labels, a log without the
hosted groups, a null `created_at`) refutes nothing, so real self-hosted boxes are never refused.

Pure functions of the recorded facts; evidence_index.index_judge applies them at build and at verify.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from common.workflow import PLATFORMS

# RUNNER_OS as GitHub documents it, and what platform.system() answers on that OS.
SYSTEM_OF_RUNNER_OS = {"Linux": "Linux", "Windows": "Windows", "macOS": "Darwin"}
# A self-hosted runner's default OS label (GitHub adds `self-hosted`, the OS and the architecture).
_SELF_HOSTED_OS = {"linux": "Linux", "windows": "Windows", "macos": "Darwin"}
# GitHub-hosted image labels (ubuntu-24.04, ubuntu-latest, ubuntu-24.04-arm, windows-2025, windows-11-arm,
# macos-15, macos-15-intel, macos-latest-xlarge, ...): the image family names the OS.
_HOSTED_LABEL = re.compile(r"^(ubuntu|windows|macos)-[a-z0-9][a-z0-9.-]*$", re.IGNORECASE)
# The standard images among them: GitHub's standard hosted runners have no GPU (GPU runners are larger
# runners, which an organisation names itself).
_STANDARD_IMAGE = re.compile(r"^(ubuntu|windows|macos)-(latest|slim|\d+(\.\d+)?)(-(arm|arm64|intel|large|xlarge))?$",
                             re.IGNORECASE)
_FAMILY = {"ubuntu": "Linux", "windows": "Windows", "macos": "Darwin"}
# The runner's "Operating System" group and "Runner Image" name, by their first word / prefix.
_LOG_OS = (("ubuntu", "Linux"), ("linux", "Linux"), ("microsoft windows", "Windows"), ("windows", "Windows"),
           ("macos", "Darwin"), ("mac os", "Darwin"))
_IMAGE_OS = (("ubuntu", "Linux"), ("win", "Windows"), ("macos", "Darwin"))
ARTIFACT_SLACK = timedelta(minutes=2)  # GitHub's job clock against its artifact service's clock
_PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment")


def labels_system(labels: Any) -> str | None:
    """The OS the job's labels name, or None when they name none (or several)."""
    if not isinstance(labels, list):
        return None
    names = [str(label) for label in labels]
    if any(name.lower() == "self-hosted" for name in names):
        found = {_SELF_HOSTED_OS[name.lower()] for name in names if name.lower() in _SELF_HOSTED_OS}
    else:
        found = {_FAMILY[m.group(1).lower()] for m in map(_HOSTED_LABEL.match, names) if m}
    return found.pop() if len(found) == 1 else None


def standard_hosted_label(labels: Any) -> str | None:
    """The GitHub-hosted standard image label the job asked for (no GPU there), or None."""
    if not isinstance(labels, list) or any(str(label).lower() == "self-hosted" for label in labels):
        return None
    return next((str(label) for label in labels if _STANDARD_IMAGE.match(str(label))), None)


def _first_match(text: Any, table: tuple[tuple[str, str], ...]) -> str | None:
    if not isinstance(text, str):
        return None
    lowered = text.strip().lower()
    return next((system for prefix, system in table if lowered.startswith(prefix)), None)


def log_systems(runner: Any) -> list[tuple[str, str, str]]:
    """(field, value, OS) for each of the runner's set-up lines that names an OS."""
    runner = runner if isinstance(runner, dict) else {}
    found = []
    for key, table in (("os", _LOG_OS), ("image", _IMAGE_OS)):
        system = _first_match(runner.get(key), table)
        if system:
            found.append((f"the job log's runner {key}", str(runner.get(key)), system))
    return found


def _result_systems(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, value, OS) for what the result says of its OS: platform.system and github.runner_os."""
    platform = document.get("platform") if isinstance(document.get("platform"), dict) else {}
    github = document.get("github") if isinstance(document.get("github"), dict) else {}
    found = []
    if isinstance(platform.get("system"), str):
        found.append(("platform.system", platform["system"], platform["system"]))
    runner_os = github.get("runner_os")
    if isinstance(runner_os, str):
        found.append(("github.runner_os", runner_os, SYSTEM_OF_RUNNER_OS.get(runner_os, runner_os)))
    return found


def os_problems(document: dict[str, Any], job: dict[str, Any], runner: Any) -> list[str]:
    """The result's OS (platform.system, github.runner_os) against each other, the job's labels (GitHub's
    jobs API) and the runner's set-up lines in the job log."""
    claimed = _result_systems(document)
    views: list[tuple[str, str, str]] = []
    system = labels_system(job.get("labels"))
    if system:
        views.append(("the job's labels (GitHub)", str(job.get("labels")), system))
    views += log_systems(runner)
    problems = []
    if len(claimed) == 2 and claimed[0][2] != claimed[1][2]:
        problems.append(f"github.runner_os is {claimed[1][1]!r}, but platform.system is {claimed[0][1]!r}")
    for field, value, system in claimed:
        problems += [f"{field} is {value!r}, but {where} names {seen} ({said})"
                     for where, said, seen in views if seen != system]
    return problems


def gpu_problems(platform: str, job: dict[str, Any]) -> list[str]:
    """A GPU platform proven from a job that asked for a standard GitHub-hosted image, which has no GPU."""
    label = standard_hosted_label(job.get("labels")) if platform in ("cuda", "rocm") else None
    return [f"the {platform} result came from a job whose labels (GitHub) are {job.get('labels')!r}: "
            f"{label!r} is a standard GitHub-hosted image, which has no GPU"] if label else []


def provenance_problems(document: dict[str, Any], run: dict[str, Any], platform: str) -> list[str]:
    """The result's github.sha, github.workflow_ref and github.job against the run GitHub describes."""
    github = document.get("github") if isinstance(document.get("github"), dict) else None
    if github is None:
        return []
    problems = []
    head = run.get("head_sha")
    # On pull_request events GITHUB_SHA is the merge commit, not the run's head_sha (GitHub's documentation).
    if head and run.get("event") not in _PULL_REQUEST_EVENTS and str(github.get("sha")) != str(head):
        problems.append(f"github.sha is {github.get('sha')!r}, but the run's head_sha (GitHub) is {head!r}")
    ref = github.get("workflow_ref")
    repository = run.get("repository")
    if isinstance(ref, str) and repository:
        # GITHUB_WORKFLOW_REF is `<owner>/<repo>/<path>@<ref>` of the run's own (top-level) workflow, also
        # inside a reusable workflow; owner and repository names are case-insensitive on GitHub.
        named, _, _ = ref.partition("@")
        path = str(run.get("workflow_path") or "")
        if not named.lower().startswith(f"{str(repository).lower()}/"):
            problems.append(f"github.workflow_ref is {ref!r}, but the run's repository (GitHub) is {repository!r}")
        elif path.startswith(".github/") and named[len(str(repository)) + 1:] != path:
            problems.append(f"github.workflow_ref is {ref!r}, but the run's workflow path (GitHub) is {path!r}")
    elif ref is not None and not isinstance(ref, str):
        problems.append(f"github.workflow_ref is {ref!r}, not a workflow ref")
    job = github.get("job")
    if isinstance(job, str) and job in PLATFORMS and job != platform:
        problems.append(f"github.job is {job!r}, but the result came from the {platform} job")
    return problems


def log_problems(job: dict[str, Any], log: dict[str, Any]) -> list[str]:
    """A job log read back must be the runner's log of THIS job: it starts with the runner's set-up lines
    (`Current runner version`, `Complete job name:`), and the name there is the job's (its last segment:
    a reusable workflow's jobs are `<caller> / <callee>` in the API)."""
    if log.get("status") != "ok":
        return []
    runner = log.get("runner") if isinstance(log.get("runner"), dict) else {}
    if not runner.get("runner_version") and not runner.get("job_name"):
        return ["the job log has no runner set-up lines ('Current runner version', 'Complete job name'): it is "
                "not a job log as the runner writes one"]
    named, name = runner.get("job_name"), str(job.get("name", ""))
    if named and str(named).rsplit(" / ", 1)[-1].strip() != name.rsplit(" / ", 1)[-1].strip():
        return [f"the job log's 'Complete job name' is {named!r}, but the job's name (GitHub) is {name!r}"]
    return []


def _time(value: Any) -> datetime | None:
    """An ISO 8601 time, aware (a stamp without an offset is taken as UTC, so two stamps always compare)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def artifact_problems(job: dict[str, Any], listed: dict[str, Any] | None) -> list[str]:
    """The artifact was uploaded by the job: GitHub's created_at lies inside the job's window."""
    if not listed or not listed.get("created_at"):
        return []
    created, start, end = _time(listed["created_at"]), _time(job.get("started_at")), _time(job.get("completed_at"))
    if created is None:
        return [f"the artifact's created_at (GitHub) is {listed['created_at']!r}, not a time"]
    if start is not None and created < start - ARTIFACT_SLACK:
        return [f"the artifact's created_at (GitHub) is {listed['created_at']!r}, before the job's started_at "
                f"(GitHub) {job.get('started_at')!r}"]
    if end is not None and created > end + ARTIFACT_SLACK:
        return [f"the artifact's created_at (GitHub) is {listed['created_at']!r}, after the job's completed_at "
                f"(GitHub) {job.get('completed_at')!r}"]
    return []
