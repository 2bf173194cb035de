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
from pathlib import Path
from typing import Any

from common.files import atomic_write_bytes, encode_json, sha256_bytes
from common.provenance import git_state
from common.workflow import PLAN_JOB, job_label, result_artifact_name
from rules.kinds import kind_of

from . import PREDICATE_VERSION
from .checkout_hashes import digest_of_files, hash_sources, indexer_files
from .common import FetchError, InputError, hash_stream, is_safe_relative, newest_first
from .github import GitHubClient
from .index_judge import Observed, judge_run
from .logparse import LogScanner
from .results import MAX_RESULT_BYTES, MAX_SIDECAR_BYTES, REPO_ROOT, SIDECAR_SUFFIX, keep_max, parse_json
from .root_commits import claims_in, commit_facts
from .root_sets import root_facts
from .runfacts import api_subject, artifact_record, jobs_of_attempt, plan_job, run_record, split_jobs
from .statement import make_statement, now_utc
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
    # {platform: {artifact_id, artifact_name, artifact_digest, attempt, job_result}} from the platform jobs'
    # outputs (--platform-artifacts): the artifact is fetched by id, whichever attempt uploaded it.
    platform_artifacts: dict[str, dict[str, Any]] | None = None
    log_patience_s: float = 5.0  # a log that answers 404 right after its job completed is asked again
    # No REST API (act): jobs from --platform-artifacts, artifacts from --artifacts-dir, job logs not read.
    offline: bool = False


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
    if options.source_root is not None:
        root_facts(options.source_root)  # its lists must read as literals, before the first request
    if options.download_dir is not None and options.download_dir.exists() and any(options.download_dir.iterdir()):
        raise InputError(f"--download-dir {options.download_dir} is not empty")
    if options.offline and (options.platform_artifacts is None or options.artifacts_dir is None):
        raise InputError("--offline needs --platform-artifacts and --artifacts-dir (there is no API to ask)")


@dataclass
class _Build:
    """What one build accumulates: the bound files (subjects) and what their bytes hold (observed)."""

    client: GitHubClient
    options: BuildOptions
    listed: list[dict[str, Any]]
    attempt: int
    download_dir: Path | None = None
    subjects: dict[str, str] = field(default_factory=dict)
    observed: Observed = field(default_factory=Observed)


def _list_run(client: GitHubClient, options: BuildOptions,
              progress: Callable[[str], None]) -> tuple[dict[str, Any], list[dict], list[dict], int]:
    """The run, its jobs of EVERY attempt (runfacts.jobs_of_attempt picks each job's newest execution up to
    the attempt: right whether or not GitHub lists carried-over jobs under a re-run's attempt) and its
    artifacts (of every attempt)."""
    base = f"/repos/{options.repository}/actions/runs/{options.run_id}"
    run, _ = client.get_json(base)
    if not isinstance(run, dict):
        raise FetchError(f"{base}: the answer is not a workflow run object")
    latest = run.get("run_attempt")
    attempt = options.attempt or (latest if isinstance(latest, int) and latest > 0 else 1)
    # Items that are not objects are dropped here rather than crashing later; they cannot be evidence.
    jobs = [job for job in client.paginate(f"{base}/jobs?filter=all", "jobs") if isinstance(job, dict)]
    artifacts = [a for a in client.paginate(f"{base}/artifacts", "artifacts") if isinstance(a, dict)]
    progress(f"run {options.run_id} attempt {attempt}: {len(jobs)} jobs, {len(artifacts)} artifacts")
    return run, jobs, artifacts, attempt


def _offline_run(options: BuildOptions) -> tuple[dict[str, Any], list[dict], list[dict], int]:
    """Without an API (act): each platform job as its outputs describe it; the index records `offline`."""
    attempt = options.attempt or 1
    jobs = []
    for platform, given in sorted((options.platform_artifacts or {}).items()):
        job_id = given.get("job_id")
        jobs.append({"id": int(job_id) if str(job_id or "").isdigit() else None, "name": platform,
                     "status": "completed", "conclusion": given.get("job_result"),
                     "run_attempt": _as_int(given.get("attempt")) or attempt})
    return {"run_attempt": attempt, "offline": True}, jobs, [], attempt


def _index_jobs(state: _Build, jobs: list[dict[str, Any]],
                progress: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One entry per platform job (log and artifact bound for each selected one); the other jobs named."""
    platforms, other_jobs = split_jobs(jobs)
    for entry in platforms:
        if entry["selected"]:
            progress(f"{entry['platform']}: job {entry['job']['id']} {entry['job']['conclusion']}")
            entry["log"] = _fetch_log(state, entry["job"], entry["platform"])
            entry["artifact"], entry["results"] = _artifact(state, entry)
    return platforms, other_jobs


def _plan(state: _Build, jobs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The plan job's log, bound: it names the selection in bytes GitHub keeps (the judge reads it back)."""
    job, candidates = plan_job(jobs)
    if job is None or state.options.offline:
        return None
    return {"job": job, "candidates": candidates, "log": _fetch_log(state, job, PLAN_JOB)}


def _bind_api(state: _Build, documents: dict[str, Any]) -> None:
    """The API's answers about the run, its jobs and its artifacts, bound as subjects so the judge can
    derive the job facts from bytes (kept under --logs-dir/api/ when logs are kept)."""
    for name, document in documents.items():
        data = encode_json(document)
        subject = api_subject(name)
        state.subjects[subject] = sha256_bytes(data)
        state.observed.api[name] = document
        if state.options.logs_dir is not None:
            atomic_write_bytes(state.options.logs_dir / "api" / f"{name}.json", data, parents=True)


def _source_root(options: BuildOptions, observed: Observed) -> dict[str, Any]:
    """The head commit's checkout, hashed at the paths the gate results name (read from their bytes), with the
    source lists and result format version its files define (`sets`: every result is judged against them)."""
    root: dict[str, Any] = {"given": options.source_root is not None}
    if options.source_root is None:
        return root
    claimed = set()
    for data, _, _ in observed.json.values():
        document = parse_json(data)
        if kind_of(document) == "gate" and isinstance((document.get("source") or {}).get("files"), dict):
            claimed |= set(document["source"]["files"])
    root["git"] = git_state(options.source_root)
    root["resolved"] = {}
    root["files"] = hash_sources(options.source_root, claimed, root["resolved"])
    root["files_sha256"] = digest_of_files(root["files"])
    root["sets"] = root_facts(options.source_root)
    # What the root's history holds for each commit a gate result names (root_commits, rules.git_provenance).
    root["commits"] = commit_facts(options.source_root, claims_in(data for data, _, _ in observed.json.values()))
    return root


def build_run_index(client: GitHubClient, options: BuildOptions,
                    progress: Callable[[str], None] = lambda message: None) -> dict[str, Any]:
    check_options(options)
    run, jobs, artifacts, attempt = _offline_run(options) if options.offline else _list_run(client, options, progress)
    state = _Build(client, options, artifacts, attempt, options.download_dir)
    temporary = None
    if options.artifacts_dir is None and state.download_dir is None:
        temporary = state.download_dir = Path(tempfile.mkdtemp(prefix="evidence-artifacts-"))
    if not options.offline:
        _bind_api(state, {"run": run, "jobs": jobs, "artifacts": artifacts})
    try:
        chosen = jobs_of_attempt(jobs, attempt)
        platforms, other_jobs = _index_jobs(state, chosen, progress)
        plan = _plan(state, chosen)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    predicate: dict[str, Any] = {
        "kind": "github-run",
        "version": PREDICATE_VERSION,
        "built_at": now_utc(),
        "indexer": {"files": indexer_files(REPO_ROOT), "python": host_platform.python_version()},
        "run": run_record(run, options.repository, options.run_id, attempt),
        "source_root": _source_root(options, state.observed),
        "required_platforms": options.platforms,
        "plan": plan,
        "platforms": platforms,
        "other_jobs": other_jobs,
        "artifacts": [artifact_record(a) for a in artifacts],
    }
    state.observed.digests = {name: sha for name, sha in state.subjects.items() if name.startswith("artifacts/")}
    state.observed.root = options.artifacts_dir or options.download_dir  # unpacked there (a temporary one is gone)
    return make_statement(state.subjects, judge_run(predicate, state.observed))


def _fetch_log(state: _Build, job: dict[str, Any], platform: str) -> dict[str, Any]:
    """Stream one job log into its SHA-256 and the log scanner (the judge reads the scan)."""
    job_id = job.get("id")
    options, client = state.options, state.client
    if options.offline:
        return {"status": "offline", "subject": None, "error": "not read: --offline, no REST API (act)"}
    if not isinstance(job_id, int):
        return {"status": "error", "error": "job has no numeric id", "subject": None}
    name = f"{job_id}-{platform}.log"
    dest = None
    if options.logs_dir is not None:
        options.logs_dir.mkdir(parents=True, exist_ok=True)
        dest = options.logs_dir / name
    try:
        download, scanner = client.download(f"/repos/{options.repository}/actions/jobs/{job_id}/logs", dest,
                                            options.max_log_bytes, consumer=LogScanner,
                                            patience=options.log_patience_s)
    except FetchError as error:
        status = {404: "missing", 410: "missing", 413: "too-large"}.get(error.status or 0, "error")
        return {"status": status, "error": client.redact_token(str(error)), "subject": None}
    subject = f"logs/{name}"
    state.subjects[subject] = download.sha256
    state.observed.logs[subject] = scanner.result()  # type: ignore[union-attr]
    return {"status": "ok", "subject": subject, "sha256": download.sha256, "size": download.size,
            "kept": dest is not None}


def _locate(state: _Build, entry: dict[str, Any]) -> dict[str, Any]:
    """Which artifact holds this platform's evidence: by the id its job exported (--platform-artifacts,
    which survives re-runs), otherwise by the name of this job's attempt in the run's list."""
    platform = entry["platform"]
    given = (state.options.platform_artifacts or {}).get(job_label(platform, entry.get("box")))
    if given is not None and entry.get("box") and not given.get("artifact_id"):
        given = None  # a fleet box's artifact is found by its name (a matrix job's outputs name one box only)
    if given is not None and not given.get("artifact_name") and not given.get("artifact_id"):
        return {"name": None, "listed": False, "id": None, "api_digest": None, "expired": False,
                "from_attempt": _as_int(given.get("attempt")), "job_result": given.get("job_result"),
                "job_output_digest": None, "located_by": "id"}
    if given is not None:
        listed = next((a for a in state.listed if str(a.get("id")) == str(given.get("artifact_id"))), None)
        return {"name": given.get("artifact_name"), "listed": listed is not None,
                "id": _as_int(given.get("artifact_id")),
                "api_digest": listed.get("digest") if listed else None,
                "expired": bool(listed and listed.get("expired")),
                "from_attempt": _as_int(given.get("attempt")), "job_result": given.get("job_result"),
                "job_output_digest": given.get("artifact_digest"), "located_by": "id"}
    name = result_artifact_name(platform, entry.get("box"), entry["job"].get("run_attempt") or state.attempt)
    # Names are unique per run; should the list still repeat one, the newest unexpired copy (by created_at:
    # the list's order is not age, its documented default is direction=desc) is the one to read.
    matches = newest_first(a for a in state.listed if a.get("name") == name)
    api = next((a for a in matches if not a.get("expired")), matches[0] if matches else None)
    return {"name": name, "listed": api is not None, "id": api.get("id") if api else None,
            "api_digest": api.get("digest") if api else None, "expired": bool(api and api.get("expired")),
            "from_attempt": entry["job"].get("run_attempt") or state.attempt, "located_by": "name"}


def _as_int(value: Any) -> Any:
    """Job outputs are strings: an attempt "2" is recorded as 2, anything else as given."""
    if value in (None, ""):
        return None
    return int(value) if isinstance(value, str) and value.isdigit() else value


def _artifact(state: _Build, entry: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Bind one platform's artifact: every file a subject, every JSON's bytes kept for the judge."""
    record = _locate(state, entry)
    expired = record.pop("expired")
    if record["name"] is None:
        record["status"] = "missing"
        record["error"] = "the platform job's outputs name no artifact"
        return record, []
    if state.options.artifacts_dir is not None:
        folder = state.options.artifacts_dir / str(record["name"])
        if not folder.is_dir():
            record["status"] = "expired" if expired else "missing"
            record["error"] = "no folder of that name under --artifacts-dir"
            return record, []
        record["status"] = "local"
        _read_folder(state, folder, f"artifacts/{record['name']}", record)
        return record, []
    if record["id"] is None:
        record["status"] = "missing"
        record["error"] = "not in the run's artifact list"
        return record, []
    if expired:
        record["status"] = "expired"
        return record, []
    zip_path = _download_zip(state, record)
    if zip_path is not None:
        _unpack(state, zip_path, record)
    return record, []


def _download_zip(state: _Build, record: dict[str, Any]) -> Path | None:
    """The zip by id (302 to the blob host, no token there), hashed as stored (index_judge.py compares it with the
    digests GitHub listed and the platform job exported)."""
    options, client = state.options, state.client
    assert state.download_dir is not None
    state.download_dir.mkdir(parents=True, exist_ok=True)
    zip_path = state.download_dir / f"{record['name']}.zip"
    try:
        download, _ = client.download(f"/repos/{options.repository}/actions/artifacts/{record['id']}/zip", zip_path,
                                      options.max_zip_bytes)
    except FetchError as error:
        record["status"] = {410: "expired", 404: "missing", 413: "too-large"}.get(error.status or 0, "error")
        record["error"] = client.redact_token(str(error))
        return None
    record.update(zip_sha256=download.sha256, size=download.size, subject=f"artifacts/{record['name']}.zip")
    state.subjects[record["subject"]] = download.sha256  # compared with the digests by the judge
    state.observed.zips[record["subject"]] = download.sha256
    return zip_path


def _unpack(state: _Build, zip_path: Path, record: dict[str, Any]) -> None:
    """Check and hash every entry; unpacked to disk only when the caller keeps the download folder."""
    keep_dir = state.options.download_dir is not None
    target = state.download_dir / str(record["name"]) if keep_dir and state.download_dir else None
    try:
        entries = safe_extract(zip_path, target, state.options.caps, keep=lambda name: keep_max(name) > 0,
                               keep_max=MAX_RESULT_BYTES)
    except UnsafeArchive as error:
        record["status"] = "refused"
        record["error"] = str(error)
        return
    finally:
        if not keep_dir:
            zip_path.unlink(missing_ok=True)
    record["status"] = "downloaded"
    record["entries"] = len(entries)
    for entry in entries:
        subject = f"artifacts/{record['name']}/{entry.name}"
        state.subjects[subject] = entry.sha256
        if entry.name.endswith(".json"):
            state.observed.json[subject] = (entry.data, entry.sha256, entry.size)
        elif entry.name.endswith(SIDECAR_SUFFIX) and entry.data is not None and entry.size <= MAX_SIDECAR_BYTES:
            state.observed.sidecars[subject] = entry.data


def _read_folder(state: _Build, folder: Path, prefix: str, record: dict[str, Any]) -> None:
    """Bind every regular file of an unpacked artifact (JSON bytes kept for the judge). Links are refused."""
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            record.setdefault("refused_entries", []).append(relative)
            continue
        if not path.is_file() or not is_safe_relative(relative):
            continue
        name = f"{prefix}/{relative}"
        with open(path, "rb") as stream:
            sha256, size, data = hash_stream(stream, keep_max(relative))
        state.subjects[name] = sha256
        if relative.endswith(".json"):
            state.observed.json[name] = (data, sha256, size)
        elif relative.endswith(SIDECAR_SUFFIX) and data is not None:
            state.observed.sidecars[name] = data
    if record.get("refused_entries"):
        record["status"] = "refused"
        record["error"] = f"symbolic links in the artifact: {', '.join(record['refused_entries'][:3])}"
