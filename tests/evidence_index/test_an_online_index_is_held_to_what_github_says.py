"""An online index (`build --repository --run-id`) binds the API's answers, the job logs and the artifacts, and
judges each result against what GitHub and the runner say of the job that uploaded it: an index, a bound file or
a served fact edited the way someone faking a pass would is not authentic (exit 3), naming the field; the
untouched index of a passing run passes (exit 0), of a failing run is authentic and fails (exit 1).

The run is served by the GitHub-shaped fake server (tests/evidence_index/fake_github.py): a platform job whose
artifact holds the committed run-local gate result, its `github` block the one a job of the fake's run writes,
compared with the checkout that made it; where one fact the fake's runners record is changed, a passing run of
that platform as fake_github.standard_run serves it. `build` and `verify` run in this process
(tests/evidence_index/index_cli.py); the end-to-end test through the real commands is
test_a_forgery_exits_3_through_the_real_commands.py."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from core.contract import plan_log_line

from tests.evidence_index import fake_github as fg
from tests.evidence_index.forged_evidence import (
    CPU_DIAGNOSTIC,
    GPU_DIAGNOSTIC,
    RUN_LOCAL_GATE,
    checkout_of,
    committed,
    row,
)
from tests.evidence_index.index_cli import index_cli

JOB_ID = 99239323612
PLAN_JOB_ID = 99239323600
RESULT = "platform-runtime-linux.json"
DIAGNOSTIC_NAME = "kernodeck-diagnostic-cpu.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def gate_result() -> dict[str, Any]:
    """The committed run-local gate result as the linux job of the fake's run would have written it (its run,
    job and commit the fake's)."""
    document = committed(RUN_LOCAL_GATE)
    document["github"] = {"sha": "1928efbf98b33bc87fea7962539525f57a349d25", "run_id": "17320001234",
                          "run_attempt": "1", "job_id": str(JOB_ID), "repository": fg.REPOSITORY,
                          "workflow_ref": f"{fg.REPOSITORY}/.github/workflows/platform-runtime.yml@refs/heads/main",
                          "job": "linux", "runner_os": "Linux", "runner_arch": "X64"}
    return document


def source_root() -> Path:
    """The checkout that made the committed result."""
    return checkout_of(committed(RUN_LOCAL_GATE)["source"]["git"]["head"])


def encoded(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode()


class Run:
    """A built index of one fake run, with the folders verify reads."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.index_path = folder / "index.json"
        self.build_code: int | None = None

    @property
    def index(self) -> dict:
        return json.loads(self.index_path.read_text())

    def save(self, index: dict) -> None:
        self.index_path.write_text(json.dumps(index, indent=2))

    def verify(self, *more: str) -> subprocess.CompletedProcess:
        return index_cli("verify", str(self.index_path), "--artifacts", str(self.folder / "artifacts"), "--logs",
                         str(self.folder / "logs"), "--source-root", str(source_root()), "--json",
                         str(self.folder / "report.json"), *more)


def build_run(folder: Path, platform: str, files: dict[str, bytes], log: bytes, plan: bytes | None = None,
              platforms: str | None = None, window: dict[str, str] | None = None,
              symlinks: dict[str, str] | None = None) -> Run:
    """Serve one platform job (id JOB_ID) whose artifact holds `files` (and, given its log, the plan job before
    it), and index it with --platforms (default: that one platform). The job ran in `window` (GitHub's
    started_at / completed_at), by default the window of the gate results it serves."""
    run = Run(folder)
    with fg.FakeGitHub() as fake:
        results = [data for name, data in files.items() if name.endswith(".json") and b'"started_at"' in data]
        fake.jobs = [fg.FakeJob(id=JOB_ID, name=f"platform-runtime / {platform}", log=log,
                                labels=fg.RUNNERS[platform]["labels"], **(window or fg.job_times(*results)))]
        if plan is not None:
            fake.jobs.insert(0, fg.FakeJob(id=PLAN_JOB_ID, name="platform-runtime / plan", log=plan))
        fake.artifacts = [fg.FakeArtifact(id=3901000101, name=f"platform-runtime-{platform}-attempt-1",
                                          content=fg.make_zip(files, symlinks=symlinks))]
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        done = index_cli("build", "--repository", fake.repository, "--run-id", str(fake.run_id), "--platforms",
                         platforms or platform, "--source-root", str(source_root()), "--logs-dir",
                         str(folder / "logs"), "--download-dir", str(folder / "artifacts"), "--output",
                         str(run.index_path), env=env)
    run.build_code = done.returncode
    assert run.index_path.is_file(), done.stderr
    return run


def passing(tmp_path: Path) -> Run:
    run = build_run(tmp_path / "passing", "linux", {RESULT: encoded(gate_result())}, fg.runner_log("linux"))
    assert run.build_code == 0, run.index["predicate"]["verdict"]
    return run


def failing(tmp_path: Path) -> Run:
    """The gate result next to a failed diagnostic (the run-local one, its status failed), an error in the log."""
    diagnostic = committed(CPU_DIAGNOSTIC)
    diagnostic.update(status="failed", exit_code=1)
    files = {RESULT: encoded(gate_result()), DIAGNOSTIC_NAME: json.dumps(diagnostic).encode()}
    run = build_run(tmp_path / "failing", "linux", files, fg.runner_log("linux", errors=("the diagnostic failed",)))
    assert run.build_code == 1
    return run


def entry(index: dict) -> dict:
    return index["predicate"]["platforms"][0]


PASSED = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
RECORDED = "predicate.platforms[0:linux]"


# --- edits of a built index and of the files it binds --------------------------------------------------------

def _every_judgement_flipped(run: Run, index: dict) -> None:
    for result in entry(index)["results"]:
        result.update(ok=True, reasons=[])
    entry(index)["log"].update(error_count=0, error_lines=[])
    index["predicate"]["verdict"] = PASSED


def _failing_result_dropped(run: Run, index: dict) -> None:
    entry(index)["results"] = [r for r in entry(index)["results"] if r["kind"] != "diagnostic"]
    entry(index)["log"].update(error_count=0, error_lines=[])
    index["predicate"]["verdict"] = PASSED


def _marked_not_run(run: Run, index: dict) -> None:
    entry(index)["selected"] = False
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {}}


def _moved_among_other_jobs(run: Run, index: dict) -> None:
    moved = index["predicate"]["platforms"].pop(0)
    index["predicate"]["other_jobs"].append({"id": moved["job"]["id"], "name": moved["job"]["name"],
                                             "conclusion": "success"})
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {}}


def _log_pointed_at_a_clean_one(run: Run, index: dict) -> None:
    clean = run.folder / "logs" / "1-linux.log"
    clean.write_bytes(fg.runner_log("linux"))
    index["subject"].append({"name": "logs/1-linux.log", "digest": {"sha256": sha256(clean.read_bytes())}})
    entry(index)["log"].update(subject="logs/1-linux.log", sha256=sha256(clean.read_bytes()), error_count=0,
                               error_lines=[])


def _swap_result(change: Callable[[dict], None], job_id: int | None = None) -> Callable[[Run, dict], None]:
    """The bound gate result replaced by edited bytes, everything a careful forger would re-record (the subject
    digests, the result's record) re-recorded, but not the verdict; with `job_id`, the API's job id too."""
    def edit(run: Run, index: dict) -> None:
        relative = f"platform-runtime-linux-attempt-1/{RESULT}"
        path = run.folder / "artifacts" / relative
        document = json.loads(path.read_text())
        change(document)
        data = json.dumps(document, indent=2).encode()
        path.write_bytes(data)
        (run.folder / "artifacts" / "platform-runtime-linux-attempt-1.zip").unlink()
        index["subject"] = [s for s in index["subject"] if not s["name"].endswith(".zip")]
        for subject in index["subject"]:
            if subject["name"] == f"artifacts/{relative}":
                subject["digest"]["sha256"] = sha256(data)
        entry(index)["artifact"].pop("subject")
        entry(index)["results"][0].update(sha256=sha256(data), size=len(data))
        entry(index)["results"][0]["claims"]["github"] = document["github"]
        if job_id is not None:
            entry(index)["job"]["id"] = job_id
    return edit


def _api_answer_edited(run: Run, index: dict) -> None:
    jobs = run.folder / "logs" / "api" / "jobs.json"
    jobs.write_text(jobs.read_text().replace('"success"', '"failure"'))


def _rejudge(run: Run, index: dict) -> None:
    """Every judgement re-derived from the files as they now are (what a forger with this code would do)."""
    from evidence_index.index_judge import Observed, judge_index
    from evidence_index.verify import _check_subject

    observed = Observed()
    roots = {"artifacts": run.folder / "artifacts", "logs": run.folder / "logs"}
    for subject in index["subject"]:
        _check_subject(subject, roots, observed)
    index["predicate"] = judge_index(index["predicate"], observed)


def _diagnostic_removed_from_the_unpacked_copy(run: Run, index: dict) -> None:
    (run.folder / "artifacts" / "platform-runtime-linux-attempt-1" / DIAGNOSTIC_NAME).unlink()
    index["subject"] = [s for s in index["subject"] if not s["name"].endswith(DIAGNOSTIC_NAME)]
    _rejudge(run, index)


def _diagnostic_edited_in_the_unpacked_copy(run: Run, index: dict) -> None:
    path = run.folder / "artifacts" / "platform-runtime-linux-attempt-1" / DIAGNOSTIC_NAME
    document = json.loads(path.read_text())
    document.update(status="passed", exit_code=0)
    path.write_text(json.dumps(document))
    for subject in index["subject"]:
        if subject["name"].endswith(DIAGNOSTIC_NAME):
            subject["digest"]["sha256"] = sha256(path.read_bytes())
    _rejudge(run, index)


def _zip_dropped(status: str) -> Callable[[Run, dict], None]:
    """Dropping the zip (and relabelling the folder) is not a way around the zip check."""
    def edit(run: Run, index: dict) -> None:
        (run.folder / "artifacts" / "platform-runtime-linux-attempt-1" / DIAGNOSTIC_NAME).unlink()
        (run.folder / "artifacts" / "platform-runtime-linux-attempt-1.zip").unlink()
        index["subject"] = [s for s in index["subject"] if not s["name"].endswith((DIAGNOSTIC_NAME, ".zip"))]
        entry(index)["artifact"].update(status=status, subject=None)
        _rejudge(run, index)
    return edit


def _predicate(**facts: Any) -> Callable[[Run, dict], None]:
    return lambda run, index: index.update(facts)


INDEX_EDITS = [
    row("every recorded judgement of a failing run flipped to pass", failing, _every_judgement_flipped, 3,
        (f"{RECORDED}.results[0:artifacts/platform-runtime-linux-attempt-1/kernodeck-diagnostic-cpu.json].ok: "
         "recorded True, the bytes say False", f"{RECORDED}.log.error_count: recorded 0, the bytes say 1",
         "predicate.verdict.pass: recorded True, the bytes say False")),
    row("a failing result dropped from the predicate but kept as a subject", failing, _failing_result_dropped, 3,
        (f"{RECORDED}.results: recorded 1 item(s), the bytes give 2",)),
    row("the verdict alone flipped", failing, lambda run, index: index["predicate"]["verdict"].update({"pass": True}),
        3, ("predicate.verdict.pass: recorded True, the bytes say False",)),
    row("another predicate type", failing, lambda run, index: (
        index.update(predicateType="https://example.com/other/v1"), index["predicate"]["verdict"].update(
            {"pass": True})), 3, ("not authentic: predicateType is 'https://example.com/other/v1'",)),
    row("another statement type", failing, lambda run, index: (
        index.update(_type="https://in-toto.io/Statement/v0.1"), index["predicate"]["verdict"].update(
            {"pass": True})), 3, ("not authentic: _type is 'https://in-toto.io/Statement/v0.1'",)),
    row("another predicate version", passing, lambda run, index: index["predicate"].update(version=1), 3,
        ("predicate.version is 1",)),
    row("a failing platform marked as not run", failing, _marked_not_run, 3,
        (f"{RECORDED}.selected: recorded False, the bytes say True",)),
    row("a failing platform's job moved among the other jobs", failing, _moved_among_other_jobs, 3,
        ("predicate.platforms: recorded 0 item(s), the bytes give 1",
         "predicate.other_jobs: recorded 1 item(s), the bytes give 0")),
    row("a log subject pointed at another job's clean log", failing, _log_pointed_at_a_clean_one, 3,
        (f"{RECORDED}.log.subject: recorded 'logs/1-linux.log', the bytes say 'logs/{JOB_ID}-linux.log'",)),
    row("a result of another run", passing, _swap_result(lambda d: d["github"].update(run_id="17320009999")), 3,
        ("predicate.verdict.pass: recorded True, the bytes say False", "the gate result's run_id is '17320009999'")),
    row("a result of another job", passing, _swap_result(lambda d: d["github"].update(job_id="99239320001")), 3,
        ("predicate.verdict.pass: recorded True, the bytes say False", "the gate result's job_id is '99239320001'")),
    row("a result of another job, the recorded job edited to match", passing,
        _swap_result(lambda d: d["github"].update(job_id="99239320001"), job_id=99239320001), 3,
        (f"{RECORDED}.job.id: recorded 99239320001, the bytes say {JOB_ID}",)),
    row("an API answer edited", passing, _api_answer_edited, 3, ("mismatch  logs/api/jobs.json",)),
    row("the API answers left unbound", passing, lambda run, index: index.update(subject=[
        s for s in index["subject"] if not s["name"].startswith("logs/api/")]), 3,
        ("the index does not bind logs/api/jobs.json",)),
    row("a recorded file that is no subject", passing, lambda run, index: index.update(subject=[
        s for s in index["subject"] if not s["name"].endswith(RESULT)]), 3,
        (f"predicate.platforms[linux].results: records artifacts/platform-runtime-linux-attempt-1/{RESULT}, which is "
         "not a subject",)),
    row("a failing result removed from the unpacked folder while the zip holds it", failing,
        _diagnostic_removed_from_the_unpacked_copy, 3,
        ("kernodeck-diagnostic-cpu.json: in the zip artifacts/platform-runtime-linux-attempt-1.zip but not bound",)),
    row("an unpacked result edited while the zip holds the original", failing,
        _diagnostic_edited_in_the_unpacked_copy, 3,
        ("its bytes differ from the zip artifacts/platform-runtime-linux-attempt-1.zip's entry",)),
    row("an artifact whose zip was dropped, relabelled downloaded", failing, _zip_dropped("downloaded"), 1,
        ("the artifact's zip is not bound",)),
    row("an artifact whose zip was dropped, relabelled local", failing, _zip_dropped("local"), 1,
        ("the artifact's zip is not bound",)),
]


@pytest.mark.parametrize(("made", "edit", "code", "named"), INDEX_EDITS)
def test_an_edited_online_index_or_bound_file_is_refused(tmp_path, made: Callable[[Path], Run],
                                                         edit: Callable[[Run, dict], None], code: int,
                                                         named: tuple[str, ...]) -> None:
    run = made(tmp_path)
    index = run.index
    edit(run, index)
    run.save(index)
    completed = run.verify()
    assert completed.returncode == code, completed.stdout
    for words in named:
        assert words in completed.stdout, (words, completed.stdout)


# --- one fact of the served run changed before the index is built ------------------------------------------------

def _served(folder: Path, platform: str, edit: Callable[..., None] | None = None) -> tuple[int, int, str]:
    """Serve a passing one-platform run (fake_github.standard_run), let `edit(fake, job, artifact, result)` change
    one fact (the result re-zipped after it), build its index and verify it: (build exit, verify exit, output)."""
    root = fg.fake_source_root()
    with fg.FakeGitHub() as fake:
        job, artifact = fg.standard_run(fake, (platform,), fg.source_hashes(root, fg.FAKE_SOURCES))[platform]
        result = fg.gate_result(platform, sources=fg.source_hashes(root, fg.FAKE_SOURCES), run_id=fake.run_id,
                                job_id=job.id, repository=fake.repository, sha=fake.head_sha)
        if edit is not None:
            edit(fake, job, artifact, result)
        artifact.content = fg.make_zip({f"platform-runtime-{platform}.json": json.dumps(result, indent=2).encode()})
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        built = index_cli("build", "--repository", fake.repository, "--run-id", str(fake.run_id), "--source-root",
                          str(root), "--logs-dir", str(folder / "logs"), "--download-dir", str(folder / "artifacts"),
                          "--output", str(folder / "index.json"), env=env)
    assert (folder / "index.json").is_file(), built.stderr
    verified = index_cli("verify", str(folder / "index.json"), "--artifacts", str(folder / "artifacts"), "--logs",
                         str(folder / "logs"), "--source-root", str(root))
    return built.returncode, verified.returncode, verified.stdout + verified.stderr


def _labels(*labels: str) -> Callable[..., None]:
    def edit(fake, job, artifact, result) -> None:
        job.labels = list(labels)
    return edit


def _log_of(platform: str, job_name: str | None = None) -> Callable[..., None]:
    def edit(fake, job, artifact, result) -> None:
        job.log = fg.runner_log(platform, job_name=job_name or job.name)
    return edit


def _github(**facts: Any) -> Callable[..., None]:
    return lambda fake, job, artifact, result: result["github"].update(facts)


def _empty_log(fake, job, artifact, result) -> None:
    job.log = b""


def _created_before_its_job(fake, job, artifact, result) -> None:
    artifact.created_at = "2020-01-01T00:00:00Z"


SERVED = [
    row("a Windows result from a job whose labels name Linux", "windows", _labels("ubuntu-24.04"),
        ("platform.system is 'Windows', but the job's labels (GitHub) names Linux",)),
    row("a macOS result from a job whose labels name Linux", "mps", _labels("ubuntu-24.04"),
        ("platform.system is 'Darwin', but the job's labels (GitHub) names Linux",)),
    row("an NFS result from a job whose labels name Windows", "nfs", _labels("windows-2025"),
        ("platform.system is 'Linux', but the job's labels (GitHub) names Windows",)),
    row("a CUDA result from a self-hosted Windows box", "cuda", _labels("self-hosted", "windows", "cuda"),
        ("platform.system is 'Linux', but the job's labels (GitHub) names Windows",)),
    row("a CUDA result from a standard GitHub-hosted image", "cuda", _labels("ubuntu-24.04"),
        ("'ubuntu-24.04' is a standard GitHub-hosted image",)),
    row("a Windows result from a job whose runner log names Linux", "windows", _log_of("linux"),
        ("platform.system is 'Windows', but the job log's runner os names Linux (Ubuntu 24.04.3",)),
    row("a macOS result from a job whose runner image is Linux's", "mps", _log_of("linux"),
        ("platform.system is 'Darwin', but the job log's runner image names Linux (ubuntu-24.04)",)),
    row("an NFS result from a job whose runner log names Windows", "nfs", _log_of("windows"),
        ("platform.system is 'Linux', but the job log's runner os names Windows",)),
    row("a result whose commit is not the run's head", "linux", _github(sha="0" * 40),
        (f"github.sha is {'0' * 40!r}, but the run's head_sha (GitHub) is "
         "'1928efbf98b33bc87fea7962539525f57a349d25'",)),
    row("a result naming another repository's workflow", "linux",
        _github(workflow_ref="mallory/fork/.github/workflows/platform-runtime.yml@refs/heads/main"),
        ("github.workflow_ref is 'mallory/fork/", "the run's repository (GitHub)")),
    row("a result naming another workflow of the repository", "linux",
        _github(workflow_ref="kernodeck/platform-runtime/.github/workflows/other.yml@refs/heads/main"),
        ("the run's workflow path (GitHub) is '.github/workflows/platform-runtime.yml'",)),
    row("a result naming another platform's job", "linux", _github(job="windows"),
        ("github.job is 'windows', but the result came from the linux job",)),
    row("a result whose runner OS is another", "linux", _github(runner_os="Windows"),
        ("github.runner_os is 'Windows', but platform.system is 'Linux'",
         "github.runner_os is 'Windows', but the job's labels (GitHub) names Linux")),
    row("an empty job log", "linux", _empty_log, ("the job log has no runner set-up lines",)),
    row("a job log naming another job", "linux", _log_of("linux", job_name="platform-runtime / windows"),
        ("the job log's 'Complete job name' is 'platform-runtime / windows', but the job's name (GitHub) is "
         "'platform-runtime / linux'",)),
    row("an artifact created before its job started", "linux", _created_before_its_job,
        ("the artifact's created_at (GitHub) is '2020-01-01T00:00:00Z', before the job's started_at (GitHub)",)),
]


@pytest.mark.parametrize(("platform", "edit", "named"), SERVED)
def test_a_result_that_github_or_its_runner_refutes_is_not_authentic(tmp_path, platform: str,
                                                                     edit: Callable[..., None],
                                                                     named: tuple[str, ...]) -> None:
    built, verified, output = _served(tmp_path, platform, edit)
    assert (built, verified) == (1, 3), output
    for words in named:
        assert words in output, (words, output)


# --- a served result whose own facts refute the job it came from ------------------------------------------------

def _a_year_back(document: dict) -> dict:
    """The result's own clock moved whole: two fields, so that only GitHub's view is left to refuse it."""
    for key in ("started_at", "finished_at"):
        if key in document:
            document[key] = str(int(document[key][:4]) - 1) + document[key][4:]
    return document


def _holding_nfs() -> dict:
    """A CPU ext4 result uploaded as the nfs job's, with `nfs` added as held."""
    document = gate_result()
    document["requirements"].append({"name": "nfs", "ok": True, "reason": "nfs as the gate measured it"})
    document["arguments"]["require"].append("nfs")
    document["github"]["job"] = "nfs"
    return document


def _allowed_with_a_vector() -> dict:
    """As the gate records it: PYTHONPATH present, --allow-injection-vectors, filesystem=ext4 held."""
    document = gate_result()
    document["arguments"].update(require_filesystem="ext4", allow_injection_vectors=True)
    document["requirements"].append({"name": "filesystem=ext4", "ok": True,
                                     "reason": "the work dir's file system is ext4"})
    document["isolation"].update(present=["PYTHONPATH"], allowed=True, findings=[
        "PYTHONPATH is set and the gate's own process was started without -I or -E"])
    return document


@pytest.mark.parametrize(("platform", "files", "window", "code", "named"), [
    row("a Linux result in a Windows job's artifact", "windows",
        lambda: {"platform-runtime-windows.json": encoded(gate_result())}, None, 3,
        ("platform.system is 'Linux', but the job's labels (GitHub) names Windows (['windows-2025'])",)),
    row("a GPU diagnostic in a Linux job's artifact", "linux",
        lambda: {RESULT: encoded(gate_result()), "kernodeck-diagnostic-gpu.json": encoded(committed(GPU_DIAGNOSTIC))},
        None, 3, ("kernodeck-diagnostic-gpu.json: runtime.python is '3.12.3', but platform-runtime-linux.json records "
                  f"platform.python '{gate_result()['platform']['python']}'",)),
    row("a CPU ext4 result holding nfs as the nfs job's", "nfs",
        lambda: {"platform-runtime-nfs.json": encoded(_holding_nfs())}, None, 3,
        ("requirements[nfs].ok is recorded True, its facts say False",)),
    row("a result whose clock was moved a year back", "linux",
        lambda: {RESULT: encoded(_a_year_back(gate_result()))}, fg.job_times(encoded(gate_result())), 3,
        ("before the job's started_at (GitHub)",)),
    row("a run allowed with an injection vector", "linux", lambda: {RESULT: encoded(_allowed_with_a_vector())}, None,
        1, ("requirement 'filesystem=ext4' is UNPROVEN: injection vector(s) PYTHONPATH",)),
])
def test_a_served_result_is_judged_against_its_job(tmp_path, platform: str, files: Callable[[], dict[str, bytes]],
                                                   window: dict[str, str] | None, code: int,
                                                   named: tuple[str, ...]) -> None:
    run = build_run(tmp_path / "run", platform, files(), fg.runner_log(platform), window=window)
    assert run.build_code == 1
    completed = run.verify()
    assert completed.returncode == code, completed.stdout
    for words in named:
        assert words in completed.stdout, (words, completed.stdout)


def test_a_linux_result_in_a_windows_artifact_proves_nothing_about_windows(tmp_path) -> None:
    """Its build fails naming why; its verdict flipped to pass is not authentic."""
    run = build_run(tmp_path / "windows", "windows", {"platform-runtime-windows.json": encoded(gate_result())},
                    fg.runner_log("windows"))
    reasons = run.index["predicate"]["verdict"]["reasons"]
    assert "windows not proven: platform.system is 'Linux', not Windows" in reasons
    assert "windows not proven: the 'windows' requirement did not hold" in reasons
    index = run.index
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {"windows": {"ok": True,
                                                                                           "reasons": []}}}
    run.save(index)
    completed = run.verify()
    assert completed.returncode == 3
    assert "predicate.verdict.platforms.windows.ok: recorded True, the bytes say False" in completed.stdout


# --- the plan's selection, read back from the plan job's log (GitHub keeps it) -------------------------------------

def plan_run(tmp_path: Path, selected: tuple[str, ...], platforms: str, name: str = "plan") -> Run:
    return build_run(tmp_path / name, "linux", {RESULT: encoded(gate_result())}, fg.runner_log("linux"),
                     plan=fg.plan_log((plan_log_line(selected),)), platforms=platforms)


def _required_fewer(edit: Callable[[dict], None]) -> Callable[[dict], None]:
    def both(predicate: dict) -> None:
        edit(predicate)
        predicate["required_platforms"] = ["linux"]
        predicate["verdict"] = PASSED
    return both


def _plan_log(**facts: Any) -> Callable[[dict], None]:
    return lambda predicate: predicate["plan"]["log"].update(facts)


@pytest.mark.parametrize("edit", [
    row("only the required platforms edited", lambda predicate: None),
    row("the plan record removed", lambda predicate: predicate.pop("plan")),
    row("the plan record nulled", lambda predicate: predicate.update(plan=None)),
    row("the plan log pointed at another job's", _plan_log(subject=f"logs/{JOB_ID}-linux.log")),
    row("the plan log recorded missing", _plan_log(subject=None, status="missing")),
])
def test_an_index_edited_to_require_fewer_platforms_than_the_plan_selected_is_not_authentic(
        tmp_path, edit: Callable[[dict], None]) -> None:
    """The plan selected linux and windows; windows never ran. The plan is read from the bound log's bytes."""
    run = plan_run(tmp_path, ("linux", "windows"), "linux,windows")
    assert run.build_code == 1
    index = run.index
    _required_fewer(edit)(index["predicate"])
    run.save(index)
    completed = run.verify()
    assert completed.returncode == 3 and "predicate.verdict" in completed.stdout, completed.stdout


def test_an_online_index_edited_into_an_offline_one_is_not_authentic(tmp_path) -> None:
    run = plan_run(tmp_path, ("linux",), "linux")
    assert run.verify("--allow-offline").returncode == 0  # the control
    index = run.index
    index["subject"] = [s for s in index["subject"] if not s["name"].startswith("logs/api/")]
    index["predicate"]["run"]["offline"] = True
    index["predicate"]["plan"] = None
    index["predicate"]["verdict"] = PASSED
    run.save(index)
    verified = run.verify("--allow-offline")
    assert verified.returncode == 3, verified.stdout
    assert "built --offline, which reads no job log, yet it binds" in verified.stdout
    assert "-plan.log" in verified.stdout


@pytest.mark.parametrize(("lines", "words"), [
    row("a plan log of no selection line", (), "has no selection line"),
    row("a plan log of an unreadable selection line", ("platform-runtime plan: not json",),
        "has an unreadable selection line"),
    row("a plan log of two selection lines", (plan_log_line(["linux"]), plan_log_line(["linux", "windows"])),
        "has 2 selection lines"),
])
def test_a_plan_log_without_exactly_one_readable_selection_fails(tmp_path, lines: tuple[str, ...],
                                                                 words: str) -> None:
    run = build_run(tmp_path / "p", "linux", {RESULT: encoded(gate_result())}, fg.runner_log("linux"),
                    plan=fg.plan_log(lines))
    assert run.build_code == 1
    assert any(words in reason for reason in run.index["predicate"]["verdict"]["reasons"])


def test_an_index_built_with_fewer_platforms_than_the_plan_selected_fails(tmp_path) -> None:
    run = plan_run(tmp_path, ("linux", "windows"), "linux")
    assert run.build_code == 1
    reasons = run.index["predicate"]["verdict"]["reasons"]
    assert "plan: the plan job's log selected linux, windows; the index requires linux (--platforms)" in reasons
    assert "windows: selected by the plan, but no windows job ran in this attempt" in reasons


# --- the controls -------------------------------------------------------------------------------------------

def test_the_untouched_index_of_a_passing_run_passes(tmp_path) -> None:
    run = passing(tmp_path)
    completed = run.verify()
    assert completed.returncode == 0, completed.stdout
    assert completed.stdout.splitlines()[-1].startswith("verdict: PASS (authentic")
    report = json.loads((run.folder / "report.json").read_text())
    assert report["outcome"] == "pass" and report["problems"] == []


def test_the_untouched_index_of_a_failing_run_is_authentic_and_exits_1(tmp_path) -> None:
    completed = failing(tmp_path).verify()
    assert completed.returncode == 1, completed.stdout
    assert "verdict: FAIL (authentic" in completed.stdout
    assert "kernodeck-diagnostic-cpu.json (diagnostic) fails" in completed.stdout


@pytest.mark.parametrize("platform", ["linux", "windows", "mps", "cuda", "nfs"])
def test_the_untouched_run_of_each_platform_passes(tmp_path, platform: str) -> None:
    """cuda is the fake's self-hosted box: labels self-hosted, linux, cuda; a log without the hosted groups."""
    built, verified, output = _served(tmp_path, platform)
    assert (built, verified) == (0, 0), output


def test_a_self_hosted_linux_box_of_any_name_passes(tmp_path) -> None:
    """A self-hosted runner's own labels: its OS label agrees, the custom ones say nothing."""
    built, verified, output = _served(tmp_path, "cuda", _labels("self-hosted", "Linux", "X64", "h200-lab"))
    assert (built, verified) == (0, 0), output


def test_an_honest_index_of_a_refused_zip_is_authentic_and_fails(tmp_path) -> None:
    """A zip refused at build (a link inside) binds no entries: verify says FAIL (exit 1), not "not authentic"."""
    run = build_run(tmp_path / "refused", "linux", {RESULT: encoded(gate_result())}, fg.runner_log("linux"),
                    symlinks={"escape": "../../etc/passwd"})
    assert entry(run.index)["artifact"]["status"] == "refused"
    assert run.verify().returncode == 1


def test_the_plan_jobs_log_is_bound_and_names_the_selection(tmp_path) -> None:
    run = plan_run(tmp_path, ("linux",), "linux")
    assert run.build_code == 0, run.index["predicate"]["verdict"]
    plan = run.index["predicate"]["plan"]
    assert plan["log"]["subject"] == f"logs/{PLAN_JOB_ID}-plan.log" and plan["log"]["plan_selections"] == [["linux"]]
    assert plan["log"]["subject"] in {s["name"] for s in run.index["subject"]}
    assert run.verify().returncode == 0


def test_the_job_window_holds_the_untouched_result(tmp_path) -> None:
    run = build_run(tmp_path / "control", "linux", {RESULT: encoded(gate_result())}, fg.runner_log("linux"))
    assert run.verify().returncode == 0


def test_a_plan_job_that_did_not_succeed_fails_the_verdict(tmp_path) -> None:
    from evidence_index.index_verdict import decide_run

    predicate = plan_run(tmp_path, ("linux",), "linux").index["predicate"]
    assert decide_run(predicate)["pass"] is True
    predicate["plan"]["job"]["conclusion"] = "failure"
    assert "plan: the plan job concluded 'failure', not success" in decide_run(predicate)["reasons"]
    predicate["plan"].update(candidates=2)
    assert any("2 plan jobs" in reason for reason in decide_run(predicate)["reasons"])


def test_a_callers_own_job_named_plan_is_not_taken_for_the_plan() -> None:
    from evidence_index.runfacts import plan_job

    jobs = [{"id": 1, "name": "plan", "conclusion": "success"},
            {"id": 2, "name": "platform-runtime / plan", "conclusion": "success"},
            {"id": 3, "name": "platform-runtime / linux", "conclusion": "success"}]
    assert plan_job(jobs)[0]["id"] == 2 and plan_job(jobs)[1] == 1
    assert plan_job([jobs[0], {"id": 4, "name": "linux", "conclusion": "success"}])[0]["id"] == 1
    assert plan_job(jobs[:1]) == (None, 0)  # no platform job: not this workflow's run
    # two calls of the workflow: two plan jobs fit, and the verdict says the requirement is ambiguous
    two = [*jobs[1:], {"id": 5, "name": "second / plan", "conclusion": "success"},
           {"id": 6, "name": "second / linux", "conclusion": "success"}]
    assert plan_job(two)[1] == 2
