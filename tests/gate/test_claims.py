"""--require conditions hold only on positive evidence, and impossible combinations are refused."""

from __future__ import annotations

import pytest
from platform_runtime.claims import PHASES, Requirements, conflicts, evaluate


def phases(kind: str, **changes) -> dict:
    record = {"tensor_devices": [kind], "on_device": True, "synchronized": True, "allocated_bytes": 4096,
              "resident_bytes": 8192}
    return {name: {**record, **changes.get(name, {})} for name in PHASES}


# The worker's probe of the GPU, as the committed H200 run recorded it (evidence/cuda/run; its UUID replaced).
H200_PROBE = {"backend": "cuda", "available": True, "availability_warnings": 0, "driver_too_old_warning": False,
              "device_count": 1, "name": "NVIDIA H200",
              "total_memory_bytes": 150109880320, "uuid": "00000000-1111-2222-3333-444444444444",
              "capability": "9.0", "arch": "sm_90", "arch_in_build": True,
              "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]}
# ROCm's from device_resolve.probe_cuda's rule (no AMD GPU has been lent: written from the code, not recorded).
MI300_PROBE = {"backend": "rocm", "available": True, "availability_warnings": 0, "driver_too_old_warning": False,
               "device_count": 1, "name": "AMD Instinct MI300X",
               "total_memory_bytes": 205520896000, "uuid": None, "arch": "gfx942", "arch_in_build": True,
               "arch_list": ["gfx90a", "gfx942"], "compiled_cuda": None, "compiled_hip": "6.4"}
CPU_DEVICE = {"type": "cpu", "resolved": "cpu", "ran_on": ["cpu"], "peak_allocated_bytes": None}
CUDA_DEVICE = {"type": "cuda", "resolved": "cuda:0", "ran_on": ["cuda"], "peak_allocated_bytes": 1 << 20,
               "phases": phases("cuda"), "torch": {"cuda": "12.8", "hip": None},
               "torch_build": {"cuda": "12.8", "hip": None, "backend_libraries": ["libtorch_cuda.so"]},
               "cuda": {**H200_PROBE, "compiled_cuda": "12.8", "compiled_hip": None}, "build_cross_check": []}
ROCM_DEVICE = {**CUDA_DEVICE, "type": "rocm", "ran_on": ["rocm"], "phases": phases("rocm"),
               "torch": {"cuda": None, "hip": "6.4"},
               "torch_build": {"cuda": None, "hip": "6.4", "backend_libraries": ["libtorch_hip.so"]},
               "cuda": MI300_PROBE}
# A fake MPS run (no Mac here): the judge's input as a passing MPS worker would report it.
FAKE_MPS_DEVICE = {"type": "mps", "resolved": "mps", "ran_on": ["mps"], "peak_allocated_bytes": 4096,
                   "phases": phases("mps"), "mps": {"built": True, "available": True, "fallback_env_set": False},
                   "torch": {"cuda": None, "hip": None}, "torch_build": {"cuda": None, "hip": None},
                   "build_cross_check": []}
EXT4 = {"type": "ext4", "method": "linux-mountinfo-mnt-id", "nfs_version": None}
NFS4 = {"type": "nfs4", "method": "linux-mountinfo-mnt-id", "nfs_version": "4.2",
        "mount_options": ["rw", "vers=4.2", "hard", "proto=tcp", "sec=sys", "local_lock=none"]}
NTFS = {"type": "ntfs", "method": "win32-GetVolumeInformationW", "drive_type": "fixed"}


WINDOWS_VERSION = "10.0.26100"


def verdict(platforms=(), device=None, fs=None, system="Linux", dev=CPU_DEVICE, ok=True, filesystem=EXT4,
            windows_version=None):
    if windows_version is None and system == "Windows":
        windows_version = WINDOWS_VERSION
    facts = {"system": system, "windows_version": windows_version}
    return evaluate(Requirements(tuple(platforms), device, fs), facts, dev, ok, filesystem)


def test_no_conflict_for_a_satisfiable_set():
    assert conflicts(Requirements(("cuda", "nfs"), "cuda", "nfs4"), "cuda:1") == []


def test_cuda_holds_only_when_the_work_ran_and_allocated_on_cuda():
    assert verdict(["cuda"], dev=CUDA_DEVICE)[0]["ok"] is True
    assert verdict(["cuda"], dev=CPU_DEVICE)[0]["ok"] is False
    assert verdict(["cuda"], dev={**CUDA_DEVICE, "ran_on": ["cpu", "cuda"]})[0]["ok"] is False
    assert verdict(["cuda"], dev=CUDA_DEVICE, ok=False)[0]["ok"] is False


@pytest.mark.parametrize("phase, change, words", [
    ("matmul", {"allocated_bytes": 0}, "allocated nothing"),
    ("training", {"allocated_bytes": None}, "allocated nothing"),
    ("checkpoint_load", {"allocated_bytes": 0}, "allocated nothing"),
    ("checkpoint_save", {"resident_bytes": 0}, "no memory resident"),
    ("training", {"tensor_devices": ["cpu", "cuda"], "on_device": False}, "not only on cuda"),
    ("checkpoint_save", {"synchronized": False}, "not synchronized"),
])
def test_cuda_is_proven_phase_by_phase(phase, change, words):
    # The start-up probe's allocation no longer carries the claim: each phase must show its own.
    refused = verdict(["cuda"], dev={**CUDA_DEVICE, "phases": phases("cuda", **{phase: change})})[0]
    assert refused["ok"] is False and phase in refused["reason"] and words in refused["reason"]
    missing = {k: v for k, v in CUDA_DEVICE["phases"].items() if k != phase}
    assert verdict(["cuda"], dev={**CUDA_DEVICE, "phases": missing})[0]["ok"] is False


def test_rocm_is_named_rocm_and_does_not_satisfy_cuda():
    assert verdict(["rocm"], dev=ROCM_DEVICE)[0]["ok"] is True
    refused = verdict(["cuda"], dev=ROCM_DEVICE)[0]
    assert refused["ok"] is False and "ROCm" in refused["reason"]
    assert verdict(["rocm"], dev=CUDA_DEVICE)[0]["ok"] is False
    assert conflicts(Requirements(("rocm",), None, None), "cuda:0") == []


def test_mps_holds_only_on_mps():
    assert verdict(["mps"], dev=FAKE_MPS_DEVICE, system="Darwin")[0]["ok"] is True
    assert verdict(["mps"], dev={**FAKE_MPS_DEVICE, "phases": phases("mps", matmul={"resident_bytes": 0})},
                   system="Darwin")[0]["ok"] is False


def test_mps_fallback_in_the_environment_fails_require_mps_saying_so():
    refused = evaluate(Requirements(("mps",), None, None), {"system": "Darwin"}, FAKE_MPS_DEVICE, True, EXT4,
                       {"PYTORCH_ENABLE_MPS_FALLBACK": True})[0]
    assert refused["ok"] is False and "PYTORCH_ENABLE_MPS_FALLBACK is set" in refused["reason"]


def test_nfs_holds_only_for_an_nfs_mount_found_in_mountinfo():
    assert verdict(["nfs"], filesystem=NFS4)[0]["ok"] is True
    refused = verdict(["nfs"], filesystem=EXT4)[0]
    assert refused["ok"] is False and "ext4" in refused["reason"]
    # A Windows volume named NFS is not Linux mountinfo evidence.
    assert verdict(["nfs"], system="Windows", filesystem={**NTFS, "type": "nfs"})[0]["ok"] is False


def test_nfs_needs_the_version_its_mount_options_name():
    refused = verdict(["nfs"], filesystem={**NFS4, "nfs_version": None})[0]
    assert refused["ok"] is False and "NFS version" in refused["reason"]
    refused = verdict(["nfs"], filesystem={**NFS4, "method": "linux-mountinfo-unmatched"})[0]
    assert refused["ok"] is False and "not found in mountinfo" in refused["reason"]


@pytest.mark.parametrize(("options", "words"), [
    (["rw", "vers=4.2", "hard", "proto=tcp", "sec=sys", "local_lock=all"], "local_lock=all"),
    (["rw", "vers=4.2", "soft", "proto=tcp", "sec=sys", "local_lock=none"], "show soft"),
    (["rw", "vers=4.2", "hard", "nolock", "proto=tcp", "sec=sys", "local_lock=none"], "show nolock"),
    (["rw", "vers=4.2", "proto=tcp", "sec=sys", "local_lock=none"], "show no hard"),
    (["rw", "vers=4.2", "hard", "proto=tcp", "sec=sys"], "local_lock=(none shown)"),
], ids=["local-locks", "soft", "nolock", "no-hard", "no-local-lock"])
def test_nfs_needs_a_hard_mount_whose_locks_reach_the_server(options, words):
    refused = verdict(["nfs"], filesystem={**NFS4, "mount_options": options})[0]
    assert refused["ok"] is False and words in refused["reason"], refused


def test_windows_needs_the_platform_and_the_volume_api():
    assert verdict(["windows"], system="Windows", filesystem=NTFS)[0]["ok"] is True
    assert verdict(["windows"], system="Linux", filesystem=EXT4)[0]["ok"] is False
    assert verdict(["windows"], system="Windows", filesystem={**NTFS, "type": None})[0]["ok"] is False


@pytest.mark.parametrize("filesystem, windows_version, words", [
    ({**NTFS, "type": "ext4"}, WINDOWS_VERSION, "not a Windows file system"),
    ({**NTFS, "mount_id": 27}, WINDOWS_VERSION, "a Linux mount"),
    (NTFS, "", "windows_version is not recorded"),
])
def test_windows_holds_only_when_every_windows_fact_agrees(filesystem, windows_version, words):
    # The same rule the evidence index proves a windows platform with (rules.platforms.windows_problems).
    refused = verdict(["windows"], system="Windows", filesystem=filesystem, windows_version=windows_version)[0]
    assert refused["ok"] is False and words in refused["reason"]


def test_the_gate_and_the_index_use_one_rule_per_file_system_platform():
    from platform_runtime import claims
    from rules import platforms

    assert claims.windows_problems is platforms.windows_problems and claims.nfs_problems is platforms.nfs_problems


def test_fine_grained_filesystem_requirement():
    assert verdict(fs="nfs", filesystem=NFS4)[0]["ok"] is True
    assert verdict(fs="EXT4")[0]["ok"] is True
    assert verdict(fs="xfs")[0]["ok"] is False


def test_github_run_is_recorded_field_by_field_and_only_inside_actions():
    from common.provenance import github_facts

    assert github_facts({"GITHUB_SHA": "a" * 40}) is None
    env = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "a" * 40, "GITHUB_RUN_ID": "33304800747",
           "GITHUB_RUN_ATTEMPT": "2", "PLATFORM_RUNTIME_JOB_ID": "99239323612", "GITHUB_TOKEN": "ghs_secret",
           "RUNNER_NAME": "private-box", "HOME": "/home/someone"}
    facts = github_facts(env)
    assert facts["run_id"] == "33304800747" and facts["run_attempt"] == "2" and facts["job_id"] == "99239323612"
    text = repr(facts)
    assert "ghs_secret" not in text and "private-box" not in text and "/home/someone" not in text


# The device block of a real result: NVIDIA H200, torch 2.11.0+cu130, from the gate before per-phase proof
# (lent machine, 2026-11-30). Its only memory evidence is one cumulative peak since process start.
H200_BEFORE_PHASES = {"requested": "cuda", "resolved": "cuda:0", "type": "cuda", "ran_on": ["cuda"],
                      "peak_allocated_bytes": 68172288,
                      "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None},
                      "cuda": {"backend": "cuda", "available": True, "capability": "9.0", "name": "NVIDIA H200"}}


def test_a_cumulative_peak_alone_no_longer_proves_cuda():
    refused = verdict(["cuda"], dev=H200_BEFORE_PHASES)[0]
    assert refused["ok"] is False and "phase matmul was not measured" in refused["reason"]
    # With the phases, the build's files and an empty cross-check (what a gate of today records), it holds.
    now = {**H200_BEFORE_PHASES, "phases": phases("cuda"),
           "torch_build": {"cuda": "13.0", "hip": None, "backend_libraries": ["libtorch_cuda.so"]},
           "cuda": {**H200_PROBE, "compiled_cuda": "13.0", "compiled_hip": None}, "build_cross_check": []}
    assert verdict(["cuda"], dev=now)[0]["ok"] is True


def test_the_kernel_driver_version_is_read_as_nvidia_smi_shows_it():
    from platform_runtime.device_resolve import kernel_driver_version

    text = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
            "(dvs-builder@U22-I3-AF03-09-1)  Thu Oct 30 2026\nGCC version:  gcc version 13.3.0\n")
    assert kernel_driver_version(text) == "580.159.04"
    assert kernel_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Tue\n") == "550.54.14"
    assert kernel_driver_version("") is None


def test_the_build_decides_which_device_claims_are_possible():
    from platform_runtime.torch_build import build_supports, cross_check

    h200 = {"version": "2.11.0+cu130", "cuda": "13.0", "hip": None, "backend_libraries": ["libtorch_cuda.so"]}
    assert build_supports(h200, "cuda") is None and "ROCm" in build_supports(h200, "rocm")
    cpu = {"version": "2.13.0+cpu", "cuda": None, "hip": None, "backend_libraries": []}
    assert "without CUDA" in build_supports(cpu, "cuda")
    assert "macOS" in build_supports(cpu, "mps", system="Linux")
    # The H200's worker record was made before the worker wrote from_named_directory (device_worker.import_torch
    # now always records True, having refused any other torch): the current worker's record is that plus it.
    worker = {**H200_BEFORE_PHASES["torch"], "from_named_directory": True}
    assert cross_check(h200, worker, "cuda") == []
    assert cross_check(cpu, worker, "cuda")  # the worker's torch is not the installed one


@pytest.mark.parametrize("device, change, words", [
    (CUDA_DEVICE, {"torch_build": {"cuda": None, "hip": None}}, "not a CUDA one"),
    (CUDA_DEVICE, {"torch": {"cuda": None, "hip": None}}, "not a CUDA one"),
    (CUDA_DEVICE, {"build_cross_check": ["the worker's torch is 2.1.0"]}, "build_cross_check"),
    (ROCM_DEVICE, {"torch_build": {"cuda": None, "hip": None}}, "not a ROCm one"),
    (FAKE_MPS_DEVICE, {"mps": {"built": True, "available": True, "fallback_env_set": True}}, "was set"),
    (FAKE_MPS_DEVICE, {"mps": None}, "not built and available"),
])
def test_a_gpu_claim_needs_a_build_of_that_backend(device, change, words):
    kind = device["type"]
    refused = verdict([kind], dev={**device, **change}, system="Darwin" if kind == "mps" else "Linux")[0]
    assert refused["ok"] is False and words in refused["reason"], refused

