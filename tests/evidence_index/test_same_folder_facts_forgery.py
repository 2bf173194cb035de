"""Facts one file of a folder states and another file of the same folder refutes (core.one_run), forged one at a
time in a copy of the real committed folder, re-indexed (`build_evidence_index.py local`) and verified: each is
refused as not authentic (exit 3) naming both fields; the untouched copies stay authentic.

- The CPU diagnostic's runtime.injection_vectors and the gate's isolation, made by the same interpreter in
  evidence/local/run-local: the same site directories hold the same code-running .pth files (outside review:
  diag-injection-hidden, D1).
- The NFS VM's kernel as evidence/nfs records it four times over (versions.json, nfsvm-image.json, nfs-vm-run.json
  and the gate results' platform.release, made in that guest) (outside review: W6, W7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from core.one_run import run_problems

from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, copy, edit_json, rebuild_and_verify
from tests.evidence_index.test_one_run_forgery import RUN_LOCAL, assert_authentic, run_local_pair

DIAGNOSTIC, GATE = "kernodeck-diagnostic-cpu.json", "platform-runtime-cpu.json"


def _load(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text())


# --- the diagnostic's injection vectors and the gate's isolation --------------------------------------------

def test_the_run_local_pair_records_the_same_start_up_files():
    folder = EVIDENCE / "local" / "run-local"
    results = [(name, kind, _load(folder, name)) for name, kind in zip(RUN_LOCAL, ("gate", "diagnostic"))]
    assert _load(folder, DIAGNOSTIC)["runtime"]["injection_vectors"] == [".pth"]
    assert run_problems(results) == [[], []]


def test_a_diagnostic_hiding_its_pth_vector_is_not_authentic(tmp_path):
    folder = run_local_pair(tmp_path)
    edit_json(folder / DIAGNOSTIC, lambda d: d["runtime"].update(injection_vectors=[]))
    assert_refused(*rebuild_and_verify(folder),
                   "kernodeck-diagnostic-cpu.json: runtime.injection_vectors (names '.pth') is False, but "
                   "platform-runtime-cpu.json records isolation.executing_pth_files/accepted_pth_files "
                   "(a code-running .pth found) True")


def test_a_diagnostic_naming_a_sitecustomize_its_gate_did_not_find_is_not_authentic(tmp_path):
    folder = run_local_pair(tmp_path)
    edit_json(folder / DIAGNOSTIC, lambda d: d["runtime"].update(injection_vectors=[".pth", "sitecustomize"]))
    assert_refused(*rebuild_and_verify(folder),
                   "runtime.injection_vectors (names 'sitecustomize') is True, but platform-runtime-cpu.json records "
                   "isolation.present or accepted_start_up (names 'sitecustomize') False")


def test_a_gate_hiding_the_pth_files_its_diagnostic_saw_is_not_authentic(tmp_path):
    folder = run_local_pair(tmp_path)
    edit_json(folder / GATE, lambda d: d["isolation"].update(accepted_pth_files=[]))
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "isolation.executing_pth_files/accepted_pth_files (a code-running .pth found) is "
                   "False, but kernodeck-diagnostic-cpu.json records runtime.injection_vectors (names '.pth') True")


def test_a_sitecustomize_only_the_gate_found_is_no_contradiction():
    """A sitecustomize can leave sys.modules (what the diagnostic reads), never the directory the gate searches."""
    folder = EVIDENCE / "local" / "run-local"
    gate, diagnostic = _load(folder, GATE), _load(folder, DIAGNOSTIC)
    gate["isolation"]["present"] = ["sitecustomize"]
    assert run_problems([(GATE, "gate", gate), (DIAGNOSTIC, "diagnostic", diagnostic)]) == [[], []]


def test_a_sitecustomize_the_gate_accepted_as_the_platforms_own_is_the_one_its_diagnostic_saw():
    """Debian's python3 imports its own sitecustomize in both: the gate accepts it (isolation.accepted_start_up),
    the diagnostic names it among its vectors; one file, no contradiction."""
    folder = EVIDENCE / "local" / "run-local"
    gate, diagnostic = _load(folder, GATE), _load(folder, DIAGNOSTIC)
    gate["isolation"]["accepted_start_up"] = [{"name": "sitecustomize.py", "kind": "sitecustomize"}]
    diagnostic["runtime"]["injection_vectors"] = [".pth", "sitecustomize"]
    assert run_problems([(GATE, "gate", gate), (DIAGNOSTIC, "diagnostic", diagnostic)]) == [[], []]


def test_environment_vectors_are_each_processs_own_and_not_compared():
    folder = EVIDENCE / "local" / "run-local"
    gate, diagnostic = _load(folder, GATE), _load(folder, DIAGNOSTIC)
    diagnostic["runtime"]["injection_vectors"] = ["PYTHONPATH", ".pth"]
    assert run_problems([(GATE, "gate", gate), (DIAGNOSTIC, "diagnostic", diagnostic)]) == [[], []]


def test_the_cuda_runs_gate_and_diagnostic_agree_on_their_start_up_files():
    """Version 1 of the gate listed setuptools' .pth under executing_pth_files, beside a sitecustomize."""
    folder = EVIDENCE / "cuda" / "run"
    gate, diagnostic = _load(folder, "platform-runtime-cuda.json"), _load(folder, "kernodeck-diagnostic-gpu.json")
    assert run_problems([("g", "gate", gate), ("d", "diagnostic", diagnostic)]) == [[], []]
    diagnostic["runtime"]["injection_vectors"] = [".pth"]  # the sitecustomize left out: not a contradiction
    assert run_problems([("g", "gate", gate), ("d", "diagnostic", diagnostic)]) == [[], []]
    gate["isolation"]["executing_pth_files"] = []
    assert any("d records runtime.injection_vectors (names '.pth') True" in p
               for p in run_problems([("g", "gate", gate), ("d", "diagnostic", diagnostic)])[0])


# --- the NFS VM's kernel, recorded by every record of evidence/nfs -----------------------------------------

# The VM has no git: the commit that made evidence/nfs is the one its run record names (the host's checkout).
NFS_MADE_AT = json.loads((EVIDENCE / "nfs" / "nfs-vm-run.json").read_text())["git"]["head"]


def nfs_copy(tmp_path: Path) -> Path:
    return copy(tmp_path, "nfs")


def rebuild_nfs(folder: Path) -> tuple[int, dict]:
    return rebuild_and_verify(folder, made_at=NFS_MADE_AT)


def test_the_nfs_folder_indexed_whole_stays_authentic(tmp_path):
    assert_authentic(*rebuild_nfs(nfs_copy(tmp_path)))


def _versions_kernel(document: dict) -> None:
    document["kernel_release"] = "6.9.0-1-amd64"
    document["proc_version"] = document["proc_version"].replace("6.1.0-57-amd64", "6.9.0-1-amd64")


def _image_kernel(document: dict) -> None:
    document["kernel_package"] = "linux-image-6.9.0-1-amd64"


@pytest.mark.parametrize("name, change, words", [
    ("versions.json", _versions_kernel,
     ["versions.json: kernel_release is '6.9.0-1-amd64', but",
      "versions.json: proc_version (read as release) is '6.9.0-1-amd64', but"]),
    ("versions.json", lambda d: d.update(proc_version=d["proc_version"].replace("6.1.192-3", "6.9.7-1")),
     ["versions.json: proc_version (read as kernel_package_version) is '6.9.7-1', but",
      "kernel_package_version '6.1.192-3'"]),
    ("nfsvm-image.json", _image_kernel,
     ["nfsvm-image.json: kernel_package (read as release) is '6.9.0-1-amd64', but"]),
    ("nfsvm-image.json", lambda d: d.update(kernel_release="6.9.0-1-amd64", kernel_package="linux-image-6.9.0-1-amd64"),
     ["nfsvm-image.json: kernel_release is '6.9.0-1-amd64', but"]),
    ("nfs-vm-run.json", lambda d: d.update(kernel_release="6.9.0-1-amd64"),
     ["nfs-vm-run.json: kernel_release is '6.9.0-1-amd64', but"]),
    ("platform-runtime-nfs.json", lambda d: d["platform"].update(release="6.9.0-1-amd64"),
     ["platform-runtime-nfs.json: platform.release is '6.9.0-1-amd64', but"]),
    ("versions.json", lambda d: d["packages"].update({"nfs-kernel-server": "1:2.6.3-1"}),
     ["versions.json: packages.nfs-kernel-server is '1:2.6.3-1', but"]),
], ids=["versions-kernel", "proc-version-package", "image-kernel-package", "image-kernel-release",
        "vm-run-kernel-release", "gate-release", "versions-nfs-server"])
def test_a_kernel_fact_the_other_records_refute_is_not_authentic(tmp_path, name, change, words):
    folder = nfs_copy(tmp_path)
    edit_json(folder / name, change)
    code, report = rebuild_nfs(folder)
    assert_refused(code, report, *words)
    assert not any(p.startswith("artifacts/two-clients.json") for p in report["problems"]), \
        "the records that agree are not the odd ones"


def test_a_gate_from_another_kernel_beside_the_vm_records_is_not_authentic(tmp_path):
    folder = nfs_copy(tmp_path)
    shutil.copy2(EVIDENCE / "local" / "filesystems" / "platform-runtime-cpu-ext4-root.json",
                 folder / "server-restart-gate.json")
    code, report = rebuild_nfs(folder)
    assert_refused(code, report, "server-restart-gate.json: platform.release is '6.18.44-fc-v1045', but")


# --- a training run's environment, where a gate of the same machine sits beside it ------------------------

def training_run_beside_its_machines_gate(tmp_path: Path) -> Path:
    """The committed training run with the run-local gate copied beside it: the same machine and interpreter
    (python 3.11.7, torch 2.13.0+cpu) made both. A lone training run has no second view of its environment
    (docs/verdicts.md#without-torch): the gate is one."""
    folder = copy(tmp_path, "local/training-run")
    shutil.copy2(EVIDENCE / "local" / "run-local" / GATE, folder / GATE)
    return folder


def test_a_training_run_beside_its_machines_gate_stays_authentic(tmp_path):
    assert_authentic(*rebuild_and_verify(training_run_beside_its_machines_gate(tmp_path)))


@pytest.mark.parametrize("field, value, words", [
    ("python", "3.12.3", "training-run/summary.json: environment.python is '3.12.3', but platform-runtime-cpu.json "
                         "records platform.python '3.11.7'"),
    ("torch", "2.13.0+cu130", "training-run/summary.json: environment.torch is '2.13.0+cu130', but "
                              "platform-runtime-cpu.json records device.torch.version '2.13.0+cpu'"),
], ids=["python", "torch"])
def test_a_training_run_summary_naming_another_environment_than_its_gate_is_not_authentic(tmp_path, field, value,
                                                                                         words):
    folder = training_run_beside_its_machines_gate(tmp_path)
    edit_json(folder / "training-run" / "summary.json", lambda d: d["environment"].update({field: value}))
    assert_refused(*rebuild_and_verify(folder), words)


# --- the systemd VM's folder: its image, its run and its install phase name one init and one package --------

SYSTEMD_MADE_AT = json.loads((EVIDENCE / "nfs-systemd" / "nfs-vm-run.json").read_text())["git"]["head"]


def test_the_nfs_systemd_folder_indexed_whole_stays_authentic(tmp_path):
    assert_authentic(*rebuild_and_verify(copy(tmp_path, "nfs-systemd"), made_at=SYSTEMD_MADE_AT))


@pytest.mark.parametrize("name, change, words", [
    ("install.json", lambda d: d.update(pid1="busybox"), "install.json: pid1 is 'busybox', but"),
    ("nfs-vm-run.json", lambda d: d.update(init="busybox"), "nfs-vm-run.json: init is 'busybox', but"),
    ("install.json", lambda d: d.update(nfs_kernel_server="1:2.6.3-1"),
     "install.json: nfs_kernel_server is '1:2.6.3-1', but"),
], ids=["install-pid1", "vm-run-init", "install-package"])
def test_a_systemd_vm_fact_the_other_records_refute_is_not_authentic(tmp_path, name, change, words):
    folder = copy(tmp_path, "nfs-systemd")
    edit_json(folder / name, change)
    assert_refused(*rebuild_and_verify(folder, made_at=SYSTEMD_MADE_AT), words)
