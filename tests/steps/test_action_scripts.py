"""The Python behind the composite actions (scripts/steps/): one test per promise, each able to fail.

Stdlib and real files and processes only; nothing here imports torch (the act tests run the real
gate).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from core.files import sha256_file

from tests.steps.github_output import parse_outputs

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ROOT / "scripts" / "steps"
sys.path.insert(0, str(ACTIONS))

import action_io  # noqa: E402
import nfs_harness  # noqa: E402
import plan  # noqa: E402
import prepare_python  # noqa: E402
import result_report  # noqa: E402
import run_gate  # noqa: E402


@pytest.fixture()
def github_files(tmp_path, monkeypatch):
    output, summary = tmp_path / "output", tmp_path / "summary.md"
    output.touch()
    summary.touch()
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return output, summary



def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# Real result documents committed under evidence/: the one judge (core.contract) passes only documents of a
# kind it knows, so a bare {"ok": true} proves nothing here. Failing cases are copies with one property broken.
EVIDENCE = ROOT / "evidence"
REAL_GATE = EVIDENCE / "local" / "run-local" / "platform-runtime-cpu.json"
REAL_DIAGNOSTIC = EVIDENCE / "diagnostic" / "kernodeck-diagnostic-cpu.json"
REAL_DIAGNOSTIC_NO_GPU = EVIDENCE / "diagnostic" / "kernodeck-diagnostic-default-gpu-on-cpu-build.json"
REAL_TRAINING_RUN_CHECK = EVIDENCE / "local" / "training-run" / "training-run-check.json"


def real(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def gate_with(change) -> dict:
    """A copy of the real gate result with `change(document)` applied."""
    document = copy.deepcopy(real(REAL_GATE))
    change(document)
    return document


def _gate_failing_windows(document: dict) -> None:
    """What the gate writes when --require windows ran on Linux: the requirement fails, ok and exit follow."""
    document["requirements"].append({"name": "windows", "ok": False, "reason": "platform.system() is Linux"})
    document.update(ok=False, exit_code=1, failures=["requirement windows not met: platform.system() is Linux"])


def _gate_failing_check(document: dict) -> None:
    document["checks"]["jsonl_append"].update(ok=False, duration_s=2.2, reason="3 records missing", missing=3)
    document.update(ok=False, exit_code=1, failures=["jsonl_append: 3 records missing"])


# --- action_io -------------------------------------------------------------------------------


def test_outputs_survive_newlines_and_the_delimiter_text(github_files):
    action_io.set_outputs({"a": "one\ntwo", "b": "EOF", "c": None})
    assert parse_outputs(github_files[0]) == {"a": "one\ntwo", "b": "EOF", "c": ""}


def test_annotations_escape_newlines_percent_and_title_separators():
    line = action_io.annotation("error", "50% done\nthen: broke", title="gate: a,b")
    assert line == "::error title=gate%3A a%2Cb::50%25 done%0Athen: broke"
    with pytest.raises(ValueError):
        action_io.annotation("fatal", "x")


def test_requirement_lists_split_on_lines_spaces_and_commas():
    assert action_io.split_list("cuda\nnfs, windows  mps\n") == ["cuda", "nfs", "windows", "mps"]
    assert action_io.split_list("") == []


# --- result_report: judging a result ---------------------------------------------------------


@pytest.mark.parametrize("source", [REAL_GATE, REAL_DIAGNOSTIC, REAL_TRAINING_RUN_CHECK],
                         ids=["gate", "diagnostic", "training-run-check"])
def test_a_passing_result_with_exit_0_passes(tmp_path, source):
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    verdict = result_report.judge(path, "t", 0)
    assert verdict.ok and verdict.problems == [], verdict.problems
    assert verdict.sha256 == sha256_file(source) and len(verdict.sha256) == 64


@pytest.mark.parametrize("content, code, problem", [
    (None, 1, "no result file"),
    ("{not json", 1, "not readable JSON"),
    ([1, 2], 0, "not a JSON object"),
    (gate_with(_gate_failing_windows), 1, "requirement 'windows' did not hold"),
    (real(REAL_GATE), 3, "says ok but the process exited 3"),
    (gate_with(_gate_failing_check), 0, "says failed but the process exited 0"),
    (gate_with(lambda d: d.update(ok="true")), 0, "ok is 'true'"),
    (gate_with(lambda d: d["checks"]["failing_writer"].update(ok=False)), 0,
     "not authentic: checks.failing_writer.ok is recorded False, its measurements say True"),
    (gate_with(lambda d: d["checks"].pop("workspace_cleanup")), 0, "checks.workspace_cleanup is missing"),
    (real(REAL_DIAGNOSTIC_NO_GPU), 5, "status is 'failed'"),
    (dict(real(REAL_DIAGNOSTIC), status="failed", exit_code=1), 1, "status is 'failed'"),
    (dict(real(REAL_TRAINING_RUN_CHECK), checks=dict(real(REAL_TRAINING_RUN_CHECK)["checks"], config={"ok": False})),
     1, "checks.config did not pass"),
    ({"ok": True}, 0, "an unknown document never passes"),
    ({"status": "passed"}, 0, "an unknown document never passes"),
], ids=["no-file", "not-json", "not-object", "requirement-failed", "ok-but-exit-3", "failed-but-exit-0",
        "ok-is-a-string", "check-failed-ok-kept", "check-missing", "diagnostic-no-gpu", "diagnostic-failed",
        "training-run-check-failed", "bare-ok", "bare-status-passed"])
def test_every_way_a_result_can_fail_is_a_failure(tmp_path, content, code, problem):
    path = tmp_path / "r.json"
    if content is not None:
        write(path, content)
    verdict = result_report.judge(path, "t", code)
    assert not verdict.ok
    assert any(problem in text for text in verdict.problems), verdict.problems


def test_a_result_refused_for_its_shape_is_not_said_to_have_said_failed(tmp_path):
    # It says ok and the process exited 0; the judge refuses it (a check is missing), and says only that.
    verdict = result_report.judge(write(tmp_path / "r.json", gate_with(lambda d: d["checks"].pop("jsonl_append"))),
                                  "t", 0)
    assert not verdict.ok and not any("says failed" in text for text in verdict.problems), verdict.problems


def test_the_diagnostic_passes_on_status_passed(tmp_path):
    assert real(REAL_DIAGNOSTIC)["status"] == "passed"
    assert result_report.judge(write(tmp_path / "d.json", real(REAL_DIAGNOSTIC)), "d", 0).ok
    # the same real report with only its status changed does not pass
    failed = dict(real(REAL_DIAGNOSTIC), status="failed")
    assert not result_report.judge(write(tmp_path / "f.json", failed), "d", 0).ok


def test_publish_writes_outputs_a_summary_table_and_error_annotations(tmp_path, github_files, capsys):
    data = gate_with(lambda d: (_gate_failing_windows(d), _gate_failing_check(d)))
    path = write(tmp_path / "platform-runtime-windows.json", data)
    verdict = result_report.judge(path, "windows gate", 1)
    result_report.publish(verdict)
    outputs = parse_outputs(github_files[0])
    assert outputs["ok"] == "false" and outputs["result-path"] == str(path)
    assert outputs["result-sha256"] == sha256_file(path)
    summary = github_files[1].read_text()
    assert "### FAIL: windows gate" in summary and "| `jsonl_append` | **FAIL** | 2.2 | 3 records missing |" in summary
    assert "| require `windows` | **FAIL** |" in summary
    assert "| `device_compute` | pass |" in summary and "device `cpu`" in summary and "file system `ext4`" in summary
    out = capsys.readouterr().out
    assert "::error title=windows gate::requirement 'windows' did not hold" in out
    assert "::error title=windows gate::checks.jsonl_append failed: 3 records missing" in out


def test_the_summary_shows_the_judges_reasons_and_the_gates_own_failures(tmp_path, github_files):
    path = write(tmp_path / "platform-runtime-linux.json", gate_with(_gate_failing_windows))
    result_report.publish(result_report.judge(path, "linux gate", 1))
    summary = github_files[1].read_text()
    why, said = summary.index("Why it did not pass:"), summary.index("What the result says went wrong:")
    assert "- requirement 'windows' did not hold" in summary[why:said]
    assert "- requirement windows not met: platform.system() is Linux" in summary[said:]


def test_the_summary_shows_the_diagnostics_own_message(tmp_path, github_files, capsys):
    path = tmp_path / "diagnostic.json"
    shutil.copyfile(REAL_DIAGNOSTIC_NO_GPU, path)
    result_report.publish(result_report.judge(path, "diagnostic", 5))
    summary = github_files[1].read_text()
    message = real(REAL_DIAGNOSTIC_NO_GPU)["message"]
    assert "- status is 'failed', a pass needs 'passed'" in summary
    assert f"- GPU_BACKEND_ABSENT: {message}" in summary.split("What the result says went wrong:")[1]
    assert f"::error title=diagnostic (the result)::GPU_BACKEND_ABSENT: {message}" in capsys.readouterr().out


def test_a_passing_result_reports_no_failure_texts(tmp_path, github_files):
    path = tmp_path / REAL_GATE.name
    shutil.copyfile(REAL_GATE, path)
    verdict = result_report.judge(path, "gate", 0)
    result_report.publish(verdict)
    assert verdict.ok and verdict.reported == []
    assert "What the result says went wrong" not in github_files[1].read_text()


# --- run_gate / run_step ---------------------------------------------------------------------


def test_gate_command_passes_each_requirement_and_the_work_dir(tmp_path):
    args = run_gate.main.__globals__["argparse"].Namespace(
        device="cpu", output=tmp_path / "r.json", require_list="nfs\nwindows", require_device="cpu",
        require_filesystem="", work_dir="/mnt/x", keep_workspace="true", timeout="", collectives="",
        training_stack="")
    command = run_gate.gate_command(args)
    assert command[command.index("--work-dir") + 1] == "/mnt/x" and "--keep-workspace" in command
    assert [command[i + 1] for i, part in enumerate(command) if part == "--require"] == ["nfs", "windows"]
    assert "--collectives" not in command  # not asked: the check is absent from the result
    assert "--training-stack" not in command  # empty (a push, where inputs are empty) is not asked
    args.collectives, args.training_stack = "2", "true"
    command = run_gate.gate_command(args)
    assert command[command.index("--collectives") + 1] == "2" and "--training-stack" in command


def test_unknown_requirement_or_an_existing_result_is_a_usage_error(tmp_path, capsys):
    assert run_gate.main(["--output", str(tmp_path / "r.json"), "--require-list", "cuda gpu"]) == 2
    assert run_gate.main(["--output", str(write(tmp_path / "old.json", "{}"))]) == 2
    assert "unknown requirement(s) gpu" in capsys.readouterr().err


@pytest.mark.skipif(os.name == "nt", reason="flock is POSIX; the CUDA action runs on Linux")
def test_the_lock_excludes_another_holder_while_held(tmp_path):
    lock = tmp_path / "gpu.lock"
    probe = ("import fcntl, sys\nf = open(sys.argv[1], 'a+b')\n"
             "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(7)\n")
    with run_gate.held_lock(str(lock)):
        assert subprocess.run([sys.executable, "-c", probe, str(lock)]).returncode == 7
    assert subprocess.run([sys.executable, "-c", probe, str(lock)]).returncode == 0  # released


def _env(**extra: str) -> dict[str, str]:
    """This environment without the Actions files of a CI run that may be running these tests."""
    env = {key: value for key, value in os.environ.items() if key not in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
    return {**env, **extra}


def _run_step(tmp_path, code: str, *args: str) -> tuple[int, dict]:
    """run_step.py around `python -c code RESULT ARGS...`; the command writes RESULT (or not)."""
    result = tmp_path / "out" / "r.json"
    outputs = tmp_path / "gh-output"
    outputs.touch()
    proc = subprocess.run([sys.executable, str(ACTIONS / "run_step.py"), "--title", "t", "--result", str(result),
                           "--", "python", "-c", code, str(result), *args],
                          env=_env(GITHUB_OUTPUT=str(outputs)), capture_output=True, text=True)
    return proc.returncode, parse_outputs(outputs)


COPY_RESULT = "import shutil, sys; shutil.copyfile(sys.argv[2], sys.argv[1])"


def test_run_step_passes_a_command_whose_json_says_ok(tmp_path):
    code, outputs = _run_step(tmp_path, COPY_RESULT, str(REAL_GATE))
    assert code == 0 and outputs["ok"] == "true"
    assert outputs["result-sha256"] == sha256_file(REAL_GATE)


def test_run_step_fails_a_command_that_says_ok_but_exits_non_zero(tmp_path):
    code, outputs = _run_step(tmp_path, COPY_RESULT + "; sys.exit(4)", str(REAL_GATE))
    assert code == 1 and outputs["ok"] == "false"


def test_run_step_fails_a_command_whose_json_is_a_bare_ok(tmp_path):
    code, outputs = _run_step(tmp_path, "import json,sys; json.dump({'ok': True}, open(sys.argv[1], 'w'))")
    assert code == 1 and outputs["ok"] == "false"


def test_run_step_fails_a_command_that_writes_nothing(tmp_path):
    code, outputs = _run_step(tmp_path, "pass")
    assert code == 1 and outputs["ok"] == "false" and outputs["result-sha256"] == ""


# --- prepare_python --------------------------------------------------------------------------


@pytest.mark.parametrize("pin, installed, ok", [
    ("torch==2.13.0", "2.13.0+cpu", True),
    ("torch==2.13.0", "2.13.0", True),
    ("torch==2.13.0", "2.12.1", False),
    ("torch==2.13.0+cu128", "2.13.0+cpu", False),
    ("torch", "2.0.0", True),
    ("torch==2.13.0", None, False),
])
def test_installed_versions_are_compared_like_pip_for_exact_pins(pin, installed, ok):
    assert prepare_python.satisfied(pin, installed) is ok


def test_the_torch_input_replaces_the_pin(tmp_path):
    runtime = write(tmp_path / "runtime.txt", "# pins\ntorch==2.13.0\nnumpy==2.4.4  # comment\n")
    assert prepare_python.requirements(runtime, "torch==2.12.0") == ["numpy==2.4.4", "torch==2.12.0"]


def test_an_interpreter_that_has_everything_is_used_as_is(tmp_path, github_files):
    runtime = write(tmp_path / "runtime.txt", "pytest\n")
    assert prepare_python.main(["--venv", str(tmp_path / "v"), "--runtime", str(runtime)]) == 0
    python = parse_outputs(github_files[0])["python"]
    assert python == Path(sys.executable).as_posix() and not (tmp_path / "v").exists()


def test_a_missing_package_is_reported_missing_and_a_range_is_refused(tmp_path, capsys):
    assert prepare_python.missing(["pytest", "no-such-package-kernodeck==1.0"]) == ["no-such-package-kernodeck==1.0"]
    runtime = write(tmp_path / "runtime.txt", "torch>=2\n")
    assert prepare_python.main(["--venv", str(tmp_path / "v"), "--runtime", str(runtime)]) == 2
    assert "unsupported requirement" in capsys.readouterr().err


def test_the_cpu_index_is_printed_from_its_one_place_and_venv_is_required(capsys):
    assert prepare_python.main(["--print-cpu-index"]) == 0
    assert capsys.readouterr().out == prepare_python.CPU_INDEX + "\n"
    assert prepare_python.main([]) == 2 and "--venv" in capsys.readouterr().err


def test_a_linux_cpu_job_takes_the_cpu_wheel_index():
    expected = prepare_python.CPU_INDEX if sys.platform.startswith("linux") else ""
    assert prepare_python.choose_index("", "cpu") == expected
    assert prepare_python.choose_index("", "cuda") == ""
    assert prepare_python.choose_index("https://example.invalid/simple", "cpu") == "https://example.invalid/simple"


# --- plan ------------------------------------------------------------------------------------


def test_all_without_cuda_labels_runs_every_hosted_platform():
    assert plan.select("workflow_dispatch", "all", [], False)[0] == ["linux", "windows", "mps", "nfs"]
    assert plan.select("workflow_call", "all", ["gpu"], False)[0] == ["linux", "windows", "mps", "cuda", "nfs"]


def test_a_verify_branch_push_runs_windows_and_mps():
    assert plan.select("push", "", [], False)[0] == ["windows", "mps"]


def test_privileged_platforms_are_dropped_for_a_fork_pull_request():
    chosen, notes = plan.select("pull_request", "linux nfs cuda", ["gpu"], True)
    assert chosen == ["linux"] and "cuda, nfs never run for a pull request from a fork" in notes


@pytest.mark.parametrize("platforms, labels, message", [
    ("linux gpu", "", "unknown platform(s) gpu"),
    ("cuda", "", "no CUDA runner labels"),
    ("cuda", "{not json", "not JSON"),
    ("cuda", '[""]', "JSON array of non-empty strings"),
])
def test_bad_plans_are_usage_errors(platforms, labels, message, capsys, github_files):
    assert plan.main(["--event", "workflow_dispatch", "--platforms", platforms, "--cuda-runner", labels]) == 2
    assert message in capsys.readouterr().err


def test_the_plan_outputs_json_for_fromjson(github_files):
    labels = '["self-hosted","gpu"]'
    assert plan.main(["--event", "workflow_call", "--platforms", "cuda,linux", "--cuda-runner", labels]) == 0
    outputs = parse_outputs(github_files[0])
    assert json.loads(outputs["platforms"]) == ["linux", "cuda"]
    assert json.loads(outputs["cuda-runner"]) == ["self-hosted", "gpu"]


def test_the_plan_prints_its_selection_where_the_evidence_index_reads_it_back(github_files, capsys):
    from evidence_index.logparse import LogScanner

    assert plan.main(["--event", "workflow_dispatch", "--platforms", "windows linux"]) == 0
    printed = capsys.readouterr().out
    scanner = LogScanner()  # as GitHub stores the step's output: one timestamp per line
    scanner.update(b"".join(b"2026-08-24T10:00:01.1370000Z " + line.encode() + b"\n" for line in printed.splitlines()))
    assert scanner.result()["plan_selections"] == [json.loads(parse_outputs(github_files[0])["platforms"])]


# --- the evidence job's verdict (collect_results.py is gone) ---------------------------------
# The workflow's evidence job now judges once, with scripts/build_evidence_index.py; collect_results' promises
# are proven by the builder's tests in tests/evidence_index/test_evidence_index_build.py:
#   a successful job with its passing result passes:
#     test_a_clean_run_passes_and_every_digest_equals_the_served_bytes
#   the job failed: test_a_failed_or_cancelled_job_fails_and_a_skipped_one_is_not_selected
#   the gate result is not ok: test_a_gate_result_that_is_not_a_proof_for_this_job_fails[not-ok]
#   another result in the artifact is not ok: test_an_extra_result_that_is_not_ok_fails_its_platform
#   a selected platform has no artifact or no job: test_a_platform_the_plan_selected_that_did_not_run_fails,
#     test_offline_a_failed_job_or_a_platform_without_outputs_fails
#   the artifact's hash differs from the one its job exported:
#     test_an_artifact_whose_zip_differs_from_the_digest_its_job_exported_fails
#   the plan failed (so no platform job ran): test_a_run_where_no_platform_ran_proves_nothing
#   another attempt's artifact: test_attempt_selects_that_attempts_jobs_and_artifact_names
#   bad JSON input is a usage error and writes nothing:
#     test_a_platform_artifacts_file_that_is_not_usable_is_a_usage_error
# One promise had no builder test: bad input leaves an existing output untouched. It is ported here.


@pytest.mark.parametrize("content", ["{not json", "[]"], ids=["not-json", "not-an-object"])
def test_the_evidence_builder_refuses_bad_input_and_leaves_an_existing_index_untouched(tmp_path, content):
    index, summary = write(tmp_path / "index.json", '{"earlier": "index"}\n'), tmp_path / "summary.md"
    artifacts = write(tmp_path / "platform-artifacts.json", content)
    # nothing listens on port 9: a usage error must come before any request
    env = {**_env(GITHUB_API_URL="http://127.0.0.1:9"), "GITHUB_TOKEN": ""}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_evidence_index.py"), "build",
                           "--repository", "kernodeck/platform-runtime", "--run-id", "1",
                           "--platform-artifacts", str(artifacts), "--output", str(index), "--summary", str(summary)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--platform-artifacts" in proc.stderr and "Traceback" not in proc.stderr
    assert index.read_text() == '{"earlier": "index"}\n' and not summary.exists()


# --- nfs_harness: what is deleted from the export, and how it is verified ---------------------


def test_only_the_gate_workspace_name_is_accepted_for_deletion(tmp_path):
    cleanup = {"status": "retained", "workspace": "platform-runtime-0a1b2c3d4e5f"}
    good = write(tmp_path / "g.json", {"workspace_cleanup": cleanup})
    assert nfs_harness.retained_workspace(good) == ("retained", "platform-runtime-0a1b2c3d4e5f")
    for name in ["../etc", "/", "platform-runtime-../../x", ".", "other"]:
        bad = write(tmp_path / "b.json", {"workspace_cleanup": {"status": "retained", "workspace": name}})
        with pytest.raises(nfs_harness.HarnessError):
            nfs_harness.retained_workspace(bad)


def test_the_retained_workspace_is_deleted_on_the_export_side_and_verified_gone(tmp_path):
    export = tmp_path / "export"
    write(export / "platform-runtime-0a1b2c3d4e5f" / "sub" / "f.jsonl", "{}\n")
    record = nfs_harness.remove_from_export(export, "platform-runtime-0a1b2c3d4e5f")
    assert record["existed_on_export"] and record["deleted"] and record["verified"]
    assert not (export / "platform-runtime-0a1b2c3d4e5f").exists()


def test_a_silly_rename_leftover_or_a_missing_workspace_is_not_verified(tmp_path):
    export = tmp_path / "export"
    write(export / ".nfs000000000001", "x")
    write(export / "platform-runtime-0a1b2c3d4e5f" / "f", "x")
    assert nfs_harness.remove_from_export(export, "platform-runtime-0a1b2c3d4e5f")["verified"] is False
    (export / ".nfs000000000001").unlink()
    missing = nfs_harness.remove_from_export(export, "platform-runtime-ffffffffffff")
    assert missing["existed_on_export"] is False and missing["deleted"] is False


# --- the other small CLIs --------------------------------------------------------------------


def test_no_matching_platform_test_is_a_failure_not_a_silent_pass(tmp_path):
    proc = subprocess.run([sys.executable, str(ACTIONS / "run_platform_tests.py"), "--junit", str(tmp_path / "j.xml"),
                           "tests/no_such_test_*.py"], capture_output=True, text=True, env=_env())
    assert proc.returncode == 2 and "::error title=platform tests::no platform tests match" in proc.stdout


def test_pip_pins_refuses_a_package_without_a_pin():
    proc = subprocess.run([sys.executable, str(ACTIONS / "pip_pins.py"), "leftpad"], capture_output=True, text=True)
    assert proc.returncode == 2 and "no pin in requirements/ for leftpad" in proc.stderr


def test_result_folders_are_fresh_and_named_in_outputs(tmp_path, github_files, monkeypatch):
    import result_dir

    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "runner-temp"))
    assert result_dir.main(["dir=platform-runtime-linux-", "nfs=nfs-"]) == 0
    assert result_dir.main(["dir=platform-runtime-linux-"]) == 0
    first, second = [line for line in github_files[0].read_text().split("\n") if "platform-runtime-linux-" in line]
    assert first != second and Path(first).is_dir() and not any(Path(first).iterdir())
    assert Path(first).parent == tmp_path / "runner-temp"


def test_result_folder_names_are_checked(capsys):
    import result_dir

    assert result_dir.main(["dir=../escape"]) == 2 and result_dir.main([]) == 2


def test_missing_packages_go_into_a_new_venv_never_the_running_python(tmp_path, github_files):
    runtime = write(tmp_path / "runtime.txt", "six==1.17.0\n")
    venv = tmp_path / "venv"
    assert prepare_python.main(["--venv", str(venv), "--runtime", str(runtime)]) == 0
    outputs = parse_outputs(github_files[0])
    python = prepare_python.venv_python(venv)
    assert outputs["installed"] == "true" and outputs["python"] == python.as_posix()
    check = "import importlib.metadata as m; print(m.version('six'))"
    assert subprocess.run([str(python), "-c", check], capture_output=True, text=True).stdout.strip() == "1.17.0"


def test_requirement_markers_select_the_pin_for_this_python():
    from prepare_python import for_this_python

    line = 'numpy==2.2.6; python_version < "3.11"'
    assert for_this_python(line, (3, 10)) == "numpy==2.2.6"
    assert for_this_python(line, (3, 12)) is None
    assert for_this_python("torch==2.13.0", (3, 12)) == "torch==2.13.0"
    with pytest.raises(ValueError):
        for_this_python('torch==2.13.0; sys_platform == "linux"', (3, 12))
