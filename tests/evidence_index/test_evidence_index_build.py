"""`build_evidence_index.py build` against a GitHub-shaped server on loopback (tests/evidence_index/fake_github.py):
real HTTP, 302 redirects to a second origin, pagination, 410, 429, 500. One test per promise of issue 6."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, validate
from tests.evidence_index.fake_github import (
    FAKE_SOURCES,
    FakeArtifact,
    FakeGitHub,
    FakeJob,
    Fault,
    fake_source_root,
    gate_result,
    make_zip,
    runner_log,
    source_hashes,
    standard_run,
)
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
SOURCES = FAKE_SOURCES  # the fake gate results are version-1 shaped, compared with fake_source_root()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def sources():
    return source_hashes(fake_source_root(), SOURCES)


class Built:
    def __init__(self, completed: subprocess.CompletedProcess, out: Path) -> None:
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.out = out
        index = out / "index.json"
        self.index = json.loads(index.read_text()) if index.is_file() else None

    @property
    def predicate(self) -> dict:
        return self.index["predicate"]

    @property
    def verdict(self) -> dict:
        return self.predicate["verdict"]

    def platform(self, name: str) -> dict:
        return next(p for p in self.predicate["platforms"] if p["platform"] == name)

    def subjects(self) -> dict[str, str]:
        return {s["name"]: s["digest"]["sha256"] for s in self.index["subject"]}


FAKE = Path("fake-source-root")  # build()'s default: fake_source_root(), made when first asked


def build(fake: FakeGitHub, out: Path, *extra: str, source_root: Path | None = FAKE, token: str | None = None,
          run_id: int | None = None, keep: bool = True) -> Built:
    env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=token or fake.token or "")
    args = ["build", "--repository", fake.repository,
            "--run-id", str(run_id or fake.run_id),
            "--output", str(out / "index.json"), "--summary", str(out / "summary.md"), *extra]
    if "--log-patience" not in extra:
        args += ["--log-patience", "0"]  # the patience itself is tested in test_evidence_index_client.py
    if keep:
        args += ["--logs-dir", str(out / "logs")]
    if keep and "--artifacts-dir" not in extra:
        args += ["--download-dir", str(out / "artifacts")]
    if source_root is not None:
        args += ["--source-root", str(fake_source_root() if source_root == FAKE else source_root)]
    completed = index_cli(*args, env=env)
    built = Built(completed, out)
    if built.index is not None:
        validate(built.index, "evidence-index.schema.json")
    return built


def test_a_clean_run_passes_and_every_digest_equals_the_served_bytes(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows", "mps"), sources)
    built = build(fake, tmp_path)
    assert built.code == 0, built.stdout + built.stderr
    assert built.verdict == {"pass": True, "reasons": [], "platforms": {
        p: {"ok": True, "reasons": []} for p in ("linux", "windows", "mps")}}
    subjects = built.subjects()
    for platform, (job, artifact) in made.items():
        assert subjects[f"logs/{job.id}-{platform}.log"] == sha256(job.log)
        assert subjects[f"artifacts/{artifact.name}.zip"] == sha256(artifact.content)
        inner = json.dumps(gate_result(platform, sources=sources, run_id=fake.run_id, job_id=job.id,
                                       repository=fake.repository, sha=fake.head_sha), indent=2).encode()
        assert subjects[f"artifacts/{artifact.name}/platform-runtime-{platform}.json"] == sha256(inner)
        # and the kept files are those very bytes
        assert (tmp_path / "logs" / f"{job.id}-{platform}.log").read_bytes() == job.log
    assert built.index["_type"] == "https://in-toto.io/Statement/v1"
    assert built.index["predicateType"] == "https://github.com/kernodeck/platform-runtime/evidence-index/v1"


def test_the_predicate_records_the_run_and_each_platform_job(fake, sources, tmp_path):
    standard_run(fake, ("linux", "windows", "mps"), sources)
    built = build(fake, tmp_path)
    run = built.predicate["run"]
    assert run["repository"] == fake.repository and run["run_id"] == str(fake.run_id) and run["attempt"] == 1
    assert run["head_sha"] == fake.head_sha and run["event"] == "workflow_dispatch"
    # The run's path names no ref: none is made up from head_branch (wrong for tags and pull requests).
    assert run["workflow_path"] == ".github/workflows/platform-runtime.yml" and run["workflow_ref"] is None
    windows = built.platform("windows")
    assert windows["job"]["conclusion"] == "success" and windows["job"]["name"] == "platform-runtime / windows"
    assert windows["runner"]["image"] == "win25-vs2026" and windows["runner"]["image_version"] == "20260824.214.3"
    assert windows["runner"]["runner_os"] == "Windows" and windows["runner"]["runner_arch"] == "X64"
    assert windows["runner"]["os_from_log"].startswith("Microsoft Windows Server 2025")
    assert built.platform("mps")["runner"]["runner_arch"] == "ARM64"
    gate = windows["results"][0]
    assert gate["kind"] == "gate" and gate["ok"] is True and gate["schema_valid"] is True
    assert gate["source_files"] == sources
    assert windows["log"]["error_lines"] == [] and windows["log"]["nonzero_exits"] == []
    assert [j["name"] for j in built.predicate["other_jobs"]] == ["platform-runtime / plan",
                                                                  "platform-runtime / evidence"]


@pytest.mark.parametrize("head_branch", ["main", "v1.2.0", None])
def test_a_path_in_the_descriptions_full_form_is_the_workflow_ref_as_given(fake, sources, tmp_path, head_branch):
    # GitHub's description: workflow-run.path is "the full path of the workflow",
    # e.g. octocat/octo-repo/.github/workflows/ci.yml@main -- the repository is in it once.
    fake.workflow_path = f"{fake.repository}/.github/workflows/platform-runtime.yml@refs/tags/v1.2.0"
    fake.head_branch = head_branch
    standard_run(fake, ("linux",), sources)
    run = build(fake, tmp_path).predicate["run"]
    assert run["workflow_ref"] == f"{fake.repository}/.github/workflows/platform-runtime.yml@refs/tags/v1.2.0"


def test_the_summary_puts_the_verdict_first_and_one_row_per_platform(fake, sources, tmp_path):
    standard_run(fake, ("linux", "windows"), sources)
    fake.jobs[2].log = runner_log("windows", exit_code=1)
    built = build(fake, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## Platform runtime evidence: FAIL")
    assert summary.index("Verdict: fail") < summary.index("| platform |")
    rows = [line for line in summary.splitlines() if line.startswith("| linux") or line.startswith("| windows")]
    assert len(rows) == 2 and "ubuntu-24.04 20260824.1.0" in rows[0] and "| NO |" in rows[1]
    assert built.subjects()[f"logs/{fake.jobs[1].id}-linux.log"][:12] in rows[0]


def test_an_error_line_in_a_job_log_fails_the_verdict(fake, sources, tmp_path):
    standard_run(fake, ("linux", "windows"), sources)
    fake.jobs[1].log = runner_log("linux", errors=("Unable to find NVIDIA driver",))
    built = build(fake, tmp_path)
    assert built.code == 1
    linux = built.platform("linux")
    assert linux["log"]["error_count"] == 1
    assert linux["log"]["error_lines"] == ["##[error]Unable to find NVIDIA driver"]
    assert any("##[error] line" in reason for reason in built.verdict["reasons"])
    assert built.verdict["platforms"]["windows"]["ok"] is True  # the other platform is still judged on its own


def test_a_non_zero_exit_in_a_job_log_is_recorded_and_fails(fake, sources, tmp_path):
    standard_run(fake, ("linux",), sources)
    fake.jobs[1].log = runner_log("linux", exit_code=3)
    built = build(fake, tmp_path)
    assert built.code == 1
    assert built.platform("linux")["log"]["nonzero_exits"][0]["code"] == 3
    assert any("non-zero exit code(s) [3]" in reason for reason in built.verdict["reasons"])


def test_an_expired_artifact_410_is_reported_and_the_rest_is_still_indexed(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows"), sources)
    fake.faults.append(Fault(path=rf"/artifacts/{made['windows'][1].id}/zip$", status=410,
                             body=b'{"message": "Artifact has expired", "status": "410"}'))
    built = build(fake, tmp_path)
    assert built.code == 1
    assert built.platform("windows")["artifact"]["status"] == "expired"
    assert built.platform("linux")["artifact"]["status"] == "downloaded"
    assert built.verdict["platforms"]["linux"]["ok"] is True
    assert any(r.startswith("windows: artifact platform-runtime-windows-attempt-1 expired")
               for r in built.verdict["reasons"])
    assert f"artifacts/{made['linux'][1].name}.zip" in built.subjects()


def test_an_artifact_listed_as_expired_is_not_a_pass(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    made["linux"][1].expired = True
    built = build(fake, tmp_path)
    assert built.code == 1 and built.platform("linux")["artifact"]["status"] == "expired"


def test_a_missing_job_log_is_reported_not_fatal_and_counts_against_the_verdict(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows"), sources)
    made["linux"][0].log = None
    built = build(fake, tmp_path)
    assert built.code == 1
    assert built.platform("linux")["log"]["status"] == "missing"
    assert built.platform("windows")["log"]["status"] == "ok"
    assert any(r.startswith("linux: job log missing") for r in built.verdict["reasons"])


def test_rate_limits_and_server_errors_are_retried_and_the_run_still_passes(fake, sources, tmp_path):
    standard_run(fake, ("linux",), sources)
    fake.faults += [
        Fault(path=r"/jobs$", status=429, headers={"retry-after": "1"}),
        Fault(path=r"/artifacts$", status=500),
        Fault(path=r"/actions-results/logs/", status=500, host="blob"),
        Fault(path=r"/actions-results/artifacts/", status=200, host="blob", truncate=True),
    ]
    built = build(fake, tmp_path)
    assert built.code == 0, built.stdout + built.stderr
    assert "HTTP 429; retrying in 1.0 s" in built.stdout
    assert all(fault.times == 0 for fault in fake.faults)
    # each retry of a download asked the API again for a fresh (one-minute) blob URL (the linux log twice,
    # the plan job's log once)
    assert fake.count("api", r"/jobs/\d+/logs$") == 3 and fake.count("api", r"/artifacts/\d+/zip$") == 2


def test_the_token_never_reaches_the_blob_host_and_appears_in_no_output(fake, sources, tmp_path):
    standard_run(fake, ("linux", "windows"), sources)
    # a server that echoes the token in an error message must not make us print it
    fake.faults.append(Fault(path=r"/artifacts$", status=500, times=1,
                             body=json.dumps({"message": f"oops {fake.token}"}).encode()))
    built = build(fake, tmp_path)
    assert built.code == 0
    assert fake.count("blob", r".") >= 4 and not fake.blob_saw_authorization()
    assert all(r.headers.get("authorization") == f"Bearer {fake.token}" for r in fake.requests if r.host == "api")
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    for text in (built.stdout, built.stderr):
        assert fake.token not in text
    assert fake.token.encode() not in written


def test_a_token_in_an_error_message_is_scrubbed_from_stderr(fake, tmp_path):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=404,
                             body=json.dumps({"message": f"Not Found for {fake.token}"}).encode()))
    built = build(fake, tmp_path)
    assert built.code == 2 and "could not read the run" in built.stderr
    assert fake.token not in built.stderr and "***" in built.stderr


def test_jobs_and_artifacts_are_read_across_pages(fake, sources, tmp_path):
    standard_run(fake, ("linux",), sources)
    # 130 other jobs and 120 other artifacts push ours onto later pages (100 per page)
    fake.jobs[1:1] = [FakeJob(id=5_000 + n, name=f"matrix-{n}", log=b"") for n in range(130)]
    fake.artifacts[0:0] = [FakeArtifact(id=7_000 + n, name=f"other-{n}", content=make_zip({"x": b"1"}))
                           for n in range(120)]
    built = build(fake, tmp_path)
    assert built.code == 0, built.stdout + built.stderr
    assert fake.count("api", r"^/repositories/\d+/actions/runs/\d+/jobs") == 1
    assert fake.count("api", r"^/repositories/\d+/actions/runs/\d+/artifacts") == 1
    assert len(built.predicate["artifacts"]) == 121 and len(built.predicate["other_jobs"]) == 132


def test_a_zip_that_escapes_its_folder_is_refused_and_nothing_is_written_outside(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    made["linux"][1].content = make_zip({"platform-runtime-linux.json": b"{}", "../../escaped.txt": b"pwned"})
    made["linux"][1].digest = None
    before = {p for p in tmp_path.parent.rglob("*")}
    built = build(fake, tmp_path)
    assert built.code == 1
    assert built.platform("linux")["artifact"]["status"] == "refused"
    assert "../../escaped.txt" in built.platform("linux")["artifact"]["error"]
    created = {p for p in tmp_path.parent.rglob("*")} - before
    assert all(p.is_relative_to(tmp_path) for p in created)
    assert not list(tmp_path.parent.rglob("escaped.txt"))
    assert not (tmp_path / "artifacts" / "platform-runtime-linux-attempt-1").exists()


def test_a_zip_whose_bytes_differ_from_the_uploaded_digest_fails(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    made["linux"][1].digest = "sha256:" + "0" * 64
    built = build(fake, tmp_path)
    assert built.code == 1 and built.platform("linux")["artifact"]["digest_matches_api"] is False


@pytest.mark.parametrize("change, expected", [
    (lambda doc: doc.update(ok=False, failures=["jsonl_append: 3 records lost"]),
     "ok is False, a pass needs True"),
    (lambda doc: doc.pop("checks"), "does not validate against its schema"),
    (lambda doc: doc["github"].update(job_id="1"), "the gate result's job_id is '1'"),
    (lambda doc: doc["github"].update(run_id="999"), "the gate result's run_id is '999'"),
    (lambda doc: doc.update(github=None), "not produced inside GitHub Actions"),
], ids=["not-ok", "schema-invalid", "other-job", "other-run", "outside-actions"])
def test_a_gate_result_that_is_not_a_proof_for_this_job_fails(fake, sources, tmp_path, change, expected):
    made = standard_run(fake, ("linux",), sources)
    job, artifact = made["linux"]
    document = gate_result("linux", sources=sources, run_id=fake.run_id, job_id=job.id, sha=fake.head_sha)
    change(document)
    artifact.content = make_zip({"platform-runtime-linux.json": json.dumps(document).encode()})
    built = build(fake, tmp_path)
    assert built.code == 1
    assert any(expected in reason for reason in built.verdict["reasons"]), built.verdict["reasons"]


def test_an_extra_result_that_is_not_ok_fails_its_platform(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    job, artifact = made["linux"]
    gate = json.dumps(gate_result("linux", sources=sources, run_id=fake.run_id, job_id=job.id)).encode()
    artifact.content = make_zip({"platform-runtime-linux.json": gate,
                                 "training-run-check.json": json.dumps({"ok": False}).encode()})
    built = build(fake, tmp_path)
    assert built.code == 1
    # a document without a known schema id never passes, whatever it says about itself
    assert any(r.startswith("linux: training-run-check.json (unknown) fails: not a result this project knows")
               for r in built.verdict["reasons"]), built.verdict["reasons"]


def test_source_hashes_must_agree_across_platforms_and_with_the_head_commit(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows"), sources)
    job, artifact = made["windows"]
    crlf = dict(sources, **{"scripts/platform_runtime_check.py": "e" * 64})  # e.g. a CRLF checkout on Windows
    artifact.content = make_zip({"platform-runtime-windows.json": json.dumps(
        gate_result("windows", sources=crlf, run_id=fake.run_id, job_id=job.id)).encode()})
    artifact.digest = None
    built = build(fake, tmp_path)
    assert built.code == 1
    assert any(r.startswith("source hashes differ across platforms") for r in built.verdict["reasons"])
    assert ("windows: 1 source file(s) differ from the head commit: scripts/platform_runtime_check.py"
            in built.verdict["reasons"])


def test_a_platform_s_gate_result_naming_another_list_than_the_head_commit_s_gate_is_not_authentic(fake, sources,
                                                                                                    tmp_path):
    """The run index judges each platform's gate result against the head commit's GATE_SOURCES too
    (core.source_sets): at a head whose gate hashes one module more, results naming the list they name are
    refused naming it, by the build and by verify (from the lists the index recorded)."""
    import shutil

    standard_run(fake, ("linux",), sources)
    head = tmp_path / "head"
    shutil.copytree(fake_source_root(), head)
    listed = head / "scripts" / "platform_runtime" / "sources.py"
    listed.write_text(listed.read_text().replace("(\n", "(\n    'scripts/core/facts.py',\n", 1))
    built = build(fake, tmp_path, source_root=head)
    assert built.code == 1
    assert any("the gate at the source root hashes (GATE_SOURCES) 20: missing 1: scripts/core/facts.py" in r
               for r in built.verdict["reasons"]), built.verdict["reasons"]
    refused = index_cli("verify", str(tmp_path / "index.json"), "--artifacts", str(tmp_path / "artifacts"), "--logs",
                        str(tmp_path / "logs"))
    assert refused.returncode == 3 and "missing 1: scripts/core/facts.py" in refused.stdout, refused.stdout


def test_sources_not_compared_with_a_checkout_are_not_a_pass(fake, sources, tmp_path):
    standard_run(fake, ("linux",), sources)
    built = build(fake, tmp_path, source_root=None)
    assert built.code == 1
    assert built.verdict["reasons"] == [
        "no --source-root: the sources the platforms ran were not compared with the head commit"]


def test_a_failed_or_cancelled_job_fails_and_a_skipped_one_is_not_selected(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows", "mps"), sources)
    made["windows"][0].conclusion = "cancelled"
    made["mps"][0].conclusion = "skipped"
    built = build(fake, tmp_path)
    assert built.code == 1
    assert "windows: job completed, conclusion cancelled" in built.verdict["reasons"]
    assert built.platform("mps")["selected"] is False and "mps" not in built.verdict["platforms"]


def test_a_run_where_no_platform_ran_proves_nothing(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    made["linux"][0].conclusion = "skipped"
    built = build(fake, tmp_path)
    assert built.code == 1
    assert "no platform job ran in this attempt: nothing is proven" in built.verdict["reasons"]


def test_attempt_selects_that_attempts_jobs_and_artifact_names(fake, sources, tmp_path):
    fake.run_attempt = 2
    made = standard_run(fake, ("linux",), sources)
    old_job = FakeJob(id=111, name="platform-runtime / linux", run_attempt=1, conclusion="failure",
                      log=runner_log("linux", exit_code=1))
    fake.attempt_jobs[1] = [old_job]
    latest = build(fake, tmp_path / "latest")
    assert latest.code == 0 and latest.predicate["run"]["attempt"] == 2
    assert latest.platform("linux")["artifact"]["name"] == "platform-runtime-linux-attempt-2"
    first = build(fake, tmp_path / "first", "--attempt", "1")
    assert first.code == 1 and first.predicate["run"]["attempt"] == 1
    assert first.platform("linux")["job"]["id"] == 111
    assert first.platform("linux")["artifact"]["status"] == "missing"
    assert made["linux"][0].id != 111


def _rerun_only_windows(fake: FakeGitHub, sources: dict[str, str]) -> dict[str, dict]:
    """Attempt 2 after "Re-run failed jobs": windows failed in attempt 1 and re-ran; linux passed in
    attempt 1 and was not re-run, so its job and artifact are attempt 1's. Returns what the platform jobs'
    outputs say (the evidence job writes it to the --platform-artifacts file)."""
    made = standard_run(fake, ("linux", "windows"), sources)
    fake.run_attempt = 2
    linux_job, linux_artifact = made["linux"]
    windows_job, _ = made["windows"]
    windows_job.run_attempt = 2
    body = json.dumps(gate_result("windows", sources=sources, run_id=fake.run_id, run_attempt=2,
                                  job_id=windows_job.id, sha=fake.head_sha)).encode()
    rerun = FakeArtifact(id=3901000200, name="platform-runtime-windows-attempt-2",
                         content=make_zip({"platform-runtime-windows.json": body}))
    fake.artifacts.append(rerun)
    return {
        "linux": {"artifact_id": str(linux_artifact.id), "artifact_name": linux_artifact.name,
                  "artifact_digest": linux_artifact.sha256(), "attempt": "1", "job_result": "success"},
        "windows": {"artifact_id": str(rerun.id), "artifact_name": rerun.name,
                    "artifact_digest": f"sha256:{rerun.sha256()}", "attempt": "2", "job_result": "success"},
    }


def _as_needs(outputs: dict[str, dict]) -> dict[str, dict]:
    """The same as the workflow's toJSON(needs) shows it (plus the plan job, which is not a platform)."""
    needs = {"plan": {"result": "success", "outputs": {"platforms": '["linux","windows"]'}}}
    for platform, given in outputs.items():
        needs[platform] = {"result": given["job_result"], "outputs": {
            "artifact-id": given["artifact_id"], "artifact-name": given["artifact_name"],
            "artifact-digest": given["artifact_digest"], "attempt": given["attempt"]}}
    return needs


@pytest.mark.parametrize("shape", ["plain", "needs"])
def test_after_rerunning_failed_jobs_each_platform_is_fetched_by_id_from_its_own_attempt(fake, sources, tmp_path,
                                                                                         shape):
    outputs = _rerun_only_windows(fake, sources)
    (tmp_path / "platform-artifacts.json").write_text(json.dumps(outputs if shape == "plain" else _as_needs(outputs)))
    built = build(fake, tmp_path / "out", "--platform-artifacts", str(tmp_path / "platform-artifacts.json"))
    assert built.code == 0, built.stdout
    linux, windows = built.platform("linux")["artifact"], built.platform("windows")["artifact"]
    assert (linux["located_by"], linux["from_attempt"], linux["name"]) == ("id", 1, "platform-runtime-linux-attempt-1")
    assert (windows["from_attempt"], windows["id"]) == (2, 3901000200)
    assert linux["digest_matches_job_output"] is True and windows["digest_matches_job_output"] is True
    assert fake.count("api", "/actions/artifacts/3901000200/zip") == 1


def test_an_artifact_whose_zip_differs_from_the_digest_its_job_exported_fails(fake, sources, tmp_path):
    outputs = _rerun_only_windows(fake, sources)
    outputs["linux"]["artifact_digest"] = "sha256:" + "0" * 64
    (tmp_path / "platform-artifacts.json").write_text(json.dumps(outputs))
    built = build(fake, tmp_path / "out", "--platform-artifacts", str(tmp_path / "platform-artifacts.json"))
    assert built.code == 1
    assert built.platform("linux")["artifact"]["digest_matches_job_output"] is False
    assert built.verdict["platforms"]["linux"]["reasons"] == [
        "linux: artifact zip SHA-256 differs from the artifact_digest its job exported (sha256:" + "0" * 64 + ")"]
    assert built.verdict["platforms"]["windows"]["ok"] is True


@pytest.mark.parametrize("content", ["[]", '{"macos": {}}', '{"linux": {"artifact_id": "x", "artifact_name": "a"}}'])
def test_a_platform_artifacts_file_that_is_not_usable_is_a_usage_error(fake, tmp_path, content):
    (tmp_path / "p.json").write_text(content)
    built = build(fake, tmp_path, "--platform-artifacts", str(tmp_path / "p.json"))
    assert built.code == 2 and built.index is None and "--platform-artifacts" in built.stderr


def test_already_downloaded_artifacts_are_read_from_the_folder(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows"), sources)
    downloaded = tmp_path / "downloaded"
    job = made["linux"][0]
    folder = downloaded / "platform-runtime-linux-attempt-1"
    folder.mkdir(parents=True)
    body = json.dumps(gate_result("linux", sources=sources, run_id=fake.run_id, job_id=job.id)).encode()
    (folder / "platform-runtime-linux.json").write_bytes(body)
    built = build(fake, tmp_path / "out", "--artifacts-dir", str(downloaded))
    assert built.code == 1  # windows' folder is absent
    # Online, an unpacked folder is not what GitHub stored: without the zip the platform is not proven.
    assert built.platform("linux")["artifact"]["status"] == "error"
    assert "zip is not bound" in built.platform("linux")["artifact"]["error"]
    assert built.subjects()["artifacts/platform-runtime-linux-attempt-1/platform-runtime-linux.json"] == sha256(body)
    assert built.platform("windows")["artifact"]["status"] == "missing"
    assert fake.count("api", r"/zip$") == 0


def _offline_folder(fake: FakeGitHub, sources: dict[str, str], tmp_path: Path, job_result: str = "success") -> Path:
    """What download-artifact leaves under act, and the platform jobs' outputs; the fake API is never asked."""
    downloaded = tmp_path / "downloaded"
    outputs = {}
    for number, platform in enumerate(("linux", "windows")):
        folder = downloaded / f"platform-runtime-{platform}-attempt-1"
        folder.mkdir(parents=True)
        job_id = 5000 + number
        body = json.dumps(gate_result(platform, sources=sources, run_id=fake.run_id, job_id=job_id)).encode()
        (folder / f"platform-runtime-{platform}.json").write_bytes(body)
        outputs[platform] = {"artifact_id": "", "artifact_name": folder.name, "artifact_digest": "", "attempt": "1",
                             "job_result": job_result if platform == "windows" else "success", "job_id": str(job_id)}
    (tmp_path / "platform-artifacts.json").write_text(json.dumps(outputs))
    return downloaded


def test_offline_under_act_the_artifacts_and_job_outputs_are_judged_without_an_api(fake, sources, tmp_path):
    downloaded = _offline_folder(fake, sources, tmp_path)
    built = build(fake, tmp_path / "out", "--offline", "--artifacts-dir", str(downloaded), "--platform-artifacts",
                  str(tmp_path / "platform-artifacts.json"), "--platforms", "linux,windows", keep=False)
    assert built.code == 0, built.stdout
    assert built.predicate["run"]["offline"] is True and built.platform("linux")["log"]["status"] == "offline"
    assert not fake.requests
    assert set(built.subjects()) == {"artifacts/platform-runtime-linux-attempt-1/platform-runtime-linux.json",
                                     "artifacts/platform-runtime-windows-attempt-1/platform-runtime-windows.json"}
    # a reviewer's verify does not take an offline index for a proven run unless told to
    verify = ["verify", str(tmp_path / "out" / "index.json"), "--artifacts", str(downloaded)]
    plain = index_cli(*verify)
    assert plain.returncode == 1 and "built --offline: no job log was read" in plain.stdout
    assert index_cli(*verify, "--allow-offline").returncode == 0


def test_offline_a_failed_job_or_a_platform_without_outputs_fails(fake, sources, tmp_path):
    downloaded = _offline_folder(fake, sources, tmp_path, job_result="failure")
    built = build(fake, tmp_path / "out", "--offline", "--artifacts-dir", str(downloaded), "--platform-artifacts",
                  str(tmp_path / "platform-artifacts.json"), "--platforms", "linux,windows,mps", keep=False)
    assert built.code == 1
    assert "windows: job completed, conclusion failure" in built.verdict["reasons"]
    assert "mps: selected by the plan, but no mps job ran in this attempt" in built.verdict["reasons"]


def test_offline_without_the_job_outputs_is_a_usage_error(fake, tmp_path):
    built = build(fake, tmp_path, "--offline", "--artifacts-dir", str(tmp_path), keep=False)
    assert built.code == 2 and "--offline needs --platform-artifacts" in built.stderr


@pytest.mark.parametrize("args, message", [
    (["--repository", "not a repo"], "--repository must be OWNER/NAME"),
    (["--run-id", "12x"], "--run-id must be a number"),
])
def test_usage_errors_exit_2_and_write_nothing(fake, tmp_path, args, message):
    env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
    base = {"--repository": fake.repository, "--run-id": str(fake.run_id)}
    base.update(dict(zip(args[::2], args[1::2])))
    command = [sys.executable, str(CLI), "build", *[x for kv in base.items() for x in kv],
               "--output", str(tmp_path / "index.json")]
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2 and message in completed.stderr and "Traceback" not in completed.stderr
    assert not (tmp_path / "index.json").exists() and fake.requests == []


def test_an_unknown_run_exits_2_without_an_index(fake, tmp_path):
    built = build(fake, tmp_path, run_id=42)
    assert built.code == 2 and built.index is None
    assert "HTTP 404 Not Found" in built.stderr and "Traceback" not in built.stderr


def test_a_wrong_token_exits_2_without_an_index(fake, tmp_path):
    built = build(fake, tmp_path, token="ghs_wrongwrongwrong")
    assert built.code == 2 and built.index is None and "HTTP 401 Bad credentials" in built.stderr
    assert "ghs_wrongwrongwrong" not in built.stderr + built.stdout


def test_without_folders_to_keep_nothing_but_the_index_is_written_and_digests_are_the_same(fake, sources, tmp_path):
    standard_run(fake, ("linux", "windows"), sources)
    kept = build(fake, tmp_path / "kept")
    bare = build(fake, tmp_path / "bare", keep=False)
    assert bare.code == 0, bare.stdout + bare.stderr
    assert bare.subjects() == kept.subjects()
    assert sorted(p.name for p in (tmp_path / "bare").iterdir()) == ["index.json", "summary.md"]
    assert bare.platform("linux")["log"]["kept"] is False


def test_verify_rechecks_a_built_index_and_fails_on_a_changed_log_zip_or_result(fake, sources, tmp_path):
    made = standard_run(fake, ("linux", "windows"), sources)
    build(fake, tmp_path)
    index, artifacts, logs = tmp_path / "index.json", tmp_path / "artifacts", tmp_path / "logs"

    def verify(*extra: str) -> subprocess.CompletedProcess:
        return index_cli("verify", str(index), "--artifacts", str(artifacts),
                               "--logs", str(logs), *extra)

    clean = verify()
    # 3 of them the API answers, 1 the plan job's log
    assert clean.returncode == 0 and "10 subject(s) match" in clean.stdout, clean.stdout
    log = logs / f"{made['windows'][0].id}-windows.log"
    log.write_bytes(log.read_bytes().replace(b"exit code 0", b"exit code 1") + b"\n")
    result = artifacts / "platform-runtime-linux-attempt-1" / "platform-runtime-linux.json"
    result.write_bytes(result.read_bytes().replace(b"5.459", b"5.458"))  # one digit of a duration
    zip_path = artifacts / "platform-runtime-linux-attempt-1.zip"
    zip_path.write_bytes(zip_path.read_bytes() + b"\0")
    tampered = verify()
    assert tampered.returncode == 3  # not authentic
    assert f"mismatch  logs/{log.name}" in tampered.stdout
    assert "mismatch  artifacts/platform-runtime-linux-attempt-1/platform-runtime-linux.json" in tampered.stdout
    assert "mismatch  artifacts/platform-runtime-linux-attempt-1.zip" in tampered.stdout
    assert "verdict: NOT AUTHENTIC" in tampered.stdout and "7 subject(s) match" in tampered.stdout


def test_verify_reads_entries_from_the_zip_when_only_zips_were_kept(fake, sources, tmp_path):
    standard_run(fake, ("linux",), sources)
    build(fake, tmp_path)
    shutil.rmtree(tmp_path / "artifacts" / "platform-runtime-linux-attempt-1")
    completed = index_cli("verify", str(tmp_path / "index.json"),
                                "--artifacts", str(tmp_path / "artifacts"), "--logs", str(tmp_path / "logs"))
    assert completed.returncode == 0, completed.stdout
    assert "1 subject(s) read inside their artifact's zip" in completed.stdout


def test_files_deeper_in_an_artifact_are_bound_and_a_run_folders_data_files_are_not_results(fake, sources, tmp_path):
    made = standard_run(fake, ("windows",), sources)
    job, artifact = made["windows"]
    gate = json.dumps(gate_result("windows", sources=sources, run_id=fake.run_id, job_id=job.id)).encode()
    config = json.dumps({"schema": "kernodeck.reprise.config", "version": 1, "lr": 0.1}).encode()
    artifact.content = make_zip({"platform-runtime-windows.json": gate, "training-run/config.json": config,
                                 "training-run/checkpoint.pt": b"\x80\x02weights"})
    artifact.digest = None
    built = build(fake, tmp_path)
    assert built.code == 0, built.verdict
    assert [r["name"] for r in built.platform("windows")["results"]] == ["platform-runtime-windows.json"]
    assert built.subjects()["artifacts/platform-runtime-windows-attempt-1/training-run/checkpoint.pt"] == sha256(
        b"\x80\x02weights")


def test_an_output_path_that_is_a_folder_is_a_usage_error(fake, tmp_path):
    (tmp_path / "index.json").mkdir()
    built = build(fake, tmp_path)
    assert built.code == 2 and "is a folder" in built.stderr and fake.requests == []


def test_an_api_under_a_path_as_on_github_enterprise_server_works(fake, sources, tmp_path):
    fake.api_prefix = "/api/v3"
    standard_run(fake, ("linux",), sources)
    built = build(fake, tmp_path)
    assert built.code == 0, built.stdout + built.stderr
    assert all(r.path.startswith("/api/v3/") for r in fake.requests if r.host == "api")
    assert not fake.blob_saw_authorization()


def test_large_logs_and_zips_are_indexed_in_constant_memory(fake, sources, tmp_path):
    made = standard_run(fake, ("linux",), sources)
    job, artifact = made["linux"]
    log = tmp_path / "big.log"
    line = b"2026-08-24T10:00:05.1374210Z device_compute: step 3 loss 1.420000\n"
    with open(log, "wb") as handle:
        handle.write(job.log)
        handle.write(line * (160 * 1024 * 1024 // len(line)))
    job.log = log
    gate = json.dumps(gate_result("linux", sources=sources, run_id=fake.run_id, job_id=job.id)).encode()
    artifact.content = make_zip({"platform-runtime-linux.json": gate, "checkpoint.pt": os.urandom(64 * 1024 * 1024)},
                                compression=zipfile.ZIP_STORED)
    env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
    # Linux keeps the pre-exec image's high-water mark in ru_maxrss: start the indexer from a small launcher,
    # not from this test process, which holds the zip in memory.
    launcher = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
                "_, status, usage = os.wait4(child.pid, 0); print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-B", str(CLI), "build", "--repository",
                           fake.repository, "--run-id", str(fake.run_id), "--source-root", str(fake_source_root()),
                           "--output",
                           str(tmp_path / "index.json")], env=env, capture_output=True, text=True, timeout=300)
    code, peak_kib = map(int, done.stdout.split())
    assert code == 0
    assert peak_kib < 100 * 1024, f"peak {peak_kib / 1024:.0f} MB for 224 MB of downloads"
    index = json.loads((tmp_path / "index.json").read_text())
    digest = hashlib.sha256()
    with open(log, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    subjects = {s["name"]: s["digest"]["sha256"] for s in index["subject"]}
    assert subjects[f"logs/{job.id}-linux.log"] == digest.hexdigest()


@pytest.mark.parametrize("platforms", ['["linux","windows","mps"]', "linux,windows,mps"])
def test_a_platform_the_plan_selected_that_did_not_run_fails(fake, sources, tmp_path, platforms):
    made = standard_run(fake, ("linux", "windows", "mps"), sources)
    made["mps"][0].conclusion = "skipped"
    fake.jobs.remove(made["windows"][0])
    built = build(fake, tmp_path, "--platforms", platforms)
    assert built.code == 1
    assert built.predicate["required_platforms"] == ["linux", "windows", "mps"]
    assert "windows: selected by the plan, but no windows job ran in this attempt" in built.verdict["reasons"]
    assert "mps: selected by the plan, but no mps job ran in this attempt" in built.verdict["reasons"]
    # Asking for less than the plan job's log selected is not a way around it.
    fewer = build(fake, tmp_path / "linux-only", "--platforms", "linux")
    assert fewer.code == 1 and ("plan: the plan job's log selected linux, windows, mps; the index requires linux "
                                "(--platforms)") in fewer.verdict["reasons"]


def test_an_unknown_platform_is_a_usage_error(fake, tmp_path):
    built = build(fake, tmp_path, "--platforms", "linux,amiga")
    assert built.code == 2 and "platforms must be among" in built.stderr and fake.requests == []
