"""What the REST API said about a run, as the index records it: the run, its jobs (platform jobs and the
others) and its artifact list. `build` binds those API answers as subjects (`logs/api/*.json`), and the
judge derives these records from them again, so `verify` re-checks them from the bytes too."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from common.fleet import box_of
from common.workflow import is_plan_job, platform_of

API_DOCUMENTS = ("run", "jobs", "artifacts")  # logs/api/<name>.json


def api_subject(name: str) -> str:
    return f"logs/api/{name}.json"


def duration(job: dict[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(job["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(job["completed_at"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return round((end - start).total_seconds(), 3)


def workflow_ref(run: dict[str, Any]) -> str | None:
    """The run's workflow ref as the run itself states it, or None.

    GitHub's description gives `path` as "the full path of the workflow", example
    `octocat/octo-repo/.github/workflows/ci.yml@main`: when `path` has that form it IS the ref. A bare
    `.github/workflows/x.yml` (what runs also answer) says no ref, and none is made up from head_branch:
    that is wrong for tags, pull requests and reusable workflows."""
    path = run.get("path")
    return path if isinstance(path, str) and "@" in path and "/" in path.split("@", 1)[0] else None


def run_record(run: dict[str, Any], repository: str, run_id: str, attempt: int) -> dict[str, Any]:
    path = run.get("path")
    ref = run.get("head_branch")
    return {
        "repository": repository,
        "run_id": str(run_id),
        "attempt": attempt,
        "latest_attempt": run.get("run_attempt"),
        "workflow_path": path,
        "workflow_ref": workflow_ref(run),
        "referenced_workflows": [{k: w.get(k) for k in ("path", "sha", "ref")}
                                 for w in run.get("referenced_workflows") or [] if isinstance(w, dict)],
        "head_sha": run.get("head_sha"),
        "head_branch": ref,
        "event": run.get("event"),
        "status": run.get("status"),
        "conclusion": run.get("conclusion"),
        "html_url": run.get("html_url"),
        "offline": bool(run.get("offline")),
    }


def artifact_record(artifact: dict[str, Any]) -> dict[str, Any]:
    return {k: artifact.get(k) for k in ("id", "name", "size_in_bytes", "expired", "digest", "created_at",
                                         "expires_at")}


def job_entry(job: dict[str, Any], platform: str) -> dict[str, Any]:
    record = {k: job.get(k) for k in ("id", "name", "status", "conclusion", "run_attempt", "started_at",
                                      "completed_at", "labels", "html_url", "head_sha")}
    record["duration_s"] = duration(job)
    entry = {"platform": platform, "selected": job.get("conclusion") != "skipped", "job": record}
    box = box_of(str(job.get("name", "")))
    if box:  # one box of a fleet: its own job, log and artifact
        entry["box"] = box
    return entry


def _attempt_of(job: dict[str, Any]) -> int:
    value = job.get("run_attempt")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def jobs_of_attempt(jobs: list[dict[str, Any]], attempt: Any) -> list[dict[str, Any]]:
    """The jobs attempt `attempt` stands on, from the run's jobs of EVERY attempt (`filter=all`).

    Per job name, its newest execution up to that attempt that ran (not skipped), else its newest. After
    "Re-run failed jobs" a job that passed in attempt 1 is not run again: whether GitHub lists it again
    under attempt N -- as the same record, as a copy under attempt N, or not at all -- is not stated in its
    description, so the attempt's own list is not relied on; this answer is the same in all three cases.
    A job listed twice (same id) counts once, and a copy (a later record of the same name, start, end
    and conclusion: it did not run again) gives way to the execution it copies; API order is kept."""
    limit = attempt if isinstance(attempt, int) and not isinstance(attempt, bool) and attempt > 0 else None
    unique: dict[Any, dict[str, Any]] = {}
    for job in jobs:
        if isinstance(job, dict) and (limit is None or _attempt_of(job) <= limit):
            unique.setdefault(job.get("id") if job.get("id") is not None else id(job), job)
    first_run: dict[tuple[Any, ...], int] = {}
    for job in unique.values():
        if job.get("started_at"):
            ran = (str(job.get("name", "")), job.get("started_at"), job.get("completed_at"), job.get("conclusion"))
            first_run[ran] = min(first_run.get(ran, _attempt_of(job)), _attempt_of(job))
    unique = {key: job for key, job in unique.items() if not job.get("started_at") or _attempt_of(job) == first_run[
        (str(job.get("name", "")), job.get("started_at"), job.get("completed_at"), job.get("conclusion"))]}
    best: dict[str, tuple[bool, int]] = {}
    for job in unique.values():
        rank = (job.get("conclusion") != "skipped", _attempt_of(job))
        name = str(job.get("name", ""))
        best[name] = max(best.get(name, rank), rank)
    return [job for job in unique.values()
            if (job.get("conclusion") != "skipped", _attempt_of(job)) == best[str(job.get("name", ""))]]


def split_jobs(jobs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one entry per platform job, the other jobs by id, name and conclusion), in the API's order."""
    platforms, others = [], []
    for job in jobs:
        if not isinstance(job, dict):
            continue
        name = str(job.get("name", ""))
        platform = platform_of(name)
        if platform is None:
            others.append({"id": job.get("id"), "name": name, "conclusion": job.get("conclusion")})
        else:
            platforms.append(job_entry(job, platform))
    return platforms, others


def plan_job(jobs: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, int]:
    """The plan job (id, name, conclusion) of the workflow call the platform jobs belong to: `plan` beside
    `linux`, `caller / plan` beside `caller / linux` (a caller's own job named `plan` is not it), and how
    many jobs fit (more than one -- two calls of the workflow -- makes the requirement ambiguous); None
    when there is none (not this workflow)."""
    def call_of(name: str) -> str | None:
        return name.rsplit(" / ", 1)[0] if " / " in name else None

    named = [(str(job.get("name", "")), job) for job in jobs if isinstance(job, dict)]
    calls = {call_of(name) for name, _ in named if platform_of(name)}
    fits = [job for name, job in named if is_plan_job(name) and call_of(name) in calls]
    if not fits:
        return None, 0
    job = fits[0]
    return {"id": job.get("id"), "name": job.get("name"), "conclusion": job.get("conclusion")}, len(fits)


def facts_from_api(predicate: dict[str, Any], api: dict[str, Any]) -> None:
    """Rewrite the run, the platform entries' jobs, the other jobs and the artifact list from the bound API
    answers, keeping each platform's recorded log and artifact download (matched by job id)."""
    run = predicate.get("run") or {}
    predicate["run"] = run_record(api.get("run") or {}, run.get("repository"), run.get("run_id"), run.get("attempt"))
    recorded = {(e.get("job") or {}).get("id"): e for e in predicate.get("platforms") or [] if isinstance(e, dict)}
    jobs = jobs_of_attempt(api.get("jobs") or [], run.get("attempt"))
    entries, others = split_jobs(jobs)
    for entry in entries:
        old = recorded.get(entry["job"]["id"]) or {}
        if entry["selected"]:
            entry["log"] = old.get("log") or {"status": "missing", "subject": None, "error": "not in the index"}
            entry["artifact"] = old.get("artifact") or {"name": None, "status": "missing", "error": "not in the index"}
            entry["results"] = old.get("results") or []
    predicate["platforms"] = entries
    predicate["other_jobs"] = others
    job, candidates = plan_job(jobs)
    plan = predicate.get("plan") if isinstance(predicate.get("plan"), dict) else {}
    predicate["plan"] = None if job is None else {
        "job": job, "candidates": candidates,
        "log": plan.get("log") or {"status": "missing", "subject": None, "error": "not in the index"}}
    predicate["artifacts"] = [artifact_record(a) for a in api.get("artifacts") or [] if isinstance(a, dict)]
