"""The REST API's response bodies for the fake server: every field each schema of GitHub's description
requires (tests/evidence_index/github-api/, checked in test_fake_github_schema.py), with values shaped
as GitHub serves them. The fields the project reads come from the fake's state; the rest are fixed."""

from __future__ import annotations

from typing import Any

REPO_ID = 812345678
HTML = "https://github.com"


def simple_user(api: str, login: str, user_id: int = 1, kind: str = "Organization") -> dict[str, Any]:
    """components/schemas/simple-user."""
    base = f"{api}/users/{login}"
    return {
        "login": login, "id": user_id, "node_id": f"O_kgDOA{user_id:06d}", "type": kind, "site_admin": False,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4", "gravatar_id": "",
        "url": base, "html_url": f"{HTML}/{login}", "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}", "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs", "repos_url": f"{base}/repos", "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events", "user_view_type": "public",
    }


_REPO_URLS = {  # name: the suffix after the repository's API URL, as GitHub's own answers spell them
    "archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}", "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}", "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}", "commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}", "contributors_url": "/contributors", "deployments_url": "/deployments",
    "downloads_url": "/downloads", "events_url": "/events", "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}", "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks", "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
    "languages_url": "/languages", "merges_url": "/merges", "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}", "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}", "stargazers_url": "/stargazers", "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers", "subscription_url": "/subscription", "tags_url": "/tags",
    "teams_url": "/teams", "trees_url": "/git/trees{/sha}",
}


def minimal_repository(api: str, full_name: str, repo_id: int = REPO_ID) -> dict[str, Any]:
    """components/schemas/minimal-repository."""
    owner, name = full_name.split("/", 1)
    url = f"{api}/repos/{full_name}"
    return {"id": repo_id, "node_id": f"R_kgDOMGx{repo_id}", "name": name, "full_name": full_name,
            "owner": simple_user(api, owner), "private": False, "html_url": f"{HTML}/{full_name}",
            "description": None, "fork": False, "url": url, **{key: url + tail for key, tail in _REPO_URLS.items()}}


def workflow_run(fake: Any, attempt: int) -> dict[str, Any]:
    """components/schemas/workflow-run: the run as of `attempt` (get a workflow run / run attempt)."""
    api = f"{fake.api_url}/repos/{fake.repository}"
    owner = fake.repository.split("/")[0]
    run = f"{api}/actions/runs/{fake.run_id}"
    return {
        "id": fake.run_id, "name": "platform runtime", "node_id": "WFR_kwLOAbCdEf8AAAAEAbCdEf",
        "check_suite_id": 42050993234, "check_suite_node_id": "CS_kwDOAbCdEf8AAAAJyX",
        "head_branch": fake.head_branch, "head_sha": fake.head_sha, "path": fake.workflow_path,
        "display_title": "platform runtime", "run_number": 412, "run_attempt": attempt, "event": fake.event,
        "status": fake.status, "conclusion": fake.conclusion, "workflow_id": 161335,
        "url": run, "html_url": f"{HTML}/{fake.repository}/actions/runs/{fake.run_id}", "pull_requests": [],
        "created_at": "2026-08-24T10:00:00Z", "updated_at": "2026-08-24T10:04:00Z",
        "actor": simple_user(fake.api_url, owner), "triggering_actor": simple_user(fake.api_url, owner),
        "run_started_at": "2026-08-24T10:00:00Z", "referenced_workflows": list(fake.referenced_workflows),
        "jobs_url": f"{run}/jobs", "logs_url": f"{run}/logs", "check_suite_url": f"{api}/check-suites/42050993234",
        "artifacts_url": f"{run}/artifacts", "cancel_url": f"{run}/cancel", "rerun_url": f"{run}/rerun",
        "previous_attempt_url": f"{run}/attempts/{attempt - 1}" if attempt > 1 else None,
        "workflow_url": f"{api}/actions/workflows/161335",
        "head_commit": {"id": fake.head_sha, "tree_id": "0" * 40, "message": "platform runtime",
                        "timestamp": "2026-08-24T09:58:00Z",
                        "author": {"name": "Kernodeck CI", "email": "ci@kernodeck.invalid"},
                        "committer": {"name": "GitHub", "email": "noreply@github.com"}},
        "repository": minimal_repository(fake.api_url, fake.repository),
        "head_repository": minimal_repository(fake.api_url, fake.repository), "head_repository_id": REPO_ID,
    }


STEPS = ("Set up job", "Run actions/checkout", "Run platform runtime gate", "Upload results",
         "Post Run actions/checkout", "Complete job")


def job(fake: Any, job: Any) -> dict[str, Any]:
    """components/schemas/job."""
    api = f"{fake.api_url}/repos/{fake.repository}"
    completed = job.completed_at if job.status == "completed" else None
    return {
        "id": job.id, "run_id": fake.run_id, "workflow_name": "platform runtime", "head_branch": fake.head_branch,
        "run_url": f"{api}/actions/runs/{fake.run_id}", "run_attempt": job.run_attempt, "node_id": f"CR_kwDO{job.id}",
        "head_sha": fake.head_sha, "url": f"{api}/actions/jobs/{job.id}",
        "html_url": f"{HTML}/{fake.repository}/actions/runs/{fake.run_id}/job/{job.id}",
        "status": job.status, "conclusion": job.conclusion, "created_at": "2026-08-24T10:00:02Z",
        "started_at": job.started_at, "completed_at": completed, "name": job.name,
        "steps": [{"name": name, "status": job.status, "conclusion": job.conclusion, "number": number,
                   "started_at": job.started_at, "completed_at": completed}
                  for number, name in enumerate(STEPS, 1)],
        "check_run_url": f"{api}/check-runs/{job.id}", "labels": job.labels,
        # A GitHub-hosted runner is "GitHub Actions <n>" in group "GitHub Actions"; a self-hosted one carries
        # its own name (the fake's self-hosted box: gpu-box-01, as its log says) in its group (Default).
        "runner_id": 1000 + job.id % 1000,
        "runner_name": "gpu-box-01" if "self-hosted" in job.labels else "GitHub Actions 1000",
        "runner_group_id": 1 if "self-hosted" in job.labels else 2,
        "runner_group_name": "Default" if "self-hosted" in job.labels else "GitHub Actions",
    }


def artifact(fake: Any, artifact: Any) -> dict[str, Any]:
    """components/schemas/artifact."""
    api = f"{fake.api_url}/repos/{fake.repository}"
    digest = f"sha256:{artifact.sha256()}" if artifact.digest == "auto" else artifact.digest
    return {
        "id": artifact.id, "node_id": f"MDg6QXJ0aWZhY3Q{artifact.id}", "name": artifact.name,
        "size_in_bytes": artifact.size(), "url": f"{api}/actions/artifacts/{artifact.id}",
        "archive_download_url": f"{api}/actions/artifacts/{artifact.id}/zip", "expired": artifact.expired,
        "created_at": fake.created_at_of(artifact), "expires_at": "2026-11-22T10:03:30Z",
        "updated_at": fake.created_at_of(artifact), "digest": digest,
        "workflow_run": {"id": fake.run_id, "repository_id": REPO_ID, "head_repository_id": REPO_ID,
                         "head_branch": fake.head_branch, "head_sha": fake.head_sha},
    }


def error(status: int, message: str) -> dict[str, Any]:
    """components/schemas/basic-error, as GitHub's error bodies carry it."""
    return {"message": message, "documentation_url": "https://docs.github.com/rest", "status": str(status)}
