"""The Python steps of the reusable workflow (issue 13, issue 10 items 7-9): one test per promise.

Each script runs for real (a subprocess with the runner's files, or its function on real files); the
REST probe talks to a real HTTP server on localhost. Nothing here imports torch.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from common.workflow import ARTIFACT_PREFIX, PLATFORMS
from common.workflow import artifact_name as contract_artifact_name

from tests.steps.github_output import parse_outputs

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ROOT / "scripts" / "steps"
sys.path.insert(0, str(ACTIONS))

import attest_inputs  # noqa: E402
import plan  # noqa: E402
import platform_artifacts  # noqa: E402
import result_dir  # noqa: E402
import workflow_source  # noqa: E402

SHA = "3" * 40



def run_script(tmp_path: Path, script: str, args: list[str], **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """A step as the runner starts it: a clean environment with its own GITHUB_OUTPUT / GITHUB_ENV."""
    files = {name: tmp_path / name.lower() for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY")}
    for path in files.values():
        path.write_text("")
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "RUNNER_", "ACT", "WORKFLOW_", "CHECKED_OUT", "PLATFORM_RUNTIME_"))}
    proc = subprocess.run([sys.executable, str(ACTIONS / script), *args], capture_output=True, text=True,
                          env={**base, **{k: str(v) for k, v in files.items()}, **env}, cwd=tmp_path)
    return proc, tmp_path


# --- workflow_source: no silent fallback (13.1) ----------------------------------------------


def test_the_workflows_own_commit_is_accepted_and_recorded(tmp_path):
    proc, _ = run_script(tmp_path, "workflow_source.py", [], WORKFLOW_REPOSITORY="kernodeck/platform-runtime",
                         WORKFLOW_SHA=SHA, CHECKED_OUT=SHA)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "github_env").read_text() == \
        f"PLATFORM_RUNTIME_WORKFLOW_SOURCE=job.workflow_sha kernodeck/platform-runtime@{SHA}\n"


@pytest.mark.parametrize("missing", ["WORKFLOW_SHA", "WORKFLOW_REPOSITORY"])
def test_empty_workflow_contexts_outside_act_stop_the_job_with_one_reason(tmp_path, missing):
    env = {"WORKFLOW_REPOSITORY": "kernodeck/platform-runtime", "WORKFLOW_SHA": SHA, "CHECKED_OUT": SHA,
           "GITHUB_ACTIONS": "true"}
    env[missing] = ""
    proc, _ = run_script(tmp_path, "workflow_source.py", [], **env)
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stdout
    assert "job.workflow_sha / job.workflow_repository are empty" in errors[0]
    assert "default branch" in errors[0] and "Enterprise Server" in errors[0]
    assert (tmp_path / "github_env").read_text() == ""  # nothing recorded as if it had run


def test_under_act_the_fallback_is_named_in_the_log_and_recorded(tmp_path):
    proc, _ = run_script(tmp_path, "workflow_source.py", [], ACT="true", CHECKED_OUT=SHA)
    assert proc.returncode == 0
    assert any(line.startswith("::warning") and "act-fallback" in line for line in proc.stdout.splitlines())
    assert (tmp_path / "github_env").read_text().startswith(f"PLATFORM_RUNTIME_WORKFLOW_SOURCE=act-fallback {SHA}")


def test_another_commit_checked_out_than_the_workflows_is_refused():
    with pytest.raises(workflow_source.SourceError, match="checked out"):
        workflow_source.decide({"WORKFLOW_REPOSITORY": "o/r", "WORKFLOW_SHA": SHA, "CHECKED_OUT": "4" * 40})
    with pytest.raises(workflow_source.SourceError, match="not a commit"):
        workflow_source.decide({"WORKFLOW_REPOSITORY": "o/r", "WORKFLOW_SHA": "main", "CHECKED_OUT": "main"})


# --- result_dir: one place names every artifact (13.3, issue 9) ------------------------------


def test_the_artifact_name_is_prefix_parts_and_attempt():
    env = {"GITHUB_RUN_ATTEMPT": "2"}
    assert result_dir.artifact_name("", "platform-runtime", ["linux"], env) == "platform-runtime-linux-attempt-2"
    assert result_dir.artifact_name("", "call-b", ["linux"], env) == "call-b-linux-attempt-2"
    assert result_dir.artifact_name("mine", "x", ["y"], env) == "mine"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_step_names_a_platform_job_artifact_as_the_index_expects(platform):
    # One rule (common.workflow.artifact_name): what a platform job uploads is what the evidence index looks for.
    env = {"GITHUB_RUN_ATTEMPT": "3"}
    assert result_dir.artifact_name("", ARTIFACT_PREFIX, [platform], env) == contract_artifact_name(platform, 3)


def test_matrix_jobs_of_the_same_job_and_os_get_different_names():
    names = {result_dir.artifact_name("", "platform-runtime", ["cpu", "Linux"],
                                      {"JOB_INDEX": str(index), "JOB_TOTAL": "4", "GITHUB_RUN_ATTEMPT": "1"})
             for index in range(4)}
    assert len(names) == 4 and "platform-runtime-cpu-Linux-3-attempt-1" in names
    # Outside a matrix (GitHub gives index 0 of 1 and a null matrix) the name carries no index.
    single = {"JOB_INDEX": "0", "JOB_TOTAL": "1", "MATRIX": "null"}
    assert result_dir.artifact_name("", "p", ["cpu", "Linux"], single) == "p-cpu-Linux-attempt-1"


def test_where_the_runner_gives_no_job_index_the_matrix_values_tell_jobs_apart():
    """act 0.2.89 leaves strategy.job-index empty: a digest of toJSON(matrix) stands in."""
    combos = [{"seed": seed, "mode": mode} for seed in (1, 2) for mode in ("a", "b")]
    names = {result_dir.artifact_name("", "p", ["cpu"], {"MATRIX": json.dumps(combo)}) for combo in combos}
    assert len(names) == 4 and all(re.fullmatch(r"p-cpu-m[0-9a-f]{8}-attempt-1", name) for name in names)
    with pytest.raises(result_dir.ArtifactNameError):
        result_dir.artifact_name("", "p", ["cpu"], {"MATRIX": "{oops"})


@pytest.mark.parametrize("args", [["--artifact-name", "a/b"], ["--artifact-prefix", "x:y"],
                                  ["--artifact-part", ""]])
def test_names_upload_artifact_would_refuse_are_usage_errors(tmp_path, args):
    proc, _ = run_script(tmp_path, "result_dir.py", ["dir=platform-runtime-", *args], RUNNER_TEMP=str(tmp_path))
    assert proc.returncode == 2 and ("artifact name" in proc.stderr or "empty part" in proc.stderr), proc.stderr
    assert parse_outputs(tmp_path / "github_output") == {}


def test_the_result_folder_step_outputs_the_name_and_records_the_workflow_source(tmp_path):
    proc, _ = run_script(tmp_path, "result_dir.py", ["dir=platform-runtime-linux-", "--artifact-part", "linux"],
                         RUNNER_TEMP=str(tmp_path / "temp"), GITHUB_RUN_ATTEMPT="3",
                         PLATFORM_RUNTIME_WORKFLOW_SOURCE=f"job.workflow_sha o/r@{SHA}")
    assert proc.returncode == 0, proc.stderr
    outputs = parse_outputs(tmp_path / "github_output")
    assert outputs["artifact-name"] == "platform-runtime-linux-attempt-3"
    assert (Path(outputs["dir"]) / "workflow-source.txt").read_text() == f"job.workflow_sha o/r@{SHA}\n"


# --- plan: the caller's mistakes, early and in one line (13.4, 13.5) -------------------------


class _Api(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: list[str] = []
    headers_out: dict[str, str] = {}
    message = "Resource not accessible"

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).seen.append(f"{self.path} {self.headers.get('Authorization')}")
        body = (b'{"total_count": 1, "jobs": []}' if self.status == 200
                else json.dumps({"message": self.message}).encode())
        self.send_response(self.status)
        for key, value in self.headers_out.items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Api.seen, _Api.headers_out, _Api.message = [], {}, "Resource not accessible"
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _plan(tmp_path: Path, url: str, *args: str, **env: str):
    base = {"GITHUB_ACTIONS": "true", "GITHUB_API_URL": url, "GITHUB_REPOSITORY": "example/consumer",
            "GITHUB_RUN_ID": "77", "GITHUB_TOKEN": "t0ken", "GITHUB_SERVER_URL": "https://github.com"}
    return run_script(tmp_path, "plan.py", ["--event", "workflow_call", "--platforms", "linux", *args],
                      **{**base, **env})[0]


@pytest.mark.parametrize(("status", "headers"), [(403, {"x-accepted-github-permissions": "actions=read"}),
                                                 (404, {})])
def test_a_caller_without_actions_read_gets_one_error_line_in_the_plan_job(tmp_path, api, status, headers):
    _Api.status, _Api.headers_out = status, headers
    _Api.message = "Resource not accessible by integration" if status == 403 else "Not Found"
    proc = _plan(tmp_path, api[1])
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert proc.returncode == 2 and len(errors) == 1 and "actions: read" in errors[0], proc.stdout
    assert _Api.seen == ["/repos/example/consumer/actions/runs/77/jobs?per_page=1 Bearer t0ken"]
    assert "platforms" not in parse_outputs(tmp_path / "github_output")


@pytest.mark.parametrize("headers", [{"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1999999999"},
                                     {"retry-after": "60"}])
def test_a_rate_limited_403_is_a_warning_not_a_missing_grant(tmp_path, api, headers):
    # common.forbidden: rate limits name themselves by x-ratelimit-remaining: 0 or retry-after.
    _Api.status, _Api.headers_out, _Api.message = 403, headers, "API rate limit exceeded for installation."
    proc = _plan(tmp_path, api[1])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [line for line in proc.stdout.splitlines() if line.startswith("::warning")]
    assert any("HTTP 403 rate limited" in line for line in warnings) and "actions: read`" not in proc.stdout
    assert json.loads(parse_outputs(tmp_path / "github_output")["platforms"]) == ["linux"]


def test_another_403_stops_the_plan_with_githubs_reason_not_a_grant(tmp_path, api):
    _Api.status, _Api.headers_out = 403, {"x-github-sso": "required; url=https://github.com/orgs/o/sso"}
    _Api.message = "Resource protected by organization SAML enforcement."
    proc = _plan(tmp_path, api[1])
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stdout
    assert "SAML enforcement" in errors[0] and "actions: read" not in errors[0]


def test_a_readable_job_list_passes_the_probe(tmp_path, api):
    _Api.status = 200
    proc = _plan(tmp_path, api[1], "--artifact-prefix", "call-a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = parse_outputs(tmp_path / "github_output")
    assert json.loads(outputs["platforms"]) == ["linux"] and outputs["artifact-prefix"] == "call-a"


def test_a_server_error_while_probing_is_a_warning_not_a_verdict(tmp_path, api):
    _Api.status = 502
    proc = _plan(tmp_path, api[1])
    assert proc.returncode == 0 and "::warning" in proc.stdout and "HTTP 502" in proc.stdout


def test_github_enterprise_server_is_refused_with_that_message(tmp_path, api):
    proc = _plan(tmp_path, api[1], GITHUB_SERVER_URL="https://ghe.example.com")
    assert proc.returncode == 2 and "only github.com is supported" in proc.stderr
    assert _Api.seen == []  # refused before anything else


def test_under_act_the_probe_is_skipped_and_says_so(tmp_path, api):
    proc = _plan(tmp_path, api[1], ACT="true")
    assert proc.returncode == 0 and "act: no REST API to probe" in proc.stdout and _Api.seen == []


@pytest.mark.parametrize("args, message", [
    (["--platforms", "linux gpu"], "unknown platform(s) gpu"),
    (["--platforms", "cuda"], "no CUDA runner labels"),
    (["--artifact-prefix", "a/b"], "artifact-prefix"),
])
def test_unknown_platform_cuda_without_labels_and_a_bad_prefix_are_one_line_errors(tmp_path, args, message):
    proc, _ = run_script(tmp_path, "plan.py", ["--event", "workflow_call", *args])
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert proc.returncode == 2 and len(errors) == 1 and message in errors[0]


def test_the_default_prefix_is_platform_runtime():
    assert plan.check_prefix("") == "platform-runtime" and plan.check_prefix(" x ") == "x"


# --- platform_artifacts: the evidence job's inputs (10.7, 13.2) ------------------------------


NEEDS = {
    "plan": {"result": "success", "outputs": {}},
    "linux": {"result": "success", "outputs": {"artifact-id": "11", "artifact-name": "p-linux-attempt-1",
                                               "artifact-digest": "a" * 64, "attempt": "1", "job-id": "901"}},
    "windows": {"result": "failure", "outputs": {"artifact-id": "12", "artifact-name": "p-windows-attempt-2",
                                                 "artifact-digest": "b" * 64, "attempt": "2"}},
    "mps": {"result": "failure", "outputs": {}},
}


def test_each_platforms_artifact_id_name_digest_and_attempt_are_recorded(tmp_path):
    proc, _ = run_script(tmp_path, "platform_artifacts.py", ["record", "--output", "evidence/pa.json"],
                         NEEDS=json.dumps(NEEDS), PLATFORMS='["linux", "windows", "mps"]', ARTIFACT_PREFIX="p",
                         GITHUB_RUN_ATTEMPT="2")
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads((tmp_path / "evidence" / "pa.json").read_text())
    assert recorded["linux"] == {"artifact_id": "11", "artifact_name": "p-linux-attempt-1", "artifact_digest": "a" * 64,
                                 "attempt": 1, "job_result": "success", "job_id": 901}
    # Re-run failed jobs: windows re-ran in attempt 2, linux's outputs from attempt 1 persisted.
    assert recorded["windows"]["attempt"] == 2 and recorded["windows"]["job_result"] == "failure"
    assert recorded["windows"]["job_id"] is None  # act: job.check_run_id is empty
    # A platform that uploaded nothing is left out; the builder's --platforms fails it as missing.
    assert "mps" not in recorded
    outputs = parse_outputs(tmp_path / "github_output")
    assert outputs["ids"] == "11,12"
    assert outputs["download-path"] == "artifacts"  # several: download-artifact makes artifacts/<name>/ each
    assert outputs["evidence-name"] == "p-evidence-attempt-2"


def test_one_uploaded_artifact_is_downloaded_into_its_own_named_folder(tmp_path):
    # download-artifact v8.0.1 src/download-artifact.ts L189-194 unpacks a single artifact into `path`
    # itself: `path` must then name the folder the builder reads, artifacts/<name>/.
    proc, _ = run_script(tmp_path, "platform_artifacts.py", ["record", "--output", "evidence/pa.json"],
                         NEEDS=json.dumps(NEEDS), PLATFORMS='["linux"]', ARTIFACT_PREFIX="p", GITHUB_RUN_ATTEMPT="1")
    assert proc.returncode == 0, proc.stderr
    outputs = parse_outputs(tmp_path / "github_output")
    assert outputs["ids"] == "11" and outputs["download-path"] == "artifacts/p-linux-attempt-1"


def test_the_builder_reads_toJSON_needs_exactly_as_the_evidence_job_records_it():
    from evidence_index import outputs

    recorded = platform_artifacts.record({"NEEDS": json.dumps(NEEDS), "PLATFORMS": '["linux", "windows", "mps"]'})
    assert outputs.check(json.loads(json.dumps(NEEDS))) == recorded


def test_bad_needs_or_an_existing_file_are_usage_errors(tmp_path):
    proc, _ = run_script(tmp_path, "platform_artifacts.py", ["record", "--output", "pa.json"],
                         NEEDS="{not json", PLATFORMS="[]")
    assert proc.returncode == 2 and "NEEDS is not JSON" in proc.stderr
    (tmp_path / "pa.json").write_text("keep")
    proc, _ = run_script(tmp_path, "platform_artifacts.py", ["record", "--output", "pa.json"],
                         NEEDS="{}", PLATFORMS="[]")
    assert proc.returncode == 2 and (tmp_path / "pa.json").read_text() == "keep"


@pytest.mark.parametrize("offline, index, ok", [
    ("success", "skipped", "true"), ("skipped", "success", "true"), ("failure", "skipped", "false"),
    ("skipped", "failure", "false"), ("skipped", "skipped", "false"), ("", "", "false"),
])
def test_the_evidence_verdict_needs_the_index_build_that_ran_to_succeed(tmp_path, offline, index, ok):
    assert platform_artifacts.verdict(offline, index, tmp_path / "none.json") == {"ok": ok, "index": ""}


def test_a_failed_download_digest_check_fails_the_verdict_even_if_the_contents_judge_ok(tmp_path):
    (tmp_path / "index.json").write_text("{}")
    assert platform_artifacts.verdict("success", "skipped", tmp_path / "index.json", "failure") == {
        "ok": "false", "index": (tmp_path / "index.json").as_posix()}


# --- attest_inputs: the index's own predicate (10.8) -----------------------------------------


def test_the_attestation_takes_the_indexs_predicate_type_and_predicate(tmp_path, capsys):
    index = next((ROOT / "evidence" / "local").rglob("*evidence*.json"))
    statement = json.loads(index.read_bytes())
    assert attest_inputs.main([str(index), "--predicate", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text()) == statement["predicate"]
    assert f"output predicate-type={statement['predicateType']}" in capsys.readouterr().out


def test_a_file_that_is_not_an_in_toto_statement_is_not_signed(tmp_path, capsys):
    (tmp_path / "x.json").write_text('{"ok": true}')
    assert attest_inputs.main([str(tmp_path / "x.json"), "--predicate", str(tmp_path / "p.json")]) == 2
    assert not (tmp_path / "p.json").exists() and "not an in-toto Statement" in capsys.readouterr().err
