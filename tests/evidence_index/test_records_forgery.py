"""The remaining false passes of issue 18: an online index edited into an "offline" one that still binds job
logs; a diagnostic whose status outlives its measurements; the NFS VM's two-clients record whose verdicts
outlive their counts. Each is refused (not authentic) naming the field; the untouched ones pass."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from common.workflow import plan_log_line
from rules.nfs_vm_faults import judge_two_clients
from rules.registry import judge

from tests.conftest import ROOT
from tests.evidence_index.fake_github import plan_log, runner_log
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_evidence_index_forgery import CLI, build_run, real_result  # noqa: F401 - fixture

EVIDENCE = ROOT / "evidence"


# --- an offline index that still binds the plan job's log --------------------------------------------------

def _verify_allowing_offline(run) -> subprocess.CompletedProcess:
    return index_cli("verify", str(run.index_path), "--artifacts",
                           str(run.folder / "artifacts"), "--logs", str(run.folder / "logs"), "--allow-offline")


def test_an_online_index_edited_into_an_offline_one_is_not_authentic(tmp_path, real_result):  # noqa: F811
    run = build_run(tmp_path / "plan", "linux", {"platform-runtime-linux.json": real_result}, runner_log("linux"),
                    plan=plan_log((plan_log_line(("linux",)),)), platforms="linux")
    assert _verify_allowing_offline(run).returncode == 0  # the control
    index = run.index
    index["subject"] = [s for s in index["subject"] if not s["name"].startswith("logs/api/")]
    predicate = index["predicate"]
    predicate["run"]["offline"] = True
    predicate["plan"] = None
    predicate["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True, "reasons": []}}}
    run.save(index)
    verified = _verify_allowing_offline(run)
    assert verified.returncode == 3, verified.stdout
    assert "built --offline, which reads no job log, yet it binds" in verified.stdout
    assert "-plan.log" in verified.stdout


# --- the diagnostic ----------------------------------------------------------------------------------------

DIAGNOSTIC = EVIDENCE / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"
GPU_DIAGNOSTIC = EVIDENCE / "cuda" / "run" / "kernodeck-diagnostic-gpu.json"


@pytest.mark.parametrize("path", [DIAGNOSTIC, GPU_DIAGNOSTIC], ids=["cpu", "gpu"])
def test_a_real_diagnostic_passes_by_its_measurements(path):
    judgement = judge(json.loads(path.read_text()))
    assert (judgement.ok, judgement.forged, judgement.reasons) == (True, [], [])


@pytest.mark.parametrize("change, words", [
    (lambda d: d["execution"].update(loss=195.0), "execution.checks.loss is recorded True, execution.loss 195.0"),
    (lambda d: d["execution"]["checks"].update(gradient=False), "status is recorded 'passed', its measurements"),
    (lambda d: d["execution"].update(device="cuda:0"), "code is 'CPU_CHECK_PASSED' but execution.device is"),
    (lambda d: d["execution"].update(checks={"product": True}), "the product, gradient and loss were not all"),
])
def test_a_diagnostic_whose_status_outlives_its_measurements_is_not_authentic(change, words):
    document = copy.deepcopy(json.loads(DIAGNOSTIC.read_text()))
    change(document)
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged
    assert any(words in reason for reason in judgement.reasons), judgement.reasons


# --- the VM's two-clients record --------------------------------------------------------------------------

TWO_CLIENTS = EVIDENCE / "nfs" / "two-clients.json"


def test_the_recorded_two_clients_run_passes_by_its_counts():
    assert judge_two_clients(json.loads(TWO_CLIENTS.read_text())) == ([], [])


@pytest.mark.parametrize("change, words", [
    (lambda d: d["variants"]["locked"]["verdict"].update(missing=7), "variants.locked.verdict.pass is recorded True"),
    (lambda d: d["variants"]["unlocked"]["verdict"].update(missing=0, lines=1200, valid_records=1200,
                                                          bytes_found=341560),
     "variants.unlocked.verdict.pass is recorded True, its counts say False"),
    (lambda d: d["variants"]["replace"]["verdict"].update(partial_reads=3),
     "variants.replace.verdict.pass is recorded True, its counts say False"),
    (lambda d: d["teardown"].update(exit_code=1), "ok is recorded True, its variants say False"),
])
def test_a_two_clients_record_whose_verdict_outlives_its_counts_is_refused(change, words):
    document = json.loads(TWO_CLIENTS.read_text())
    change(document)
    reasons, forged = judge_two_clients(document)
    assert reasons and any(words in line for line in forged), forged


def test_the_vm_verdict_takes_the_gate_and_the_harness_from_the_one_judge(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import run_checks

    gate = json.loads((EVIDENCE / "nfs" / "platform-runtime-nfs.json").read_text())
    assert run_checks.gate_check(gate)[0] is True
    gate["checks"]["jsonl_append"]["missing"] = 7  # its ok left true
    ok, detail = run_checks.gate_check(gate)
    assert ok is False and "checks.jsonl_append.missing is 7" in detail
    harness = json.loads((EVIDENCE / "nfs" / "nfs-harness.json").read_text())
    setup = json.loads((EVIDENCE / "nfs" / "nfs-harness-setup.json").read_text())
    steps = json.loads((EVIDENCE / "nfs" / "action-steps.json").read_text())
    assert run_checks.harness_check(harness, setup, gate, steps)[0] is True
    harness["export_side_delete"]["workspace"] = "platform-runtime-000000000000"
    ok, detail = run_checks.harness_check(harness, setup, gate, steps)
    assert ok is False and "the gate's workspace_cleanup.workspace" in detail


# --- the VM's fault phases: a server restart during the gate, a teardown refused while the share is busy ------

def _vm_out(folder, edit=lambda files: None):
    """A VM run's output folder laid out as the phases write it, from the committed NFS evidence's files."""
    files = {("server_restart", "server-restart.json"): "server-restart.json",
             ("server_restart", "platform-runtime-nfs.json"): "server-restart-gate.json",
             ("server_restart", "nfs-harness.json"): "server-restart-nfs-harness.json",
             ("busy_unmount", "busy-unmount.json"): "busy-unmount.json"}
    documents = {where: json.loads((EVIDENCE / "nfs" / name).read_text()) for where, name in files.items()}
    edit(documents)
    for (phase, name), document in documents.items():
        if document is not None:
            (folder / phase).mkdir(exist_ok=True)
            (folder / phase / name).write_text(json.dumps(document))
    return folder


def _vm_checks(folder) -> dict:
    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import run_checks

    return {c["name"]: c for c in run_checks.judge(folder, {"qemu_exit_code": 0}, ["server_restart", "busy_unmount"])}


def _in(phase: str, name: str, *path: str, **facts):
    def edit(documents):
        holder = documents[(phase, name)]
        for key in path:
            holder = holder[key]
        holder.update(facts)
    return edit


def test_the_recorded_fault_phases_pass_by_their_facts(tmp_path):
    checks = _vm_checks(_vm_out(tmp_path))
    assert checks["server_restart"]["ok"] is True, checks["server_restart"]
    assert checks["busy_unmount"]["ok"] is True, checks["busy_unmount"]


RESTART, BUSY = "server-restart.json", "busy-unmount.json"
FAULT_FORGERIES = {
    "restart-gate-result-forged": (_in("server_restart", "platform-runtime-nfs.json", "checks", "jsonl_append",
                                       missing=7), "server_restart",
                                   "the gate result: checks.jsonl_append.ok is recorded True"),
    "restart-gate-result-missing": (lambda d: d.update({("server_restart", "platform-runtime-nfs.json"): None}),
                                    "server_restart", "no gate result beside the record"),
    "restart-gate-hung": (_in("server_restart", RESTART, "gate", exit_code=None), "server_restart",
                          "gate.hung is recorded False, the gate result and its exit say True"),
    "restart-gate-past-deadline": (_in("server_restart", RESTART, "gate", elapsed_seconds=900.0), "server_restart",
                                   "gate.within_deadline is recorded True"),
    "restart-gate-exit-not-the-result-s": (_in("server_restart", RESTART, "gate", exit_code=1), "server_restart",
                                           "gate.exit_code is 1, the gate result records 0"),
    "restart-after-the-gate": (_in("server_restart", RESTART, "restart", seconds_after_gate_start=10_000.0),
                               "server_restart", "restart.seconds_after_gate_start is 10000.0"),  # after any gate
    "restart-before-the-workspace": (_in("server_restart", RESTART, "restart", workspace_seen=False),
                                     "server_restart", "restart.workspace_seen is not True"),
    "restart-teardown-failed": (_in("server_restart", RESTART, "teardown", exit_code=1), "server_restart",
                                "teardown.exit_code is 1"),
    "restart-harness-other-workspace": (_in("server_restart", "nfs-harness.json", "export_side_delete",
                                            workspace="platform-runtime-000000000000"), "server_restart",
                                        "the harness record: export_side_delete.workspace is"),
    "busy-unmounted": (_in("busy_unmount", BUSY, "busy", unmounted=True), "busy_unmount", "busy.unmounted is True"),
    "busy-exit-0": (_in("busy_unmount", BUSY, "busy", exit_code=0), "busy_unmount", "busy.exit_code is 0"),
    "busy-deleted-anyway": (_in("busy_unmount", BUSY, "busy", export_side_delete={"deleted": True}), "busy_unmount",
                            "busy.export_side_delete is {'deleted': True}"),
    "busy-unnamed": (_in("busy_unmount", BUSY, "busy", problems=[]), "busy_unmount", "busy.problems is []"),
    "busy-export-touched": (_in("busy_unmount", BUSY, "busy", export_kept=False), "busy_unmount",
                            "busy.export_kept is False"),
    "free-workspace-left": (_in("busy_unmount", BUSY, "free", workspace_absent=False), "busy_unmount",
                            "free.workspace_absent is False"),
}


@pytest.mark.parametrize("name", sorted(FAULT_FORGERIES))
def test_a_fault_phase_whose_ok_outlives_its_facts_is_refused(tmp_path, name):
    from rules.nfs_vm_faults import judge_busy_unmount, judge_server_restart

    edit, phase, words = FAULT_FORGERIES[name]
    folder = _vm_out(tmp_path, edit)
    report = json.loads((folder / phase / (RESTART if phase == "server_restart" else BUSY)).read_text())
    assert report["ok"] is True  # the phase's own flag left as the real run recorded it
    assert _vm_checks(folder)[phase]["ok"] is False
    if phase == "server_restart":
        gate, harness = (folder / phase / "platform-runtime-nfs.json"), folder / phase / "nfs-harness.json"
        reasons, forged = judge_server_restart(report, json.loads(gate.read_text()) if gate.exists() else None,
                                               json.loads(harness.read_text()))
    else:
        reasons, forged = judge_busy_unmount(report)
    assert any(words in line for line in reasons + forged), (reasons, forged)
    assert forged, reasons  # an ok (or a verdict) the facts contradict is not authentic


# --- the VM's busy_rename phase: the gate's replace check, ten rounds on one NFS client -------------------------

# A real record of the phase (a VM run of tools/nfsvm's busy_rename, 10 rounds on NFS 4.2), kept as a fixture:
# no committed evidence folder holds one yet.
BUSY_RENAME = ROOT / "tests" / "nfs" / "recorded" / "busy-rename.json"


def _busy_rename_ok(document: dict) -> tuple[bool, str]:
    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import run_checks

    return run_checks.busy_rename_check(document)


def test_the_recorded_busy_rename_rounds_pass_by_the_gate_s_rule():
    from rules.nfs_vm_faults import judge_busy_rename

    document = json.loads(BUSY_RENAME.read_text())
    assert judge_busy_rename(document) == ([], [])
    assert _busy_rename_ok(document)[0] is True


def _round(index: int, **facts):
    return lambda d: d["rounds"][index]["result"].update(facts)


@pytest.mark.parametrize("change, words", [
    (_round(3, partial_reads=2), "rounds[3].result.ok is recorded True, the gate's concurrent_replace rule says False"),
    (_round(0, distinct_versions_seen=0), "checks.concurrent_replace.distinct_versions_seen is 0"),
    (_round(7, temp_files_left=1), "checks.concurrent_replace.temp_files_left is 1"),
    (lambda d: d["rounds"][5].update(exit_code=1), "verdict.passed is recorded 10, its rounds say 9"),
    (lambda d: d["rounds"][5].update(result=None), "verdict.passed is recorded 10, its rounds say 9"),
    (lambda d: d["verdict"].update(met_etxtbsy=True), "verdict.met_etxtbsy is recorded True, its rounds say False"),
    (lambda d: d.update(rounds=[]), "rounds is []: no round ran"),
])
def test_a_busy_rename_record_whose_ok_outlives_its_rounds_is_refused(change, words):
    from rules.nfs_vm_faults import judge_busy_rename

    document = json.loads(BUSY_RENAME.read_text())
    change(document)
    assert document["ok"] is True and document["verdict"]["pass"] is True  # the flags left as recorded
    reasons, forged = judge_busy_rename(document)
    assert any(words in line for line in reasons + forged), (reasons, forged)
    assert _busy_rename_ok(document)[0] is False


# --- the VM's server_gone phase: the NFS server stops for good under a running gate ---------------------------

# A real run of the phase (its record, the gate result and the teardown's harness record it copied out),
# kept as a fixture: no committed evidence folder holds one yet.
SERVER_GONE = ROOT / "tests" / "nfs" / "recorded" / "server-gone"


def _gone_out(folder, edit=lambda files: None):
    files = {name: json.loads((SERVER_GONE / name).read_text()) for name in
             ("server-gone.json", "platform-runtime-nfs.json", "nfs-harness.json")}
    edit(files)
    (folder / "server_gone").mkdir()
    for name, document in files.items():
        (folder / "server_gone" / name).write_text(json.dumps(document))
    return folder


def _gone_check(folder) -> dict:
    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import run_checks

    return {c["name"]: c for c in run_checks.judge(folder, {"qemu_exit_code": 0}, ["server_gone"])}["server_gone"]


def test_the_recorded_server_gone_run_passes_by_its_files(tmp_path):
    assert _gone_check(_gone_out(tmp_path))["ok"] is True


def _gone(name: str, *path: str, **facts):
    def edit(files):
        holder = files[name]
        for key in path:
            holder = holder[key]
        holder.update(facts)
    return edit


GONE_FORGERIES = {
    "gate-passed": (_gone("platform-runtime-nfs.json", ok=False, exit_code=0, failures=[]),
                    "verdict.failed_with_reasons is recorded True, the files beside it say False"),
    "gate-past-timeout": (_gone("server-gone.json", "verdict", gate_seconds=400.0),
                          "verdict.gate_within_timeout is recorded True, the files beside it say False"),
    "stuck-not-named": (_gone("server-gone.json", "verdict", stuck_after_gate=[{"pid": 77, "name": "python3",
                                                                                  "state": "D"}]),
                        "verdict.every_stuck_process_named is recorded True, the files beside it say False"),
    "teardown-passed": (_gone("nfs-harness.json", ok=True),
                        "verdict.teardown_failed_and_recorded is recorded True, the files beside it say False"),
    "export-deleted": (_gone("nfs-harness.json", export_side_delete={"workspace": "platform-runtime-f683bb1d9453"}),
                       "verdict.export_left_alone is recorded True, the files beside it say False"),
    "server-not-stopped": (_gone("server-gone.json", "stop", nfsd_threads_after="8"),
                           "stop.nfsd_threads_after is '8': the server did not stop"),
    "stop-after-the-gate": (_gone("server-gone.json", "stop", seconds_after_gate_start=120.0),
                            "stop.seconds_after_gate_start is 120.0"),
}


@pytest.mark.parametrize("name", sorted(GONE_FORGERIES))
def test_a_server_gone_record_whose_ok_outlives_its_files_is_refused(tmp_path, name):
    from rules.nfs_vm_faults import judge_server_gone

    edit, words = GONE_FORGERIES[name]
    folder = _gone_out(tmp_path, edit)
    report, gate, harness = (json.loads((folder / "server_gone" / n).read_text()) for n in
                             ("server-gone.json", "platform-runtime-nfs.json", "nfs-harness.json"))
    assert report["ok"] is True and report["verdict"]["pass"] is True  # the phase's flags left as recorded
    reasons, forged = judge_server_gone(report, gate, harness)
    assert any(words in line for line in reasons + forged), (reasons, forged)
    assert forged and _gone_check(folder)["ok"] is False


def test_a_teardown_that_detached_a_hung_mount_is_an_honest_failure_not_an_unmount():
    """The server_gone run's harness record: its umount hung, the mount was detached (umount -l) and is gone from
    mountinfo, and it records unmounted false. That is authentic (a failure); claiming an unmount is not."""
    record = json.loads((SERVER_GONE / "nfs-harness.json").read_text())
    judgement = judge(record, "nfs-harness")
    assert judgement.ok is False and judgement.forged == [], judgement.reasons
    record["unmount"]["unmounted"] = record["unmounted"] = True
    assert "unmount.unmounted is recorded True, its facts say False" in judge(record, "nfs-harness").forged
