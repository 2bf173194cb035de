"""The committed evidence/nfs and evidence/nfs-systemd records with a phase's facts forged (outside reviewer r4,
#10, #12, #18, #19, #21): the forger also makes nfs-vm-run.json's checks again with the project's own
rules.nfs_vm_run.run_checks (r4's repro/nfs_vm_run_rederive.py), so a check's detail text is no defence; what
refuses the edit is the record's rule. Each forgery reads its figures from the committed bytes; re-indexed and
verified, the copy is refused (exit 3) or fails (exit 1) naming the field, and the untouched copy passes."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, edit_json, rebuild_and_verify

sys.path.insert(0, str(SCRIPTS))
import rules.nfs_vm_run as vm_run_judge  # noqa: E402
from rules import nfs_vm_faults  # noqa: E402
from rules.registry import judge  # noqa: E402


def _loader(folder: Path):
    def load(path: str) -> dict | None:
        name = vm_run_judge.EVIDENCE_NAMES.get(path)
        file = folder / name if name else None
        return json.loads(file.read_text()) if file is not None and file.exists() else None
    return load


def rederive(folder: Path) -> None:
    """What a forger re-hashing every place does: nfs-vm-run.json's checks made again by run_checks (the vm
    and evidence_index checks kept, as the recorded run has them), and its ok made theirs."""
    path = folder / "nfs-vm-run.json"
    run = json.loads(path.read_text())
    old = {c["name"]: c for c in run["checks"]}
    made = [old["vm"] if c["name"] == "vm" else c for c in vm_run_judge.run_checks(_loader(folder), {}, run["phases"])]
    run["checks"] = [*made, old[vm_run_judge.INDEX_CHECK]]
    run["ok"] = all(c["ok"] for c in run["checks"])
    path.write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")


def forged_copy(tmp_path: Path, folder: str, name: str, change) -> Path:
    copy = tmp_path / folder
    shutil.copytree(EVIDENCE / folder, copy)
    (copy / "evidence-index.json").unlink()
    edit_json(copy / name, change)
    rederive(copy)
    return copy


def judged(copy: Path) -> list[str]:
    """Everything the index's judges say of the copy, in process: the VM run made again from its records, and
    each record alone."""
    run = json.loads((copy / "nfs-vm-run.json").read_text())
    reasons, forged = vm_run_judge.judge_vm_run(run, _loader(copy))
    for path in sorted(copy.glob("*.json")):
        document = json.loads(path.read_text())
        if (path.name != "nfs-vm-run.json" and str(document.get("schema", "")).startswith("kernodeck.nfsvm")) or \
                path.name.endswith("nfs-harness.json"):
            alone = judge(document)
            reasons = reasons + [r for r in alone.reasons if not r.startswith("not authentic: ")]
            forged = forged + alone.forged
    return reasons + forged


def verified(copy: Path) -> tuple[int, list[str]]:
    made_at = json.loads((copy / "nfs-vm-run.json").read_text())["git"]["head"]  # the VM has no git: its host's
    code, report = rebuild_and_verify(copy, made_at=made_at)
    return code, report["problems"] + report["verdict"]["reasons"]


def committed(folder: str, name: str) -> dict:
    return json.loads((EVIDENCE / folder / name).read_text())


# --- #12: nfs-systemd install.json -------------------------------------------------------------------------

def _units_failed(d: dict) -> None:
    for unit in ("rpcbind.service", "rpcbind.socket", "rpc-statd.service", "nfs-idmapd.service", "nfsdcld.service",
                 "proc-fs-nfsd.mount"):
        d["units"][unit] = "failed"


INSTALL_FORGERIES = [
    (_units_failed, "rpcbind.service is 'failed' after the postinst, not active"),
    (lambda d: d.update(rpc_mountd_pids=0), "rpc_mountd_pids is 0: the package's nfs-mountd runs no rpc.mountd"),
    (lambda d: d.update(rpc_mountd_pids=-2), "rpc_mountd_pids is -2"),
    (lambda d: d.update(rpc_mountd_pids=True), "rpc_mountd_pids is True"),
    (lambda d: d.update(ok=False), "ok is recorded False, its facts say True"),
    (lambda d: d.pop("problems"), "problems is None, not a list of reasons"),
    (lambda d: d.update(problems=["dpkg -i exited 1"]), "problems is recorded ['dpkg -i exited 1'], its facts say []"),
    (lambda d: d.update(dpkg_killed="x"), "dpkg_killed is 'x' beside dpkg -i's exit 0"),
    (lambda d: d.update(dpkg_exit_code=False), "dpkg -i exited False"),
    (lambda d: d.update(debs=[x for x in d["debs"] if not x.startswith("nfs-kernel-server_")]),
     "debs holds no nfs-kernel-server .deb of the installed version"),
    (lambda d: d.update(debs=d["debs"][1:]), "debs are not the .debs the image carries"),
    (lambda d: d.update(pid1="init"), "pid1 is 'init'"),
]


@pytest.mark.parametrize("change, words", INSTALL_FORGERIES,
                         ids=["units-failed", "no-mountd", "mountd-negative", "mountd-bool", "ok-false",
                              "problems-deleted", "problems-invented", "dpkg-killed", "dpkg-exit-bool",
                              "nfs-kernel-server-deb-gone", "a-deb-gone", "pid1"])
def test_an_install_record_whose_facts_are_not_a_runners_is_refused(tmp_path, change, words):
    found = judged(forged_copy(tmp_path, "nfs-systemd", "install.json", change))
    assert any(words in why for why in found), found


def test_an_install_record_with_failed_units_and_no_mountd_does_not_verify(tmp_path):
    def change(d: dict) -> None:
        _units_failed(d)
        d.update(rpc_mountd_pids=0, ok=False)
    code, found = verified(forged_copy(tmp_path, "nfs-systemd", "install.json", change))
    assert code in (1, 3) and any("nfsdcld.service is 'failed'" in why for why in found), found


# --- #18: the harness record's unmount, busy-unmount's reasons ----------------------------------------------

def test_an_unmount_without_a_umount_after_a_setup_that_mounted_is_refused(tmp_path):
    assert committed("nfs", "nfs-harness.json")["setup"]["mount"]["fstype"] in ("nfs", "nfs4")
    copy = forged_copy(tmp_path, "nfs", "nfs-harness.json", lambda d: d["unmount"].update(umount_exit_codes=[]))
    code, found = verified(copy)
    assert code == 3 and any("unmount.unmounted is recorded True, its facts say False" in why for why in found), found


@pytest.mark.parametrize("problems", [[""], [" "], [7], []], ids=["empty", "blank", "not-a-string", "none"])
def test_a_busy_teardown_that_names_no_reason_is_refused(tmp_path, problems):
    copy = forged_copy(tmp_path, "nfs", "busy-unmount.json", lambda d: d["busy"].update(problems=problems))
    assert any("the refusal names no reason" in why for why in judged(copy))


def test_a_busy_teardown_with_an_empty_reason_does_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs", "busy-unmount.json",
                                       lambda d: d["busy"].update(problems=[""])))
    assert code in (1, 3) and any("busy.problems is ['']" in why for why in found), found


# --- #19: exit codes and counts written as booleans --------------------------------------------------------

def _two_clients_bools(d: dict) -> None:
    for key in ("missing", "duplicated", "corrupt_lines", "unexpected"):
        assert d["variants"]["locked"]["verdict"][key] == 0
        d["variants"]["locked"]["verdict"][key] = False


BOOL_FORGERIES = [
    ("busy-unmount.json", lambda d: d["busy"].update(exit_code=True), "busy.exit_code is True"),
    ("busy-unmount.json", lambda d: d["free"].update(exit_code=False), "free.exit_code is False"),
    ("server-restart.json", lambda d: d["teardown"].update(exit_code=False), "teardown.exit_code is False"),
    ("server-restart.json", lambda d: d["gate"].update(exit_code=False), "gate.exit_code is False"),
    ("two-clients.json", _two_clients_bools, "variants.locked.verdict.missing is False, not a count"),
    ("two-clients.json", lambda d: d["variants"]["replace"]["verdict"].update(partial_reads=False),
     "variants.replace.verdict.partial_reads is recorded False, its clients' reports say 0"),
    ("two-clients.json", lambda d: d["teardown"].update(exit_code=False), "teardown.exit_code is False"),
    ("two-clients.json", lambda d: d["variants"]["locked"]["clients"][0].update(exit_code=False),
     "variants.locked.verdict.writers_exited_0 is recorded True, its clients' reports say False"),
    ("action-steps.json", lambda d: d["steps"]["setup"].update(exit_code=False), "steps.setup.exit_code is False"),
    ("action-steps.json", lambda d: d["steps"]["gate"].update(exit_code=False), "steps.gate.exit_code is False"),
    ("action-steps.json", lambda d: d["steps"]["teardown"].update(exit_code=False),
     "steps.teardown.exit_code is False"),
    ("nfs-vm-run.json", lambda d: d["vm"].update(qemu_exit_code=False), "qemu exited False"),
    ("nfs-vm-run.json", lambda d: d["evidence_index"].update(exit_code=False),
     "evidence_index.exit_code is False"),
]


@pytest.mark.parametrize("name, change, words", BOOL_FORGERIES,
                         ids=["busy-exit-true", "free-exit-false", "restart-teardown-false", "restart-gate-false",
                              "locked-counts-false", "replace-partial-false", "two-clients-teardown-false",
                              "client-exit-false", "setup-step-false", "gate-step-false", "teardown-step-false",
                              "qemu-exit-false", "index-exit-false"])
def test_an_exit_code_or_count_written_as_a_boolean_is_refused(tmp_path, name, change, words):
    found = judged(forged_copy(tmp_path, "nfs", name, change))
    assert any(words in why for why in found), found


def test_booleans_for_exit_codes_do_not_verify(tmp_path):
    def change(d: dict) -> None:
        d["busy"]["exit_code"], d["free"]["exit_code"] = True, False
    code, found = verified(forged_copy(tmp_path, "nfs", "busy-unmount.json", change))
    assert code in (1, 3) and any("busy.exit_code is True" in why for why in found), found


def test_the_install_record_with_boolean_codes_is_refused(tmp_path):
    found = judged(forged_copy(tmp_path, "nfs-systemd", "install.json",
                               lambda d: d.update(dpkg_exit_code=False, rpc_mountd_pids=True)))
    assert any("dpkg -i exited False" in why for why in found), found


def test_is_int_takes_no_boolean():
    assert nfs_vm_faults.is_int(0, 0) and nfs_vm_faults.is_int(3, 1, 3) and nfs_vm_faults.is_int(-9)
    assert not nfs_vm_faults.is_int(False, 0) and not nfs_vm_faults.is_int(True, 1) and not nfs_vm_faults.is_int(0.0, 0)


# --- #21: two-clients' counts are the phase's; a verdict's flags are required -------------------------------

def _one_writer_of_fifty(d: dict) -> None:
    run = d["variants"]["locked"]
    assert (run["writers_per_client"], run["count_per_writer"]) == (2, 100)
    run.update(writers_per_client=1, count_per_writer=50)


def _replace_saw_nothing(d: dict) -> None:
    """The readers' own results edited too, so their sums (tasks_facts) agree with the verdict."""
    run = d["variants"]["replace"]
    for client in run["clients"]:
        for task in client["tasks"]:
            if task["role"] == "reader":
                task["result"].update(reads=0, versions=[], missing_reads=0)
    next(t for c in run["clients"] for t in c["tasks"] if t["role"] == "reader")["result"]["missing_reads"] = 5
    run["verdict"].update(reads=0, distinct_versions_seen=0, missing_reads=5, writers_seen=[])


# The committed run's own count (a re-recording changes it: the unlocked appends lose what they lose).
UNLOCKED_VALID = json.loads((EVIDENCE / "nfs" / "two-clients.json").read_text())["variants"]["unlocked"][
    "verdict"]["valid_records"]


def _unlocked_counts(d: dict) -> None:
    verdict = d["variants"]["unlocked"]["verdict"]
    assert verdict["expected_records"] == 1200
    verdict.update(expected_records=1201, bytes_expected=0, duplicated=1, corrupt_lines=1)


TWO_CLIENTS_FORGERIES = [
    (_one_writer_of_fifty, "variants.locked.writers_per_client is 1, the phase runs 2"),
    (_one_writer_of_fifty, "variants.locked.count_per_writer is 50, the phase runs 100"),
    (_replace_saw_nothing, "variants.replace.verdict has 0 reads and 0 versions seen"),
    (_unlocked_counts, "variants.unlocked.verdict.expected_records is 1201, 4 writers of 300 records make 1200"),
    (_unlocked_counts, "variants.unlocked.verdict.bytes_expected is 0, the records written make 341560"),
    (_unlocked_counts, f"variants.unlocked.verdict.valid_records is {UNLOCKED_VALID}"),
    (lambda d: [d["variants"]["locked"]["verdict"].pop(k) for k in ("pass", "ok")],
     "variants.locked.verdict.pass is recorded None, its counts say True"),
    (lambda d: d["variants"]["replace"]["verdict"].update(writers_seen=[7]), "writers_seen is [7]: writers are 0-1"),
    (lambda d: d["variants"]["replace"]["verdict"].update(final_version=[7, 29]), "final_version is [7, 29]"),
    (lambda d: d["variants"]["locked"].update(variant="unlocked.jsonl"),
     "variants.locked.variant is 'unlocked.jsonl', the phase runs 'locked.jsonl'"),
]


@pytest.mark.parametrize("change, words", TWO_CLIENTS_FORGERIES,
                         ids=["writers-per-client", "count-per-writer", "replace-read-nothing", "expected-records",
                              "bytes-expected", "valid-records", "locked-pass-deleted", "writers-seen",
                              "final-version", "variant-file"])
def test_a_two_clients_verdict_its_phase_could_not_give_is_refused(tmp_path, change, words):
    found = judged(forged_copy(tmp_path, "nfs", "two-clients.json", change))
    assert any(words in why for why in found), found


def test_a_replace_run_that_read_nothing_does_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs", "two-clients.json", _replace_saw_nothing))
    assert code in (1, 3) and any("0 reads and 0 versions seen" in why for why in found), found


def test_the_phase_runs_the_variants_the_judge_holds_it_to():
    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import two_clients_phase

    assert two_clients_phase.variants_table() is nfs_vm_faults.TWO_CLIENTS_VARIANTS
    assert nfs_vm_faults.VARIANTS == tuple(kind for *_, kind in nfs_vm_faults.TWO_CLIENTS_VARIANTS)


# --- #10: the restart's gate timeout and its instant ---------------------------------------------------------

@pytest.mark.parametrize("change, words", [
    (lambda d: d["gate"].update(gate_timeout=630.1),
     "gate.gate_timeout is 630.1, the gate result ran with --timeout 420.0"),
    (lambda d: d["restart"].update(seconds_after_gate_start=0.0),
     "restart.seconds_after_gate_start is 0.0, before the 8.0 s the phase waits"),
], ids=["gate-timeout", "restart-at-the-first-instant"])
def test_a_restart_outside_the_phases_own_timing_is_refused(tmp_path, change, words):
    recorded = committed("nfs", "server-restart-gate.json")["arguments"]["timeout_s"]
    assert committed("nfs", "server-restart.json")["gate"]["gate_timeout"] == recorded == 420.0
    code, found = verified(forged_copy(tmp_path, "nfs", "server-restart.json", change))
    assert code in (1, 3) and any(words in why for why in found), found


# --- the untouched copies ------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
def test_the_untouched_copies_rederived_still_verify(tmp_path, folder):
    copy = forged_copy(tmp_path, folder, "nfs-vm-run.json", lambda d: None)
    assert judged(copy) == []
    code, found = verified(copy)
    assert code == 0, found


def test_a_restart_gate_timed_shorter_than_the_gate_ran_is_refused(tmp_path):
    duration = committed("nfs", "server-restart-gate.json")["duration_s"]
    found = judged(forged_copy(tmp_path, "nfs", "server-restart.json",
                               lambda d: d["gate"].update(elapsed_seconds=round(duration - 10, 1))))
    assert any(f"gate.elapsed_seconds is {round(duration - 10, 1)}, less than the {duration} s" in why
               for why in found), found


@pytest.mark.parametrize("edit, words", [
    (("server-gone.json", "verdict", {"gate_timeout": 630.0}), "verdict.gate_timeout is 630.0, the gate result ran "
                                                               "with --timeout 90.0"),
    (("server-gone.json", "verdict", {"gate_seconds": 50.0}), "verdict.gate_seconds is 50.0, less than the"),
], ids=["gone-gate-timeout", "gone-gate-shorter-than-it-ran"])
def test_a_server_gone_gate_timed_otherwise_than_its_result_is_refused(tmp_path, edit, words):
    from tests.evidence_index.test_records_forgery import _gone, _gone_check, _gone_out

    name, key, facts = edit
    check = _gone_check(_gone_out(tmp_path, _gone(name, key, **facts)))
    assert check["ok"] is False and words in check["detail"], check


def test_an_install_whose_dpkg_was_silent_longer_than_it_ran_is_refused(tmp_path):
    seconds = committed("nfs-systemd", "install.json")["seconds"]
    found = judged(forged_copy(tmp_path, "nfs-systemd", "install.json",
                               lambda d: d.update(dpkg_longest_silence_seconds=seconds + 60)))
    assert any("dpkg_longest_silence_seconds is" in why and "dpkg -i was not timed" in why for why in found), found


def test_a_replace_reader_that_saw_the_initial_document_is_a_real_run():
    """The phase writes replace.json as writer -1's version 0 before the writers start; a reader that opens it
    first sees that version (the VM run of 5737e2b did: writers_seen [-1, 0, 1]), which is no forgery."""
    document = json.loads((EVIDENCE / "nfs" / "two-clients.json").read_text())
    run = document["variants"]["replace"]
    reader = next(t for t in run["clients"][0]["tasks"] if t["role"] == "reader")
    reader["result"]["versions"].insert(0, [-1, 0])
    run["verdict"].update(distinct_versions_seen=run["verdict"]["distinct_versions_seen"] + 1,
                          writers_seen=[-1, *run["verdict"]["writers_seen"]])
    assert nfs_vm_faults.judge_two_clients(document) == ([], [])
    run["verdict"]["writers_seen"] = [-2, 0, 1]
    assert any("writers_seen is [-2, 0, 1]" in why for why in nfs_vm_faults.judge_two_clients(document)[0])
