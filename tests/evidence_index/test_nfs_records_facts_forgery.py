"""The committed evidence/nfs and evidence/nfs-systemd folders with one record's facts forged while the verdicts
beside them are left as they were (outside reviewer r4, #1 and #6-#10): re-indexed over the edit, the VM run's
checks made again from the records refuse it, naming the field. Each forgery reads its figures from the
committed bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json, rebuild_and_verify


def reindexed_copy(tmp_path: Path, folder: str, name: str, change) -> tuple[int, dict]:
    copy = tmp_path / folder
    shutil.copytree(EVIDENCE / folder, copy)
    edit_json(copy / name, change)
    (copy / "evidence-index.json").unlink()
    made_at = json.loads((copy / "nfs-vm-run.json").read_text())["git"]["head"]  # the VM has no git: its host's
    return rebuild_and_verify(copy, made_at=made_at)


def _writer_failed(document: dict) -> None:
    """r4's #1: a writer that failed (exit 1, no result), the verdict's writers_exited_0 and failed_tasks kept."""
    task = document["variants"]["locked"]["clients"][0]["tasks"][0]
    task.update(exit_code=1, reason="OSError: [Errno 5] Input/output error", result=None)


def _one_host(document: dict) -> None:
    """r4's #1: both clients one host, and the server's list of clients cut to the first."""
    run = document["variants"]["locked"]
    run["clients"][1]["hostname"] = run["clients"][0]["hostname"]
    run["nfsd_clients_during_run"] = run["nfsd_clients_during_run"][:1]


def _reader_sums(document: dict) -> None:
    reader = next(t for t in document["variants"]["replace"]["clients"][0]["tasks"] if t["role"] == "reader")
    reader["result"]["partial_reads"] = 7


def _appended_fewer(document: dict) -> None:
    document["variants"]["locked"]["clients"][1]["tasks"][0]["result"]["appended"] -= 1


@pytest.mark.parametrize("change, words", [
    (_writer_failed, "variants.locked.verdict.writers_exited_0 is recorded True, its clients' reports say False"),
    (_one_host, "two clients are two hosts"),
    (_reader_sums, "variants.replace.verdict.partial_reads is recorded 0, its clients' reports say 7"),
    (_appended_fewer, "reports 99 records of count_per_writer 100"),
], ids=["writer-failed", "one-host", "reader-sums", "appended-fewer"])
def test_a_two_clients_record_whose_clients_contradict_its_verdict_is_refused(tmp_path, change, words):
    assert_refused(*reindexed_copy(tmp_path, "nfs", "two-clients.json", change),
                   "checks.two_clients.ok is recorded True, its records say False", words)


def _steps_failed(document: dict) -> None:
    for step in document["steps"].values():
        step["exit_code"] = 1


def _over_its_limit(document: dict) -> None:
    document["steps"]["gate"]["limit_seconds"] = 0.0


@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
@pytest.mark.parametrize("change, words", [
    (_steps_failed, "steps.result_dir.exit_code is 1, the step exits 0"),
    (_over_its_limit, "of its limit_seconds 0.0"),
    (lambda d: d.pop("steps"), "steps.result_dir.exit_code is None"),
], ids=["steps-exited-1", "gate-step-over-its-limit", "steps-deleted"])
def test_the_actions_steps_that_contradict_its_records_are_refused(tmp_path, folder, change, words):
    assert_refused(*reindexed_copy(tmp_path, folder, "action-steps.json", change),
                   "checks.harness.ok is recorded True, its records say False", words)


@pytest.mark.parametrize("name, change, words", [
    ("nfs-harness.json", lambda d: [d["setup"].pop(k) for k in ("mount", "nfsd_versions")],
     "setup.mount.fstype is None (the NFS harness's record)"),
    ("nfs-harness.json", lambda d: d["setup"].update(grace_seconds=-11), "setup.grace_seconds is -11"),
    ("nfs-harness-setup.json", lambda d: d.update(ok=False), "setup.ok is False"),
    ("nfs-harness-setup.json", lambda d: d.update(nfsd_versions="-3 +4 -4.1 -4.2"),
     "nfs-harness-setup.json is not the harness record"),
], ids=["record-setup-mount-deleted", "record-setup-grace-negative", "setup-file-failed", "setup-file-differs"])
def test_a_harness_setup_without_its_facts_or_disagreeing_with_its_record_is_refused(tmp_path, name, change, words):
    code, report = reindexed_copy(tmp_path, "nfs", name, change)
    assert code in (1, 3) and any(words in p for p in report["problems"] + report["verdict"]["reasons"]), report


def test_a_vm_run_whose_index_record_was_deleted_is_refused(tmp_path):
    assert_refused(*reindexed_copy(tmp_path, "nfs", "nfs-vm-run.json", lambda d: d.pop("evidence_index")),
                   "checks.evidence_index is recorded without the run's evidence_index record")


def test_a_vm_run_dirty_beside_an_empty_diff_is_refused(tmp_path):
    assert_refused(*reindexed_copy(tmp_path, "nfs", "nfs-vm-run.json", lambda d: d["git"].update(dirty=True)),
                   "source.git.dirty is True, but diff_sha256 is e3b0c44298fc")


@pytest.mark.parametrize("change, words", [
    (lambda d: d["restart"].update(restarted_at_uptime=99999.0), "longer than the gate ran after the stop"),
    (lambda d: d["restart"].update(stopped_at_uptime=-352.1), "(uptime): no restart recorded"),
    (lambda d: d["teardown"].update(seconds=-6.39), "teardown.seconds is -6.39: a duration or uptime is never"),
], ids=["down-a-day", "stopped-before-boot", "teardown-negative"])
def test_a_server_restart_whose_clocks_cannot_be_is_refused(tmp_path, change, words):
    assert_refused(*reindexed_copy(tmp_path, "nfs", "server-restart.json", change),
                   "checks.server_restart.ok is recorded True, its records say False", words)


def test_the_servers_one_sample_of_its_clients_is_not_held_to_both_hosts():
    """nfsd_clients_during_run is read once, 6 s into a variant: a real run whose second client had not yet
    registered (or had unmounted) then is no forgery, and is judged by the clients' own reports."""
    import sys

    from tests.conftest import SCRIPTS

    sys.path.insert(0, str(SCRIPTS))
    from rules.nfs_vm_faults import judge_two_clients

    document = json.loads((EVIDENCE / "nfs" / "two-clients.json").read_text())
    document["variants"]["locked"]["nfsd_clients_during_run"] = document["variants"]["locked"][
        "nfsd_clients_during_run"][:1]
    assert judge_two_clients(document) == ([], [])
