"""A GitHub-shaped REST server on loopback, for tests and for local runs of the evidence job.

It answers with the REST API's real response shapes for what the evidence index reads:

    GET /repos/{o}/{r}/actions/runs/{run_id}                          the run (head_sha, event, path, run_attempt)
    GET /repos/{o}/{r}/actions/runs/{run_id}/attempts/{n}             the run as of attempt n (404 past it)
    GET /repos/{o}/{r}/actions/runs/{run_id}/jobs?filter=latest|all   jobs, paginated with Link headers
    GET /repos/{o}/{r}/actions/runs/{run_id}/attempts/{n}/jobs        jobs of one attempt (404 past the last)
    GET /repos/{o}/{r}/actions/jobs/{job_id}/logs                     302 to the blob host (404 if none)
    GET /repos/{o}/{r}/actions/runs/{run_id}/artifacts?name=&direction=  artifacts, newest first by default
    GET /repos/{o}/{r}/actions/artifacts/{id}                         one artifact (404 if none)
    GET /repos/{o}/{r}/actions/artifacts/{id}/zip                     302 to the blob host, 410 if expired

Every body fits the schema GitHub's description gives for that operation and status
(tests/evidence_index/github-api/, checked by test_fake_github_schema.py over `fake.responses`).
Re-runs: each job carries the attempt it ran in (`run_attempt`); what an attempt's job list shows of
the jobs that were NOT re-run in it is not stated in the description, so `carry_over` offers each:
"listed" (attempt N lists them as they are, with their own attempt), "copied" (attempt N lists a copy
of each: a new id, run_attempt N, the same name, times, conclusion and log) or "omitted" (attempt N
lists only the jobs that ran in it). `filter=all` lists every execution of every attempt, copies included.

Pagination links use GitHub's `/repositories/{id}/...` form, as the real API does. Logs and zips live
on a SECOND server (another port: another origin) behind signed URLs valid `blob_ttl` seconds; that
server records every request's headers, so a test can assert it never saw `Authorization`. The API
demands `Authorization: Bearer <token>` (401 otherwise). Faults are queued per path: 429 with
retry-after, 500 once, 403 secondary rate limit, a truncated body.

Importable (FakeGitHub, FakeJob, FakeArtifact, Fault, runner_log, gate_result, make_zip,
standard_run) and runnable: `python tests/evidence_index/fake_github.py --source-root . --platforms linux,windows`
serves a passing run and prints the GITHUB_API_URL to use.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime as dt
import gzip
import hashlib
import io
import json
import re
import secrets
import stat
import threading
import time
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.evidence_index import fake_github_shapes as shapes

DEFAULT_TOKEN = "ghs_FAKEtoken0123456789abcdefghijklmnopqrs"
REPOSITORY = "kernodeck/platform-runtime"
REPO_ID = shapes.REPO_ID
CARRY_OVER = ("listed", "copied", "omitted")
COPY_ID_OFFSET = 10**10  # a copied job's id: its original's plus this times the attempt


# ---------------------------------------------------------------------------------------------------
# What the server serves


@dataclass
class FakeJob:
    id: int
    name: str
    conclusion: str | None = "success"
    status: str = "completed"
    run_attempt: int = 1
    labels: list[str] = field(default_factory=lambda: ["ubuntu-24.04"])
    log: bytes | Path | None = b""  # None: the log is gone (404)
    started_at: str = "2026-08-24T10:00:05Z"
    completed_at: str = "2026-08-24T10:03:41Z"


def job_times(*documents: bytes | dict[str, Any]) -> dict[str, str]:
    """started_at / completed_at of the job that made these gate results, as GitHub would answer them: from a
    few seconds before the first run started to a minute after the last one ended (GitHub's clock, not the
    gate's). A job that uploaded a real result made now ran now; the index judges the result by that window."""
    spans = []
    for document in documents:
        parsed = json.loads(document) if isinstance(document, bytes) else document
        try:
            start = dt.datetime.fromisoformat(str(parsed["started_at"]).replace("Z", "+00:00"))
            spans.append((start, start + dt.timedelta(seconds=float(parsed.get("duration_s") or 0))))
        except (KeyError, TypeError, ValueError):
            continue
    if not spans:
        return {"started_at": FakeJob.started_at, "completed_at": FakeJob.completed_at}
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {"started_at": (min(s for s, _ in spans) - dt.timedelta(seconds=5)).strftime(stamp),
            "completed_at": (max(e for _, e in spans) + dt.timedelta(seconds=60)).strftime(stamp)}


@dataclass
class FakeArtifact:
    id: int
    name: str
    content: bytes | Path  # the zip's bytes, or a file holding them
    expired: bool = False
    digest: str | None = "auto"  # "auto": sha256 of content, as upload-artifact v4 records it; None: absent
    created_at: str | None = None  # None: shortly before its job completed (FakeGitHub.created_at_of)

    def size(self) -> int:
        return self.content.stat().st_size if isinstance(self.content, Path) else len(self.content)

    def sha256(self) -> str:
        if isinstance(self.content, Path):
            digest = hashlib.sha256()
            with open(self.content, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            return digest.hexdigest()
        return hashlib.sha256(self.content).hexdigest()


@dataclass
class Fault:
    """Answer `status` instead of the real response, `times` times, to GETs whose path matches `path`."""

    path: str  # a regular expression searched in the request path
    status: int
    times: int = 1
    host: str = "api"  # "api" or "blob"
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"message": "Server Error"}'
    truncate: bool = False  # serve the real body cut in half with the full Content-Length


@dataclass
class Recorded:
    host: str
    path: str
    headers: dict[str, str]
    status: int = 0
    body: bytes = b""  # what was answered (API host only; blob bodies are not kept)
    route: str = ""  # the API path as /repos/{o}/{r}/..., without a GHES prefix
    response_headers: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------
# The two servers


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeGitHub
    host_kind: str

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        record = Recorded(self.host_kind, self.path, {k.lower(): v for k, v in self.headers.items()})
        self._record_of_this_request = record
        if self.host_kind == "api":
            record.route = self.fake._route_of(urlsplit(self.path).path)
        self.fake._record(record)
        fault = self.fake._take_fault(self.host_kind, urlsplit(self.path).path)
        if fault is not None and not fault.truncate:
            record.status = fault.status
            self._send(fault.status, fault.body, {"Content-Type": "application/json", **fault.headers})
            return
        if self.host_kind == "api":
            self.fake._api(self, record, truncate=fault is not None)
        else:
            self.fake._blob(self, record, truncate=fault is not None)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        record = getattr(self, "_record_of_this_request", None)
        if record is not None and self.host_kind == "api":
            record.status, record.body = status, body
            record.response_headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, document: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(document).encode()
        self._send(status, body, {"Content-Type": "application/json; charset=utf-8",
                                  "X-GitHub-Api-Version-Selected": "2022-11-28",
                                  "x-ratelimit-limit": "1000", "x-ratelimit-remaining": "999",
                                  "x-ratelimit-reset": str(int(time.time()) + 3600), **(headers or {})})

    def _send_payload(self, content: bytes | Path, content_type: str, truncate: bool, gzip_it: bool = False) -> None:
        if gzip_it and "gzip" in self.headers.get("accept-encoding", ""):
            content = gzip.compress(content.read_bytes() if isinstance(content, Path) else content)
        size = content.stat().st_size if isinstance(content, Path) else len(content)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if gzip_it:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        limit = size // 2 if truncate else size
        if isinstance(content, Path):
            self.wfile.flush()
            with open(content, "rb") as handle:
                self.connection.sendfile(handle, 0, limit)  # zero-copy: the benchmark serves GBs
        else:
            self.wfile.write(content[:limit])
        if truncate:
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeGitHub:
    """The API server plus its blob server; use as a context manager or call start()/stop()."""

    def __init__(self, *, token: str | None = DEFAULT_TOKEN, repository: str = REPOSITORY, run_id: int = 17320001234,
                 run_attempt: int = 1, head_sha: str = "1928efbf98b33bc87fea7962539525f57a349d25",
                 event: str = "workflow_dispatch", workflow_path: str = ".github/workflows/platform-runtime.yml",
                 head_branch: str = "main", blob_ttl: float = 60.0, carry_over: str = "listed") -> None:
        if carry_over not in CARRY_OVER:
            raise ValueError(f"carry_over must be one of {CARRY_OVER}")
        self.token = token
        self.repository = repository
        self.run_id = run_id
        self.run_attempt = run_attempt
        self.head_sha = head_sha
        self.event = event
        self.workflow_path = workflow_path
        self.head_branch = head_branch
        self.carry_over = carry_over
        self.status, self.conclusion = "in_progress", None  # the evidence job reads its own run
        self.referenced_workflows: list[dict[str, str]] = []
        self.blob_ttl = blob_ttl
        self.gzip_blobs = False  # serve blobs with Content-Encoding: gzip, as some blob stores do
        self.api_prefix = ""  # "/api/v3": the REST API under a path, as GitHub Enterprise Server serves it
        self.jobs: list[FakeJob] = []
        self.attempt_jobs: dict[int, list[FakeJob]] = {}  # more jobs (of any attempt), beside self.jobs
        self.artifacts: list[FakeArtifact] = []
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._blobs: dict[str, tuple[bytes | Path, str, float]] = {}
        self._servers: list[_Server] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        for kind in ("api", "blob"):
            handler = type(f"{kind.title()}Handler", (_Handler,), {"fake": self, "host_kind": kind})
            server = _Server(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, name=f"fake-github-{kind}", daemon=True).start()
            self._servers.append(server)
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers = []

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}{self.api_prefix}"

    @property
    def blob_url(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    # -- what tests look at ---------------------------------------------------------------------

    def blob_saw_authorization(self) -> bool:
        return any("authorization" in r.headers for r in self.requests if r.host == "blob")

    def count(self, host: str, pattern: str) -> int:
        return sum(1 for r in self.requests if r.host == host and re.search(pattern, r.path))

    # -- internals ------------------------------------------------------------------------------

    def _record(self, record: Recorded) -> None:
        with self._lock:
            self.requests.append(record)

    def _take_fault(self, host: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.host == host and fault.times > 0 and re.search(fault.path, path):
                    fault.times -= 1
                    return fault
        return None

    def _sign(self, content: bytes | Path, content_type: str, kind: str) -> str:
        key = secrets.token_hex(8)
        expiry = time.time() + self.blob_ttl
        with self._lock:
            self._blobs[key] = (content, content_type, expiry)
        signature = secrets.token_urlsafe(24)
        return (f"{self.blob_url}/actions-results/{kind}/{key}?sv=2025-01-05&se={int(expiry)}&sp=r"
                f"&rsct={content_type.split(';')[0].replace('/', '%2F')}&sig={signature}")

    def _blob(self, handler: _Handler, record: Recorded, truncate: bool) -> None:
        parts = urlsplit(handler.path)
        key = parts.path.rsplit("/", 1)[-1]
        with self._lock:
            entry = self._blobs.get(key)
        query = parse_qs(parts.query)
        if entry is None or "sig" not in query:
            record.status = 404
            handler._send(404, b"<?xml version=\"1.0\"?><Error><Code>BlobNotFound</Code></Error>",
                          {"Content-Type": "application/xml"})
            return
        content, content_type, expiry = entry
        if time.time() > expiry:
            record.status = 403
            handler._send(403, b"<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed</Code>"
                               b"<Message>Signed expiry time has passed</Message></Error>",
                          {"Content-Type": "application/xml"})
            return
        record.status = 200
        handler._send_payload(content, content_type, truncate, gzip_it=self.gzip_blobs)

    def _route_of(self, path: str) -> str:
        """A request path as /repos/{o}/{r}/...: without a GHES prefix, and the /repositories/{id}/... form
        (what GitHub's Link headers use) named as the same repository."""
        if self.api_prefix:
            path = path[len(self.api_prefix):] if path.startswith(self.api_prefix + "/") else "/not-under-prefix"
        return re.sub(rf"^/repositories/{REPO_ID}/", f"/repos/{self.repository}/", path)

    def _api(self, handler: _Handler, record: Recorded, truncate: bool) -> None:
        if self.token is not None and record.headers.get("authorization") != f"Bearer {self.token}":
            handler._send_json(shapes.error(401, "Bad credentials"), 401)
            return
        parts = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = record.route
        prefix = f"/repos/{self.repository}/actions"
        run = rf"{prefix}/runs/{self.run_id}"
        routes = [
            (rf"^{run}$", lambda m: handler._send_json(shapes.workflow_run(self, self.run_attempt))),
            (rf"^{run}/attempts/(\d+)$", lambda m: self._attempt(handler, int(m.group(1)))),
            (rf"^{run}/jobs$", lambda m: self._page(handler, path, query, "jobs", self._jobs_listed(None, query))),
            (rf"^{run}/attempts/(\d+)/jobs$", lambda m: self._attempt_jobs(handler, path, query, int(m.group(1)))),
            (rf"^{run}/artifacts$",
             lambda m: self._page(handler, path, query, "artifacts", self._artifacts_listed(query))),
            (rf"^{prefix}/jobs/(\d+)/logs$", lambda m: self._log_redirect(handler, int(m.group(1)))),
            (rf"^{prefix}/artifacts/(\d+)$", lambda m: self._artifact(handler, int(m.group(1)))),
            (rf"^{prefix}/artifacts/(\d+)/zip$", lambda m: self._zip_redirect(handler, int(m.group(1)))),
        ]
        for pattern, action in routes:
            match = re.match(pattern, path)
            if match:
                action(match)
                return
        handler._send_json(shapes.error(404, "Not Found"), 404)

    # -- what each operation lists --------------------------------------------------------------

    def _all_jobs(self) -> list[FakeJob]:
        """Every execution of every job, of every attempt."""
        return self.jobs + [job for jobs in self.attempt_jobs.values() for job in jobs]

    def _executions(self) -> list[FakeJob]:
        """Every job record: each execution, plus, with carry_over "copied", each attempt's copies."""
        jobs = self._all_jobs()
        if self.carry_over != "copied":
            return jobs
        copies = [dataclasses.replace(job, id=job.id + COPY_ID_OFFSET * attempt, run_attempt=attempt)
                  for attempt in range(2, self.run_attempt + 1) for job in self._carried(jobs, attempt)]
        return jobs + copies

    @staticmethod
    def _carried(jobs: list[FakeJob], attempt: int) -> list[FakeJob]:
        """The jobs not re-run in `attempt`, each as its newest earlier execution."""
        names = {job.name for job in jobs if job.run_attempt == attempt}
        earlier: dict[str, FakeJob] = {}
        for job in jobs:
            if job.run_attempt < attempt and job.name not in names:
                if job.name not in earlier or job.run_attempt >= earlier[job.name].run_attempt:
                    earlier[job.name] = job
        return [job for job in jobs if earlier.get(job.name) is job]

    def _jobs_listed(self, attempt: int | None, query: dict[str, str]) -> list[dict[str, Any]]:
        """filter=all: every execution; filter=latest (the default) and /attempts/{n}/jobs: one attempt's."""
        if attempt is None and query.get("filter", "latest") == "all":
            return [shapes.job(self, job) for job in self._executions()]
        attempt = self.run_attempt if attempt is None else attempt
        listed = [job for job in self._executions() if job.run_attempt == attempt]
        if self.carry_over == "listed":
            carried = self._carried(self._all_jobs(), attempt)
            listed = [job for job in self._all_jobs() if job in listed or job in carried]
        return [shapes.job(self, job) for job in listed]

    def created_at_of(self, artifact: FakeArtifact) -> str:
        """An artifact's created_at: as given, else 11 s before the job that uploaded it completed (the job
        named in the artifact's name, `platform-runtime-<platform>-...`; else the last job to complete). GitHub
        creates an artifact while its job's upload step runs, inside the job's window."""
        if artifact.created_at is not None:
            return artifact.created_at
        done = [job for job in self._all_jobs() if job.status == "completed" and job.completed_at]
        mine = [job for job in done if f"-{job.name.rsplit(' / ', 1)[-1].split(' ')[0]}-" in artifact.name] or done
        if not mine:
            return "2026-08-24T10:03:30Z"
        end = max(dt.datetime.fromisoformat(job.completed_at.replace("Z", "+00:00")) for job in mine)
        return (end - dt.timedelta(seconds=11)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _attempt(self, handler: _Handler, attempt: int) -> None:
        if not 1 <= attempt <= self.run_attempt:
            handler._send_json(shapes.error(404, "Not Found"), 404)
            return
        handler._send_json(shapes.workflow_run(self, attempt))

    def _attempt_jobs(self, handler: _Handler, path: str, query: dict[str, str], attempt: int) -> None:
        if not 1 <= attempt <= self.run_attempt:  # the description's 404 for this operation
            handler._send_json(shapes.error(404, "Not Found"), 404)
            return
        self._page(handler, path, query, "jobs", self._jobs_listed(attempt, query))

    def _artifacts_listed(self, query: dict[str, str]) -> list[dict[str, Any]]:
        """`name` filters; `direction` (desc by default, as described) orders by created_at."""
        chosen = [a for a in self.artifacts if "name" not in query or a.name == query["name"]]
        chosen.sort(key=lambda a: (self.created_at_of(a), a.id), reverse=query.get("direction", "desc") != "asc")
        return [shapes.artifact(self, a) for a in chosen]

    def _page(self, handler: _Handler, path: str, query: dict[str, str], key: str, items: list[Any]) -> None:
        per_page = max(1, min(100, int(query.get("per_page", "30"))))
        page = max(1, int(query.get("page", "1")))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        base = path.replace(f"/repos/{self.repository}/", f"/repositories/{REPO_ID}/")
        extra = "".join(f"&{k}={v}" for k, v in query.items() if k not in ("per_page", "page"))
        if page < last:
            links.append(f'<{self.api_url}{base}?per_page={per_page}{extra}&page={page + 1}>; rel="next"')
            links.append(f'<{self.api_url}{base}?per_page={per_page}{extra}&page={last}>; rel="last"')
        if page > 1:
            links.insert(0, f'<{self.api_url}{base}?per_page={per_page}{extra}&page={page - 1}>; rel="prev"')
            links.append(f'<{self.api_url}{base}?per_page={per_page}{extra}&page=1>; rel="first"')
        headers = {"Link": ", ".join(links)} if links else {}
        handler._send_json({"total_count": len(items), key: chunk}, headers=headers)

    def _log_redirect(self, handler: _Handler, job_id: int) -> None:
        job = next((j for j in self._executions() if j.id == job_id), None)
        if job is None or job.log is None:
            handler._send_json(shapes.error(404, "Not Found"), 404)
            return
        handler._send(302, b"", {"Location": self._sign(job.log, "text/plain; charset=utf-8", "logs")})

    def _artifact(self, handler: _Handler, artifact_id: int) -> None:
        artifact = next((a for a in self.artifacts if a.id == artifact_id), None)
        if artifact is None:
            handler._send_json(shapes.error(404, "Not Found"), 404)
            return
        handler._send_json(shapes.artifact(self, artifact))

    def _zip_redirect(self, handler: _Handler, artifact_id: int) -> None:
        artifact = next((a for a in self.artifacts if a.id == artifact_id), None)
        if artifact is None:
            handler._send_json(shapes.error(404, "Not Found"), 404)
            return
        if artifact.expired:  # the description's 410 for this operation
            handler._send_json(shapes.error(410, "Artifact has expired"), 410)
            return
        handler._send(302, b"", {"Location": self._sign(artifact.content, "application/zip", "artifacts")})


# ---------------------------------------------------------------------------------------------------
# Content shaped like the real thing

# Image names and versions as the project's recorded runs printed them (windows: win25-vs2026 20260824.214.3,
# mps: macos15 20260727.0256.1); cuda is a self-hosted runner, whose log has no Runner Image group.
RUNNERS: dict[str, dict[str, Any]] = {
    "linux": {"image": "ubuntu-24.04", "version": "20260824.1.0", "os": ["Ubuntu", "24.04.3", "LTS"],
              "labels": ["ubuntu-24.04"], "runner_os": "Linux", "arch": "X64", "system": "Linux",
              "machine": "x86_64", "fs": "ext4"},
    "windows": {"image": "win25-vs2026", "version": "20260824.214.3",
                "os": ["Microsoft Windows Server 2025", "10.0.26100", "Datacenter"], "labels": ["windows-2025"],
                "runner_os": "Windows", "arch": "X64", "system": "Windows", "machine": "AMD64", "fs": "ntfs"},
    "mps": {"image": "macos15", "version": "20260727.0256.1", "os": ["macOS", "15.6", "24G84"],
            "labels": ["macos-15"], "runner_os": "macOS", "arch": "ARM64", "system": "Darwin", "machine": "arm64",
            "fs": "apfs"},
    "cuda": {"image": None, "version": None, "os": None, "labels": ["self-hosted", "linux", "cuda"],
             "runner_os": "Linux", "arch": "X64", "system": "Linux", "machine": "x86_64", "fs": "ext4"},
    "nfs": {"image": "ubuntu-24.04", "version": "20260824.1.0", "os": ["Ubuntu", "24.04.3", "LTS"],
            "labels": ["ubuntu-24.04"], "runner_os": "Linux", "arch": "X64", "system": "Linux",
            "machine": "x86_64", "fs": "nfs4"},
}


def runner_log(platform: str, *, job_name: str | None = None, exit_code: int = 0, errors: tuple[str, ...] = (),
               echo_error_text: bool = True, filler_lines: int = 40,
               start: dt.datetime = dt.datetime(2026, 8, 24, 10, 0, 5, tzinfo=dt.timezone.utc)) -> bytes:
    """A job log as GitHub serves it: BOM, a timestamp on every line, the setup groups, the steps.

    exit_code != 0 ends the gate step with `##[error]Process completed with exit code N.`; errors adds
    other `##[error]` annotations. echo_error_text puts `##[error]` inside an echoed command, which is
    NOT an annotation and must not count.
    """
    runner = RUNNERS[platform]
    clock = [start]
    lines: list[str] = []

    def emit(text: str) -> None:
        clock[0] += dt.timedelta(microseconds=137_421)
        lines.append(clock[0].strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z " + text)

    gate_command = ("python scripts/platform_runtime_check.py --device cpu "
                    f"--output out/platform-runtime-{platform}.json")
    emit("Current runner version: '2.328.0'")
    if runner["image"]:
        for text in ("##[group]Runner Image Provisioner", "Hosted Compute Agent", "Version: 20260811.377",
                     "Commit: 6785254374ce925a23743850c1cb91912ce5c14c", "Build Date: 2026-08-11T20:04:25Z",
                     "##[endgroup]", "##[group]Operating System", *runner["os"], "##[endgroup]",
                     "##[group]Runner Image", f"Image: {runner['image']}", f"Version: {runner['version']}",
                     f"Included Software: https://github.com/actions/runner-images/blob/{runner['image']}/"
                     f"{runner['version']}/README.md",
                     f"Image Release: https://github.com/actions/runner-images/releases/tag/{runner['image']}%2F"
                     f"{runner['version']}",
                     "##[endgroup]"):
            emit(text)
    else:
        emit("Runner name: 'gpu-box-01'")
        emit("Runner group name: 'Default'")
        emit("Machine name: 'gpu-box-01'")
    for text in ("##[group]GITHUB_TOKEN Permissions", "Actions: read", "Contents: read", "Metadata: read",
                 "##[endgroup]", "Secret source: Actions", "Prepare workflow directory",
                 "Prepare all required actions", "Getting action download info",
                 "Download action repository 'actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8' "
                 "(SHA:08c6903cd8c0fde910a37f88322edcfb5dd907a8)",
                 f"Complete job name: {job_name or platform}",
                 "##[group]Run actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8",
                 "with:", "  persist-credentials: false", "##[endgroup]",
                 "Syncing repository: kernodeck/platform-runtime",
                 "[command]/usr/bin/git version", "git version 2.51.0",
                 f"##[group]Run {gate_command}", gate_command,
                 "shell: /usr/bin/bash -e {0}", "env:", "  PLATFORM_RUNTIME_JOB_ID: 99239323612", "##[endgroup]"):
        emit(text)
    if echo_error_text:
        emit("##[group]Run echo \"::notice::gate done\"; grep -c '##[error]' out/*.log || true")
        emit("echo \"::notice::gate done\"; grep -c '##[error]' out/*.log || true")
        emit("##[endgroup]")
    for number in range(filler_lines):
        emit(f"device_compute: step {number % 12} loss {1.43 - number * 0.001:.6f}")
    for text in errors:
        emit(f"##[error]{text}")
    if exit_code:
        emit(f"##[error]Process completed with exit code {exit_code}.")
    for text in ("Post job cleanup.", "[command]/usr/bin/git version", "git version 2.51.0",
                 "Cleaning up orphan processes"):
        emit(text)
    return ("\ufeff" + "\n".join(lines) + "\n").encode("utf-8")


def plan_log(lines: tuple[str, ...]) -> bytes:
    """The plan job's log: its step echoed, then what plan.py printed (`lines`, e.g. plan_log_line(...))."""
    command = "python3 .platform-runtime/scripts/steps/plan.py --event workflow_dispatch --platforms all"
    texts = ["Current runner version: '2.328.0'", f"##[group]Run {command}", command, "##[endgroup]", *lines,
             "Cleaning up orphan processes"]
    start = dt.datetime(2026, 8, 24, 10, 0, 1, tzinfo=dt.timezone.utc)
    stamped = [(start + dt.timedelta(milliseconds=137 * i)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z " + text
               for i, text in enumerate(texts)]
    return ("\ufeff" + "\n".join(stamped) + "\n").encode("utf-8")


FS_METHODS = {"Windows": "win32-GetVolumeInformationW", "Darwin": "darwin-statfs"}
# What platform.release() says on each runner, and the lock the gate takes there (rules.platforms reads both).
RELEASES = {"Linux": "6.11.0-1018-azure", "Windows": "2025Server", "Darwin": "24.6.0"}
LOCK_METHODS = {"Windows": "msvcrt-locking-lockfile"}
NFS_OPTIONS = ["rw", "relatime", "vers=4.2", "hard", "proto=tcp", "sec=sys", "local_lock=none"]
MEASURED = Path(__file__).resolve().parents[2] / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json"


# The torch each kind's gate records (its files and the worker's report) and, on a Mac, the MPS facts.
BUILDS: dict[str, dict[str, Any]] = {
    "cpu": {"torch": {"version": "2.13.0+cpu", "cuda": None, "hip": None},
            "torch_build": {"version": "2.13.0+cpu", "cuda": None, "hip": None}, "mps": None},
    "cuda": {"torch": {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None},
             "torch_build": {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None,
                             "backend_libraries": ["libtorch_cuda.so"]}, "mps": None,
             # The worker's probe of the GPU as the committed H200 run recorded it (UUID replaced).
             "cuda": {"backend": "cuda", "available": True, "availability_warnings": 0,
                      "driver_too_old_warning": False, "device_count": 1, "name": "NVIDIA H200",
                      "total_memory_bytes": 150109880320, "uuid": "00000000-1111-2222-3333-444444444444",
                      "capability": "9.0", "arch": "sm_90", "arch_in_build": True, "arch_list": ["sm_90"],
                      "compiled_cuda": "13.0", "compiled_hip": None,
                      # The kernel module's version, as a Linux gate reads it (/proc/driver/nvidia/version).
                      "kernel_driver": "580.159.04"}},
    "mps": {"torch": {"version": "2.13.0", "cuda": None, "hip": None},
            "torch_build": {"version": "2.13.0", "cuda": None, "hip": None},
            "mps": {"built": True, "available": True, "fallback_env_set": False}},
}


def measured_checks(kind: str, ok: bool) -> dict[str, Any]:
    """The checks of a real CPU gate run (evidence/local/run-local), their device moved to `kind` (with bytes
    allocated on a GPU); when not ok, the losses rise, so device_compute fails by its measurements."""
    checks = copy.deepcopy(json.loads(MEASURED.read_text(encoding="utf-8"))["checks"])
    compute = checks["device_compute"]
    compute.update(ran_on=[kind], peak_allocated_bytes=None if kind == "cpu" else 4096)
    compute["matmul"]["device"] = compute["training"]["parameter_device"] = kind
    compute["checkpoint"]["saved_from_device"] = [kind]
    for record in compute["phases"].values():
        record["tensor_devices"] = [kind]
        if kind != "cpu":
            record.update(allocated_bytes=4096, resident_bytes=8192)
    if not ok:
        losses = compute["training"]["losses"] = sorted(compute["training"]["losses"])
        compute["training"].update(initial_loss=losses[0], final_loss=losses[-1], loss_decreased=False)
        compute.update(ok=False, reason="the loss did not decrease over 12 steps")
    return checks


def gate_result(platform: str, *, ok: bool = True, sources: dict[str, str] | None = None,
                run_id: int | str | None = 17320001234, run_attempt: int | str = 1, job_id: int | str | None = None,
                repository: str = REPOSITORY, sha: str = "1928efbf98b33bc87fea7962539525f57a349d25",
                in_actions: bool = True,
                workflow_path: str = ".github/workflows/platform-runtime.yml") -> dict[str, Any]:
    """A gate result document that satisfies schemas/platform-runtime-result.schema.json.

    For the indexer's tests only (the index is about bytes); never evidence of anything.
    """
    runner = RUNNERS[platform]
    device = {"cuda": "cuda:0", "mps": "mps"}.get(platform, "cpu")
    kind = device.split(":")[0]
    checks = measured_checks(kind, ok)
    system = runner["system"]
    if system in LOCK_METHODS:
        checks["jsonl_append"]["method"] = checks["jsonl_append"]["lock_probe"]["method"] = LOCK_METHODS[system]
    if runner["fs"] == "nfs4":  # the gate always tells the readers to tolerate a missing name on NFS
        checks["concurrent_replace"]["tolerate_missing"] = True
    result = {
        "schema": "kernodeck.platform-runtime.result/v1", "ok": ok, "exit_code": 0 if ok else 1,
        "failures": [] if ok else ["device_compute: loss did not decrease"],
        # A runner's run is dated inside its fake job; a local one (in_actions False) ran a minute ago, after the
        # bytes it hashes were written: a result naming no commit ran bytes that existed when it started
        # (evidence_index.root_history judges that from the source root's history).
        "started_at": "2026-08-24T10:01:00Z" if in_actions else (
            dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": 5.459,
        "arguments": {"device": device, "require": [platform] if platform in ("windows", "mps", "cuda", "nfs") else [],
                      "require_device": None, "require_filesystem": None,
                      "work_dir": "current-directory", "keep_workspace": False, "timeout_s": 600,
                      "cleanup_timeout_s": 30},
        # What the gate measures on that platform: its --require held (the workflow passes it), the file
        # system named by the platform's own API.
        "requirements": [{"name": platform, "ok": ok or platform not in ("cuda", "mps"),
                          "reason": f"{platform} as the gate measured it"}]
        if platform in ("windows", "mps", "cuda", "nfs") else [],
        "platform": {"system": system, "release": RELEASES[system], "machine": runner["machine"],
                     "python": "3.12.10", "python_implementation": "CPython",
                     "mac_version": "15.6" if system == "Darwin" else None,
                     "windows_version": "10.0.26100" if runner["system"] == "Windows" else None},
        "device": {"requested": device, "resolved": device, "type": kind, "load_safety": None, "cuda": None,
                   **BUILDS[kind], "build_cross_check": [],
                   "ran_on": checks["device_compute"]["ran_on"], "phases": checks["device_compute"]["phases"],
                   # The gate copies it from the one worker report, as it does ran_on and phases.
                   "peak_allocated_bytes": checks["device_compute"]["peak_allocated_bytes"]},
        "filesystem": {"type": runner["fs"], "method": FS_METHODS.get(runner["system"], "linux-mountinfo-mnt-id"),
                       "mount_id": None if system != "Linux" else 28,
                       "mount_options": (None if system != "Linux" else NFS_OPTIONS if runner["fs"] == "nfs4"
                                         else ["rw"]),
                       "nfs_version": "4.2" if runner["fs"] == "nfs4" else None,
                       "drive_type": "fixed" if system == "Windows" else None, "error": None},
        "checks": checks,
        # As 7f0a071's isolation.injection_vectors wrote it, with the device worker's start-up modules.
        "isolation": {"present": [], "executing_pth_files": [], "workers": "python -I",
                      "worker_site_dirs": "interpreter site-packages and their .pth path lines; torch only from there",
                      "device_worker_loaded": []},
        "workspace_cleanup": {"status": "cleaned", "workspace": "platform-runtime-0123456789ab", "deadline_s": 30},
        # A runner's gate names the commit it ran at, which this checkout's history does not hold (the fake's
        # head_sha is invented): the fake states none, as a gate run outside a git checkout records it
        # (common.provenance.git_state), and its source hashes are its provenance (rules.git_provenance).
        "source": {"files": dict(sources or {}), "git": {"head": None, "dirty": None, "diff_sha256": None,
                                                         "error": "not a git checkout (the source hashes identify "
                                                                  "the bytes)"}},
        "github": {"sha": sha, "run_id": str(run_id), "run_attempt": str(run_attempt),
                   "job_id": None if job_id is None else str(job_id), "repository": repository,
                   # GITHUB_WORKFLOW_REF names the run's top-level workflow, the caller's inside a reusable one.
                   "workflow_ref": f"{repository}/{workflow_path}@refs/heads/main",
                   "job": platform, "runner_os": runner["runner_os"], "runner_arch": runner["arch"]}
        if in_actions else None,
    }
    from rules.gate_record import Device, Filesystem
    from rules.requirements import held_reason  # the gate's own words for a requirement that held

    for requirement in result["requirements"]:
        if requirement["ok"]:
            device, filesystem = Device.of(result["device"]), Filesystem.of(result["filesystem"])
            requirement["reason"] = held_reason(platform, device, filesystem)
    return result


def make_zip(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None,
             compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip as upload-artifact makes one; symlinks adds link entries (mode 0o120777 in external_attr)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def source_hashes(root: Path, paths: list[str]) -> dict[str, str]:
    return {path: hashlib.sha256((root / path).read_bytes()).hexdigest() for path in paths}


# The fake gate results are version-1 shaped (none of the fields a schema_version 2 gate always writes): they
# name exactly the version-1 gate's sources (rules.result_format), and are compared with a checkout whose gate
# lists exactly those (fake_source_root), as the committed evidence/cuda results are with 7f0a071's.
def _v1_sources() -> list[str]:
    from rules.result_format import V1_SOURCES  # scripts/ is on sys.path under pytest and in main()

    return sorted(V1_SOURCES)


FAKE_SOURCES = _v1_sources()
_FAKE_ROOT: list[Path] = []


def fake_source_root() -> Path:
    """A git checkout (made once per session) of this repository's version-1 gate files as they are here, whose
    sources.py lists exactly FAKE_SOURCES, plus the reprise the real reprise results beside the fake gate ones
    were made by (evidence/local/run-local's commit; this checkout's where a shallow clone lacks it)."""
    import shutil
    import subprocess
    import tempfile

    if _FAKE_ROOT:
        return _FAKE_ROOT[0]
    repo = Path(__file__).resolve().parents[2]
    root = Path(tempfile.mkdtemp(prefix="fake-source-root-"))
    gate = next((repo / "evidence" / "local" / "run-local").glob("platform-runtime-*.json"), None)
    head = (json.loads(gate.read_text()).get("source", {}).get("git", {}).get("head") if gate else None) or "none"
    for relative in FAKE_SOURCES + [str(p.relative_to(repo)) for p in (repo / "scripts" / "reprise").iterdir()
                                    if p.is_file()]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        if (repo / relative).is_file():
            shutil.copyfile(repo / relative, root / relative)
            continue
        # A version-1 source that has since moved (scripts/core/): its bytes at that commit, or, in a clone that
        # lacks it, a stand-in (the fake results hash this root's bytes, whatever they are).
        shown = subprocess.run(["git", "-C", str(repo), "show", f"{head}:{relative}"], capture_output=True)
        (root / relative).write_bytes(shown.stdout if shown.returncode == 0 else f"# {relative}\n".encode())
    listed = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", head, "scripts/reprise/"],
                            capture_output=True, text=True)
    for relative in listed.stdout.split() if listed.returncode == 0 else []:
        shown = subprocess.run(["git", "-C", str(repo), "show", f"{head}:{relative}"], capture_output=True)
        if shown.returncode == 0:  # the reprise as it was when those results were recorded
            (root / relative).write_bytes(shown.stdout)
    listed = "".join(f"    {name!r},\n" for name in FAKE_SOURCES)
    (root / "scripts/platform_runtime/sources.py").write_text(f"GATE_SOURCES = (\n{listed})\n", encoding="utf-8")
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=fake", "-c", "user.email=fake@localhost",
                                                    "commit", "-q", "-m", "fake source root"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, capture_output=True)
    _FAKE_ROOT.append(root)
    return root


def standard_run(fake: FakeGitHub, platforms: tuple[str, ...], sources: dict[str, str], *,
                 caller: str | None = "platform-runtime", first_job_id: int = 99239323400,
                 first_artifact_id: int = 3901000100) -> dict[str, tuple[FakeJob, FakeArtifact]]:
    """A passing run: jobs plan / <platforms> / evidence, one log and one artifact per platform."""
    from common.workflow import plan_log_line  # scripts/ is on sys.path under pytest and in main()

    prefix = f"{caller} / " if caller else ""
    made: dict[str, tuple[FakeJob, FakeArtifact]] = {}
    fake.jobs.append(FakeJob(id=first_job_id, name=f"{prefix}plan", run_attempt=fake.run_attempt,
                             log=plan_log((plan_log_line(platforms),))))
    for offset, platform in enumerate(platforms, 1):
        job_id = first_job_id + offset * 7
        job = FakeJob(id=job_id, name=f"{prefix}{platform}", run_attempt=fake.run_attempt,
                      labels=RUNNERS[platform]["labels"], log=runner_log(platform, job_name=f"{prefix}{platform}"))
        result = gate_result(platform, sources=sources, run_id=fake.run_id, run_attempt=fake.run_attempt,
                             job_id=job_id, repository=fake.repository, sha=fake.head_sha,
                             workflow_path=fake.workflow_path)
        body = json.dumps(result, indent=2).encode()
        artifact = FakeArtifact(id=first_artifact_id + offset, name=f"platform-runtime-{platform}-attempt-"
                                f"{fake.run_attempt}", content=make_zip({f"platform-runtime-{platform}.json": body}))
        fake.jobs.append(job)
        fake.artifacts.append(artifact)
        made[platform] = (job, artifact)
    fake.jobs.append(FakeJob(id=first_job_id + 999, name=f"{prefix}evidence", status="in_progress", conclusion=None,
                             run_attempt=fake.run_attempt, log=None))
    return made


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    parser = argparse.ArgumentParser(description="Serve a passing GitHub-shaped run on loopback until killed.")
    parser.add_argument("--source-root", type=Path, default=Path("."))
    parser.add_argument("--sources", default="scripts/build_evidence_index.py",
                        help="comma-separated repo-relative paths the fake gate results claim to have run")
    parser.add_argument("--platforms", default="linux,windows")
    parser.add_argument("--token", default=DEFAULT_TOKEN)
    args = parser.parse_args()
    fake = FakeGitHub(token=args.token).start()
    standard_run(fake, tuple(args.platforms.split(",")), source_hashes(args.source_root, args.sources.split(",")))
    print(json.dumps({"GITHUB_API_URL": fake.api_url, "GITHUB_TOKEN": args.token, "repository": fake.repository,
                      "run_id": fake.run_id}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
