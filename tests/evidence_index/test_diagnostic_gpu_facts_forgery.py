"""A diagnostic's GPU pass rests on its own torch facts (rules.diagnostic.gpu_build_problems): the committed
GPU report (evidence/cuda/run) edited one `pytorch.*` or `execution.*` fact at a time, its `status`, `code` and
`exit_code` left passing, then indexed alone (`build_evidence_index.py local`) and verified. Each is refused as
not authentic (exit 3) naming the field (the outside review's F2); the untouched report passes (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rules.registry import judge

from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json, rebuild_and_verify

GPU = EVIDENCE / "cuda" / "run" / "kernodeck-diagnostic-gpu.json"
CPU = EVIDENCE / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"


def alone(tmp_path: Path, source: Path, change=None) -> Path:
    folder = tmp_path / "diagnostic"
    folder.mkdir()
    (folder / source.name).write_bytes(source.read_bytes())
    if change is not None:
        edit_json(folder / source.name, change)
    return folder


def test_the_committed_gpu_diagnostic_passes_alone(tmp_path):
    code, report = rebuild_and_verify(alone(tmp_path, GPU))
    assert (code, report["outcome"]) == (0, "pass"), report


# (edit, what the refusal names)
FORGERIES = {
    "cpu-wheel": (lambda d: d["pytorch"].update(version="2.13.0+cpu"),
                  "pytorch.version is '2.13.0+cpu', a CPU wheel"),
    "no-gpu-available": (lambda d: d["pytorch"].update(gpu_available=False),
                         "pytorch.gpu_available is False, a GPU pass needs true"),
    "no-gpu-counted": (lambda d: d["pytorch"].update(gpu_count=0), "pytorch.gpu_count is 0"),
    "device-beyond-count": (lambda d: d["execution"].update(device="cuda:3"),
                            "execution.device is 'cuda:3', not one of the 1 GPU(s) pytorch.gpu_count counts"),
    "no-backend": (lambda d: d["pytorch"].update(backend="none", cuda=None),
                   "pytorch.backend is 'none'"),
    "ran-on-another-backend": (lambda d: d["execution"].update(backend="cpu"),
                               "execution.backend is 'cpu', the build's pytorch.backend is 'cuda'"),
    "no-cuda-version": (lambda d: d["pytorch"].update(cuda=None),
                        "pytorch.backend is 'cuda', its pytorch.cuda None and pytorch.hip None declare 'none'"),
    "hip-added": (lambda d: d["pytorch"].update(hip="x"),
                  "pytorch.backend is 'cuda', its pytorch.cuda '13.0' and pytorch.hip 'x' declare 'rocm'"),
    "no-gpu-model": (lambda d: d["execution"].update(gpu_model=None), "execution.gpu_model is None"),
    "no-capability": (lambda d: d["execution"].update(capability=None), "execution.capability is None"),
    "stopped-before-the-compute": (lambda d: d.update(stage="import"),
                                   "code is 'GPU_CHECK_PASSED' but stage is 'import'"),
    "version-tag-another-cuda": (lambda d: d["pytorch"].update(version="2.11.0+cu128"),
                                 "pytorch.version: the installed build's version 2.11.0+cu128 names CUDA 12.8"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_gpu_pass_its_own_torch_facts_contradict_is_not_authentic(tmp_path, name):
    change, named = FORGERIES[name]
    assert_refused(*rebuild_and_verify(alone(tmp_path, GPU, change)),
                   f"status is recorded 'passed', its measurements say it failed ({named}")


def test_a_cpu_pass_that_ran_on_a_gpu_backend_is_not_authentic(tmp_path):
    folder = alone(tmp_path, CPU, lambda d: d["execution"].update(backend="cuda"))
    assert_refused(*rebuild_and_verify(folder), "code is 'CPU_CHECK_PASSED' but execution.backend is 'cuda'")


def test_a_cpu_pass_that_stopped_at_the_import_is_not_authentic(tmp_path):
    folder = alone(tmp_path, CPU, lambda d: d.update(stage="import"))
    assert_refused(*rebuild_and_verify(folder), "code is 'CPU_CHECK_PASSED' but stage is 'import'")


def test_a_rocm_pass_is_judged_by_its_hip_build():
    report = json.loads(GPU.read_text())
    report["pytorch"].update(version="2.11.0+rocm6.4", cuda=None, hip="6.4.43482", backend="rocm")
    report["execution"].update(backend="rocm", capability="gfx942")
    assert judge(report).ok, judge(report).reasons
    report["pytorch"]["hip"] = "6.2.1"
    assert "names ROCm 6.4, its version.py HIP 6.2.1" in judge(report).forged[0]
