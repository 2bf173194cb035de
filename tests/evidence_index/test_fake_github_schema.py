"""The fake GitHub serves what GitHub's REST description says (issue 21.3): every body fits the schema of
the operation and status it answers (tests/evidence_index/github-api/, OpenAPI 3.0 with `$ref`s resolved
and `nullable`), lists are ordered, filtered and paginated as described, and the 302/404/410 answers are
the described ones. The validator itself is shown to fail on broken bodies."""

from __future__ import annotations

import json

import pytest
import requests

from tests.evidence_index import rest_schema
from tests.evidence_index.fake_github import CARRY_OVER, FakeArtifact, FakeGitHub, Fault, make_zip, standard_run
from tests.evidence_index.test_evidence_index_build import build, fake, sources  # noqa: F401 - fixtures
from tests.evidence_index.test_evidence_index_reruns import rerun_failed_windows

# Statuses GitHub answers on any operation although the description lists them on few: bad credentials,
# refusals and rate limits, a resource that is not there, server errors. Their body is a basic-error.
ANY_OPERATION = {401, 403, 404, 429, 500, 502, 503}


def served_problems(fake: FakeGitHub) -> list[str]:  # noqa: F811
    """Every way the API responses the fake answered so far break the description."""
    found = []
    for record in (r for r in fake.requests if r.host == "api"):
        try:
            template = rest_schema.operation_of(record.route)
        except LookupError:
            found.append(f"{record.route}: not an operation of the description")
            continue
        body = json.loads(record.body) if record.body else None
        try:
            rest_schema.response_of(template, record.status)
        except LookupError:
            if record.status not in ANY_OPERATION:
                found.append(f"{record.route}: {record.status} is not a response of {template}")
                continue
            errors = rest_schema.problems_against("basic-error", body)
        else:
            errors = rest_schema.problems(record.route, record.status, body)
            # A redirect IS its Location; the other described headers (Link) come only when they apply.
            if 300 <= record.status < 400:
                missing = rest_schema.headers_of(record.route, record.status) - set(record.response_headers)
                errors += [f"header {name} missing" for name in sorted(missing)]
        found += [f"{record.route} {record.status}: {error}" for error in errors]
    return found


def get(fake: FakeGitHub, path: str, token: bool = True) -> requests.Response:  # noqa: F811
    headers = {"Authorization": f"Bearer {fake.token}"} if token else {}
    return requests.get(f"{fake.api_url}/repos/{fake.repository}/actions{path}", headers=headers,
                        allow_redirects=False, timeout=10)


@pytest.mark.parametrize("carry_over", CARRY_OVER)
def test_every_response_of_every_operation_fits_the_description(fake, sources, carry_over):  # noqa: F811
    fake.carry_over = carry_over
    rerun_failed_windows(fake, sources)
    fake.artifacts[0].expired = True
    run = f"/runs/{fake.run_id}"
    job_without_log = next(job for job in fake.jobs if job.log is None)
    paths = [run, f"{run}/attempts/1", f"{run}/attempts/2", f"{run}/attempts/3", f"{run}/jobs",
             f"{run}/jobs?filter=all", f"{run}/jobs?filter=latest&per_page=2", f"{run}/attempts/1/jobs",
             f"{run}/attempts/2/jobs", f"{run}/attempts/9/jobs", f"{run}/artifacts",
             f"{run}/artifacts?direction=asc&per_page=1", f"{run}/artifacts?name={fake.artifacts[1].name}",
             f"/artifacts/{fake.artifacts[1].id}", "/artifacts/999", f"/artifacts/{fake.artifacts[1].id}/zip",
             f"/artifacts/{fake.artifacts[0].id}/zip", "/artifacts/998/zip", f"/jobs/{fake.jobs[1].id}/logs",
             f"/jobs/{job_without_log.id}/logs"]
    statuses = [get(fake, path).status_code for path in paths] + [get(fake, run, token=False).status_code]
    assert statuses == [200, 200, 200, 404, 200, 200, 200, 200, 200, 404, 200, 200, 200, 200, 404, 302, 410, 404,
                        302, 404, 401]
    assert served_problems(fake) == []


def test_what_the_builder_asks_during_a_build_fits_the_description_too(fake, sources, tmp_path):  # noqa: F811
    standard_run(fake, ("linux", "windows", "mps"), sources)
    # The faults the tests inject are GitHub-shaped too: a rate limit, a server error, a missing grant.
    fake.faults += [Fault(path=r"/runs/\d+$", status=429, headers={"retry-after": "0"}),
                    Fault(path=r"/jobs$", status=500),
                    Fault(path=r"/artifacts$", status=403, headers={"retry-after": "0"},
                          body=b'{"message": "You have exceeded a secondary rate limit.", "status": "403"}')]
    assert build(fake, tmp_path).code == 0
    assert len([r for r in fake.requests if r.host == "api"]) >= 8
    assert served_problems(fake) == []


def test_an_undescribed_status_or_a_body_that_is_no_basic_error_is_caught(fake):  # noqa: F811
    fake.faults += [Fault(path=r"/runs/\d+$", status=418, body=b'{"message": "teapot"}'),
                    Fault(path=r"/artifacts$", status=500, body=b'{"message": 5}')]
    get(fake, f"/runs/{fake.run_id}")
    get(fake, f"/runs/{fake.run_id}/artifacts")
    assert served_problems(fake) == [
        f"/repos/{fake.repository}/actions/runs/{fake.run_id}: 418 is not a response of "
        "/repos/{owner}/{repo}/actions/runs/{run_id}",
        f"/repos/{fake.repository}/actions/runs/{fake.run_id}/artifacts 500: message: 5 is not of type 'string'"]


def test_the_check_fails_on_a_body_that_breaks_the_schema(fake, sources):  # noqa: F811
    standard_run(fake, ("linux",), sources)
    run = get(fake, f"/runs/{fake.run_id}").json()
    path = f"/repos/{fake.repository}/actions/runs/{fake.run_id}"
    assert rest_schema.problems(path, 200, run) == []
    del run["actor"]["url"]
    run["run_attempt"] = "1"
    run["head_commit"]["timestamp"] = "yesterday"
    assert sorted(rest_schema.problems(path, 200, run)) == ["actor: 'url' is a required property",
                                                    "head_commit/timestamp: 'yesterday' is not a 'date-time'",
                                                    "run_attempt: '1' is not of type 'integer'"]


def test_nullable_admits_null_and_nothing_else_outside_the_enum(fake, sources):  # noqa: F811
    standard_run(fake, ("linux",), sources)
    jobs = get(fake, f"/runs/{fake.run_id}/jobs").json()
    path = f"/repos/{fake.repository}/actions/runs/{fake.run_id}/jobs"
    jobs["jobs"][0]["conclusion"] = None  # `nullable: true` with an enum
    jobs["jobs"][0]["completed_at"] = None
    assert rest_schema.problems(path, 200, jobs) == []
    jobs["jobs"][0]["conclusion"] = "passed"
    jobs["jobs"][0]["status"] = None  # not nullable
    assert sorted(rest_schema.problems(path, 200, jobs)) == [
        "jobs/0/conclusion: 'passed' is not one of ['success', 'failure', 'neutral', 'cancelled', 'skipped', "
        "'timed_out', 'action_required', None]",
        "jobs/0/status: None is not of type 'string'",
        "jobs/0/status: None is not one of ['queued', 'in_progress', 'completed', 'waiting', 'requested', 'pending']"]


def _five_artifacts(fake: FakeGitHub) -> None:  # noqa: F811
    # Created in the order 3, 1, 4, 0, 2 (ids) so that neither id nor insertion order is the age.
    for age, number in enumerate((3, 1, 4, 0, 2)):
        fake.artifacts.append(FakeArtifact(id=100 + number, name=f"a{number}", content=make_zip({"x": b"1"}),
                                           created_at=f"2026-08-24T10:0{age}:00Z"))


def test_artifacts_are_newest_first_by_default_and_oldest_first_with_direction_asc(fake):  # noqa: F811
    _five_artifacts(fake)
    listed = get(fake, f"/runs/{fake.run_id}/artifacts").json()["artifacts"]
    assert [a["id"] for a in listed] == [102, 100, 104, 101, 103]
    ascending = get(fake, f"/runs/{fake.run_id}/artifacts?direction=asc").json()["artifacts"]
    assert [a["id"] for a in ascending] == [103, 101, 104, 100, 102]
    named = get(fake, f"/runs/{fake.run_id}/artifacts?name=a4").json()
    assert named["total_count"] == 1 and [a["name"] for a in named["artifacts"]] == ["a4"]


def test_pages_follow_per_page_with_link_headers_and_a_page_past_the_end_is_empty(fake):  # noqa: F811
    _five_artifacts(fake)
    first = get(fake, f"/runs/{fake.run_id}/artifacts?per_page=2")
    assert [a["id"] for a in first.json()["artifacts"]] == [102, 100] and first.json()["total_count"] == 5
    assert 'rel="next"' in first.headers["link"] and "page=3>; rel=\"last\"" in first.headers["link"]
    third = get(fake, f"/runs/{fake.run_id}/artifacts?per_page=2&page=3")
    assert [a["id"] for a in third.json()["artifacts"]] == [103] and 'rel="next"' not in third.headers["link"]
    past = get(fake, f"/runs/{fake.run_id}/artifacts?per_page=2&page=4").json()
    assert past == {"total_count": 5, "artifacts": []}
    assert len(get(fake, f"/runs/{fake.run_id}/artifacts?per_page=500").json()["artifacts"]) == 5  # max 100
    assert "link" not in get(fake, f"/runs/{fake.run_id}/artifacts").headers  # one page: no Link (default 30)


def test_filter_all_lists_every_execution_and_latest_one_attempts(fake, sources):  # noqa: F811
    rerun_failed_windows(fake, sources)
    every = get(fake, f"/runs/{fake.run_id}/jobs?filter=all").json()
    latest = get(fake, f"/runs/{fake.run_id}/jobs").json()
    assert sorted((j["name"], j["run_attempt"]) for j in every["jobs"]) == [
        ("platform-runtime / evidence", 1), ("platform-runtime / evidence", 2), ("platform-runtime / linux", 1),
        ("platform-runtime / plan", 1), ("platform-runtime / windows", 1), ("platform-runtime / windows", 2)]
    assert {(j["name"], j["run_attempt"]) for j in latest["jobs"]} >= {("platform-runtime / windows", 2)}
    assert ("platform-runtime / windows", 1) not in {(j["name"], j["run_attempt"]) for j in latest["jobs"]}
