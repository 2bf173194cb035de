"""Index of one GitHub Actions run: its platform jobs, their logs, their artifacts and results.

Listing the run, its jobs and its artifacts must succeed (otherwise there is nothing to index: an
error, exit 2). After that, each download that fails for good (a 410 expired artifact, a missing
log, a refused zip) is recorded on its platform and counts against the verdict; the rest goes on.
"""

from __future__ import annotations

import platform as host_platform
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from core.provenance import git_state

from . import PLATFORMS
from .common import FetchError, InputError, is_safe_relative, sha256_file
from .github import GitHubClient
from .logparse import LogScanner
from .results import MAX_RESULT_BYTES, REPO_ROOT, read_result, read_result_bytes, too_large
from .sources import digest_of_files, hash_sources, indexer_files
from .statement import make_statement, now_utc
from .verdict import decide_run
from .zipsafe import Caps, UnsafeArchive, safe_extract

REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass
class BuildOptions:
    repository: str
    run_id: str
    attempt: int | None = None
    artifacts_dir: Path | None = None
    logs_dir: Path | None = None
    download_dir: Path | None = None
    source_root: Path | None = None
    platforms: list[str] | None = None  # the plan's selection: each must have run
    max_log_bytes: int = 512 * 1024**2
    max_zip_bytes: int = 1024**3
    caps: Caps = field(default_factory=Caps)


def artifact_name(platform: str, attempt: int | str) -> str:
    """The name each platform job uploads its results under (fixed with the workflow)."""
    return f"platform-runtime-{platform}-attempt-{attempt}"


def platform_of(job_name: str) -> str | None:
    """`linux`, or `platform-runtime / linux` through a reusable workflow: the last segment names it."""
    last = job_name.rsplit(" / ", 1)[-1].strip()
    return last if last in PLATFORMS else None


def _duration(job: dict[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(job["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(job["completed_at"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return round((end - start).total_seconds(), 3)


def check_options(options: BuildOptions) -> None:
    """Every user mistake found before the first request, so nothing is half-done."""
    if not REPOSITORY.match(options.repository):
        raise InputError(f"--repository must be OWNER/NAME, got {options.repository!r}")
    if not str(options.run_id).isdigit():
        raise InputError(f"--run-id must be a number, got {options.run_id!r}")
    if options.attempt is not None and options.attempt < 1:
        raise InputError("--attempt must be 1 or more")
    if options.artifacts_dir is not None and not options.artifacts_dir.is_dir():
        raise InputError(f"--artifacts-dir {options.artifacts_dir} is not a folder")
    if options.source_root is not None and not options.source_root.is_dir():
        raise InputError(f"--source-root {options.source_root} is not a folder")
    if options.download_dir is not None and options.download_dir.exists() and any(options.download_dir.iterdir()):
        raise InputError(f"--download-dir {options.download_dir} is not empty")


def build_run_index(client: GitHubClient, options: BuildOptions,
                    progress: Callable[[str], None] = lambda message: None) -> dict[str, Any]:
    check_options(options)
    base = f"/repos/{options.repository}/actions/runs/{options.run_id}"
    run, _ = client.get_json(base)
    if not isinstance(run, dict):
        raise FetchError(f"{base}: the answer is not a workflow run object")
    latest = run.get("run_attempt")
    attempt = options.attempt or (latest if isinstance(latest, int) and latest > 0 else 1)
    jobs_path = f"{base}/attempts/{attempt}/jobs" if options.attempt else f"{base}/jobs?filter=latest"
    # Items that are not objects are dropped here rather than crashing later; they cannot be evidence.
    jobs = [job for job in client.paginate(jobs_path, "jobs") if isinstance(job, dict)]
    artifacts = [a for a in client.paginate(f"{base}/artifacts", "artifacts") if isinstance(a, dict)]
    progress(f"run {options.run_id} attempt {attempt}: {len(jobs)} jobs, {len(artifacts)} artifacts")

    subjects: dict[str, str] = {}
    temporary = None
    download_dir = options.download_dir
    if options.artifacts_dir is None and download_dir is None:
        temporary = download_dir = Path(tempfile.mkdtemp(prefix="evidence-artifacts-"))
    try:
        platforms, other_jobs = [], []
        for job in jobs:
            name = str(job.get("name", ""))
            platform = platform_of(name)
            if platform is None:
                other_jobs.append({"id": job.get("id"), "name": name, "conclusion": job.get("conclusion")})
                continue
            entry = _job_entry(job, platform)
            if entry["selected"]:
                progress(f"{platform}: job {job.get('id')} {job.get('conclusion')}")
                entry["log"] = _fetch_log(client, options, job, platform, subjects)
                entry["artifact"], entry["results"] = _artifact(client, options, download_dir, artifacts, entry,
                                                                subjects, attempt)
                entry["runner"] = _runner(entry)
            platforms.append(entry)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)

    claimed_paths = {path for entry in platforms for result in entry.get("results", [])
                     if result.get("kind") == "gate" for path in (result.get("source_files") or {})}
    source_root: dict[str, Any] = {"given": options.source_root is not None}
    if options.source_root is not None:
        source_root["git"] = git_state(options.source_root)
        source_root["resolved"] = {}
        source_root["files"] = hash_sources(options.source_root, claimed_paths, source_root["resolved"])
        source_root["files_sha256"] = digest_of_files(source_root["files"])
    predicate: dict[str, Any] = {
        "kind": "github-run",
        "built_at": now_utc(),
        "indexer": {"files": indexer_files(REPO_ROOT), "python": host_platform.python_version()},
        "run": _run_record(run, options, attempt),
        "source_root": source_root,
        "required_platforms": options.platforms,
        "platforms": platforms,
        "other_jobs": other_jobs,
        "artifacts": [_artifact_record(a) for a in artifacts],
    }
    predicate["verdict"] = decide_run(predicate)
    return make_statement(subjects, predicate)


def _run_record(run: dict[str, Any], options: BuildOptions, attempt: int) -> dict[str, Any]:
    path = run.get("path")
    ref = run.get("head_branch")
    workflow_ref = f"{options.repository}/{path}@refs/heads/{ref}" if path and ref and "@" not in str(path) else None
    if path and "@" in str(path):
        workflow_ref = f"{options.repository}/{path}"
    return {
        "repository": options.repository,
        "run_id": str(options.run_id),
        "attempt": attempt,
        "latest_attempt": run.get("run_attempt"),
        "workflow_path": path,
        "workflow_ref": workflow_ref,
        "referenced_workflows": [{k: w.get(k) for k in ("path", "sha", "ref")}
                                 for w in run.get("referenced_workflows") or [] if isinstance(w, dict)],
        "head_sha": run.get("head_sha"),
        "head_branch": ref,
        "event": run.get("event"),
        "status": run.get("status"),
        "conclusion": run.get("conclusion"),
        "html_url": run.get("html_url"),
    }


def _artifact_record(artifact: dict[str, Any]) -> dict[str, Any]:
    return {k: artifact.get(k) for k in ("id", "name", "size_in_bytes", "expired", "digest", "created_at",
                                         "expires_at")}


def _job_entry(job: dict[str, Any], platform: str) -> dict[str, Any]:
    record = {k: job.get(k) for k in ("id", "name", "status", "conclusion", "run_attempt", "started_at",
                                      "completed_at", "labels", "html_url", "head_sha")}
    record["duration_s"] = _duration(job)
    return {"platform": platform, "selected": job.get("conclusion") != "skipped", "job": record}


def _runner(entry: dict[str, Any]) -> dict[str, Any]:
    """Where the job ran: image name/version and OS from its log, OS/arch as the gate measured them."""
    setup = (entry.get("log") or {}).get("runner") or {}
    gates = [r for r in entry.get("results", []) if r.get("kind") == "gate"]
    claims = (gates[0].get("claims") or {}) if len(gates) == 1 else {}
    github = claims.get("github") or {}
    measured = claims.get("platform") or {}
    return {
        "image": setup.get("image"), "image_version": setup.get("image_version"), "os_from_log": setup.get("os"),
        "labels": entry["job"].get("labels"), "runner_os": github.get("runner_os"),
        "runner_arch": github.get("runner_arch"), "system": measured.get("system"), "machine": measured.get("machine"),
    }


def _fetch_log(client: GitHubClient, options: BuildOptions, job: dict[str, Any], platform: str,
               subjects: dict[str, str]) -> dict[str, Any]:
    job_id = job.get("id")
    if not isinstance(job_id, int):
        return {"status": "error", "error": "job has no numeric id"}
    name = f"{job_id}-{platform}.log"
    dest = None
    if options.logs_dir is not None:
        options.logs_dir.mkdir(parents=True, exist_ok=True)
        dest = options.logs_dir / name
    try:
        download, scanner = client.download(f"/repos/{options.repository}/actions/jobs/{job_id}/logs", dest,
                                            options.max_log_bytes, consumer=LogScanner)
    except FetchError as error:
        status = {404: "missing", 410: "missing", 413: "too-large"}.get(error.status or 0, "error")
        return {"status": status, "error": client.scrub(str(error)), "subject": None}
    subjects[f"logs/{name}"] = download.sha256
    record: dict[str, Any] = {"status": "ok", "subject": f"logs/{name}", "sha256": download.sha256,
                              "size": download.size, "kept": dest is not None}
    record.update(scanner.result())  # type: ignore[union-attr]
    return record


def _artifact(client: GitHubClient, options: BuildOptions, download_dir: Path | None,
              listed: list[dict[str, Any]], entry: dict[str, Any], subjects: dict[str, str],
              attempt: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    name = artifact_name(entry["platform"], entry["job"].get("run_attempt") or attempt)
    matches = [a for a in listed if a.get("name") == name]
    # Names are unique per run; should the list still repeat one, the newest unexpired copy is the one to read.
    api = next((a for a in reversed(matches) if not a.get("expired")), matches[-1] if matches else None)
    record: dict[str, Any] = {"name": name, "listed": api is not None,
                              "id": api.get("id") if api else None,
                              "api_digest": api.get("digest") if api else None}
    if options.artifacts_dir is not None:
        folder = options.artifacts_dir / name
        if not folder.is_dir():
            record["status"] = "expired" if api and api.get("expired") else "missing"
            record["error"] = "no folder of that name under --artifacts-dir"
            return record, []
        record["status"] = "local"
        return record, _read_folder(folder, f"artifacts/{name}", subjects, record)
    if api is None:
        record["status"] = "missing"
        record["error"] = "not in the run's artifact list"
        return record, []
    if api.get("expired"):
        record["status"] = "expired"
        return record, []
    assert download_dir is not None
    download_dir.mkdir(parents=True, exist_ok=True)
    zip_path = download_dir / f"{name}.zip"
    try:
        download, _ = client.download(f"/repos/{options.repository}/actions/artifacts/{api['id']}/zip", zip_path,
                                      options.max_zip_bytes)
    except FetchError as error:
        record["status"] = {410: "expired", 404: "missing", 413: "too-large"}.get(error.status or 0, "error")
        record["error"] = client.scrub(str(error))
        return record, []
    record.update(zip_sha256=download.sha256, size=download.size, subject=f"artifacts/{name}.zip")
    subjects[f"artifacts/{name}.zip"] = download.sha256
    api_digest = str(api.get("digest") or "")
    record["digest_matches_api"] = api_digest.removeprefix("sha256:") == download.sha256 if api_digest else None
    # Unpacked to disk only when the caller keeps the download folder; otherwise checked and hashed in passing.
    target = download_dir / name if options.download_dir is not None else None
    try:
        entries = safe_extract(zip_path, target, options.caps, keep=_is_result,
                               keep_max=MAX_RESULT_BYTES)
    except UnsafeArchive as error:
        record["status"] = "refused"
        record["error"] = str(error)
        return record, []
    finally:
        if options.download_dir is None:
            zip_path.unlink(missing_ok=True)
    record["status"] = "downloaded"
    record["entries"] = len(entries)
    results = []
    for entry in entries:
        subject = f"artifacts/{name}/{entry.name}"
        subjects[subject] = entry.sha256
        if _is_result(entry.name):
            result = (read_result_bytes(entry.data, entry.name) if entry.data is not None
                      else too_large(entry.name, entry.sha256, entry.size))
            result["subject"] = subject
            results.append(result)
    return record, results


def _is_result(relative: str) -> bool:
    """The artifact's own results are its top-level *.json files; deeper files (a training-run folder's
    config.json) are bound by digest as subjects but are not results to judge."""
    return "/" not in relative and relative.endswith(".json")


def _read_folder(folder: Path, prefix: str, subjects: dict[str, str], record: dict[str, Any]) -> list[dict[str, Any]]:
    """Bind every regular file of an unpacked artifact; read the JSON ones as results. Links are refused."""
    results = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            record.setdefault("refused_entries", []).append(relative)
            continue
        if not path.is_file() or not is_safe_relative(relative):
            continue
        name = f"{prefix}/{relative}"
        if _is_result(relative):
            result = read_result(path, relative)
            result["subject"] = name
            if result.get("sha256"):
                subjects[name] = result["sha256"]
            results.append(result)
        else:
            subjects[name] = sha256_file(path)
    if record.get("refused_entries"):
        record["status"] = "refused"
        record["error"] = f"symbolic links in the artifact: {', '.join(record['refused_entries'][:3])}"
    return results
