"""The committed evidence/nfs folder, indexed whole (its committed evidence-index.json binds all 13 files), with one
fact of one record forged (the outside review's F9 and W5): verified against the committed index, the edited bytes
are not the bound ones; re-indexed over the edit (`build_evidence_index.py local`, the way tools/nfsvm/evidence.py
indexes the folder), nfs-vm-run.json's checks made again from the records refuse it, naming the field. The
untouched copy verifies with both."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json, rebuild_and_verify

NFS = EVIDENCE / "nfs"
VM_RUN = json.loads((NFS / "nfs-vm-run.json").read_text())
MADE_AT = VM_RUN["git"]["head"]  # the VM has no git: its host's commit
VM_DETAIL = VM_RUN["checks"][0]["detail"]  # the committed run's own words (a re-recording changes its seconds)


def committed_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "nfs"
    shutil.copytree(NFS, folder)
    return folder


def verify_committed_index(folder: Path) -> tuple[int, dict]:
    """`verify` of the committed index over the (edited) copy."""
    report = folder.parent / "committed-report.json"
    done = index_cli("verify", str(NFS / "evidence-index.json"), "--artifacts",
                           str(folder), "--json", str(report))
    return done.returncode, json.loads(report.read_text())


def reindexed(folder: Path) -> tuple[int, dict]:
    (folder / "evidence-index.json").unlink()
    return rebuild_and_verify(folder, made_at=MADE_AT)


def test_the_committed_index_binds_every_file_of_the_folder():
    index = json.loads((NFS / "evidence-index.json").read_text())
    files = {f"artifacts/{p.name}" for p in NFS.iterdir() if p.name != "evidence-index.json"}
    assert {s["name"] for s in index["subject"]} == files and len(files) == 13
    assert {r["name"]: r["kind"] for r in index["predicate"]["results"]}["nfs-vm-run.json"] == "nfsvm-run"


def test_the_untouched_copy_verifies_with_the_committed_index_and_reindexed(tmp_path):
    folder = committed_copy(tmp_path)
    code, report = verify_committed_index(folder)
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]
    code, report = reindexed(folder)
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


def _records_lost(document: dict) -> None:
    document["variants"]["locked"]["verdict"].update(missing=7, valid_records=393)


@pytest.mark.parametrize("name, change, words", [
    ("two-clients.json", _records_lost, "checks.two_clients.ok is recorded True, its records say False"),
    ("server-restart-gate.json", lambda d: d["checks"]["concurrent_replace"].update(partial_reads=7),
     "checks.server_restart.ok is recorded True, its records say False"),
    ("nfs-vm-run.json", lambda d: d["checks"][3].update(ok=False),
     "checks.two_clients.ok is recorded False, its records say True"),
    ("busy-unmount.json", lambda d: d["busy"].update(export_kept=False),
     "checks.busy_unmount.ok is recorded True, its records say False"),
    ("nfs-vm-run.json", lambda d: d["checks"][0].update(detail="x"),
     f"checks.vm.detail is recorded 'x', its records say '{VM_DETAIL}'"),
    ("nfs-vm-run.json", lambda d: d["checks"][4].update(detail=re.sub(r"in [0-9.]+ s", "in 31.0 s",
                                                                       d["checks"][4]["detail"], count=1)),
     "checks.server_restart.detail is recorded 'gate completed (exit 0) in 31.0 s"),
    ("nfs-vm-run.json", lambda d: d["checks"][-1].update(detail="13 subjects -> evidence-index.json verdict: PASS"),
     "checks.evidence_index.detail is recorded '13 subjects"),
], ids=["two-clients-records-lost", "server-restart-gate-check-failed", "vm-run-check-failed",
        "busy-unmount-export-lost", "vm-check-detail", "restart-check-detail", "index-check-detail"])
def test_a_forged_record_of_the_folder_is_refused_by_the_committed_index_and_reindexed(tmp_path, name, change, words):
    folder = committed_copy(tmp_path)
    edit_json(folder / name, change)
    code, report = verify_committed_index(folder)
    assert code == 3 and any(f"artifacts/{name}" in p for p in report["problems"]), report["problems"]
    assert_refused(*reindexed(folder), words)
