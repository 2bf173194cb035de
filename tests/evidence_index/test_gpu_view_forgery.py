"""A CUDA claim is backed by the device worker's own probe of the GPU (`device.cuda`, rules.gpu_probe): the
committed H200 result (evidence/cuda/run) with one fact of that probe edited, `ok` and the requirement left
true, is refused as not authentic (exit 3) naming the field; untouched it still holds cuda, and the committed
no-visible-gpu result still fails it."""

from __future__ import annotations

import json

import pytest
from rules.gate_record import read_gate
from rules.requirements import problems_of

from tests.conftest import ROOT
from tests.evidence_index.test_verdicts_forgery import index_and_verify

CUDA_RUN = ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json"
NO_GPU = ROOT / "evidence" / "cuda" / "no-visible-gpu" / "platform-runtime-no-visible-gpu.json"


def _probe(**facts):
    return lambda d: d["device"]["cuda"].update(facts)


# Each edit of the worker's probe (the adversarial review's, finding 5, and one per fact a real run records)
# and the field its refusal names.
EDITS = {
    "unavailable": (_probe(available=False, device_count=0), "device.cuda.available is False"),
    "no-device": (_probe(device_count=0), "device.cuda.device_count is 0"),
    "old-arch": (_probe(arch="sm_35"), "device.cuda.arch 'sm_35' is not in the build's arch_list"),
    "arch-not-in-build": (_probe(arch_in_build=False), "device.cuda.arch_in_build is recorded False"),
    "no-uuid": (_probe(uuid=None), "device.cuda.uuid is None"),
    "bad-uuid": (_probe(uuid="GPU-0"), "device.cuda.uuid is 'GPU-0'"),
    "no-memory": (_probe(total_memory_bytes=0), "device.cuda.total_memory_bytes is 0"),
    "no-name": (_probe(name=""), "device.cuda.name is ''"),
    "no-arch-list": (_probe(arch_list=[]), "device.cuda.arch_list is []"),
    "capability": (_probe(capability="8.0"), "its capability '8.0' says sm_80"),
    "hip-compiled": (_probe(compiled_hip="6.4"), "device.cuda.compiled_hip is '6.4'"),
    "other-cuda": (_probe(compiled_cuda="12.8"), "device.cuda.compiled_cuda is '12.8'"),
    "rocm-backend": (_probe(backend="rocm"), "device.cuda.backend is 'rocm'"),
    "no-probe": (lambda d: d["device"].update(cuda=None), "device.cuda is None"),
}


def _edited(edit) -> dict:
    document = json.loads(CUDA_RUN.read_text())
    edit(document)
    return document


@pytest.mark.parametrize("name", EDITS)
def test_each_fact_of_the_workers_probe_is_required(name):
    edit, words = EDITS[name]
    problems = problems_of(read_gate(_edited(edit)), "cuda")
    assert any(words in p for p in problems), problems


@pytest.mark.parametrize("name", ["unavailable", "old-arch", "no-uuid", "no-memory"])
def test_the_committed_cuda_result_with_its_probe_edited_is_not_authentic(tmp_path, name):
    edit, words = EDITS[name]
    words = words.split(" is not in")[0].replace("arch 'sm_35'", "arch is 'sm_35'")  # the first problem named
    document = _edited(edit)
    assert document["ok"] is True and document["requirements"] == [
        {**document["requirements"][0], "name": "cuda", "ok": True}]
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[cuda].ok is recorded True, its facts say False" in p and words in p
               for p in report["problems"]), report["problems"]


def test_the_untouched_controls():
    assert problems_of(read_gate(json.loads(CUDA_RUN.read_text())), "cuda") == []
    assert problems_of(read_gate(json.loads(NO_GPU.read_text())), "cuda") != []


def test_a_ptx_of_the_same_major_covers_a_newer_minor():
    from rules.gpu_probe import cuda_arch_in_build

    assert cuda_arch_in_build("sm_90", ["sm_80", "compute_90"]) and cuda_arch_in_build("sm_86", ["compute_80"])
    assert not cuda_arch_in_build("sm_90", ["sm_80", "compute_80"]) and not cuda_arch_in_build("sm_80", ["compute_86"])
