"""The server_gone phase's pure parts (its VM run: `dev.py nfs --phases server_gone`): the verdict fails
each broken promise, the stuck processes are read from /proc, the phase is asked for by name only."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import busy_rename, job, phases, run_checks, server_gone  # noqa: E402

STUCK = [{"pid": 501, "name": "python3", "state": "D"}]
GATE = {"ok": False, "exit_code": 3, "failures": ["jsonl_append: did not finish within 90 s (the gate's --timeout)"],
        "checks": {"jsonl_append": {"ok": False, "abandoned": True, "abandoned_processes": STUCK},
                   "device_compute": {"ok": False}}}
RECORD = {"ok": False, "unmounted": False, "problems": ["the NFS mount did not answer"], "export_side_delete": None,
          "unmount": {"hung": True, "detached": "lazy"}}
TEARDOWN = {"exit_code": 1, "seconds": 25.0}


def judged(**changes) -> dict:
    args = {"document": GATE, "exit_code": 3, "gate_seconds": 95.0, "timeout": 90.0, "stuck_after": STUCK,
            "teardown": TEARDOWN, "record": RECORD, "export_kept": True}
    args.update(changes)
    return server_gone.judge(**args)


def test_a_gate_that_failed_in_time_naming_its_stuck_processes_and_a_bounded_teardown_pass():
    verdict_ = judged()
    assert verdict_["pass"] is True and verdict_["unmet"] == [] and verdict_["abandoned_named"] == [501]


@pytest.mark.parametrize("changes, unmet", [
    ({"exit_code": None}, "gate_returned"),
    ({"gate_seconds": 200.0}, "gate_within_timeout"),
    ({"document": None}, "result_written"),
    ({"document": {**GATE, "ok": True, "exit_code": 0, "failures": []}, "exit_code": 0}, "failed_with_reasons"),
    ({"document": {**GATE, "failures": []}}, "failed_with_reasons"),
    ({"stuck_after": STUCK + [{"pid": 502, "name": "python3", "state": "D"}]}, "every_stuck_process_named"),
    ({"teardown": {"exit_code": None, "seconds": 120.0}}, "teardown_returned"),
    ({"teardown": {"exit_code": 0, "seconds": 3.0}}, "teardown_failed_and_recorded"),
    ({"record": {**RECORD, "unmounted": True}}, "teardown_failed_and_recorded"),
    ({"export_kept": False}, "export_left_alone"),
    ({"record": {**RECORD, "export_side_delete": {"deleted": True}}}, "export_left_alone"),
])
def test_each_broken_promise_fails_the_phase(changes, unmet):
    verdict_ = judged(**changes)
    assert verdict_["pass"] is False and unmet in verdict_["unmet"]


def test_the_hosts_check_reads_the_phases_result_and_fails_without_one(tmp_path):
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["server_gone"])}
    assert checks["server_gone"]["ok"] is False and checks["server_gone"]["detail"] == "the phase wrote no result"
    (tmp_path / "server_gone").mkdir()
    phases.write_missing_result(tmp_path, "server_gone", "the phase raised OSError")
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["server_gone"])}
    assert checks["server_gone"]["detail"].startswith("the phase raised OSError")


def test_the_phase_runs_only_when_named_and_then_last():
    assert "server_gone" not in job.PHASES and "server_gone" in job.ALL_PHASES
    made, _ = job.make_job(ROOT, ["server_gone", "busy_unmount"], 420.0)
    assert made["phases"] == ["busy_unmount", "server_gone"]
    assert phases.phase_function("server_gone") is server_gone.server_gone_phase
    assert phases.phase_function("busy_unmount") is phases.busy_unmount_phase


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_stuck_processes_of_a_user_are_read_from_proc():
    """Nothing of ours sleeps uninterruptibly here; a stopped child is seen by its state, not named as D."""
    child = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)"])
    try:
        found = server_gone.uninterruptible(os.getuid())
        assert all(s["state"] == "D" for s in found) and child.pid not in {s["pid"] for s in found}
    finally:
        child.kill()
        child.wait()


def test_the_busy_rename_experiment_passes_only_when_every_round_passed_and_says_whether_etxtbsy_was_met():
    """Each round judged by the gate's own concurrent_replace rule on its measurements (a recorded real round),
    never by the result's `ok`."""
    real = json.loads((ROOT / "tests" / "nfs" / "recorded" / "busy-rename.json").read_text())["rounds"][0]
    good = {"exit_code": 0, "result": {**real["result"], "writer_busy_rename_retries": 3}}
    clean = {"exit_code": 0, "result": real["result"]}
    failed = {"exit_code": 1, "result": {**real["result"], "ok": False, "partial_reads": 1}}
    assert busy_rename.judge([good, clean]) == {"rounds": 2, "passed": 2, "busy_rename_retries": [3, 0], "reasons": [],
                                                "met_etxtbsy": True, "pass": True}
    assert busy_rename.judge([clean])["met_etxtbsy"] is False
    judged = busy_rename.judge([good, failed, {"exit_code": None, "result": None}])
    assert judged["pass"] is False and judged["passed"] == 1 and judged["reasons"][0] == "exit_code is 1"
    flagged = busy_rename.judge([{"exit_code": 0, "result": {**real["result"], "partial_reads": 1}}])  # ok left true
    assert flagged["passed"] == 0 and "checks.concurrent_replace.partial_reads is 1" in flagged["reasons"][0]
    assert busy_rename.judge([])["pass"] is False
    made, _ = job.make_job(ROOT, ["server_gone", "busy_rename", "action"], 420.0)
    assert made["phases"] == ["action", "busy_rename", "server_gone"]
    assert phases.phase_function("busy_rename") is busy_rename.busy_rename_phase
