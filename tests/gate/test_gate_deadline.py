"""The gate ends within its --timeout, whatever its children do: a child that never finishes is killed, one
that cannot be reaped is abandoned and named, the workspace removal and the result fit in the same budget
(platform_runtime.budget), and the result is written with exit 3.

BOUND_S is what the promise allows beyond --timeout, measured from outside (before the gate's process is
created to after it was reaped): process creation and the interpreter's own exit on a loaded machine. The
budget itself ends the run EXIT_RESERVE_S before --timeout, counted from the process's start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from core import record_rules
from platform_runtime import budget, stuck

from tests.conftest import SCRIPTS, run_gate, validate

BOUND_S = 1.0
LINUX_ROOT = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                reason="loop-mounts and freezes a file system (root, Linux)")


def test_the_budget_keeps_kills_cleanup_and_result_inside_the_timeout():
    plan = budget.Budget(90.0, 30.0, age_s=0.0)
    assert plan.exit_at - plan.started == 90.0 - budget.EXIT_RESERVE_S
    # The checks end first, then the kills' grace, then the cleanup's slot (5 % of 90 s, plus its grace).
    assert plan.cleanup_slot_s == pytest.approx(4.5 + budget.CLEANUP_GRACE_S)
    assert plan.exit_at - plan.checks_at == pytest.approx(plan.cleanup_slot_s + budget.KILL_GRACE_S)
    assert plan.checks.remaining() <= 90.0 - 9.5
    default = budget.Budget(600.0, 30.0, age_s=0.0)
    assert default.cleanup_slot_s == 31.0 and default.checks_at - default.started == pytest.approx(565.0)
    tiny = budget.Budget(4.0, 30.0, age_s=0.0)  # the checks keep half of what is left
    assert tiny.checks_at - tiny.started == pytest.approx(1.5)


def test_the_process_age_counts_the_interpreters_start_against_the_timeout():
    age = budget.process_age()
    assert 0.0 < age < 3600.0 if sys.platform.startswith("linux") else age == 0.0
    late = budget.Budget(10.0, 30.0, age_s=4.0)
    assert late.exit_remaining() <= 10.0 - budget.EXIT_RESERVE_S - 4.0 + 0.01


@pytest.mark.skipif(os.name != "posix", reason="the fault forks a grandchild that leaves the process group")
def test_a_child_that_never_finishes_and_cannot_be_reaped_ends_the_gate_within_its_timeout(tmp_path):
    """The device worker hangs and a grandchild of it, out of its process group, holds its output: the gate
    kills, waits its grace, abandons and names it, removes the workspace, writes the result: all by --timeout."""
    timeout = 10.0
    pidfile = tmp_path / "escaped.pid"
    started = time.monotonic()
    try:
        run = run_gate(tmp_path, "--device", "cpu", "--timeout", str(timeout), fault="device-escapes-holding-output",
                       env={"PLATFORM_RUNTIME_FAULT_PIDFILE": str(pidfile)})
        elapsed = time.monotonic() - started
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert run.returncode == 3 and run.result["exit_code"] == 3 and run.result["ok"] is False, run.stderr
    assert elapsed <= timeout + BOUND_S, f"the gate ended {elapsed:.2f} s after its start, --timeout {timeout}"
    assert run.result["duration_s"] <= timeout
    device = run.result["checks"]["device_compute"]
    assert device["ok"] is False and device["abandoned"] is True
    assert "--timeout" in device["reason"] and "was abandoned" in device["reason"]
    assert any(f.startswith("device_compute: NO ANSWER") and "abandoned" in f for f in run.result["failures"])
    # The workspace was still removed, in the slot kept for it after the checks' deadline.
    assert run.result["workspace_cleanup"]["status"] == "cleaned"
    assert run.result["workspace_cleanup"]["after_global_timeout"] is True
    # ... and its deadline is the one its argument and the budget set, by the judge's rule (core.record_rules).
    assert "deadline_cut_by_budget" in run.result["workspace_cleanup"]
    assert record_rules.cleanup_deadline(run.result) == [] and record_rules.timeout_held(run.result) == []


def _sh(*command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def frozen_mount(tmp_path):
    """A loop-mounted ext4 and a way to freeze it (FIFREEZE): every write to it then sleeps uninterruptibly in
    the kernel (state D) and SIGKILL cannot end the writer until the thaw, as on a hard NFS mount whose server is
    gone. Thawed and unmounted at the end whatever happened."""
    if shutil.which("fsfreeze") is None or shutil.which("mkfs.ext4") is None:
        pytest.skip("needs fsfreeze and mkfs.ext4")
    image, point = tmp_path / "fs.img", tmp_path / "mnt"
    point.mkdir()
    _sh("truncate", "-s", "256M", str(image))
    if _sh("mkfs.ext4", "-q", "-F", str(image)).returncode != 0:
        pytest.skip("mkfs.ext4 failed")
    done = _sh("mount", "-o", "loop", str(image), str(point))
    if done.returncode != 0:
        pytest.skip(f"cannot loop-mount here: {done.stderr.strip()[:200]}")
    state = {"frozen": False}

    def freeze() -> None:
        assert _sh("fsfreeze", "-f", str(point)).returncode == 0
        state["frozen"] = True

    yield point, freeze
    if state["frozen"]:
        _sh("fsfreeze", "-u", str(point))
    time.sleep(0.5)  # the killed writers wake up and die
    if _sh("umount", str(point)).returncode != 0:
        _sh("umount", "-l", str(point))


@LINUX_ROOT
def test_a_file_system_that_stops_answering_ends_the_gate_within_its_timeout_naming_each_abandoned_child(
        frozen_mount, tmp_path):
    """The work dir's file system is frozen as soon as the workspace exists: the checks' writes, the device
    worker's checkpoint and the cleanup's removal all block in the kernel. The gate still exits 3 by --timeout,
    its result written outside the mount, each check's processes left in uninterruptible sleep named."""
    point, freeze = frozen_mount
    timeout = 20.0
    output = tmp_path / "result.json"  # outside the frozen mount
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"), "--device", "cpu",
                                "--work-dir", str(point), "--timeout", str(timeout), "--output", str(output)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not list(point.glob("platform-runtime-*")):
            assert process.poll() is None and time.monotonic() - started < timeout, "no workspace was made"
            time.sleep(0.005)
        freeze()
        _, stderr = process.communicate(timeout=timeout + 30)
        elapsed = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, stderr.decode(errors="replace")[-2000:]
    assert elapsed <= timeout + BOUND_S, f"the gate ended {elapsed:.2f} s after its start, --timeout {timeout}"
    result = json.loads(output.read_text(encoding="utf-8"))
    validate(result, "platform-runtime-result.schema.json")
    assert result["exit_code"] == 3 and result["ok"] is False
    abandoned = {name: check for name, check in result["checks"].items() if check.get("abandoned")}
    assert {"failing_writer", "jsonl_append", "device_compute"} <= set(abandoned), sorted(result["checks"])
    named = set()
    for name, check in abandoned.items():
        assert check["ok"] is False and "abandoned" in check["reason"], (name, check["reason"])
        for member in check.get("abandoned_processes", []):
            assert member["state"] == "D" and f"pid {member['pid']} " in check["reason"]
            named.add(member["pid"])
    assert named, "no check named a process left in uninterruptible sleep"
    cleanup = result["workspace_cleanup"]
    assert cleanup["file_system_hung"] is True and cleanup["status"] in ("timeout", "failed")
    assert cleanup["deadline_s"] <= 5.0 and record_rules.cleanup_deadline(result) == [], cleanup
    assert result["checks"]["workspace_cleanup"]["ok"] is False
    # Still there after the gate's exit, still blocked (until the fixture thaws the file system).
    assert any(_state(pid) == "D" for pid in named), "no process named as abandoned is left in D after the exit"


def _state(pid: int) -> str | None:
    try:
        stat = stuck.parse_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None
    return stat["state"] if stat else None


@pytest.mark.parametrize("timeout, device, file_system", [(600.0, 300.0, 120.0), (300.0, 300.0, 120.0),
                                                          (900.0, 450.0, 180.0)])
def test_each_checks_deadline_grows_with_a_longer_timeout_and_never_falls_below_its_default(timeout, device,
                                                                                             file_system):
    from platform_runtime.gate import Options

    options = Options(timeout_s=timeout)
    assert (options.device_check_timeout(), options.fs_check_timeout()) == (device, file_system)
