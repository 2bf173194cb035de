"""The evidence job's review step with a baseline run (issue 22): the baseline's evidence artifact and the
platform artifacts its index binds come through the REST API of a GitHub-shaped server on loopback, the
baseline is verified, the diff goes to the step summary and into the evidence folder; a baseline that
cannot be fetched or verified is reported and the step still exits 0."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.fake_github import (
    FAKE_SOURCES,
    FakeArtifact,
    FakeGitHub,
    fake_source_root,
    source_hashes,
    standard_run,
)
from tests.evidence_index.test_evidence_index_diff import cli, run_index

STEP = SCRIPTS / "steps" / "review.py"
BASELINE_RUN = 17320001234
WORKFLOW_REF = "kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/heads/main"


def zip_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


@pytest.fixture
def baseline(tmp_path):
    """A served run whose evidence job uploaded its index and job logs, as the workflow's evidence job does."""
    with FakeGitHub(run_id=BASELINE_RUN) as fake:
        standard_run(fake, ("linux", "windows"), source_hashes(fake_source_root(), FAKE_SOURCES))
        out = tmp_path / "baseline-job"
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        built = cli("build", "--repository", fake.repository, "--run-id", BASELINE_RUN, "--output",
                    out / "evidence" / "platform-runtime-evidence.json", "--logs-dir", out / "evidence" / "logs",
                    "--download-dir", out / "artifacts", "--source-root", fake_source_root(),
                    "--log-patience", "0", env=env)
        assert built.returncode == 0, built.stdout + built.stderr
        fake.artifacts.append(FakeArtifact(id=3901000999, name="platform-runtime-evidence-attempt-1",
                                           content=zip_folder(out / "evidence")))
        yield fake


def current_run(tmp_path: Path, edit=None) -> Path:
    def both(platform: str, document: dict) -> None:
        if edit is not None:
            edit(platform, document)

    return run_index(tmp_path, "current", 17320005678, both)


def review(tmp_path: Path, current: Path, fake: FakeGitHub | None, run_id: str = str(BASELINE_RUN),
           **env_extra: str) -> tuple[subprocess.CompletedProcess, Path, str]:
    evidence = current / "evidence"
    evidence.mkdir(exist_ok=True)
    (current / "index.json").replace(evidence / "platform-runtime-evidence.json") \
        if (current / "index.json").exists() else None
    summary = tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "ACT")}
    env.update(BASELINE_RUN_ID=run_id, REPOSITORY="kernodeck/platform-runtime", GITHUB_WORKFLOW_REF=WORKFLOW_REF,
               GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(tmp_path / "output"))
    if fake is not None:
        env.update(GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-B", str(STEP), "--index", str(evidence / "platform-runtime-evidence.json"),
                           "--artifacts", str(current / "artifacts"), "--logs", str(current / "logs"),
                           "--out-dir", str(evidence)], capture_output=True, text=True, timeout=120, env=env)
    return done, evidence, summary.read_text() if summary.exists() else ""


def test_the_baseline_is_downloaded_verified_and_its_diff_summarised_and_kept(tmp_path, baseline):
    def edit(platform: str, document: dict) -> None:
        if platform == "windows":
            document["github"]["image_version"] = "20261117.1"

    current = current_run(tmp_path, edit)
    done, evidence, summary = review(tmp_path, current, baseline)
    assert done.returncode == 0, done.stdout + done.stderr
    changes = json.loads((evidence / "baseline-diff.json").read_text())["changes"]
    assert {"platform": "windows", "kind": "environment", "path": "github.image_version", "old": None,
            "new": "20261117.1", "result": "platform-runtime-windows.json"} in changes
    # the current run has five platforms, the baseline two: each one the baseline lacks is named
    assert {c["platform"] for c in changes if c["path"] == "selected"} == {"mps", "cuda", "nfs"}
    assert summary.startswith(f"## What changed since baseline run {BASELINE_RUN}:")
    assert "`github.image_version`" in summary and (evidence / "baseline-diff.md").read_text() == summary
    html = (evidence / "platform-runtime-evidence.html").read_text()
    assert "What changed since the baseline" in html and "github.image_version" in html
    assert baseline.token not in done.stdout + done.stderr + summary + html
    assert not baseline.blob_saw_authorization()


def test_without_a_baseline_only_the_report_is_written(tmp_path):
    current = current_run(tmp_path)
    done, evidence, summary = review(tmp_path, current, None, run_id="")
    assert done.returncode == 0 and (evidence / "platform-runtime-evidence.html").is_file()
    assert not (evidence / "baseline-diff.json").exists() and summary == ""


def reported(done: subprocess.CompletedProcess, evidence: Path, summary: str, why: str) -> None:
    """Reported (a warning and a summary line), nothing compared, the report still written, exit 0."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::warning title=baseline::" in done.stdout and why in done.stdout, done.stdout
    assert "could not be compared" in summary and "does not depend on it" in summary
    assert not (evidence / "baseline-diff.json").exists()
    assert (evidence / "platform-runtime-evidence.html").is_file()


def test_a_baseline_whose_platform_artifact_expired_is_reported_and_fails_nothing(tmp_path, baseline):
    next(a for a in baseline.artifacts if a.name == "platform-runtime-linux-attempt-1").expired = True
    current = current_run(tmp_path)
    reported(*review(tmp_path, current, baseline), "is gone")


def test_a_baseline_whose_evidence_was_edited_does_not_verify_and_is_reported(tmp_path, baseline):
    evidence = next(a for a in baseline.artifacts if a.name.endswith("evidence-attempt-1"))
    with zipfile.ZipFile(io.BytesIO(evidence.content)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    index = json.loads(files["platform-runtime-evidence.json"])
    index["predicate"]["verdict"]["reasons"].append("an edit")
    files["platform-runtime-evidence.json"] = json.dumps(index).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    evidence.content = buffer.getvalue()
    current = current_run(tmp_path)
    reported(*review(tmp_path, current, baseline), "does not verify")


def test_a_run_of_another_workflow_is_not_a_baseline(tmp_path, baseline):
    baseline.workflow_path = ".github/workflows/other.yml"
    current = current_run(tmp_path)
    reported(*review(tmp_path, current, baseline), "not of this workflow")


def serve_evidence_of(tmp_path: Path, fake: FakeGitHub, **run: object) -> None:
    """`fake`'s run, whose evidence artifact holds the index of the run `run` describes (another repository,
    run or workflow) with the platform zips that index binds uploaded beside it byte for byte: it verifies."""
    sources = source_hashes(fake_source_root(), FAKE_SOURCES)
    with FakeGitHub(**run) as other:
        standard_run(other, ("linux", "windows"), sources)
        out = tmp_path / "other-job"
        env = dict(os.environ, GITHUB_API_URL=other.api_url, GITHUB_TOKEN=other.token)
        built = cli("build", "--repository", other.repository, "--run-id", other.run_id, "--output",
                    out / "evidence" / "platform-runtime-evidence.json", "--logs-dir", out / "evidence" / "logs",
                    "--download-dir", out / "artifacts", "--source-root", fake_source_root(),
                    "--log-patience", "0", env=env)
        assert built.returncode == 0, built.stdout + built.stderr
        zips = {artifact.name: artifact.content for artifact in other.artifacts}
    standard_run(fake, ("linux", "windows"), sources)
    for artifact in fake.artifacts:
        artifact.content = zips[artifact.name]
    fake.artifacts.append(FakeArtifact(id=3901000999, name="platform-runtime-evidence-attempt-1",
                                       content=zip_folder(out / "evidence")))


@pytest.mark.parametrize("run", [{"repository": "someone/else", "run_id": BASELINE_RUN},
                                 {"run_id": 17320001111}], ids=["another-repository", "another-run"])
def test_an_index_of_another_repository_or_run_in_the_baseline_artifact_is_refused(tmp_path, run):
    with FakeGitHub(run_id=BASELINE_RUN) as fake:
        serve_evidence_of(tmp_path, fake, **run)
        done, evidence, summary = review(tmp_path, current_run(tmp_path), fake)
    reported(done, evidence, summary, "its index is of run")


def test_without_the_workflow_ref_this_runs_own_index_names_the_workflow_a_baseline_must_be_of(tmp_path):
    other = ".github/workflows/other.yml"
    with FakeGitHub(run_id=BASELINE_RUN, workflow_path=other) as fake:
        serve_evidence_of(tmp_path, fake, run_id=BASELINE_RUN, workflow_path=other)
        done, evidence, summary = review(tmp_path, current_run(tmp_path), fake, GITHUB_WORKFLOW_REF="")
    reported(done, evidence, summary, "not of this workflow")


@pytest.mark.parametrize("run_id", ["17320009999", "12; rm -rf /"])
def test_a_run_that_is_not_there_or_not_an_id_is_reported(tmp_path, baseline, run_id):
    current = current_run(tmp_path)
    reported(*review(tmp_path, current, baseline, run_id=run_id), "run")


def test_a_baseline_that_takes_too_long_is_reported_within_its_deadline(tmp_path, baseline):
    # A server that keeps asking to wait (each answer within the client's patience) must not hold the evidence
    # job past its timeout, which would fail a green run: the step gives the baseline BASELINE_DEADLINE_S.
    import time

    from tests.evidence_index.fake_github import Fault

    baseline.faults.append(Fault(path=rf"/actions/runs/{BASELINE_RUN}$", status=503, times=50,
                                 headers={"Retry-After": "40"}))
    current = current_run(tmp_path)
    started = time.monotonic()
    done, evidence, summary = review(tmp_path, current, baseline, BASELINE_DEADLINE_S="2")
    assert time.monotonic() - started < 30
    reported(done, evidence, summary, "longer than 2 s")


def test_under_act_the_baseline_is_reported_as_unreachable(tmp_path, baseline):
    current = current_run(tmp_path)
    reported(*review(tmp_path, current, baseline, ACT="true"), "act serves no REST API")


def test_the_workflow_takes_an_optional_baseline_run_id_and_its_review_step_cannot_fail_the_job():
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "platform-runtime.yml").read_text())
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as True
    for trigger in ("workflow_call", "workflow_dispatch"):
        assert on[trigger]["inputs"]["baseline-run-id"] == {**on[trigger]["inputs"]["baseline-run-id"],
                                                            "type": "string", "default": ""}
    job = workflow["jobs"]["evidence"]
    (step,) = [s for s in job["steps"] if "steps/review.py" in s.get("run", "")]
    assert step["env"]["BASELINE_RUN_ID"] == "${{ inputs.baseline-run-id }}" and "${{" not in step["run"]
    assert step["continue-on-error"] is True and step["if"].startswith("${{ always()")
    # a slow baseline cannot hold the job past its own timeout (a cancelled job is a red run)
    assert step["timeout-minutes"] < job["timeout-minutes"]
    assert job["permissions"] == {"contents": "read", "actions": "read"}  # nothing more than the index needed
    names = [s.get("name", "") for s in job["steps"]]
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert names.index(step["name"]) < names.index(upload["name"]) and upload["with"]["path"] == "evidence"


def test_a_repeated_artifact_name_in_the_baseline_run_resolves_to_its_newest_copy(tmp_path, baseline):
    """The artifact list is newest first (direction=desc): an older copy listed after the real one, under the
    same name, must not be the one downloaded."""
    real = next(a for a in baseline.artifacts if a.name.startswith("platform-runtime-linux-"))
    baseline.artifacts.append(FakeArtifact(id=3901000998, name=real.name, content=b"PK\x05\x06" + b"\0" * 18,
                                           created_at="2026-08-24T09:00:00Z"))
    done, evidence, summary = review(tmp_path, current_run(tmp_path), baseline)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (evidence / "baseline-diff.json").is_file(), summary
