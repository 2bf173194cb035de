"""The two-client phase says why each role ended: the role's own reason (the exception the gate's worker
printed), else its stderr's last line, else how it exited; the variant's verdict and the phase's reason
carry it. Run without a VM: the roles are real processes here."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import phases, run_checks, two_clients, two_clients_phase  # noqa: E402


def test_a_role_that_printed_its_reason_is_named_by_it():
    assert two_clients.why_it_ended(1, {"ok": False, "reason": "OSError: Text file busy"}, "") == \
        "OSError: Text file busy"
    assert two_clients.why_it_ended(1, None, "Traceback ...\n  ...\nKeyError: 'x'\n") == "KeyError: 'x'"
    assert two_clients.why_it_ended(-9, None, "") == "killed by signal 9"
    assert two_clients.why_it_ended(0, {"reason": "anything"}, "noise") is None


def test_a_real_failing_role_reports_its_exception_through_finish(tmp_path):
    """The gate's replace writer on a target whose folder does not exist: it ends with the OSError it met."""
    job = {"repo": str(ROOT), "python": sys.executable}
    task = {"name": "w0", "role": "writer",
            "argv": phases.gate_worker(job, "replace-writer", str(tmp_path / "absent" / "replace.json"), "0", "3")}
    process = subprocess.Popen(task["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    report = two_clients.finish(task, process, time.monotonic(), 60)
    assert report["exit_code"] == 1 and report["reason"].startswith("FileNotFoundError")


def test_the_replace_variants_verdict_and_the_phase_detail_name_the_failed_role():
    run = {"writers_per_client": 1, "count_per_writer": 3, "clients": [
        {"client": "c1", "tasks": [{"name": "w0", "role": "writer", "exit_code": 0, "result": {"writes": 3}},
                                   {"name": "reader", "role": "reader", "exit_code": 0, "result": {"reads": 5}}]},
        {"client": "c2", "tasks": [{"name": "w1", "role": "writer", "exit_code": 1,
                                    "reason": "OSError: Text file busy"},
                                   {"name": "reader", "role": "reader", "exit_code": 0, "result": {"reads": 5}}]}]}
    from platform_runtime import fs_worker

    judged = two_clients_phase.judge_replace({"repo": str(ROOT), "python": sys.executable}, run,
                                  fs_worker.version_document(0, 2))
    assert judged["pass"] is False and judged["failed_tasks"] == ["c2/w1: OSError: Text file busy"]
    detail = run_checks.describe_two_clients({"variants": {"replace": {"verdict": judged}}})
    assert "replace FAILED (c2/w1: OSError: Text file busy)" in detail
    variants = {"locked": {"verdict": {"pass": True}}, "replace": {"verdict": judged}}
    assert two_clients_phase.variants_reason(variants) == \
        "failed: replace (c2/w1: OSError: Text file busy); not run: unlocked"


def test_a_client_without_a_report_is_named_with_its_reason():
    run = {"clients": [{"exit_code": None, "reason": "killed: still running 384 s"}]}
    from rules import nfs_vm_faults

    assert nfs_vm_faults.failed_tasks(run) == ["c1: killed: still running 384 s"]
