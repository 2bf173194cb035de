"""Reviewer r6: one fact of committed evidence edited, the folder re-indexed and verified (each against the
checkout that made it), where the edit verified PASS before. Each is refused as not authentic, naming the field;
the untouched copies still pass. Every figure is read from the committed bytes."""

from __future__ import annotations

import pytest
from rules.one_run import _key

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.test_crossfile_forgery import assert_refused, copy, edit_json
from tests.evidence_index.test_one_run_forgery import cuda_pair, rebuild_and_verify, rebuild_and_verify_at


def test_the_untouched_cuda_pair_passes(tmp_path):
    code, report = rebuild_and_verify_at(cuda_pair(tmp_path), checkout_of(CUDA_COMMIT))
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


def test_the_untouched_ext4_folder_passes(tmp_path):
    code, report = rebuild_and_verify(copy(tmp_path, "local/filesystems"))
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


# --- F2: platform.python with a suffix no Python writes was cut to X.Y.Z and matched the others ------------------

@pytest.mark.parametrize("written, same", [("3.14.0rc1", "3.14.0"), ("3.13.0+", "3.13.0"), ("3.12.3b2", "3.12.3"),
                                           ("3.12.3x", None), ("3.12.3 ", None), ("3.12.3.1", None)])
def test_only_the_forms_python_writes_are_cut_to_their_release(written, same):
    assert (_key("python", written) == same) if same else _key("python", written) != "3.12.3"


def test_the_cuda_gates_python_with_a_suffix_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "platform-runtime-cuda.json", lambda d: d["platform"].update(python=d["platform"]["python"]
                                                                                      + "x"))
    assert_refused(*rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT)), "platform.python is '")


def test_one_ext4_gates_python_with_a_suffix_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    edit_json(folder / "platform-runtime-cpu-ext4-root.json",
              lambda d: d["platform"].update(python=d["platform"]["python"] + "x"))
    assert_refused(*rebuild_and_verify(folder), "platform-runtime-cpu-ext4-root.json: platform.python is '")


# --- F3: a derived flag deleted was not compared with its measurements, and the result verified ----------------

@pytest.mark.parametrize("path", [
    "checks.device_compute.training.loss_decreased", "checks.device_compute.training.final_loss",
    "checks.device_compute.training.update_rule_ok", "checks.failing_writer.old_file_intact",
    "checks.concurrent_replace.missing_reads_tolerated", "checks.jsonl_append.lock_probe.ok",
    "checks.jsonl_append.lock_probe.refused_while_held", "checks.jsonl_append.lock_probe.while_held.abandoned",
    "checks.concurrent_replace.roles.0.abandoned"])
def test_a_flag_deleted_from_an_ext4_gate_is_not_authentic(tmp_path, path):
    *parents, key = path.split(".")

    def delete(document: dict) -> None:
        for part in parents:
            document = document[int(part)] if isinstance(document, list) else document[part]
        del document[key]
    folder = copy(tmp_path, "local/filesystems")
    edit_json(folder / "platform-runtime-cpu-ext4-root.json", delete)
    assert_refused(*rebuild_and_verify(folder), f"{path} is missing beside")


def test_the_lock_probes_ok_deleted_from_the_cuda_gate_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "platform-runtime-cuda.json", lambda d: d["checks"]["jsonl_append"]["lock_probe"].pop("ok"))
    assert_refused(*rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT)),
                   "checks.jsonl_append.lock_probe.ok is missing beside")


# --- F4: device.torch_build.dist_info named another build -------------------------------------------------------

def test_an_ext4_gates_dist_info_naming_another_build_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    edit_json(folder / "platform-runtime-cpu-ext4-root.json", lambda d: d["device"]["torch_build"].update(
        dist_info=d["device"]["torch_build"]["dist_info"].replace(".dist-info", "x.dist-info")))
    assert_refused(*rebuild_and_verify(folder), "device.torch_build.dist_info is '")


def test_the_cuda_gates_dist_info_of_another_release_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "platform-runtime-cuda.json", lambda d: d["device"]["torch_build"].update(
        dist_info="torch-0." + d["device"]["torch_build"]["dist_info"].removeprefix("torch-")))
    assert_refused(*rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT)), "device.torch_build.dist_info is '")


# --- F5: a process's seccomp state the kernel never shows --------------------------------------------------------

@pytest.mark.parametrize("process, field, words", [
    ("gate", "seccomp", "isolation.processes.gate.seccomp is "),
    ("workers.device_compute", "seccomp", "isolation.processes.workers.device_compute.seccomp is "),
    ("gate_parent", "seccomp_filters", "isolation.processes.gate.seccomp_filters is 0, fewer than"),
])
def test_a_seccomp_state_raised_alone_is_not_authentic(tmp_path, process, field, words):
    def raise_by_one(document: dict) -> None:
        status = document["isolation"]["processes"]
        for part in process.split("."):
            status = status[part]
        status[field] += 1
    folder = copy(tmp_path, "local/filesystems")
    edit_json(folder / "platform-runtime-cpu-ext4-root.json", raise_by_one)
    assert_refused(*rebuild_and_verify(folder), words)


# --- F7: the server-restart harness record's package version was compared with nothing -------------------------

def test_the_server_restart_records_package_version_edited_alone_is_not_authentic(tmp_path):
    from tests.evidence_index.test_nfs_folder_forgery import committed_copy, reindexed

    folder = committed_copy(tmp_path)
    edit_json(folder / "server-restart-nfs-harness.json", lambda d: d["setup"]["package"].update(
        version=d["setup"]["package"]["version"] + "x"))
    assert_refused(*reindexed(folder), "server-restart-nfs-harness.json: setup.package.version is '")


# --- F8, F9: nfs-vm-run.json's date and versions.json's interpreter were compared with nothing -----------------

@pytest.mark.parametrize("name, change, words", [
    ("nfs-vm-run.json", lambda d: d.update(date="2000-01-01"), "date is '2000-01-01', but the action's gate started"),
    ("nfs-vm-run.json", lambda d: d.update(date=d["date"] + "x"), "not the YYYY-MM-DD day the run was recorded"),
    ("versions.json", lambda d: d["python"].update(version=d["python"]["version"] + "9"),
     "versions.json: python.version (read as python_minor) is '"),
    ("versions.json", lambda d: d["python"].update(site_packages=d["python"]["site_packages"].replace(
        "/python3.", "/python4.")), "versions.json: python.site_packages (read as python_minor) is '"),
], ids=["date-another-day", "date-not-a-date", "python-version", "python-site-packages"])
def test_the_vm_runs_date_and_guest_interpreter_edited_alone_are_not_authentic(tmp_path, name, change, words):
    from tests.evidence_index.test_nfs_folder_forgery import committed_copy, reindexed

    folder = committed_copy(tmp_path)
    edit_json(folder / name, change)
    assert_refused(*reindexed(folder), words)


# --- F10: a diagnostic's message is the sentence of its code ---------------------------------------------------

def test_the_gpu_diagnostics_message_edited_alone_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "kernodeck-diagnostic-gpu.json", lambda d: d.update(message=d["message"] + " Twice."))
    assert_refused(*rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT)), "message is '")


def test_every_committed_diagnostic_says_the_sentence_of_its_code():
    import json

    from rules.diagnostic_message import message_problems

    from tests.evidence_index.test_crossfile_forgery import EVIDENCE

    reports = [json.loads(p.read_text()) for p in EVIDENCE.rglob("kernodeck-diagnostic-*.json")]
    assert reports and all(message_problems(r) == [] for r in reports)
    assert message_problems({**reports[0], "message": "x"})


# --- F11: the image's kernel and suite, the guest's dpkg packages: required, not only compared where present -----

def test_the_judges_suite_and_version_packages_are_the_guests():
    import sys

    from rules import nfs_vm_image

    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "tools"))
    from nfsvm import recipe

    assert nfs_vm_image.SUITE == recipe.SUITE
    source = (ROOT / "tools" / "nfsvm" / "phases.py").read_text()
    assert '"nfs-kernel-server", "nfs-common",\n                            "python3"]' in source


@pytest.mark.parametrize("name, change, words", [
    ("nfsvm-image.json", lambda d: d.pop("kernel_release"), "nfsvm-image.json kernel_release is None"),
    ("nfsvm-image.json", lambda d: d.update(suite=d["suite"] + "x"), "nfsvm-image.json suite is '"),
    ("versions.json", lambda d: d["packages"].pop("python3"), "versions.json packages.python3 is None"),
    ("versions.json", lambda d: d["packages"].pop("nfs-common"), "versions.json packages.nfs-common is None"),
], ids=["image-kernel-deleted", "image-suite", "guest-python3-deleted", "guest-nfs-common-deleted"])
def test_the_images_and_guests_facts_deleted_or_edited_are_not_authentic(tmp_path, name, change, words):
    from tests.evidence_index.test_nfs_folder_forgery import committed_copy, reindexed

    folder = committed_copy(tmp_path)
    edit_json(folder / name, change)
    assert_refused(*reindexed(folder), words)
