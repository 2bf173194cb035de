"""One GPU, one set of facts (rules.one_gpu; the outside review r3, findings 6-8): the committed CUDA run's
gate result and GPU diagnostic (evidence/cuda/run, made by 7f0a071's sources) copied, one fact of one of them
edited, re-indexed and verified against that checkout. Each is refused as not authentic (exit 3) naming the
field; the untouched pair stays authentic."""

from __future__ import annotations

import pytest

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.test_crossfile_forgery import assert_refused, edit_json
from tests.evidence_index.test_one_run_forgery import cuda_pair, rebuild_and_verify_at


def rebuild_and_verify(folder):
    return rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT))  # the sources that made the CUDA run

GATE, DIAGNOSTIC = "platform-runtime-cuda.json", "kernodeck-diagnostic-gpu.json"


def _cuda(**facts):
    return lambda d: d["device"]["cuda"].update(facts)


# name: (file edited, edit, what the refusal names)
FORGERIES = {
    # 6: memory beyond the device's
    "total-memory-1-mib": (GATE, _cuda(total_memory_bytes=1048576),
                           "device.peak_allocated_bytes is 34613248, more than the device's "
                           "device.cuda.total_memory_bytes 1048576"),
    "peak-beyond-total": (GATE, lambda d: d["device"].update(peak_allocated_bytes=200000000000),
                          "device.peak_allocated_bytes is 200000000000, more than the device's"),
    # 7: the gate and the diagnostic, one visible GPU
    "gate-name-h100": (GATE, _cuda(name="NVIDIA H100 80GB HBM3"),
                       "device.cuda.name is 'NVIDIA H100 80GB HBM3', but kernodeck-diagnostic-gpu.json records "
                       "execution.gpu_model 'NVIDIA H200'"),
    "gate-memory-80g": (GATE, _cuda(total_memory_bytes=85899345920),
                        "device.cuda.total_memory_bytes is 85899345920, but kernodeck-diagnostic-gpu.json records "
                        "execution.total_memory_bytes 150109880320"),
    "diagnostic-memory-80g": (DIAGNOSTIC, lambda d: d["execution"].update(total_memory_bytes=85899345920),
                              "execution.total_memory_bytes is 85899345920, but platform-runtime-cuda.json records "
                              "device.cuda.total_memory_bytes 150109880320"),
    "diagnostic-capability-sm80": (DIAGNOSTIC, lambda d: d["execution"].update(capability="sm_80"),
                                   "execution.capability is 'sm_80', but platform-runtime-cuda.json records "
                                   "device.cuda.capability '9.0'"),
    "smi-memory-below-torch": (DIAGNOSTIC, lambda d: d["host_check"]["gpus"][0].update(memory_total_mib=81559),
                               "more than nvidia-smi's host_check.gpus[0].memory_total_mib 81559"),
    # 8: the driver
    "kernel-driver-deleted": (GATE, _cuda(kernel_driver=None), "device.cuda.kernel_driver is None"),
    "driver-below-build": (GATE, _cuda(driver_version=12080),
                           "device.cuda.driver_version is 12080 (CUDA 12.8), below the build's "
                           "device.cuda.compiled_cuda '13.0'"),
    "runtime-other-major": (GATE, _cuda(runtime_version=12040), "device.cuda.runtime_version is 12040 (CUDA 12.4)"),
    "capability-and-arch-sm80": (GATE, _cuda(capability="8.0", arch="sm_80"),
                                 "device.cuda.arch is 'sm_80', but kernodeck-diagnostic-gpu.json records "
                                 "execution.capability 'sm_90'"),
}


def test_the_untouched_cuda_pair_stays_authentic(tmp_path):
    code, report = rebuild_and_verify(cuda_pair(tmp_path))
    assert code in (0, 1) and not report["problems"], report["problems"]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_contradicted_gpu_fact_is_not_authentic(tmp_path, name):
    file, edit, words = FORGERIES[name]
    folder = cuda_pair(tmp_path)
    edit_json(folder / file, edit)
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, f"{file}: {words}" if words.startswith(("device.", "execution.")) else words)


def test_torch_counting_more_gpus_than_nvidia_smi_lists_is_refused():
    import json

    from rules.one_gpu import diagnostic_problems

    from tests.evidence_index.test_crossfile_forgery import EVIDENCE

    document = json.loads((EVIDENCE / "cuda" / "run" / DIAGNOSTIC).read_text())
    assert diagnostic_problems(document) == []
    document["pytorch"]["gpu_count"] = 2
    assert any("pytorch.gpu_count is 2, more than the 1 GPU(s) nvidia-smi lists" in p
               for p in diagnostic_problems(document))
