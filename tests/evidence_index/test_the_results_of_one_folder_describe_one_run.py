"""The results of one folder describe one machine, one run and one GPU: a fact one file states and another file of
the same folder refutes is not authentic, naming both fields and the file it disagrees with.

Each row starts from a committed folder (the run-local gate and its CPU diagnostic, the H200 run's gate and GPU
diagnostic, the file-system results, the NFS VM's records, a training run beside its machine's gate), makes ONE
edit (a fact of one file, or another machine's result copied in), re-indexes and verifies the copy in this process
against the checkout that made it: refused, naming the odd file and what it disagrees with, and never the files
that agree. Each result of a folder is its own run, named for the file system it ran on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    CPU_DIAGNOSTIC,
    GPU_DIAGNOSTIC,
    NFS_COMMIT,
    RUN_LOCAL_GATE,
    SYSTEMD_COMMIT,
    FolderEdit,
    adding,
    assert_authentic,
    assert_refused,
    checkout_of,
    copied,
    edit_json,
    in_file,
    reindexed,
    row,
)

GATE, DIAGNOSTIC = "platform-runtime-cpu.json", "kernodeck-diagnostic-cpu.json"
CUDA, GPU = "platform-runtime-cuda.json", "kernodeck-diagnostic-gpu.json"
EXT4 = "platform-runtime-cpu-ext4-root.json"
NO_GIT = {"head": None, "error": "git is not installed", "dirty": None, "diff_sha256": None}


def run_local_pair(tmp_path: Path) -> Path:
    """The run-local folder's gate result and CPU diagnostic (its reprise run left out: a torch load each)."""
    return copied(tmp_path, "local/run-local", files=(GATE, DIAGNOSTIC))


def cuda_pair(tmp_path: Path) -> Path:
    """The committed H200 run's gate result and GPU diagnostic (its reprise run left out)."""
    return copied(tmp_path, "cuda/run", files=(CUDA, GPU))


def whole(relative: str) -> Any:
    return lambda tmp_path: copied(tmp_path, relative)


def training_run_beside_its_machines_gate(tmp_path: Path) -> Path:
    """The committed training run with the run-local gate copied beside it: the same machine and interpreter made
    both. A lone training run has no second view of its environment (docs/verdicts.md#without-torch): the gate
    is one."""
    folder = copied(tmp_path, "local/training-run")
    adding(GATE, RUN_LOCAL_GATE)(folder)
    return folder


def _versions_kernel(document: dict) -> None:
    document["kernel_release"] = "6.9.0-1-amd64"
    document["proc_version"] = document["proc_version"].replace("6.1.0-57-amd64", "6.9.0-1-amd64")


def _cuda(**facts: Any) -> Any:
    return lambda d: d["device"]["cuda"].update(facts)


def _python_suffixed(document: dict) -> None:
    document["platform"]["python"] += "x"


def _result_replaced_by_a_copy(folder: Path) -> None:
    shutil.copyfile(folder / EXT4, folder / "platform-runtime-cpu-btrfs-loop.json")


def _names_swapped(folder: Path) -> None:
    ext4, xfs = folder / EXT4, folder / "platform-runtime-cpu-xfs-loop.json"
    a, b = ext4.read_bytes(), xfs.read_bytes()
    ext4.write_bytes(b)
    xfs.write_bytes(a)


NFS = whole("nfs")
SYSTEMD = whole("nfs-systemd")
FILESYSTEMS = whole("local/filesystems")
CROSS = [
    # a GPU diagnostic is bound to its folder's run
    row("a GPU diagnostic swapped in for the CPU one", run_local_pair, adding(DIAGNOSTIC, GPU_DIAGNOSTIC),
        ("kernodeck-diagnostic-cpu.json: runtime.python is '3.12.3', but platform-runtime-cpu.json records "
         "platform.python '3.11.7'",
         "kernodeck-diagnostic-cpu.json: pytorch.version is '2.11.0+cu130', but platform-runtime-cpu.json records "
         "device.torch.version '2.13.0+cpu'"), None),
    row("a GPU diagnostic added beside the run-local results", run_local_pair, adding(GPU, GPU_DIAGNOSTIC),
        ("kernodeck-diagnostic-gpu.json: runtime.python is '3.12.3'",), GATE),
    row("a GPU diagnostic added to the file-system results", FILESYSTEMS, adding(GPU, GPU_DIAGNOSTIC),
        ("kernodeck-diagnostic-gpu.json: pytorch.version is '2.11.0+cu130'",), None),
    row("this machine's CPU diagnostic added to the H200 run", cuda_pair,
        adding("kernodeck-diagnostic.json", CPU_DIAGNOSTIC),
        ("kernodeck-diagnostic.json: runtime.python is '3.11.7', but kernodeck-diagnostic-gpu.json records "
         "runtime.python '3.12.3', platform-runtime-cuda.json records platform.python '3.12.3'",), CUDA),
    row("a GPU diagnostic counting other GPUs than its gate", cuda_pair,
        in_file(GPU, lambda d: d["pytorch"].update(gpu_count=2)),
        ("kernodeck-diagnostic-gpu.json: pytorch.gpu_count is 2, but platform-runtime-cuda.json records "
         "device.cuda.device_count 1", "platform-runtime-cuda.json: device.cuda.device_count is 1"), None),
    row("a gate counting other GPUs than its diagnostic", cuda_pair, in_file(CUDA, _cuda(device_count=2)),
        ("device.cuda.device_count is 2", "pytorch.gpu_count is 1"), None),
    row("a diagnostic of another system than its gate", run_local_pair,
        in_file(DIAGNOSTIC, lambda d: d["runtime"].update(system="windows")),
        ("platform-runtime-cpu.json: platform.system is 'Linux', but kernodeck-diagnostic-cpu.json records "
         "runtime.system 'windows': the results of one folder describe one machine and one run",
         "kernodeck-diagnostic-cpu.json: runtime.system is 'windows', but platform-runtime-cpu.json records "
         "platform.system 'Linux'"), None),
    # another machine's (or kernel's) results in a folder
    row("the NFS VM's gate added to the file-system results", FILESYSTEMS,
        adding("platform-runtime-nfs.json", "nfs/platform-runtime-nfs.json"),
        ("platform-runtime-nfs.json: platform.release is '6.1.0-57-amd64', but platform-runtime-cpu-btrfs-loop.json "
         "records platform.release '6.18.44-fc-v1045'",
         "platform-runtime-nfs.json: platform.python_build is 'main May 12 2026 05:17:27'"), None),
    row("the H200 run's gate added to the file-system results", FILESYSTEMS,
        adding(CUDA, "cuda/run/platform-runtime-cuda.json"),
        ("platform-runtime-cuda.json: platform.release is '6.18.44-fc-v657-gpu'",), None),
    row("two gates of two kernels, neither the most common", run_local_pair,
        lambda f: ((f / DIAGNOSTIC).unlink(), adding("platform-runtime-nfs.json", "nfs/platform-runtime-nfs.json")(f)),
        ("platform-runtime-cpu.json: platform.release is '6.18.44-fc-v1045', but platform-runtime-nfs.json records",
         "platform-runtime-nfs.json: platform.release is '6.1.0-57-amd64', but platform-runtime-cpu.json records"),
        None),
    row("the H200 gate's python with a suffix no Python writes", cuda_pair, in_file(CUDA, _python_suffixed),
        ("platform.python is '",), None),
    row("one ext4 gate's python with a suffix no Python writes", FILESYSTEMS, in_file(EXT4, _python_suffixed),
        ("platform-runtime-cpu-ext4-root.json: platform.python is '",), None),
    # the start-up files one interpreter's processes found
    row("a diagnostic hiding the .pth vector its gate found", run_local_pair,
        in_file(DIAGNOSTIC, lambda d: d["runtime"].update(injection_vectors=[])),
        ("kernodeck-diagnostic-cpu.json: runtime.injection_vectors (names '.pth') is False, but "
         "platform-runtime-cpu.json records isolation.executing_pth_files/accepted_pth_files (a code-running .pth "
         "found) True",), None),
    row("a diagnostic naming a sitecustomize its gate did not find", run_local_pair,
        in_file(DIAGNOSTIC, lambda d: d["runtime"].update(injection_vectors=[".pth", "sitecustomize"])),
        ("runtime.injection_vectors (names 'sitecustomize') is True, but platform-runtime-cpu.json records "
         "isolation.present or accepted_start_up (names 'sitecustomize') False",), None),
    row("a gate hiding the .pth files its diagnostic saw", run_local_pair,
        in_file(GATE, lambda d: d["isolation"].update(accepted_pth_files=[])),
        ("isolation.executing_pth_files/accepted_pth_files (a code-running .pth found) is False, but "
         "kernodeck-diagnostic-cpu.json records runtime.injection_vectors (names '.pth') True",), None),
    # one GPU, one set of facts
    row("a device of 1 MiB under the peak the run allocated", cuda_pair,
        in_file(CUDA, _cuda(total_memory_bytes=1048576)),
        ("platform-runtime-cuda.json: device.peak_allocated_bytes is 34613248, more than the device's "
         "device.cuda.total_memory_bytes 1048576",), None),
    row("a peak beyond the device's memory", cuda_pair,
        in_file(CUDA, lambda d: d["device"].update(peak_allocated_bytes=200000000000)),
        ("platform-runtime-cuda.json: device.peak_allocated_bytes is 200000000000, more than the device's",), None),
    row("a gate naming an H100 beside a diagnostic's H200", cuda_pair,
        in_file(CUDA, _cuda(name="NVIDIA H100 80GB HBM3")),
        ("platform-runtime-cuda.json: device.cuda.name is 'NVIDIA H100 80GB HBM3', but kernodeck-diagnostic-gpu.json "
         "records execution.gpu_model 'NVIDIA H200'",), None),
    row("a gate counting 80 GB beside a diagnostic's 141", cuda_pair,
        in_file(CUDA, _cuda(total_memory_bytes=85899345920)),
        ("platform-runtime-cuda.json: device.cuda.total_memory_bytes is 85899345920, but "
         "kernodeck-diagnostic-gpu.json records execution.total_memory_bytes 150109880320",), None),
    row("a diagnostic counting 80 GB beside its gate's 141", cuda_pair,
        in_file(GPU, lambda d: d["execution"].update(total_memory_bytes=85899345920)),
        ("kernodeck-diagnostic-gpu.json: execution.total_memory_bytes is 85899345920, but platform-runtime-cuda.json "
         "records device.cuda.total_memory_bytes 150109880320",), None),
    row("a diagnostic of an sm_80 beside its gate's sm_90", cuda_pair,
        in_file(GPU, lambda d: d["execution"].update(capability="sm_80")),
        ("kernodeck-diagnostic-gpu.json: execution.capability is 'sm_80', but platform-runtime-cuda.json records "
         "device.cuda.capability '9.0'",), None),
    row("nvidia-smi listing less memory than torch counted", cuda_pair,
        in_file(GPU, lambda d: d["host_check"]["gpus"][0].update(memory_total_mib=81559)),
        ("more than nvidia-smi's host_check.gpus[0].memory_total_mib 81559",), None),
    row("the kernel driver's version deleted", cuda_pair, in_file(CUDA, _cuda(kernel_driver=None)),
        ("platform-runtime-cuda.json: device.cuda.kernel_driver is None",), None),
    row("a driver older than the build's CUDA", cuda_pair, in_file(CUDA, _cuda(driver_version=12080)),
        ("platform-runtime-cuda.json: device.cuda.driver_version is 12080 (CUDA 12.8), below the build's "
         "device.cuda.compiled_cuda '13.0'",), None),
    row("a CUDA runtime of another major", cuda_pair, in_file(CUDA, _cuda(runtime_version=12040)),
        ("platform-runtime-cuda.json: device.cuda.runtime_version is 12040 (CUDA 12.4)",), None),
    row("a gate's capability and arch of an sm_80 beside its diagnostic's sm_90", cuda_pair,
        in_file(CUDA, _cuda(capability="8.0", arch="sm_80")),
        ("platform-runtime-cuda.json: device.cuda.arch is 'sm_80', but kernodeck-diagnostic-gpu.json records "
         "execution.capability 'sm_90'",), None),
    # the NFS VM's kernel, recorded by every record of its folder
    row("the guest's kernel edited in its versions", NFS, in_file("versions.json", _versions_kernel),
        ("versions.json: kernel_release is '6.9.0-1-amd64', but",
         "versions.json: proc_version (read as release) is '6.9.0-1-amd64', but"), "two-clients.json"),
    row("the guest's kernel package edited in its /proc/version", NFS, in_file("versions.json", lambda d: d.update(
        proc_version=d["proc_version"].replace("6.1.192-3", "6.9.7-1"))),
        ("versions.json: proc_version (read as kernel_package_version) is '6.9.7-1', but",
         "kernel_package_version '6.1.192-3'"), "two-clients.json"),
    row("the image's kernel package edited", NFS,
        in_file("nfsvm-image.json", lambda d: d.update(kernel_package="linux-image-6.9.0-1-amd64")),
        ("nfsvm-image.json: kernel_package (read as release) is '6.9.0-1-amd64', but",), "two-clients.json"),
    row("the image's kernel release and package edited together", NFS, in_file("nfsvm-image.json", lambda d: d.update(
        kernel_release="6.9.0-1-amd64", kernel_package="linux-image-6.9.0-1-amd64")),
        ("nfsvm-image.json: kernel_release is '6.9.0-1-amd64', but",), "two-clients.json"),
    row("the run's kernel release edited", NFS, in_file("nfs-vm-run.json", lambda d: d.update(
        kernel_release="6.9.0-1-amd64")), ("nfs-vm-run.json: kernel_release is '6.9.0-1-amd64', but",),
        "two-clients.json"),
    row("the action gate's kernel release edited", NFS, in_file("platform-runtime-nfs.json", lambda d: d[
        "platform"].update(release="6.9.0-1-amd64")), ("platform-runtime-nfs.json: platform.release is "
                                                       "'6.9.0-1-amd64', but",), "two-clients.json"),
    row("the guest's nfs-kernel-server version edited", NFS, in_file("versions.json", lambda d: d["packages"].update(
        {"nfs-kernel-server": "1:2.6.3-1"})), ("versions.json: packages.nfs-kernel-server is '1:2.6.3-1', but",),
        "two-clients.json"),
    row("a gate of another kernel beside the VM's records", NFS,
        adding("server-restart-gate.json", "local/filesystems/" + EXT4),
        ("server-restart-gate.json: platform.release is '6.18.44-fc-v1045', but",), None),
    row("the systemd VM's install under another init", SYSTEMD, in_file("install.json", lambda d: d.update(
        pid1="busybox")), ("install.json: pid1 is 'busybox', but",), None),
    row("the systemd VM's run under another init", SYSTEMD, in_file("nfs-vm-run.json", lambda d: d.update(
        init="busybox")), ("nfs-vm-run.json: init is 'busybox', but",), None),
    row("the systemd VM's install of another package", SYSTEMD, in_file("install.json", lambda d: d.update(
        nfs_kernel_server="1:2.6.3-1")), ("install.json: nfs_kernel_server is '1:2.6.3-1', but",), None),
    # a training run's environment, where a gate of the same machine sits beside it
    row("a training run's summary naming another python than its gate", training_run_beside_its_machines_gate,
        in_file("training-run/summary.json", lambda d: d["environment"].update(python="3.12.3")),
        ("training-run/summary.json: environment.python is '3.12.3', but platform-runtime-cpu.json records "
         "platform.python '3.11.7'",), None),
    row("a training run's summary naming another torch than its gate", training_run_beside_its_machines_gate,
        in_file("training-run/summary.json", lambda d: d["environment"].update(torch="2.13.0+cu130")),
        ("training-run/summary.json: environment.torch is '2.13.0+cu130', but platform-runtime-cpu.json records "
         "device.torch.version '2.13.0+cpu'",), None),
    # one folder, one checkout; each result its own run, named for its file system
    row("one result saying git is not installed beside results naming a head", FILESYSTEMS,
        in_file(EXT4, lambda d: d["source"].update(git=NO_GIT)),
        (f"{EXT4}: source.git.head is 'none (git is not installed)', but",), None),
    row("a result replaced by another result's copy", FILESYSTEMS, _result_replaced_by_a_copy,
        ("platform-runtime-cpu-btrfs-loop.json: ", "the same bytes as platform-runtime-cpu-ext4-root.json",
         "names the file system 'btrfs', its filesystem.type is 'ext4'"), None),
    row("two results' names swapped", FILESYSTEMS, _names_swapped,
        ("names the file system 'xfs', its filesystem.type is 'ext4'",
         "names the file system 'ext4', its filesystem.type is 'xfs'"), None),
]

COMMITS = {"nfs": NFS_COMMIT, "nfs-systemd": SYSTEMD_COMMIT}


@pytest.mark.parametrize(("folder", "edit", "named", "spared"), CROSS)
def test_a_fact_another_file_of_the_folder_refutes_is_not_authentic(tmp_path, folder: Any, edit: FolderEdit,
                                                                    named: tuple[str, ...], spared: str | None) -> None:
    copy = folder(tmp_path)
    edit(copy)
    root = checkout_of(COMMITS[copy.name]) if copy.name in COMMITS else None
    report = reindexed(copy, source_root=root)
    assert_refused(report, *named)
    if spared is not None:  # the files that agree are not the odd ones
        assert not any(p.startswith(f"artifacts/{spared}") for p in report.problems), report.problems


# --- the controls -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", [
    row("the run-local gate and its diagnostic", run_local_pair),
    row("the H200 gate and its GPU diagnostic", cuda_pair),
    row("the file-system results", FILESYSTEMS),
    row("the NFS VM's folder", NFS),
    row("the systemd NFS VM's folder", SYSTEMD),
    row("a training run beside its machine's gate", training_run_beside_its_machines_gate),
])
def test_an_untouched_committed_folder_is_one_run(tmp_path, folder: Any) -> None:
    copy = folder(tmp_path)
    root = checkout_of(COMMITS[copy.name]) if copy.name in COMMITS else None
    report = reindexed(copy, source_root=root, verify_root=root)
    assert (report.outcome, report.problems) == ("pass", []), (report.problems, report.verdict)


@pytest.mark.parametrize("edit", [
    row("a fact the diagnostic does not record", in_file(DIAGNOSTIC, lambda d: d["runtime"].update(python=None))),
    row("a sitecustomize only the gate found, which can leave sys.modules",
        in_file(GATE, lambda d: d["isolation"].update(present=["sitecustomize"]))),
    row("environment vectors, each process's own", in_file(DIAGNOSTIC, lambda d: d["runtime"].update(
        injection_vectors=["PYTHONPATH", ".pth"]))),
    # Debian's python3 imports its own sitecustomize in both: the gate accepts it as the platform's
    # (isolation.accepted_start_up), the diagnostic lists it among its vectors; one file, no contradiction.
    row("a sitecustomize the gate accepted as the platform's own, which the diagnostic saw imported",
        lambda f: (in_file(GATE, lambda d: d["isolation"].update(accepted_start_up=[
            {"name": "sitecustomize.py", "kind": "sitecustomize"}]))(f),
                   in_file(DIAGNOSTIC, lambda d: d["runtime"].update(injection_vectors=[".pth", "sitecustomize"]))(f))),
])
def test_what_one_file_does_not_compare_is_no_contradiction(tmp_path, edit: FolderEdit) -> None:
    """Not compared across the folder (the gate's own rules may still judge the edit): no one-run problem."""
    folder = run_local_pair(tmp_path)
    edit(folder)
    report = reindexed(folder)
    assert not any("the results of one folder describe one machine and one run" in p for p in report.problems), \
        report.problems


def test_the_h200_runs_diagnostic_may_leave_out_its_sitecustomize(tmp_path) -> None:
    """Version 1 of the gate listed setuptools' .pth under executing_pth_files, beside a sitecustomize; a diagnostic
    listing the .pth alone is no contradiction, a gate hiding the .pth is."""
    folder = cuda_pair(tmp_path)
    edit_json(folder / GPU, lambda d: d["runtime"].update(injection_vectors=[".pth"]))
    assert_authentic(reindexed(folder))
    edit_json(folder / CUDA, lambda d: d["isolation"].update(executing_pth_files=[]))
    assert_refused(reindexed(folder), "kernodeck-diagnostic-gpu.json records runtime.injection_vectors (names '.pth') "
                                      "True")

