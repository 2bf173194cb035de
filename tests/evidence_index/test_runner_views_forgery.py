"""Online indexes: a result is judged against what GitHub and the runner say of the job that uploaded it
(rules.runner). Each forgery changes ONE fact of a passing fake run (fake_github.standard_run), is built
(`build --repository --run-id` against the fake GitHub) and verified; none passes, each refusal names the
field, and the untouched runs of every platform -- a self-hosted CUDA box among them -- still pass."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS
from tests.evidence_index import fake_github as fg
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"


def _served(folder: Path, platform: str, edit: Callable[..., None] | None = None) -> tuple[int, int, str]:
    """Serve a passing one-platform run, let `edit(fake, job, artifact, result)` change one fact (the result
    is re-zipped after it), build its index and verify it: (build exit, verify exit, verify's output)."""
    root = fg.fake_source_root()
    with fg.FakeGitHub() as fake:
        job, artifact = fg.standard_run(fake, (platform,), fg.source_hashes(root, fg.FAKE_SOURCES))[platform]
        result = fg.gate_result(platform, sources=fg.source_hashes(root, fg.FAKE_SOURCES), run_id=fake.run_id,
                                job_id=job.id, repository=fake.repository, sha=fake.head_sha)
        if edit is not None:
            edit(fake, job, artifact, result)
        artifact.content = fg.make_zip({f"platform-runtime-{platform}.json": json.dumps(result, indent=2).encode()})
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        built = index_cli("build", "--repository", fake.repository,
                                "--run-id", str(fake.run_id), "--source-root", str(root),
                                "--logs-dir", str(folder / "logs"), "--download-dir", str(folder / "artifacts"),
                                "--output", str(folder / "index.json"), env=env)
    assert (folder / "index.json").is_file(), built.stderr
    verified = index_cli("verify", str(folder / "index.json"), "--artifacts",
                               str(folder / "artifacts"), "--logs", str(folder / "logs"), "--source-root", str(root))
    return built.returncode, verified.returncode, verified.stdout + verified.stderr


def _refused(folder: Path, platform: str, edit: Callable[..., None], *named: str) -> None:
    built, verified, output = _served(folder, platform, edit)
    assert built == 1, output
    assert verified == 3, output
    for text in named:
        assert text in output, output


@pytest.mark.parametrize("platform", ["linux", "windows", "mps", "cuda", "nfs"])
def test_the_untouched_run_of_each_platform_passes(tmp_path, platform):
    """cuda is the fake's self-hosted box: labels self-hosted, linux, cuda; a log without the hosted groups."""
    built, verified, output = _served(tmp_path, platform)
    assert (built, verified) == (0, 0), output


def _labels(*labels: str) -> Callable[..., None]:
    def edit(fake, job, artifact, result) -> None:
        job.labels = list(labels)
    return edit


def _log_of(platform: str) -> Callable[..., None]:
    def edit(fake, job, artifact, result) -> None:
        job.log = fg.runner_log(platform, job_name=job.name)
    return edit


@pytest.mark.parametrize(("platform", "labels", "named"), [
    ("windows", ["ubuntu-24.04"], "platform.system is 'Windows', but the job's labels (GitHub) names Linux"),
    ("mps", ["ubuntu-24.04"], "platform.system is 'Darwin', but the job's labels (GitHub) names Linux"),
    ("nfs", ["windows-2025"], "platform.system is 'Linux', but the job's labels (GitHub) names Windows"),
    ("cuda", ["self-hosted", "windows", "cuda"], "platform.system is 'Linux', but the job's labels (GitHub) names "
                                                  "Windows"),
])
def test_a_result_from_a_job_whose_labels_name_another_os_is_not_authentic(tmp_path, platform, labels, named):
    _refused(tmp_path, platform, _labels(*labels), named)


def test_cuda_from_a_standard_github_hosted_image_is_not_authentic(tmp_path):
    """ubuntu-24.04 is Linux, as the CUDA result says, but GitHub's standard images have no GPU."""
    _refused(tmp_path, "cuda", _labels("ubuntu-24.04"), "'ubuntu-24.04' is a standard GitHub-hosted image")


@pytest.mark.parametrize(("platform", "log", "named"), [
    ("windows", "linux", "platform.system is 'Windows', but the job log's runner os names Linux (Ubuntu 24.04.3"),
    ("mps", "linux", "platform.system is 'Darwin', but the job log's runner image names Linux (ubuntu-24.04)"),
    ("nfs", "windows", "platform.system is 'Linux', but the job log's runner os names Windows"),
])
def test_a_result_from_a_job_whose_runner_log_names_another_os_is_not_authentic(tmp_path, platform, log, named):
    _refused(tmp_path, platform, _log_of(log), named)


def test_a_result_whose_commit_is_not_the_runs_head_sha_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        result["github"]["sha"] = "0" * 40
    _refused(tmp_path, "linux", edit, f"github.sha is {'0' * 40!r}, but the run's head_sha (GitHub) is "
                                      "'1928efbf98b33bc87fea7962539525f57a349d25'")


def test_a_result_naming_another_repositorys_workflow_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        result["github"]["workflow_ref"] = "mallory/fork/.github/workflows/platform-runtime.yml@refs/heads/main"
    _refused(tmp_path, "linux", edit, "github.workflow_ref is 'mallory/fork/", "the run's repository (GitHub)")


def test_a_result_naming_another_workflow_of_the_repository_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        result["github"]["workflow_ref"] = "kernodeck/platform-runtime/.github/workflows/other.yml@refs/heads/main"
    _refused(tmp_path, "linux", edit, "the run's workflow path (GitHub) is '.github/workflows/platform-runtime.yml'")


def test_a_result_naming_another_platform_job_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        result["github"]["job"] = "windows"
    _refused(tmp_path, "linux", edit, "github.job is 'windows', but the result came from the linux job")


def test_a_result_whose_runner_os_is_another_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        result["github"]["runner_os"] = "Windows"
    _refused(tmp_path, "linux", edit, "github.runner_os is 'Windows', but platform.system is 'Linux'",
             "github.runner_os is 'Windows', but the job's labels (GitHub) names Linux")


def test_an_empty_job_log_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        job.log = b""
    _refused(tmp_path, "linux", edit, "the job log has no runner set-up lines")


def test_a_job_log_naming_another_job_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        job.log = fg.runner_log("linux", job_name="platform-runtime / windows")
    _refused(tmp_path, "linux", edit, "the job log's 'Complete job name' is 'platform-runtime / windows', but the "
                                      "job's name (GitHub) is 'platform-runtime / linux'")


def test_an_artifact_created_before_its_job_started_is_not_authentic(tmp_path):
    def edit(fake, job, artifact, result) -> None:
        artifact.created_at = "2020-01-01T00:00:00Z"
    _refused(tmp_path, "linux", edit, "the artifact's created_at (GitHub) is '2020-01-01T00:00:00Z', before the "
                                      "job's started_at (GitHub)")


def test_a_self_hosted_linux_box_of_any_name_passes(tmp_path):
    """A self-hosted runner's own labels: its OS label agrees, the custom ones say nothing."""
    built, verified, output = _served(tmp_path, "cuda", _labels("self-hosted", "Linux", "X64", "h200-lab"))
    assert (built, verified) == (0, 0), output
