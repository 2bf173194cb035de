"""The REST client on its own, against the loopback server: timeouts, retries, waits, redirects, caps."""

from __future__ import annotations

import time

import pytest
from evidence_index.common import FetchError
from evidence_index.github import GitHubClient
from evidence_index.logparse import LogScanner

from tests.evidence_index.fake_github import FakeGitHub, FakeJob, Fault, runner_log


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        server.jobs.append(FakeJob(id=501, name="linux", log=runner_log("linux")))
        yield server


def client_for(fake: FakeGitHub, **kwargs) -> tuple[GitHubClient, list[float]]:
    slept: list[float] = []
    kwargs.setdefault("backoff_base", 0.01)
    client = GitHubClient(fake.api_url, fake.token, sleep=slept.append, **kwargs)
    return client, slept


def test_every_request_has_a_timeout(fake, monkeypatch):
    client, _ = client_for(fake)
    seen = []
    original = client.session.get

    def spy(url, **kwargs):
        seen.append(kwargs.get("timeout"))
        return original(url, **kwargs)

    monkeypatch.setattr(client.session, "get", spy)
    client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", None, 10**6)
    assert len(seen) == 3 and all(isinstance(t, tuple) and all(t) for t in seen)


def test_retry_after_is_honoured(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=429, headers={"retry-after": "7"}))
    client, slept = client_for(fake)
    run, _ = client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert run["id"] == fake.run_id and slept == [7.0]


def test_the_secondary_rate_limit_waits_until_x_ratelimit_reset(fake):
    reset = int(time.time()) + 30
    fake.faults.append(Fault(path=r"/runs/\d+$", status=403, body=b'{"message": "API rate limit exceeded"}',
                             headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}))
    client, slept = client_for(fake)
    client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert len(slept) == 1 and 25 <= slept[0] <= 32


def test_a_plain_403_is_not_retried(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=403, body=b'{"message": "Resource not accessible"}'))
    client, slept = client_for(fake)
    with pytest.raises(FetchError) as caught:
        client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert caught.value.status == 403 and slept == []


def test_a_wait_longer_than_allowed_gives_up_instead_of_hanging(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=429, headers={"retry-after": "3600"}))
    client, slept = client_for(fake, max_wait=60)
    with pytest.raises(FetchError, match="more than the 60 s allowed"):
        client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert slept == []


def test_persistent_server_errors_give_up_after_the_attempts(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=502, times=100))
    client, slept = client_for(fake, max_attempts=3)
    with pytest.raises(FetchError, match="gave up after 3 attempts"):
        client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert len(slept) == 2 and slept[1] > slept[0] * 1.2  # exponential backoff


def test_an_unreachable_api_gives_up_with_a_clear_error():
    client = GitHubClient("http://127.0.0.1:9", "t0ken-secret", sleep=lambda s: None, backoff_base=0.01,
                          max_attempts=2, timeout=(1, 1))
    with pytest.raises(FetchError, match="ConnectionError") as caught:
        client.get_json("/repos/a/b/actions/runs/1")
    assert "t0ken-secret" not in str(caught.value)


def test_the_log_redirect_is_followed_without_the_token(fake, tmp_path):
    client, _ = client_for(fake)
    download, scanner = client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", tmp_path / "log",
                                        10**6, consumer=LogScanner)
    assert (tmp_path / "log").read_bytes() == fake.jobs[0].log
    assert scanner.result()["runner"]["image"] == "ubuntu-24.04"
    blob = [r for r in fake.requests if r.host == "blob"]
    assert len(blob) == 1 and "authorization" not in blob[0].headers and not fake.blob_saw_authorization()


def test_netrc_credentials_are_not_sent_to_the_blob_host(fake, tmp_path, monkeypatch):
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login user password netrc-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    client, _ = client_for(fake)
    client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", None, 10**6)
    assert not fake.blob_saw_authorization()


def test_a_pagination_link_to_another_host_is_refused(fake):
    fake.faults.append(Fault(path=r"/jobs$", status=200, body=b'{"total_count": 2, "jobs": []}',
                             headers={"Link": '<http://127.0.0.2:1/steal?page=2>; rel="next"'}))
    client, _ = client_for(fake)
    with pytest.raises(FetchError, match="away from the API host"):
        client.paginate(f"/repos/{fake.repository}/actions/runs/{fake.run_id}/jobs", "jobs")


def test_an_expired_blob_url_is_not_reused_a_fresh_redirect_is_asked_for(fake):
    fake.blob_ttl = -1  # every signed URL is already expired when it is used
    client, _ = client_for(fake, max_attempts=2)
    with pytest.raises(FetchError) as caught:
        client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", None, 10**6)
    assert caught.value.status == 403 and "sig=" not in str(caught.value)


def test_a_download_over_the_cap_is_aborted_and_its_partial_file_removed(fake, tmp_path):
    fake.jobs[0].log = b"x" * 300_000
    client, _ = client_for(fake)
    with pytest.raises(FetchError, match="cap") as caught:
        client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", tmp_path / "log", 100_000)
    assert caught.value.status == 413 and not (tmp_path / "log").exists()


def test_a_truncated_body_is_downloaded_again(fake, tmp_path):
    fake.faults.append(Fault(path=r"/actions-results/logs/", status=200, host="blob", truncate=True))
    client, slept = client_for(fake)
    download, _ = client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", tmp_path / "log", 10**6)
    assert (tmp_path / "log").read_bytes() == fake.jobs[0].log and download.size == len(fake.jobs[0].log)
    assert len(slept) == 1


def test_a_non_http_api_url_is_a_usage_error():
    from evidence_index.common import InputError

    with pytest.raises(InputError):
        GitHubClient("file:///etc/passwd", None)


def test_pagination_links_that_loop_are_refused(fake):
    link = f'<{fake.api_url}/repos/{fake.repository}/actions/runs/{fake.run_id}/jobs?per_page=100>; rel="next"'
    fake.faults.append(Fault(path=r"/jobs$", status=200, times=5, body=b'{"total_count": 9, "jobs": []}',
                             headers={"Link": link}))
    client, _ = client_for(fake)
    with pytest.raises(FetchError, match="loop back"):
        client.paginate(f"/repos/{fake.repository}/actions/runs/{fake.run_id}/jobs", "jobs")


def test_a_gzip_encoded_log_is_hashed_as_its_decoded_bytes(fake, tmp_path):
    fake.gzip_blobs = True
    client, slept = client_for(fake)
    download, _ = client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", tmp_path / "log", 10**6)
    assert (tmp_path / "log").read_bytes() == fake.jobs[0].log and slept == []


def test_retry_after_as_an_http_date_is_honoured_and_garbage_falls_back_to_backoff(fake):
    import email.utils

    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    fake.faults += [Fault(path=r"/runs/\d+$", status=503, headers={"retry-after": when}),
                    Fault(path=r"/runs/\d+$", status=503, headers={"retry-after": "soon"})]
    client, slept = client_for(fake)
    client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert 15 <= slept[0] <= 21 and slept[1] < 1


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_rate_limit_without_headers_waits_at_least_a_minute(fake, status):
    body = b'{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}'
    fake.faults.append(Fault(path=r"/runs/\d+$", status=status, body=body))
    client, slept = client_for(fake)
    run, _ = client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert run["id"] == fake.run_id and len(slept) == 1 and slept[0] >= 60.0


def test_a_job_log_that_answers_404_right_after_its_job_is_asked_again_within_the_patience(fake, tmp_path):
    fake.faults.append(Fault(path=r"/jobs/501/logs$", status=404, times=2, body=b'{"message": "Not Found"}'))
    client, slept = client_for(fake)
    download, _ = client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", tmp_path / "log", 10**6,
                                  patience=3.0)
    assert download.size == len(runner_log("linux")) and slept == [1.0, 1.0]


def test_a_job_log_still_missing_after_the_patience_is_missing(fake, tmp_path):
    fake.faults.append(Fault(path=r"/jobs/501/logs$", status=404, times=10, body=b'{"message": "Not Found"}'))
    client, slept = client_for(fake)
    with pytest.raises(FetchError) as caught:
        client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", None, 10**6, patience=2.5)
    assert caught.value.status == 404 and sum(slept) == 2.5 and fake.count("api", r"/jobs/501/logs$") == 4


# --- a 403 is read by its headers (common.forbidden, issue 21.4) ---------------------------------

GRANT = {"x-accepted-github-permissions": "actions=read"}
NOT_ACCESSIBLE = b'{"message": "Resource not accessible by integration", "status": "403"}'


@pytest.mark.parametrize(("headers", "message", "kind", "wait"), [
    ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"}, "API rate limit exceeded", "rate-limit", 31.0),
    ({"retry-after": "12"}, "", "rate-limit", 12.0),
    ({"Retry-After": "12", "x-accepted-github-permissions": "actions=read"}, "", "rate-limit", 12.0),
    ({"x-ratelimit-remaining": "17"}, "You have exceeded a secondary rate limit.", "rate-limit", 60.0),
    (GRANT, "Resource not accessible by integration", "missing-grant", None),
    ({"X-Accepted-GitHub-Permissions": "actions=read"}, "", "missing-grant", None),
    ({}, "Resource not accessible by integration", "missing-grant", None),
    ({"x-ratelimit-remaining": "17", "x-github-sso": "required; url=https://github.com/orgs/o/sso"},
     "Resource protected by organization SAML enforcement.", "other", None),
    ({}, "", "other", None),
])
def test_a_403_is_classified_by_its_headers(headers, message, kind, wait):
    from common.forbidden import classify

    refusal = classify(headers, message, now=1000.0)
    assert (refusal.kind, refusal.wait_s) == (kind, wait)


def test_a_missing_grant_403_is_not_retried_and_says_which_grant(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=403, headers=GRANT, body=NOT_ACCESSIBLE))
    client, slept = client_for(fake)
    with pytest.raises(FetchError) as caught:
        client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert caught.value.status == 403 and slept == []
    assert "HTTP 403 missing grant (x-accepted-github-permissions: actions=read)" in str(caught.value)


def test_a_rate_limited_403_with_retry_after_is_waited_out_and_asked_again(fake):
    fake.faults.append(Fault(path=r"/runs/\d+$", status=403, headers={"retry-after": "9"},
                             body=b'{"message": "You have exceeded a secondary rate limit."}'))
    client, slept = client_for(fake)
    run, _ = client.get_json(f"/repos/{fake.repository}/actions/runs/{fake.run_id}")
    assert run["id"] == fake.run_id and slept == [9.0]


def test_another_403_is_named_as_a_refusal_not_a_grant(fake):
    fake.faults.append(Fault(path=r"/jobs/501/logs$", status=403, headers={"x-github-sso": "required"},
                             body=b'{"message": "Resource protected by organization SAML enforcement."}'))
    client, slept = client_for(fake)
    with pytest.raises(FetchError) as caught:
        client.download(f"/repos/{fake.repository}/actions/jobs/501/logs", None, 10**6)
    assert slept == [] and "HTTP 403 refused (Resource protected by organization SAML enforcement.)" in str(
        caught.value)
