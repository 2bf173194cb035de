"""A real CPU gate result edited into a CUDA or ROCm one, as the adversarial review did (findings 3 and 4): every
phase, build and library fact moved to the GPU, `ok` and the requirement left true, and -- so that only the
views are left to catch it -- the worker's probe of the GPU written as a real one records it. What a gate on a
CPU cannot produce is still refused as not authentic (exit 3), naming the field: the kernel driver's list
recomputed from its facts (`device.views.driver`), libc10_cuda.so, which a CUDA torch always maps beside
libtorch_cuda.so, and on ROCm the worker's compiled HIP against the build's."""

from __future__ import annotations

import copy

import pytest
from rules.build_cross_check import recorded_cross_check
from rules.gate_record import read_gate
from rules.requirements import problems_of

from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture
from tests.gate.test_claims import H200_PROBE, MI300_PROBE


def _on_gpu(d: dict, kind: str) -> None:
    """The review's edit (/tmp/advw/cuda_edit.py, rocm_edit.py), less what finding 5 already refuses."""
    device, compute = d["device"], d["checks"]["device_compute"]
    d["arguments"].update(require=[kind], require_device=None)
    d["requirements"] = [{"name": kind, "ok": True, "reason": f"matmul, training, checkpoint save and load each ran "
                                                              f"on cuda:0 ({kind})"}]
    device.update(type=kind, resolved="cuda:0", ran_on=[kind], peak_allocated_bytes=4096)  # its phases' largest
    for name, phase in device["phases"].items():
        phase.update(tensor_devices=[kind], resident_bytes=68171776, on_device=True,
                     allocated_bytes=0 if name == "checkpoint_save" else 4096)
    compute.update(ran_on=[kind], phases=device["phases"], peak_allocated_bytes=4096)
    compute["matmul"]["device"] = compute["training"]["parameter_device"] = kind
    compute["checkpoint"]["saved_from_device"] = [kind]
    version = "2.13.0+cu130" if kind == "cuda" else "2.13.0+rocm6.4"
    backend = {"cuda": "13.0"} if kind == "cuda" else {"hip": "6.4.1"}
    dist_info = "torch-2.13.0.dist-info" if kind == "cuda" else "torch-2.13.0+rocm6.4.dist-info"
    library = "libtorch_cuda.so" if kind == "cuda" else "libtorch_hip.so"
    device["torch_build"].update(version=version, dist_info=dist_info, backend_libraries=[library], **backend)
    if "backend_files" in device["torch_build"]:  # a gate that reads the library's file: a real one's facts
        device["torch_build"]["backend_files"] = {library: {"bytes": 1_100_000_000, "format": "elf"}}
    device["torch"].update(version=version, **backend)
    device["views"]["mapped"]["torch_lib"].append(device["torch_build"]["backend_libraries"][0])
    if kind == "cuda":
        device["cuda"] = {**H200_PROBE, "compiled_cuda": "13.0", "compiled_hip": None}
        device["views"]["driver"] = {"listed": True}
        device["views"]["driver_access"] = {"devices_open": ["nvidiactl", "nvidia0"], "cuda_library": {
            "name": "libcuda.so.1", "from": "system", "deleted": False}}
    else:
        device["cuda"] = {**MI300_PROBE, "compiled_hip": None}  # the review left the worker's compiled HIP None
        device["views"]["driver_access"] = {"devices_open": ["kfd", "dri/renderD128"], "kfd_gpu_nodes": 1}


def _driver_view_whole(d: dict) -> None:  # every fact of a real listing, but libc10_cuda.so not mapped
    d["device"]["views"]["driver"] = {"listed": True, "source": "proc-driver-nvidia", "driver_gpus": 1,
                                      "reported_uuid_valid": True, "problem": None}


def _libc10_mapped(d: dict) -> None:  # libc10_cuda.so mapped, the driver view the review's one-key one
    d["device"]["views"]["mapped"]["torch_lib"].append("libc10_cuda.so")


@pytest.mark.parametrize("kind, extra, words", [
    ("cuda", _libc10_mapped, "device.views.driver.listed is recorded True, its facts do not allow it: "
                             "device.views.driver.source is None"),
    ("cuda", _driver_view_whole, "did not map libc10_cuda.so"),
    ("rocm", None, "device.cuda.compiled_hip is None, the installed build's torch_build.hip is '6.4.1'"),
], ids=["cuda-listed-alone", "cuda-no-libc10", "rocm-compiled-hip"])
def test_a_cpu_result_edited_into_a_gpu_one_is_not_authentic(tmp_path, real, kind, extra, words):  # noqa: F811
    document = copy.deepcopy(real)
    _on_gpu(document, kind)
    if extra:
        extra(document)
    assert document["ok"] is True and document["device"]["build_cross_check"] == []
    found = problems_of(read_gate(document), kind) + (recorded_cross_check(document["device"], "Linux") or [])
    assert any(words in p for p in found), found
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(words in p for p in report["problems"]), report["problems"]
