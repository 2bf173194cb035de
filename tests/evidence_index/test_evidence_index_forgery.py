"""Forgeries of real indexes: each must fail `verify` with the right exit code and a reason naming the field.

One real gate run (scripts/platform_runtime_check.py on this CPU, with the GitHub Actions variables of a
`linux` job set) is served by the GitHub-shaped fake server; `build` indexes it; the tests then edit the
index (and the bound files) the way someone faking a pass would. Exit codes: 0 authentic and passing,
1 authentic but failing, 3 not authentic.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from common.workflow import plan_log_line

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.fake_github import (
    RUNNERS,
    FakeArtifact,
    FakeGitHub,
    FakeJob,
    job_times,
    make_zip,
    plan_log,
    runner_log,
)
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
JOB_ID = 99239323612
DIAGNOSTIC = ROOT / "evidence" / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"
TRAINING_RUN = ROOT / "evidence" / "local" / "training-run"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def real_result(tmp_path_factory) -> bytes:
    """The bytes of a real gate result, made as a GitHub Actions `linux` job would make it."""
    folder = tmp_path_factory.mktemp("gate")
    result = folder / "platform-runtime-linux.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GITHUB_ACTIONS="true", GITHUB_RUN_ID="17320001234", GITHUB_RUN_ATTEMPT="1",
               PLATFORM_RUNTIME_JOB_ID=str(JOB_ID), GITHUB_REPOSITORY="kernodeck/platform-runtime",
               GITHUB_SHA="1928efbf98b33bc87fea7962539525f57a349d25", GITHUB_JOB="linux", RUNNER_OS="Linux",
               RUNNER_ARCH="X64",
               GITHUB_WORKFLOW_REF="kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/heads/main")
    (folder / "work").mkdir()
    gate = subprocess.run([sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"), "--device", "cpu",
                           "--work-dir", str(folder / "work"), "--output", str(result)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert gate.returncode == 0, gate.stderr
    return result.read_bytes()


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

    def verify(self) -> subprocess.CompletedProcess:
        return index_cli("verify", str(self.index_path), "--artifacts",
                               str(self.folder / "artifacts"), "--logs", str(self.folder / "logs"), "--json",
                               str(self.folder / "report.json"))


PLAN_JOB_ID = 99239323600


def build_run(folder: Path, platform: str, files: dict[str, bytes], log: bytes, plan: bytes | None = None,
              platforms: str | None = None, window: dict[str, str] | None = None) -> Run:
    """Serve one platform job (id JOB_ID) whose artifact holds `files` (and, given its log, the plan job
    before it), and index it with --platforms (default: that one platform). The job ran in `window` (GitHub's
    started_at / completed_at), by default the window of the gate results it serves (fake_github.job_times)."""
    run = Run(folder)
    with FakeGitHub() as fake:
        results = [data for name, data in files.items() if name.endswith(".json") and b'"started_at"' in data]
        fake.jobs = [FakeJob(id=JOB_ID, name=f"platform-runtime / {platform}", log=log,
                             labels=RUNNERS[platform]["labels"], **(window or job_times(*results)))]
        if plan is not None:
            fake.jobs.insert(0, FakeJob(id=PLAN_JOB_ID, name="platform-runtime / plan", log=plan))
        fake.artifacts = [FakeArtifact(id=3901000101, name=f"platform-runtime-{platform}-attempt-1",
                                       content=make_zip(files))]
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        done = index_cli("build", "--repository", fake.repository,
                               "--run-id", str(fake.run_id), "--platforms", platforms or platform,
                               "--source-root", str(ROOT),
                               "--logs-dir", str(folder / "logs"), "--download-dir", str(folder / "artifacts"),
                               "--output", str(run.index_path), env=env)
    run.build_code = done.returncode
    assert run.index_path.is_file(), done.stderr
    return run


@pytest.fixture
def passing(tmp_path, real_result) -> Run:
    run = build_run(tmp_path / "passing", "linux", {"platform-runtime-linux.json": real_result}, runner_log("linux"))
    assert run.build_code == 0, run.index["predicate"]["verdict"]
    return run


@pytest.fixture
def failing(tmp_path, real_result) -> Run:
    """The real gate result next to a failed diagnostic, and an error line in the job log."""
    diagnostic = json.loads(DIAGNOSTIC.read_text())
    diagnostic.update(status="failed", exit_code=1)
    files = {"platform-runtime-linux.json": real_result,
             "kernodeck-diagnostic-cpu.json": json.dumps(diagnostic).encode()}
    run = build_run(tmp_path / "failing", "linux", files, runner_log("linux", errors=("the diagnostic failed",)))
    assert run.build_code == 1
    return run


def platform_entry(index: dict) -> dict:
    return index["predicate"]["platforms"][0]


def test_the_untouched_index_of_a_real_run_passes(passing):
    completed = passing.verify()
    assert completed.returncode == 0, completed.stdout
    assert completed.stdout.splitlines()[-1].startswith("verdict: PASS (authentic")
    report = json.loads((passing.folder / "report.json").read_text())
    assert report["outcome"] == "pass" and report["problems"] == []


def test_the_untouched_index_of_a_failing_run_is_authentic_and_exits_1(failing):
    completed = failing.verify()
    assert completed.returncode == 1, completed.stdout
    assert "verdict: FAIL (authentic" in completed.stdout
    assert "kernodeck-diagnostic-cpu.json (diagnostic) fails" in completed.stdout


def test_every_recorded_judgement_flipped_to_pass_is_not_authentic(failing):
    index = failing.index
    entry = platform_entry(index)
    for result in entry["results"]:
        result.update(ok=True, reasons=[])
    entry["log"].update(error_count=0, error_lines=[])
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3, completed.stdout
    out = completed.stdout
    assert "predicate.platforms[0:linux].results[0:artifacts/platform-runtime-linux-attempt-1/kernodeck-diagnostic-" \
           "cpu.json].ok: recorded True, the bytes say False" in out
    assert "predicate.platforms[0:linux].log.error_count: recorded 0, the bytes say 1" in out
    assert "predicate.verdict.pass: recorded True, the bytes say False" in out
    assert out.splitlines()[-1].startswith("verdict: NOT AUTHENTIC")


def test_a_failing_result_dropped_from_the_predicate_but_kept_as_a_subject_is_not_authentic(failing):
    index = failing.index
    entry = platform_entry(index)
    entry["results"] = [r for r in entry["results"] if r["kind"] != "diagnostic"]
    entry["log"].update(error_count=0, error_lines=[])
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3, completed.stdout
    assert "predicate.platforms[0:linux].results: recorded 1 item(s), the bytes give 2" in completed.stdout


def test_the_verdict_alone_flipped_is_not_authentic(failing):
    index = failing.index
    index["predicate"]["verdict"]["pass"] = True
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3
    assert "predicate.verdict.pass: recorded True, the bytes say False" in completed.stdout


@pytest.mark.parametrize("field, value", [("predicateType", "https://example.com/other/v1"),
                                          ("_type", "https://in-toto.io/Statement/v0.1")])
def test_another_type_is_not_authentic(failing, field, value):
    index = failing.index
    index[field] = value
    index["predicate"]["verdict"]["pass"] = True
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3
    assert f"not authentic: {field} is {value!r}" in completed.stdout


def test_another_predicate_version_is_not_authentic(passing):
    index = passing.index
    index["predicate"]["version"] = 1
    passing.save(index)
    completed = passing.verify()
    assert completed.returncode == 3 and "predicate.version is 1" in completed.stdout


def _swap_result(run: Run, change) -> None:
    """Replace the bound gate result by edited bytes and re-record everything a careful forger would: the
    subject digests and the result's record, but not the verdict."""
    relative = "platform-runtime-linux-attempt-1/platform-runtime-linux.json"
    path = run.folder / "artifacts" / relative
    document = json.loads(path.read_text())
    change(document)
    data = json.dumps(document, indent=2).encode()
    path.write_bytes(data)
    (run.folder / "artifacts" / "platform-runtime-linux-attempt-1.zip").unlink()
    index = run.index
    index["subject"] = [s for s in index["subject"] if not s["name"].endswith(".zip")]
    for subject in index["subject"]:
        if subject["name"] == f"artifacts/{relative}":
            subject["digest"]["sha256"] = sha256(data)
    entry = platform_entry(index)
    entry["artifact"].pop("subject")
    entry["results"][0].update(sha256=sha256(data), size=len(data))
    entry["results"][0]["claims"]["github"] = document["github"]
    run.save(index)


@pytest.mark.parametrize("key, value", [("run_id", "17320009999"), ("job_id", "99239320001")])
def test_a_result_from_another_run_or_job_is_not_authentic(passing, key, value):
    _swap_result(passing, lambda document: document["github"].update({key: value}))
    completed = passing.verify()
    assert completed.returncode == 3, completed.stdout
    assert "predicate.verdict.pass: recorded True, the bytes say False" in completed.stdout
    assert f"the gate result's {key} is '{value}'" in completed.stdout


def test_a_result_of_another_job_with_the_recorded_job_edited_to_match_is_not_authentic(passing):
    _swap_result(passing, lambda document: document["github"].update(job_id="99239320001"))
    index = passing.index
    platform_entry(index)["job"]["id"] = 99239320001  # the forger also edits what the API said
    passing.save(index)
    completed = passing.verify()
    assert completed.returncode == 3, completed.stdout
    assert "predicate.platforms[0:linux].job.id: recorded 99239320001, the bytes say 99239323612" in completed.stdout


def test_the_api_answers_are_bound_and_an_edited_one_is_not_authentic(passing):
    jobs = passing.folder / "logs" / "api" / "jobs.json"
    assert {s["name"] for s in passing.index["subject"]} >= {
        "logs/api/run.json", "logs/api/jobs.json", "logs/api/artifacts.json"}
    jobs.write_text(jobs.read_text().replace('"success"', '"failure"'))
    completed = passing.verify()
    assert completed.returncode == 3 and "mismatch  logs/api/jobs.json" in completed.stdout


def test_an_index_that_does_not_bind_the_api_answers_is_not_authentic(passing):
    index = passing.index
    index["subject"] = [s for s in index["subject"] if not s["name"].startswith("logs/api/")]
    passing.save(index)
    completed = passing.verify()
    assert completed.returncode == 3 and "the index does not bind logs/api/jobs.json" in completed.stdout


def test_a_recorded_file_without_its_subject_is_not_authentic(passing):
    index = passing.index
    index["subject"] = [s for s in index["subject"] if not s["name"].endswith("platform-runtime-linux.json")]
    passing.save(index)
    completed = passing.verify()
    assert completed.returncode == 3
    assert ("predicate.platforms[linux].results: records artifacts/platform-runtime-linux-attempt-1/"
            "platform-runtime-linux.json, which is not a subject") in completed.stdout


def test_a_linux_result_in_a_windows_artifact_proves_nothing_about_windows(tmp_path, real_result):
    run = build_run(tmp_path / "windows", "windows", {"platform-runtime-windows.json": real_result},
                    runner_log("windows"))
    assert run.build_code == 1
    reasons = run.index["predicate"]["verdict"]["reasons"]
    assert "windows not proven: platform.system is 'Linux', not Windows" in reasons
    assert "windows not proven: the 'windows' requirement did not hold" in reasons
    # GitHub ran the job on windows-2025 and the runner's log says Windows Server: a Linux result is not its own.
    refused = run.verify()
    assert refused.returncode == 3, refused.stdout
    assert ("platform.system is 'Linux', but the job's labels (GitHub) names Windows (['windows-2025'])"
            in refused.stdout), refused.stdout
    index = run.index
    index["predicate"]["verdict"] = {"pass": True, "reasons": [],
                                     "platforms": {"windows": {"ok": True, "reasons": []}}}
    run.save(index)
    completed = run.verify()
    assert completed.returncode == 3
    assert "predicate.verdict.platforms.windows.ok: recorded True, the bytes say False" in completed.stdout


def test_a_byte_of_a_training_run_checkpoint_changed_is_not_authentic(tmp_path):
    folder = tmp_path / "training-run"
    shutil.copytree(TRAINING_RUN, folder)
    index = folder / "evidence-index.json"
    built = index_cli("local", "--results", str(folder), "--output", str(index))
    assert built.returncode == 0, built.stdout
    names = {s["name"] for s in json.loads(index.read_text())["subject"]}
    assert {"artifacts/training-run/checkpoint.pt", "artifacts/training-run/checkpoint.pt.sha256",
            "artifacts/training-run/config.json", "artifacts/training-run/metrics.jsonl",
            "artifacts/training-run/summary.json", "artifacts/training-run-check.json"} <= names

    def verify() -> subprocess.CompletedProcess:
        return index_cli("verify", str(index), "--artifacts", str(folder))

    assert verify().returncode == 0
    checkpoint = folder / "training-run" / "checkpoint.pt"
    data = bytearray(checkpoint.read_bytes())
    data[len(data) // 2] ^= 1
    checkpoint.write_bytes(bytes(data))
    completed = verify()
    assert completed.returncode == 3
    assert "mismatch  artifacts/training-run/checkpoint.pt" in completed.stdout


def test_a_failing_platform_marked_as_not_run_is_not_authentic(failing):
    index = failing.index
    platform_entry(index)["selected"] = False
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {}}
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3
    assert "predicate.platforms[0:linux].selected: recorded False, the bytes say True" in completed.stdout


def test_a_failing_platform_job_moved_among_the_other_jobs_is_not_authentic(failing):
    index = failing.index
    entry = index["predicate"]["platforms"].pop(0)
    index["predicate"]["other_jobs"].append({"id": entry["job"]["id"], "name": entry["job"]["name"],
                                             "conclusion": "success"})
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {}}
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3
    # the job list is judged from the API's answer bound at build time (logs/api/jobs.json)
    assert "predicate.platforms: recorded 0 item(s), the bytes give 1" in completed.stdout
    assert "predicate.other_jobs: recorded 1 item(s), the bytes give 0" in completed.stdout


def test_a_log_subject_pointed_at_another_jobs_clean_log_is_not_authentic(failing):
    index = failing.index
    clean = failing.folder / "logs" / "1-linux.log"
    clean.write_bytes(runner_log("linux"))
    index["subject"].append({"name": "logs/1-linux.log", "digest": {"sha256": sha256(clean.read_bytes())}})
    log = platform_entry(index)["log"]
    log.update(subject="logs/1-linux.log", sha256=sha256(clean.read_bytes()), error_count=0, error_lines=[])
    failing.save(index)
    completed = failing.verify()
    assert completed.returncode == 3
    assert ("predicate.platforms[0:linux].log.subject: recorded 'logs/1-linux.log', "
            f"the bytes say 'logs/{JOB_ID}-linux.log'") in completed.stdout


def _rejudge(run: Run, index: dict) -> None:
    """Re-derive every judgement from the files as they now are (what a forger with this code would do)."""
    sys.path.insert(0, str(SCRIPTS))
    from evidence_index.index_judge import Observed, judge_index
    from evidence_index.verify import _check_subject

    observed = Observed()
    roots = {"artifacts": run.folder / "artifacts", "logs": run.folder / "logs"}
    for subject in index["subject"]:
        _check_subject(subject, roots, observed)
    index["predicate"] = judge_index(index["predicate"], observed)
    run.save(index)


def test_a_result_removed_from_the_unpacked_folder_while_the_zip_holds_it_is_not_authentic(tmp_path, real_result):
    """The review's zipforge: the zip (GitHub's digest) still holds the failing diagnostic; the unpacked copy,
    its subject and every judgement no longer do."""
    diagnostic = json.loads(DIAGNOSTIC.read_text())
    diagnostic.update(status="failed", exit_code=1)
    files = {"platform-runtime-linux.json": real_result,
             "kernodeck-diagnostic-cpu.json": json.dumps(diagnostic).encode()}
    run = build_run(tmp_path / "zipforge", "linux", files, runner_log("linux"))
    assert run.build_code == 1
    (run.folder / "artifacts" / "platform-runtime-linux-attempt-1" / "kernodeck-diagnostic-cpu.json").unlink()
    index = run.index
    index["subject"] = [s for s in index["subject"] if not s["name"].endswith("kernodeck-diagnostic-cpu.json")]
    _rejudge(run, index)
    completed = run.verify()
    assert completed.returncode == 3, completed.stdout
    assert "kernodeck-diagnostic-cpu.json: in the zip artifacts/platform-runtime-linux-attempt-1.zip but not bound" \
        in completed.stdout


def test_an_unpacked_result_edited_while_the_zip_holds_the_original_is_not_authentic(failing):
    path = failing.folder / "artifacts" / "platform-runtime-linux-attempt-1" / "kernodeck-diagnostic-cpu.json"
    document = json.loads(path.read_text())
    document.update(status="passed", exit_code=0)
    path.write_text(json.dumps(document))
    index = failing.index
    for subject in index["subject"]:
        if subject["name"].endswith("kernodeck-diagnostic-cpu.json"):
            subject["digest"]["sha256"] = sha256(path.read_bytes())
    _rejudge(failing, index)
    completed = failing.verify()
    assert completed.returncode == 3, completed.stdout
    assert "its bytes differ from the zip artifacts/platform-runtime-linux-attempt-1.zip's entry" in completed.stdout


@pytest.mark.parametrize("status", ["downloaded", "local"])
def test_an_artifact_whose_zip_was_dropped_proves_nothing(failing, status):
    """Dropping the zip (and relabelling the folder as unpacked) is not a way around the zip check."""
    path = failing.folder / "artifacts" / "platform-runtime-linux-attempt-1" / "kernodeck-diagnostic-cpu.json"
    path.unlink()
    (failing.folder / "artifacts" / "platform-runtime-linux-attempt-1.zip").unlink()
    index = failing.index
    dropped = ("kernodeck-diagnostic-cpu.json", ".zip")
    index["subject"] = [s for s in index["subject"] if not s["name"].endswith(dropped)]
    platform_entry(index)["artifact"].update(status=status, subject=None)
    _rejudge(failing, index)
    completed = failing.verify()
    assert completed.returncode == 1, completed.stdout
    assert "the artifact's zip is not bound" in completed.stdout


def test_an_honest_index_of_a_refused_zip_is_authentic_and_fails(tmp_path, real_result):
    """The zip rule holds for unpacked artifacts; a zip refused at build (a link inside) binds no entries,
    and verify says FAIL (exit 1), not "not authentic"."""
    run = Run(tmp_path / "refused")
    with FakeGitHub() as fake:
        fake.jobs = [FakeJob(id=JOB_ID, name="platform-runtime / linux", log=runner_log("linux"),
                             **job_times(real_result))]
        fake.artifacts = [FakeArtifact(id=3901000101, name="platform-runtime-linux-attempt-1", content=make_zip(
            {"platform-runtime-linux.json": real_result}, symlinks={"escape": "../../etc/passwd"}))]
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        index_cli("build", "--repository", fake.repository, "--run-id",
                        str(fake.run_id), "--platforms", "linux", "--source-root", str(ROOT), "--logs-dir",
                        str(run.folder / "logs"), "--download-dir", str(run.folder / "artifacts"), "--output",
                        str(run.index_path), env=env)
    assert platform_entry(run.index)["artifact"]["status"] == "refused"
    completed = run.verify()
    assert completed.returncode == 1, completed.stdout


# --- the plan's selection, read back from the plan job's log (GitHub keeps it) -------------------------


def plan_run(tmp_path, real_result, selected: tuple[str, ...], platforms: str, name: str = "plan") -> Run:
    return build_run(tmp_path / name, "linux", {"platform-runtime-linux.json": real_result}, runner_log("linux"),
                     plan=plan_log((plan_log_line(selected),)), platforms=platforms)


def test_the_plan_jobs_log_is_bound_and_names_the_selection(tmp_path, real_result):
    run = plan_run(tmp_path, real_result, ("linux",), "linux")
    assert run.build_code == 0, run.index["predicate"]["verdict"]
    plan = run.index["predicate"]["plan"]
    assert plan["log"]["subject"] == f"logs/{PLAN_JOB_ID}-plan.log" and plan["log"]["plan_selections"] == [["linux"]]
    assert plan["log"]["subject"] in {s["name"] for s in run.index["subject"]}
    assert run.verify().returncode == 0


def test_an_index_built_with_fewer_platforms_than_the_plan_selected_fails(tmp_path, real_result):
    run = plan_run(tmp_path, real_result, ("linux", "windows"), "linux")
    assert run.build_code == 1
    reasons = run.index["predicate"]["verdict"]["reasons"]
    assert "plan: the plan job's log selected linux, windows; the index requires linux (--platforms)" in reasons
    assert "windows: selected by the plan, but no windows job ran in this attempt" in reasons


def test_an_index_edited_to_require_fewer_platforms_than_the_plan_selected_is_not_authentic(tmp_path, real_result):
    run = plan_run(tmp_path, real_result, ("linux", "windows"), "linux,windows")
    assert run.build_code == 1  # windows was selected and never ran
    index = run.index
    index["predicate"]["required_platforms"] = ["linux"]
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
    run.save(index)
    completed = run.verify()
    assert completed.returncode == 3, completed.stdout
    assert "predicate.verdict" in completed.stdout


@pytest.mark.parametrize("lines, words", [
    ((), "has no selection line"),
    (("platform-runtime plan: not json",), "has an unreadable selection line"),
    ((plan_log_line(["linux"]), plan_log_line(["linux", "windows"])), "has 2 selection lines"),
])
def test_a_plan_log_without_exactly_one_readable_selection_fails(tmp_path, real_result, lines, words):
    run = build_run(tmp_path / "p", "linux", {"platform-runtime-linux.json": real_result}, runner_log("linux"),
                    plan=plan_log(lines))
    assert run.build_code == 1
    assert any(words in reason for reason in run.index["predicate"]["verdict"]["reasons"])


def test_a_callers_own_job_named_plan_is_not_taken_for_the_plan():
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


@pytest.mark.parametrize("edit", ["removed", "null", "other-log", "no-subject"])
def test_an_index_whose_plan_record_is_edited_still_reads_the_plan_from_the_bound_bytes(tmp_path, real_result,
                                                                                        edit):
    run = plan_run(tmp_path, real_result, ("linux", "windows"), "linux,windows")
    assert run.build_code == 1  # windows was selected and never ran
    index = run.index
    predicate = index["predicate"]
    if edit == "removed":
        predicate.pop("plan")
    elif edit == "null":
        predicate["plan"] = None
    elif edit == "other-log":
        predicate["plan"]["log"]["subject"] = f"logs/{JOB_ID}-linux.log"
    else:
        predicate["plan"]["log"].update(subject=None, status="missing")
    predicate["required_platforms"] = ["linux"]
    predicate["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
    run.save(index)
    completed = run.verify()
    assert completed.returncode == 3, completed.stdout


def test_a_plan_job_that_did_not_succeed_fails_the_verdict(tmp_path, real_result):
    from evidence_index.index_verdict import decide_run

    run = plan_run(tmp_path, real_result, ("linux",), "linux")
    predicate = run.index["predicate"]
    assert decide_run(predicate)["pass"] is True
    predicate["plan"]["job"]["conclusion"] = "failure"
    assert "plan: the plan job concluded 'failure', not success" in decide_run(predicate)["reasons"]
    predicate["plan"].update(candidates=2)
    assert any("2 plan jobs" in reason for reason in decide_run(predicate)["reasons"])
