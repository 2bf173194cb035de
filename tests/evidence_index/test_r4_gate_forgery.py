"""Gate-result facts r4 found free (/work/wt/r4/FINDINGS.md 11, 15, 16, 17, 18), forged one at a time on the
committed ext4 gate result (tests/evidence_index/committed_forgery.py): copied, ONE fact edited, every `ok` left
true, indexed and verified from the bytes. Each is refused as not authentic, naming the field. The figures are
read from the committed bytes. The untouched committed results still pass
(test_recorded_facts_forgery.py::test_each_committed_gate_result_is_judged_as_it_ran)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rules import gate_parameters

from tests.conftest import ROOT
from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.committed_forgery import Edit, committed, indexed, refused, setter  # noqa: F401
from tests.evidence_index.test_verdicts_forgery import index_and_verify

REPLACE = "checks.concurrent_replace"


def replace_reads_past_pauses(document: dict[str, Any]) -> None:
    """More reads than the readers' recorded seconds hold, one per READER_PAUSE_S and one more each."""
    check = document["checks"]["concurrent_replace"]
    ran = [r["ran_s"] for r in check["roles"] if r["role"] == "replace-reader"]
    check["reads"] = int((sum(ran) + 0.001 * len(ran)) / gate_parameters.READER_PAUSE_S) + 2 * len(ran) + 1


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(lambda d: setter(f"{REPLACE}.final_version",
                                  [d["checks"]["concurrent_replace"]["writers"], 49])(d),
                 f"{REPLACE}.final_version", id="final-version-of-a-writer-not-started"),
    pytest.param(setter(f"{REPLACE}.final_version.0", -3), f"{REPLACE}.final_version",
                 id="final-version-writer-negative"),
    pytest.param(setter(f"{REPLACE}.final_version.0", -1), f"{REPLACE}.final_version",
                 id="final-version-the-initial-one"),
    pytest.param(setter(f"{REPLACE}.reads", 10**9), f"{REPLACE}.reads", id="reads-1e9"),
    pytest.param(replace_reads_past_pauses, f"{REPLACE}.reads", id="reads-one-past-the-pauses"),
    pytest.param(setter(f"{REPLACE}.reader_sharing_retries", -5), f"{REPLACE}.reader_sharing_retries",
                 id="reader-retries-negative"),
    pytest.param(setter(f"{REPLACE}.writer_sharing_retries", -5), f"{REPLACE}.writer_sharing_retries",
                 id="writer-retries-negative"),
    pytest.param(setter(f"{REPLACE}.writer_sharing_retries", True), f"{REPLACE}.writer_sharing_retries",
                 id="writer-retries-bool"),
])
def test_concurrent_replace_facts_are_judged(refused, edit: Edit, named: str) -> None:  # noqa: F811
    refused(edit, named)


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(setter("isolation.worker_environment.TORCH_DEVICE_BACKEND_AUTOLOAD", "1"),
                 "isolation.worker_environment", id="backend-autoload-on"),
    pytest.param(lambda d: d["isolation"]["worker_environment"].pop("TORCH_DEVICE_BACKEND_AUTOLOAD"),
                 "isolation.worker_environment", id="backend-autoload-removed"),
    pytest.param(lambda d: d["isolation"].pop("worker_environment"), "isolation.worker_environment",
                 id="worker-environment-removed"),
    pytest.param(setter("isolation.worker_environment.SETUPTOOLS_USE_DISTUTILS", "local"),
                 "isolation.worker_environment", id="distutils-local"),
    pytest.param(lambda d: setter("isolation.worker_site_dirs", d["isolation"]["worker_site_dirs"]
                                  + " plus the user site")(d), "isolation.worker_site_dirs", id="site-dirs-text"),
])
def test_the_workers_recorded_environment_is_the_one_the_gate_gives(refused, edit: Edit, named: str) -> None:  # noqa: F811
    refused(edit, named)


GITHUB_RUN = {"actions": True, "repository": "kernodeck/platform-runtime", "run_id": "33304800747",
              "run_attempt": "1", "job": "linux", "runner_os": "Linux", "runner_arch": "X64",
              "sha": "b71dd6f2a4ca76d1ebdc17014d9d0bfe573445ea",
              "workflow_ref": "kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/heads/main",
              "image_os": "ubuntu24", "image_version": "20261124.1"}


def test_a_local_index_never_passes_a_result_claiming_a_github_run(tmp_path, committed) -> None:  # noqa: F811
    """r1 F18: a local index reads no GitHub API, so a `github` block (run, job, commit) cannot be bound there; the
    result made locally records it null, and one claiming a run fails the local verdict, naming the field."""
    document = copy.deepcopy(committed)
    document["github"] = GITHUB_RUN
    outcome, said = indexed(tmp_path, document)
    assert outcome != "pass", said
    assert any("github claims GitHub Actions run '33304800747'" in line for line in said), said


DEVICE = "checks.device_compute"


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(setter(f"{DEVICE}.training.parameter_device", ""), f"{DEVICE}.training.parameter_device",
                 id="parameters-on-no-device"),
    pytest.param(setter(f"{DEVICE}.training.parameter_device", "meta"), f"{DEVICE}.training.parameter_device",
                 id="parameters-on-meta"),
    pytest.param(setter(f"{DEVICE}.peak_allocated_bytes", 0), f"{DEVICE}.peak_allocated_bytes",
                 id="a-peak-on-the-cpu"),
    pytest.param(setter("device.peak_allocated_bytes", 0), "device.peak_allocated_bytes", id="device-peak-on-the-cpu"),
])
def test_where_the_cpu_work_ran_and_what_it_allocated_are_judged(refused, edit: Edit, named: str) -> None:  # noqa: F811
    refused(edit, named)


CUDA_RUN = ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json"


def _cuda_peak(document: dict[str, Any]) -> int:
    return document["checks"]["device_compute"]["peak_allocated_bytes"]


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(setter(f"{DEVICE}.training.parameter_device", "cpu"), f"{DEVICE}.training.parameter_device",
                 id="parameters-on-the-cpu"),
    pytest.param(setter(f"{DEVICE}.peak_allocated_bytes", -1), f"{DEVICE}.peak_allocated_bytes", id="peak-negative"),
    pytest.param(lambda d: setter(f"{DEVICE}.peak_allocated_bytes", d["device"]["cuda"]["total_memory_bytes"] * 10)(d),
                 f"{DEVICE}.peak_allocated_bytes", id="peak-above-the-devices-memory"),
    pytest.param(lambda d: setter("device.peak_allocated_bytes", -_cuda_peak(d) - 1)(d),
                 "device.peak_allocated_bytes", id="device-peak-negative"),
    pytest.param(setter("device.peak_allocated_bytes", 0), "device.peak_allocated_bytes", id="device-peak-zero"),
])
def test_the_committed_cuda_results_device_and_memory_facts_are_judged(tmp_path, edit: Edit, named: str) -> None:
    """Against the sources that made it (7f0a071), as the index is built for it (evidence/cuda/README.md)."""
    document = json.loads(CUDA_RUN.read_text(encoding="utf-8"))
    edit(document)
    verified, report = index_and_verify(tmp_path, document, checkout_of(CUDA_COMMIT))
    assert verified.returncode == 3, verified.stdout
    assert any(named in line for line in report["problems"]), report["problems"]


def test_a_finding_that_the_worker_loaded_a_module_needs_the_workers_list_to_name_it(refused) -> None:  # noqa: F811
    """The gate writes "a sitecustomize was loaded into the device worker" from device_worker_loaded: the module
    cut from the list under the finding is an edit (r4 finding 11's third variant, on a current result)."""
    def edit(document: dict[str, Any]) -> None:
        isolation = document["isolation"]
        isolation["present"].append("sitecustomize")
        isolation["findings"].append("a sitecustomize was loaded into the device worker at start-up")
        isolation["device_worker_loaded"] = []
    refused(edit, "isolation.findings says 'a sitecustomize was loaded into the device worker at start-up'")


WRITER = "checks.failing_writer"
KILLED = f"{WRITER}.killed_writer"


def more_mid_replace_than_kills_without_a_temporary(document: dict[str, Any]) -> None:
    """kills_mid_replace one more than the kills that left no temporary (a kill leaves one, or lands mid-replace)."""
    facts = document["checks"]["failing_writer"]["killed_writer"]
    by_kills = facts["temporaries_left_by_kills"] - facts["temporaries_planted"]
    facts["kills_mid_replace"] = facts["kills"] - by_kills + 1


def more_temporaries_than_kills_without_a_replace(document: dict[str, Any]) -> None:
    facts = document["checks"]["failing_writer"]["killed_writer"]
    left = facts["kills"] - facts["kills_mid_replace"] + facts["temporaries_planted"] + 1
    facts.update(temporaries_left_by_kills=left, temporaries_swept=left)


@pytest.mark.parametrize(("edit", "named"), [
    pytest.param(setter(f"{WRITER}.stages.fsync.raised", "x"), f"{WRITER}.stages.fsync.raised", id="raised-any-text"),
    pytest.param(setter(f"{WRITER}.stages.replace.raised", "PermissionError"), f"{WRITER}.stages.replace.raised",
                 id="raised-another-error"),
    pytest.param(more_mid_replace_than_kills_without_a_temporary, "a kill leaves a temporary only when",
                 id="mid-replace-beside-the-temporaries"),
    pytest.param(more_temporaries_than_kills_without_a_replace, "a kill leaves a temporary only when",
                 id="temporaries-beside-the-mid-replace-kills"),
    pytest.param(setter(f"{KILLED}.temporaries_planted", 2), f"{KILLED}.temporaries_planted", id="two-planted"),
    pytest.param(lambda d: d["checks"]["device_compute"]["checkpoint"].pop("sha256"), f"{DEVICE}.checkpoint.sha256",
                 id="checkpoint-digest-removed"),
    pytest.param(lambda d: d["checks"]["device_compute"]["checkpoint"].pop("ok"), f"{DEVICE}.checkpoint.ok",
                 id="checkpoint-ok-removed"),
    pytest.param(setter(f"{REPLACE}.reason", "x"), f"{REPLACE}.reason", id="a-reason-on-a-passing-check"),
    pytest.param(setter("checks.workspace_cleanup.reason", "x"), "checks.workspace_cleanup.reason",
                 id="a-reason-on-a-passing-cleanup"),
])
def test_the_writer_and_checkpoint_records_are_judged(refused, edit: Edit, named: str) -> None:  # noqa: F811
    refused(edit, named)
