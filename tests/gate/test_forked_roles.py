"""A file-system check's roles are forks of the check's own isolated process on POSIX (one fresh interpreter
per check, not one per role), and each is still a real separate process: its own pid, a child of the check,
running at the same time as the others, holding its own POSIX locks; the fault kit reaches it at the fork
as it reached a fresh interpreter at start-up; where there is no fork, each role is a fresh interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from platform_runtime import forked, roles

from tests.conftest import SCRIPTS, fault_python

posix_only = pytest.mark.skipif(not forked.FORK, reason="roles are forked only where os.fork exists")


def audited_check(tmp_path, mode: str, *args: str, fault: str = "") -> tuple[dict, list[dict]]:
    """Run one check's process from the fault venv; its result and every process's audit record."""
    audit, workspace = tmp_path / "audit", tmp_path / "ws"
    audit.mkdir()
    workspace.mkdir()
    completed = subprocess.run([str(fault_python()), "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"),
                                "fs_worker", mode, str(workspace), *args],
                               env=dict(os.environ, PLATFORM_RUNTIME_FAULT=fault,
                                        PLATFORM_RUNTIME_AUDIT_DIR=str(audit)),
                               capture_output=True, text=True, timeout=120)
    records = [json.loads(p.read_text()) for p in audit.iterdir()]
    return json.loads(completed.stdout.strip().splitlines()[-1]), records


@posix_only
def test_each_role_is_a_separate_process_forked_from_its_checks_isolated_process(tmp_path):
    result, records = audited_check(tmp_path, "append", "--writers", "8", "--records", "200")
    assert result["ok"] is True, result["reason"]
    (check,) = [r for r in records if r["role"] == "append"]
    assert check["started"] == "interpreter"  # the launcher: started as every worker is, python -I
    forks = [r for r in records if r["role"] != "append"]
    assert sorted(r["role"] for r in forks) == ["append-writer"] * 8 + ["lock-attempt"] * 2
    assert all(r["started"] == "fork" and r["ppid"] == check["pid"] for r in forks)
    assert len({r["pid"] for r in forks} | {check["pid"]}) == 11  # eleven processes, not one
    assert not any(r["torch"] for r in records)
    # The appenders really ran at the same time: each one overlaps another (they start 1 ms apart).
    writers = sorted(r["ran"] for r in forks if r["role"] == "append-writer")
    assert all(any(a < d and c < b for c, d in writers if (c, d) != (a, b)) for a, b in writers)


@posix_only
def test_the_fault_kit_reaches_a_forked_role_by_its_own_command_line(tmp_path):
    # Only writer 5 (its command line says so) breaks; the check names it, as it did a fresh interpreter.
    result, records = audited_check(tmp_path, "append", "--writers", "8", "--records", "20",
                                    fault="appender-disk-full")
    assert result["ok"] is False
    assert [r["name"] for r in result["roles"] if r["answer"] == "failed"] == ["w5"]
    assert "w5 ended with OSError ENOSPC (No space left on device) in jsonl._write_all" in result["reason"]
    assert {r["role_args"][1] for r in records if r["role"] == "append-writer"} == {str(i) for i in range(8)}


@posix_only
def test_a_forked_replace_check_keeps_its_readers_and_writers_apart(tmp_path):
    result, records = audited_check(tmp_path, "replace")
    assert result["ok"] is True and result["partial_reads"] == 0, result["reason"]
    forks = [r for r in records if r["started"] == "fork"]
    assert sorted(r["role"] for r in forks) == ["replace-reader"] * 2 + ["replace-writer"] * 4


def child_sleeps(argv: list[str]) -> int:
    time.sleep(60)
    return 0


def child_says(argv: list[str]) -> int:
    os.write(1, f"{sys.argv[2]} {' '.join(argv)} {os.getpid()}\n".encode())
    if argv[-1] == "exit":
        raise SystemExit(7)
    return 0


@posix_only
def test_a_forked_role_sees_its_own_command_line_and_returns_its_exit_status():
    saved = list(sys.argv)
    process = forked.start(["entry", "fs_worker", "lock-attempt", "x"], child_says, ["lock-attempt", "exit"])
    assert sys.argv == saved  # the check's own command line is back at once
    out, _ = process.communicate(timeout=30)
    role, mode, last, pid = out.decode().split()
    assert (role, mode, last) == ("lock-attempt", "lock-attempt", "exit") and int(pid) == process.pid != os.getpid()
    assert process.returncode == 7


@posix_only
def test_a_forked_role_that_does_not_answer_times_out_and_is_killed():
    process = forked.start(["entry", "fs_worker", "append-writer"], child_sleeps, ["append-writer"])
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        process.communicate(timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 5 and process.poll() is None
    process.kill()
    out, _ = process.communicate(timeout=5)
    assert out == b"" and process.returncode == -signal.SIGKILL


def test_where_there_is_no_fork_each_role_is_a_fresh_interpreter_and_still_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(forked, "FORK", False)
    role = roles.start("lock-attempt", "after-release", roles.CheckDeadline(60), str(tmp_path / "lock.jsonl"))
    assert isinstance(role.process, subprocess.Popen)
    outcome = roles.collect(role)
    assert outcome["answer"] == "answered" and outcome["result"]["acquired"] is True
