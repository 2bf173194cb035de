"""Re-runs either way (issue 21.2): the builder reads the run's jobs of every attempt (`filter=all`) and
takes, per platform, its newest execution up to the attempt that ran. Whether GitHub lists, under
attempt N of "Re-run failed jobs", the jobs carried over from attempt 1 is not in its description, so
every test here runs against each behaviour of the fake (`carry_over`: "listed" as they are, "copied"
as new records under attempt N, "omitted")."""

from __future__ import annotations

import json

import pytest

from tests.evidence_index.fake_github import (
    CARRY_OVER,
    FakeArtifact,
    FakeGitHub,
    FakeJob,
    gate_result,
    make_zip,
    runner_log,
    standard_run,
)
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_evidence_index_build import build, fake, sources  # noqa: F401 - fixtures


def rerun_failed_windows(fake: FakeGitHub, sources: dict[str, str]) -> dict[str, dict]:  # noqa: F811
    """Attempt 1: linux passed, windows failed, so evidence failed. "Re-run failed jobs": attempt 2 runs
    windows and evidence again as NEW jobs (new ids, run_attempt 2); plan and linux are not re-run.
    Returns the platform jobs' outputs as the evidence job of attempt 2 sees them."""
    made = standard_run(fake, ("linux", "windows"), sources)
    (windows_1, _), (linux_1, linux_artifact) = made["windows"], made["linux"]
    windows_1.conclusion = "failure"
    windows_1.log = runner_log("windows", job_name=windows_1.name, exit_code=1)
    next(job for job in fake.jobs if job.name.endswith("/ evidence")).conclusion = "failure"
    fake.run_attempt = 2
    # The re-run ran later than attempt 1: its job's window (GitHub), its gate's start and its upload inside it.
    windows_2 = FakeJob(id=windows_1.id + 100_000, name=windows_1.name, run_attempt=2, labels=windows_1.labels,
                        log=runner_log("windows", job_name=windows_1.name), started_at="2026-08-24T11:15:00Z",
                        completed_at="2026-08-24T11:21:00Z")
    result = gate_result("windows", sources=sources, run_id=fake.run_id, run_attempt=2, job_id=windows_2.id,
                         sha=fake.head_sha)
    result["started_at"] = "2026-08-24T11:16:00Z"
    body = json.dumps(result).encode()
    rerun = FakeArtifact(id=3901000200, name="platform-runtime-windows-attempt-2",
                         content=make_zip({"platform-runtime-windows.json": body}), created_at="2026-08-24T11:20:00Z")
    fake.jobs += [windows_2, FakeJob(id=windows_2.id + 1, name="platform-runtime / evidence", run_attempt=2,
                                     status="in_progress", conclusion=None, log=None)]
    fake.artifacts.append(rerun)
    return {
        "linux": {"artifact_id": str(linux_artifact.id), "artifact_name": linux_artifact.name,
                  "artifact_digest": linux_artifact.sha256(), "attempt": "1", "job_result": "success",
                  "job_id": str(linux_1.id)},
        "windows": {"artifact_id": str(rerun.id), "artifact_name": rerun.name,
                    "artifact_digest": f"sha256:{rerun.sha256()}", "attempt": "2", "job_result": "success",
                    "job_id": str(windows_2.id)},
    }


@pytest.mark.parametrize("carry_over", CARRY_OVER)
def test_after_rerunning_failed_jobs_each_platform_is_its_newest_execution(fake, sources, tmp_path,  # noqa: F811
                                                                           carry_over):
    fake.carry_over = carry_over
    outputs = rerun_failed_windows(fake, sources)
    (tmp_path / "pa.json").write_text(json.dumps(outputs))
    built = build(fake, tmp_path / "out", "--attempt", "2", "--platforms", "linux,windows",
                  "--platform-artifacts", str(tmp_path / "pa.json"))
    assert built.code == 0, built.stdout + built.stderr
    linux, windows = built.platform("linux"), built.platform("windows")
    assert (linux["job"]["id"], linux["job"]["run_attempt"]) == (int(outputs["linux"]["job_id"]), 1)
    assert (windows["job"]["id"], windows["job"]["run_attempt"]) == (int(outputs["windows"]["job_id"]), 2)
    assert [p["platform"] for p in built.predicate["platforms"]] == ["linux", "windows"]  # attempt 1's windows: not
    assert built.predicate["plan"]["job"]["name"] == "platform-runtime / plan"
    assert fake.count("api", r"/jobs\?filter=all") == 1 and fake.count("api", r"/attempts/\d+/jobs") == 0


@pytest.mark.parametrize("carry_over", CARRY_OVER)
def test_the_index_of_attempt_one_is_still_attempt_ones_jobs(fake, sources, tmp_path, carry_over):  # noqa: F811
    fake.carry_over = carry_over
    rerun_failed_windows(fake, sources)
    built = build(fake, tmp_path / "out", "--attempt", "1", "--platforms", "linux,windows")
    assert built.code == 1
    assert built.platform("windows")["job"]["run_attempt"] == 1
    assert "windows: job completed, conclusion failure" in built.verdict["reasons"]


@pytest.mark.parametrize("carry_over", CARRY_OVER)
def test_verify_rederives_the_same_selection_from_the_bound_job_list(fake, sources, tmp_path,  # noqa: F811
                                                                     carry_over):


    fake.carry_over = carry_over
    (tmp_path / "pa.json").write_text(json.dumps(rerun_failed_windows(fake, sources)))
    built = build(fake, tmp_path / "out", "--attempt", "2", "--platform-artifacts", str(tmp_path / "pa.json"))
    assert built.code == 0, built.stdout
    out = tmp_path / "out"
    verified = index_cli("verify", str(out / "index.json"),
                               "--logs", str(out / "logs"), "--artifacts", str(out / "artifacts"))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_two_behaviours_differ_where_the_attempts_own_list_would_lose_a_platform(fake, sources):  # noqa: F811
    # What made `--attempt N` -> /attempts/N/jobs wrong: with "omitted", attempt 2 lists no linux job at all.
    import requests

    rerun_failed_windows(fake, sources)
    url = f"{fake.api_url}/repos/{fake.repository}/actions/runs/{fake.run_id}/attempts/2/jobs"
    names = {}
    for mode in CARRY_OVER:
        fake.carry_over = mode
        jobs = requests.get(url, headers={"Authorization": f"Bearer {fake.token}"}, timeout=10).json()["jobs"]
        names[mode] = sorted((job["name"], job["run_attempt"]) for job in jobs)
    assert ("platform-runtime / linux", 1) in names["listed"]
    assert ("platform-runtime / linux", 2) in names["copied"]  # a copy: it did not run again
    assert names["omitted"] == [("platform-runtime / evidence", 2), ("platform-runtime / windows", 2)]


def test_a_copy_under_a_later_attempt_gives_way_to_the_execution_it_copies_and_a_real_rerun_does_not():
    from evidence_index.runfacts import jobs_of_attempt

    ran = {"name": "linux", "started_at": "2026-08-24T10:00:05Z", "completed_at": "2026-08-24T10:03:41Z",
           "conclusion": "success"}
    copy = {**ran, "id": 9, "run_attempt": 2}
    assert [job["id"] for job in jobs_of_attempt([{**ran, "id": 1, "run_attempt": 1}, copy], 2)] == [1]
    rerun = {**copy, "started_at": "2026-08-24T11:00:05Z", "completed_at": "2026-08-24T11:03:00Z"}
    assert [job["id"] for job in jobs_of_attempt([{**ran, "id": 1, "run_attempt": 1}, rerun], 2)] == [9]


def test_a_platform_skipped_in_the_newest_attempt_is_taken_from_the_attempt_where_it_ran():
    from evidence_index.runfacts import jobs_of_attempt

    jobs = [{"id": 1, "name": "linux", "run_attempt": 1, "conclusion": "success"},
            {"id": 2, "name": "linux", "run_attempt": 2, "conclusion": "skipped"},
            {"id": 3, "name": "mps", "run_attempt": 1, "conclusion": "skipped"},
            {"id": 4, "name": "mps", "run_attempt": 2, "conclusion": "skipped"},
            {"id": 5, "name": "nfs", "run_attempt": 3, "conclusion": "success"},
            {"id": 1, "name": "linux", "run_attempt": 1, "conclusion": "success"}]  # listed twice: once
    assert [job["id"] for job in jobs_of_attempt(jobs, 2)] == [1, 4]  # nfs ran after attempt 2
    assert [job["id"] for job in jobs_of_attempt(jobs, 3)] == [1, 4, 5]


def test_the_name_fallback_takes_the_newest_artifact_by_created_at_not_by_list_position(fake, sources,  # noqa: F811
                                                                                          tmp_path):
    # Without --platform-artifacts the artifact is found by name. Should the list ever repeat a name, the
    # newest by created_at is read: the list is newest first by default (direction=desc), so the last
    # entry is the OLDEST -- what the earlier `matches[-1]` took.
    made = standard_run(fake, ("linux",), sources)
    job, newest = made["linux"]
    failing = json.dumps(gate_result("linux", ok=False, sources=sources, run_id=fake.run_id, job_id=job.id,
                                     sha=fake.head_sha)).encode()
    fake.artifacts.append(FakeArtifact(id=newest.id - 50, name=newest.name, created_at="2026-08-24T10:01:00Z",
                                       content=make_zip({"platform-runtime-linux.json": failing})))
    built = build(fake, tmp_path / "out")
    assert built.platform("linux")["artifact"]["id"] == newest.id
    assert built.code == 0, built.stdout
