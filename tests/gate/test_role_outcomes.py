"""Every probe says what it saw: a role process of a file-system check that gives no answer is reported as NO
ANSWER with its deadline and how long it ran, never as the property failing; a role ended by an error names
it (type, errno name, the failing operation, no path); role deadlines come from the check's own deadline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from common.files import read_bytes_retrying
from platform_runtime.roles import describe_error, error_text
from rules.role_outcomes import append_problems, lock_probe_problems, replace_problems, role_problems

from tests.conftest import SCRIPTS, fault_python

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the faults patch fcntl.lockf and os.write")


def fs_check(tmp_path, fault: str, mode: str, *args: str, deadline_s: float | None = None) -> dict:
    workspace = tmp_path / f"ws-{len(list(tmp_path.iterdir()))}"
    workspace.mkdir()
    extra = ["--deadline-at", f"{time.time() + deadline_s:.3f}"] if deadline_s else []
    completed = subprocess.run([str(fault_python()), "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"),
                                "fs_worker", mode, str(workspace), *args, *extra],
                               env=dict(os.environ, PLATFORM_RUNTIME_FAULT=fault), capture_output=True, text=True,
                               timeout=150)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def role(answer: str, **facts) -> dict:
    return {"role": "append-writer", "name": "w0", "deadline_s": 40.0, "ran_s": 40.1, "exit": None,
            "abandoned": False, "error": None, "answer": answer, **facts}


def test_a_lock_attempt_that_never_answers_is_no_answer_not_a_broken_lock(tmp_path):
    started = time.monotonic()
    result = fs_check(tmp_path, "lock-attempt-silent", "append", "--writers", "2", "--records", "5", deadline_s=10)
    elapsed = time.monotonic() - started
    assert result["ok"] is False
    assert "NO ANSWER from 1 of 1 lock-attempt process(es): while-held gave no result within its" in result["reason"]
    assert "did not exclude" not in result["reason"] and "could not be acquired" not in result["reason"]
    held = result["lock_probe"]["while_held"]
    # Its deadline is what the check's 10 s left it (less the check's reserve), not a fixed constant.
    assert held["answer"] == "no-answer" and 5 < held["deadline_s"] < 10 and held["ran_s"] >= held["deadline_s"]
    assert result["lock_probe"]["refused_while_held"] is False and elapsed < 20


def test_a_release_seen_late_is_retried_within_a_bounded_window(tmp_path):
    result = fs_check(tmp_path, "lock-granted-late", "append", "--writers", "2", "--records", "5")
    assert result["ok"] is True, result["reason"]
    after = result["lock_probe"]["after_release"]
    assert after["acquired"] is True and after["attempts"] == 4 and after["retry_window_s"] == 10.0


def test_a_lock_never_granted_after_release_fails_once_the_window_is_spent(tmp_path):
    result = fs_check(tmp_path, "lock-never-granted", "append", "--writers", "2", "--records", "5", deadline_s=12)
    after = result["lock_probe"]["after_release"]
    assert result["ok"] is False and after["answer"] == "answered" and after["acquired"] is False
    assert after["attempts"] > 3 and after["waited_s"] <= after["retry_window_s"] < 6
    assert "a released lock could not be acquired by another process" in result["reason"]
    assert "NO ANSWER" not in result["reason"]


def test_a_writer_ended_by_a_full_disk_names_the_errno_and_the_operation(tmp_path):
    result = fs_check(tmp_path, "appender-disk-full", "append", "--writers", "8", "--records", "20")
    assert result["ok"] is False
    assert ("1 of 8 append-writer process(es) failed: w5 ended with OSError ENOSPC (No space left on device) "
            "in jsonl._write_all") in result["reason"]
    failed = [r for r in result["roles"] if r["answer"] == "failed"]
    assert [r["name"] for r in failed] == ["w5"] and failed[0]["error"]["errno"] == "ENOSPC"
    # Its records are missing because it failed, which the reason already says: not judged as lost records.
    assert result["missing"] == 20 and "lost" not in result["reason"]
    assert str(tmp_path) not in json.dumps(result)


def test_a_silent_replace_writer_is_no_answer_and_the_incomplete_file_is_not_blamed(tmp_path):
    result = fs_check(tmp_path, "replace-writer-silent", "replace", deadline_s=12)
    assert result["ok"] is False
    assert "NO ANSWER from 1 of 4 replace-writer process(es): w2 gave no result within its" in result["reason"]
    assert "final file" not in result["reason"] and "partial" not in result["reason"]
    silent = [r for r in result["roles"] if r["answer"] != "answered"]
    assert [r["name"] for r in silent] == ["w2"] and silent[0]["deadline_s"] < 12


def test_an_error_is_described_without_paths(tmp_path):
    try:
        read_bytes_retrying(tmp_path / "absent" / "file")
    except OSError as exc:
        error = describe_error(exc)
    assert error["type"] == "FileNotFoundError" and error["errno"] == "ENOENT"
    assert error["operation"] == 'files.read_whole: with open(path, "rb") as handle:'  # the innermost call of ours
    assert str(tmp_path) not in json.dumps(error)
    assert error_text(error) == ('FileNotFoundError ENOENT (No such file or directory) in files.read_whole: '
                                 'with open(path, "rb") as handle:')


@pytest.mark.parametrize("answer", ["no-answer", "failed", "no-result", None, "bogus"])
def test_no_outcome_but_an_answer_is_ever_a_pass(answer):
    assert role_problems([role(answer)]) != []
    check = {"roles": [role(answer)], "lock_probe": {"while_held": role("answered", acquired=False),
                                                     "after_release": role("answered", acquired=True)}}
    assert append_problems(check) != []
    assert replace_problems({**check, "final_version": [0, 49], "replaces_per_writer": 50}) != []


def test_no_answer_names_its_deadline_and_how_long_it_ran():
    assert role_problems([role("no-answer", abandoned=True)]) == [
        "NO ANSWER from 1 of 1 append-writer process(es): w0 gave no result within its 40.0 s deadline "
        "(ran 40.1 s); it did not exit when killed and was abandoned"]


def test_a_lock_probe_without_answers_is_named_as_such_never_as_the_lock_failing():
    problems = lock_probe_problems({"while_held": role("no-answer"), "after_release": role("no-answer")})
    assert len(problems) == 2 and all("NO ANSWER" in p for p in problems)
    assert lock_probe_problems({}) != []


def test_the_gate_names_a_silent_role_as_no_answer_in_the_check_and_its_failures(tmp_path):
    from tests.conftest import run_gate

    run = run_gate(tmp_path, "--device", "cpu", "--timeout", "40", fault="replace-writer-silent")
    assert run.returncode in (1, 3) and run.result["ok"] is False
    replace = run.result["checks"]["concurrent_replace"]
    assert replace["ok"] is False and "NO ANSWER from 1 of 4 replace-writer process(es): w2" in replace["reason"]
    # The check's deadline is its share of what --timeout left, and the writer's is what that left.
    assert replace["deadline_s"] <= 40 and replace["roles"][2]["deadline_s"] < replace["deadline_s"]
    assert any(f.startswith("concurrent_replace: NO ANSWER from 1 of 4") for f in run.result["failures"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the writers are forked, so the patched role reaches them")
def test_a_killed_writer_that_never_answers_is_no_answer_within_the_stages_deadline(tmp_path, monkeypatch):
    from platform_runtime import killed_writer

    monkeypatch.setattr(killed_writer, "writer", lambda *args: time.sleep(60) or 0)  # a start that never ends
    started = time.monotonic()
    facts = killed_writer.stage(tmp_path, kills=5, seed=1, deadline_s=2.0)
    assert time.monotonic() - started < 15 and facts["writers_no_answer"] == 1 and facts["writer_failures"] == 0
    assert facts["deadline_s"] == 2.0 and facts["kills"] == 0
    problems = killed_writer.problems(facts)
    assert problems == [f"NO ANSWER from 1 killed_writer writer process(es): no report within the stage's 2.0 s "
                        f"deadline (ran {facts['seconds']:.1f} s)"]
