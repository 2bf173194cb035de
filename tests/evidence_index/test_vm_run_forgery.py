"""An NFS VM run in an index: nfs-vm-run.json's checks are made again from the records bound beside it, so a
record edited under an unchanged run, or a run whose checks its records contradict, is not authentic; a VM record
bound without its run is judged by nothing and fails. The committed evidence/nfs folder, indexed whole, is the
real run (the control)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evidence_index.local import build_local_index

from tests.conftest import ROOT

EVIDENCE = ROOT / "evidence" / "nfs"
# Records written before they declared a schema (the committed run predates it): given theirs, as the VM now writes.
SCHEMAS = {"action-steps.json": "kernodeck.nfsvm-steps/v1", "versions.json": "kernodeck.nfsvm-versions/v1"}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "nfs"
    shutil.copytree(EVIDENCE, folder)
    (folder / "evidence-index.json").unlink()
    for name, schema in SCHEMAS.items():
        document = json.loads((folder / name).read_text())
        if document.get("schema") is None:
            _write(folder / name, {**document, "schema": schema})
    return folder


def _write(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _edit(folder: Path, name: str, change) -> None:
    document = json.loads((folder / name).read_text())
    change(document)
    _write(folder / name, document)


def _results(folder: Path) -> dict[str, dict]:
    statement = build_local_index(folder, folder / "evidence-index.json", source_root=ROOT)
    return {r["name"]: r for r in statement["predicate"]["results"]}


def test_the_recorded_nfs_run_indexed_whole_is_judged_by_its_records(tmp_path):
    results = _results(_folder(tmp_path))
    vm = [r for r in results.values() if r["kind"] in ("nfsvm-run", "nfsvm-record")]
    assert len(vm) == 8 and results["nfs-vm-run.json"]["kind"] == "nfsvm-run"
    assert [(r["name"], r["reasons"]) for r in vm if not r["ok"] or r.get("not_authentic")] == []


def _locked_records_lost(document: dict) -> None:
    verdict = document["variants"]["locked"]["verdict"]
    verdict.update(missing=7, valid_records=393)


def _restart_gate_torn(document: dict) -> None:
    document["checks"]["concurrent_replace"]["partial_reads"] = 7


@pytest.mark.parametrize("name, change, words", [
    ("two-clients.json", _locked_records_lost, "checks.two_clients.ok is recorded True, its records say False"),
    ("server-restart-gate.json", _restart_gate_torn,
     "checks.server_restart.ok is recorded True, its records say False"),
    ("nfs-vm-run.json", lambda d: d["checks"][3].update(ok=False),
     "checks.two_clients.ok is recorded False, its records say True"),
    ("nfs-vm-run.json", lambda d: d["checks"].pop(4), "a run of phases"),
    ("nfs-vm-run.json", lambda d: d["checks"].append({"name": "gate", "ok": True, "detail": ""}),
     "names a check twice"),
    ("nfs-vm-run.json", lambda d: d["vm"].update(guest_powered_off=False), "checks.vm.ok is recorded True"),
], ids=["records-lost-under-a-passing-run", "restart-gate-torn", "check-flag-flipped", "check-dropped",
        "check-doubled", "vm-never-powered-off"])
def test_a_run_whose_records_say_otherwise_is_not_authentic(tmp_path, name, change, words):
    folder = _folder(tmp_path)
    _edit(folder, name, change)
    run = _results(folder)["nfs-vm-run.json"]
    assert run["ok"] is False and any(words in why for why in run.get("not_authentic") or []), run["reasons"]


def test_a_vm_record_bound_without_its_run_fails(tmp_path):
    folder = _folder(tmp_path)
    (folder / "nfs-vm-run.json").unlink()
    record = _results(folder)["two-clients.json"]
    assert record["ok"] is False and not record.get("not_authentic")
    assert any("no nfs-vm-run.json bound beside it" in why for why in record["reasons"])


def test_a_run_without_the_action_phase_is_judged_with_its_index_check():
    """cli.judge_run appends the evidence_index check to every run; without the action it fails, named."""
    from rules.nfs_vm_run import judge_vm_run

    run = {"phases": ["busy_rename"], "ok": False, "vm": {"qemu_exit_code": 0, "timed_out": False,
                                                          "guest_powered_off": True, "host_signal": None},
           "checks": [{"name": "vm", "ok": True, "detail": "qemu exit 0, timed out False, None s"},
                      {"name": "busy_rename", "ok": False, "detail": ""},
                      {"name": "evidence_index", "ok": False, "detail": "nothing to index"}],
           "evidence_index": {"exit_code": 1, "message": "nothing to index"}}  # cli.judge_run writes both
    reasons, forged = judge_vm_run(run, lambda _path: None)
    assert forged == [] and any(r.startswith("busy_rename") for r in reasons)
