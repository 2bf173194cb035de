"""A gate result claiming a machine, a device, a file system or a platform its own facts refute is not authentic.

Each row starts from a real committed gate result (the run-local CPU run, the H200 run of evidence/cuda, the NFS
action's run of evidence/nfs), edits the claim (a requirement held, a device moved to a GPU, a type renamed, an
OS rewritten) with as many of the facts beside it as a forger would think of, and judges the bytes as the index
judges each result it binds: refused as not authentic, naming the fact left to refute it. A requirement is
re-derived from the result's facts (docs/verdicts.md), never taken as recorded."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    CUDA_GATE,
    EXT4,
    NFS_GATE,
    RUN_LOCAL_GATE,
    Edit,
    assert_forged,
    at,
    each,
    edited,
    judged,
    row,
    said,
    setting,
    updating,
)
from tests.gate.test_claims import H200_PROBE, MI300_PROBE
from tests.gate.test_driver_files import REAL_ACCESS, REAL_DRIVER


def held_against_its_facts(judgement: Any, requirement: str, detail: str) -> None:
    """Not authentic, and one line says the requirement is recorded held and names the fact that refutes it."""
    line = f"requirements[{requirement}].ok is recorded True, its facts say False"
    assert judgement.forged, said(judgement)
    assert any(line in why and detail in why for why in said(judgement)), (line, detail, said(judgement))


# --- a requirement recorded held, the one edit that claims it -----------------------------------------------

def _claim(name: str, asked: bool) -> Edit:
    def edit(document: dict) -> None:
        document["requirements"].append({"name": name, "ok": True, "reason": f"{name} as the gate measured it"})
        if asked:
            document["arguments"]["require"].append(name)
    return edit


def _require_filesystem(wanted: str, **fs: Any) -> Edit:
    def edit(document: dict) -> None:
        document["filesystem"].update(fs)
        document["arguments"]["require_filesystem"] = wanted
        document["requirements"].append({"name": f"filesystem={wanted}", "ok": True,
                                         "reason": f"the work dir's file system is {fs['type']}"})
    return edit


def _ext4_turned_nfs4(document: dict) -> None:
    document["filesystem"].update(type="nfs4", nfs_version="4.2")
    document["arguments"]["require"].append("nfs")
    document["requirements"].append({"name": "nfs", "ok": True, "reason": "the work dir's mount is nfs4, vers=4.2"})


def _nfs_turned_ext4(document: dict) -> None:
    document["filesystem"].update(type="ext4", nfs_version=None)
    document["arguments"].update(require=[], require_filesystem="ext4")
    document["requirements"] = [{"name": "filesystem=ext4", "ok": True,
                                 "reason": "the work dir's file system is ext4"}]


def _options(**changes: Any) -> Edit:
    def edit(document: dict) -> None:
        options = [o for o in document["filesystem"]["mount_options"] if o.split("=")[0] not in changes]
        document["filesystem"]["mount_options"] = options + [f"{k}={v}" for k, v in changes.items() if v is not None]
    return edit


def _without_option(option: str, *added: str) -> Edit:
    def edit(document: dict) -> None:
        fs = document["filesystem"]
        fs["mount_options"] = [o for o in fs["mount_options"] if o != option] + list(added)
    return edit


def _cpu_build(document: dict) -> None:
    document["device"]["torch_build"].update(cuda=None, backend_libraries=[], version="2.11.0+cpu")
    document["device"]["torch"].update(cuda=None, version="2.11.0+cpu")


def _phases_on_cpu(document: dict) -> None:
    for where in (document["device"], document["checks"]["device_compute"]):
        for record in where["phases"].values():
            record.update(tensor_devices=["cpu"], allocated_bytes=0)


def _nothing_allocated(document: dict) -> None:
    for where in (document["device"], document["checks"]["device_compute"]):
        where["phases"]["matmul"]["allocated_bytes"] = 0


def _all_of_it_on_the_cpu(document: dict) -> None:
    _cpu_build(document)
    _phases_on_cpu(document)
    for where in (document["device"], document["checks"]["device_compute"]):
        where["ran_on"] = ["cpu"]
        where["peak_allocated_bytes"] = 0
    document["checks"]["device_compute"]["matmul"]["device"] = "cpu"


def _probe(**facts: Any) -> Edit:
    return updating("device.cuda", **facts)


# The facts a Windows gate records differently, each one a Linux run's view of its system.
WINDOWS_VALUES = {
    "platform.release": "10", "platform.machine": "AMD64", "filesystem.mount_options": None,
    "filesystem.drive_type": "fixed", "checks.jsonl_append.method": "msvcrt-locking-lockfile",
    "checks.jsonl_append.lock_probe.method": "msvcrt-locking-lockfile", "device.views.mapped.observed": "not-linux",
    "device.torch_build.wheel_tags": ["cp311-cp311-win_amd64"], "device.torch_build.backend_libraries": [],
    "platform.python_compiler": "MSC v.1938 64 bit (AMD64)", "device.views.mapped.torch_lib": [],
    "platform.binaries.interpreter.format": "pe", "platform.binaries.torch_c.format": "pe",
    "platform.binaries.torch_c.name": "_C.cp311-win_amd64.pyd",
}
LINUX_FACTS = ["platform.release", "platform.machine", "filesystem.mount_options", "checks.jsonl_append.method",
               "checks.jsonl_append.lock_probe.method", "device.views.mapped.observed",
               "device.torch_build.wheel_tags", "platform.python_compiler", "device.views.mapped.torch_lib",
               "platform.binaries.interpreter.format", "platform.binaries.torch_c.format",
               "platform.binaries.torch_c.name"]


def _as_windows_but(keep: str | None) -> Edit:
    """Every OS fact made Windows's but `keep` (left as the gate recorded it on Linux), `windows` asked and held."""
    def edit(document: dict) -> None:
        document["platform"].update(system="Windows", windows_version="10.0.22631")
        document["filesystem"].update(type="ntfs", method="win32-GetVolumeInformationW", mount_id=None)
        for path, value in WINDOWS_VALUES.items():
            if path != keep:
                setting(path, value)(document)
        document["arguments"]["require"].append("windows")
        document["requirements"].append({"name": "windows", "ok": True, "reason": "Windows, volume file system ntfs"})
    return edit


def _as_windows_under_wine(ntdll_version: str | None, registry_key: bool) -> Edit:
    """Every OS fact made Windows's, as under Wine (its NTFS for Z: too), and Wine's answers as the gate records
    them: either one names Wine."""
    def edit(document: dict) -> None:
        _as_windows_but(None)(document)
        document["platform"]["wine"] = {"ntdll_version": ntdll_version, "registry_key": registry_key}
    return edit


REQUIREMENTS = [
    *(row(f"windows held on a run recording Wine (ntdll {version}, registry key {key})", RUN_LOCAL_GATE,
          _as_windows_under_wine(version, key), "windows", named)
      for version, key, named in (("8.0", True, "this ran under Wine 8.0 (platform.wine), not Windows"),
                                  ("8.0", False, "this ran under Wine 8.0"),
                                  (None, True, "this ran under Wine (its registry key HKLM\\Software\\Wine)"))),
    row("filesystem=ntfs held on a run recording Wine", RUN_LOCAL_GATE,
        each(_as_windows_under_wine("8.0", True), _require_filesystem("ntfs", type="ntfs")), "filesystem=ntfs",
        "which answers NTFS for its Z: drive"),
    *(row(f"{name} held{'' if asked else ' without being asked'} on a CPU ext4 run", RUN_LOCAL_GATE,
          _claim(name, asked), name, "") for name in ("nfs", "windows", "cuda", "mps", "rocm")
      for asked in (True, False)),
    *(row(f"windows held on Linux, {path} left as Linux recorded it", RUN_LOCAL_GATE, _as_windows_but(path),
          "windows", path) for path in LINUX_FACTS),
    row("filesystem=nfs held on an nfs4 type with no NFS version", RUN_LOCAL_GATE,
        _require_filesystem("nfs", type="nfs4"), "filesystem=nfs", "the mount's NFS version (vers=) is not recorded"),
    row("filesystem=nfs held on an NFSv3 type its ext4 options refute", RUN_LOCAL_GATE,
        _require_filesystem("nfs", type="nfs", nfs_version="3"), "filesystem=nfs", "name no vers="),
    row("filesystem=nfs4 held on an NFS 4.2 type its ext4 options refute", RUN_LOCAL_GATE,
        _require_filesystem("nfs4", type="nfs4", nfs_version="4.2"), "filesystem=nfs4", "name no vers="),
    row("filesystem=ntfs held on a type named by Linux's mountinfo", RUN_LOCAL_GATE,
        _require_filesystem("ntfs", type="ntfs"), "filesystem=ntfs",
        "filesystem.type 'ntfs' was named by 'linux-mountinfo-mnt-id'"),
    row("nfs held on an ext4 run renamed nfs4", RUN_LOCAL_GATE, _ext4_turned_nfs4, "nfs", "name no vers="),
    row("filesystem=ext4 held on the NFS run renamed ext4", NFS_GATE, _nfs_turned_ext4, "filesystem=ext4", "vers="),
    row("nfs held with an NFS version its options do not show", NFS_GATE, updating("filesystem", nfs_version="3"),
        "nfs", "filesystem.nfs_version is '3', its mount options say vers=4.2"),
    row("nfs held with options of another NFS version", NFS_GATE, _options(vers="3"), "nfs",
        "filesystem.nfs_version is '4.2', its mount options say vers=3"),
    row("nfs held on NFSv3 options under the nfs4 type", NFS_GATE,
        each(_options(vers="3"), updating("filesystem", nfs_version="3")), "nfs",
        "filesystem.type is 'nfs4' with NFS version '3'"),
    row("nfs held on options with no vers=", NFS_GATE, _options(vers=None), "nfs", "name no vers="),
    row("nfs held on options with no proto= and sec=", NFS_GATE, _options(proto=None, sec=None), "nfs",
        "filesystem.mount_options lack proto=, sec="),
    row("nfs held with every lock local", NFS_GATE, _options(local_lock="all"), "nfs", "local_lock=all"),
    row("nfs held with fcntl locks local", NFS_GATE, _options(local_lock="posix"), "nfs", "local_lock=posix"),
    row("nfs held with no local_lock shown", NFS_GATE, _options(local_lock=None), "nfs", "local_lock=(none shown)"),
    row("nfs held on a soft mount", NFS_GATE, _without_option("hard", "soft"), "nfs", "show soft"),
    row("nfs held on a mount that is not hard", NFS_GATE, _without_option("hard"), "nfs", "show no hard"),
    row("nfs held on a softerr mount", NFS_GATE, lambda d: d["filesystem"]["mount_options"].append("softerr"), "nfs",
        "show softerr"),
    row("nfs held on a nolock mount", NFS_GATE, lambda d: d["filesystem"]["mount_options"].append("nolock"), "nfs",
        "show nolock"),
    row("cuda held on a CPU build", CUDA_GATE, _cpu_build, "cuda", "(the torch build is not a CUDA one"),
    row("cuda held with every phase on the CPU", CUDA_GATE, _phases_on_cpu, "cuda", ""),
    row("cuda held on a matmul that allocated nothing", CUDA_GATE, _nothing_allocated, "cuda",
        "(phase matmul allocated nothing"),
    row("cuda held on a CPU build whose every phase ran on the CPU", CUDA_GATE, _all_of_it_on_the_cpu, "cuda", ""),
    row("cuda held on a CPU version of the build", CUDA_GATE,
        lambda d: d["device"]["torch_build"].update(version="2.11.0+cpu"), "cuda", "torch_build.version '2.11.0+cpu'"),
    row("cuda held on a CPU build's dist-info", CUDA_GATE,
        lambda d: d["device"]["torch_build"].update(dist_info="torch-2.11.0+cpu.dist-info"), "cuda",
        "torch_build.dist_info 'torch-2.11.0+cpu.dist-info'"),
    row("cuda held on a worker whose torch is a CPU one", CUDA_GATE,
        lambda d: d["device"]["torch"].update(version="2.11.0+cpu"), "cuda", "the worker's torch.version '2.11.0+cpu'"),
    row("cuda held on a build with no CUDA library", CUDA_GATE,
        lambda d: d["device"]["torch_build"].update(backend_libraries=[]), "cuda",
        "torch_build.backend_libraries is []"),
    # the worker's own probe of the GPU backs a cuda claim, each of its facts
    row("cuda held on a probe that found no GPU available", CUDA_GATE, _probe(available=False, device_count=0), "cuda",
        "device.cuda.available is False"),
    row("cuda held on a probe that counted no GPU", CUDA_GATE, _probe(device_count=0), "cuda",
        "device.cuda.device_count is 0"),
    row("cuda held on a probe of an arch its capability refutes", CUDA_GATE, _probe(arch="sm_35"), "cuda",
        "device.cuda.arch is 'sm_35'"),
    row("cuda held on a probe of an old GPU the build has no arch for", CUDA_GATE,
        _probe(arch="sm_35", capability="3.5"), "cuda", "device.cuda.arch 'sm_35' is not in the build's arch_list"),
    row("cuda held on a probe whose arch is recorded outside the build", CUDA_GATE, _probe(arch_in_build=False),
        "cuda", "device.cuda.arch_in_build is recorded False"),
    row("cuda held on a probe of no UUID", CUDA_GATE, _probe(uuid=None), "cuda", "device.cuda.uuid is None"),
    row("cuda held on a probe of a UUID no GPU has", CUDA_GATE, _probe(uuid="GPU-0"), "cuda",
        "device.cuda.uuid is 'GPU-0'"),
    row("cuda held on a probe of no memory", CUDA_GATE, _probe(total_memory_bytes=0), "cuda",
        "device.cuda.total_memory_bytes is 0"),
    row("cuda held on a probe of a GPU with no name", CUDA_GATE, _probe(name=""), "cuda", "device.cuda.name is ''"),
    row("cuda held on a probe of a build with no arch list", CUDA_GATE, _probe(arch_list=[]), "cuda",
        "device.cuda.arch_list is []"),
    row("cuda held on a probe whose capability names another arch", CUDA_GATE, _probe(capability="8.0"), "cuda",
        "its capability '8.0' says sm_80"),
    row("cuda held on a probe of a worker compiled for HIP", CUDA_GATE, _probe(compiled_hip="6.4"), "cuda",
        "device.cuda.compiled_hip is '6.4'"),
    row("cuda held on a probe of a worker compiled for another CUDA", CUDA_GATE, _probe(compiled_cuda="12.8"), "cuda",
        "device.cuda.compiled_cuda is '12.8'"),
    row("cuda held on a probe of the ROCm backend", CUDA_GATE, _probe(backend="rocm"), "cuda",
        "device.cuda.backend is 'rocm'"),
    row("cuda held with no probe of the GPU", CUDA_GATE, setting("device.cuda", None), "cuda", "device.cuda is None"),
    row("cuda held on a probe that warned the driver is too old", CUDA_GATE, _probe(driver_too_old_warning=True),
        "cuda", "device.cuda.driver_too_old_warning is True"),
    row("cuda held on a probe whose availability check warned", CUDA_GATE, _probe(availability_warnings=1), "cuda",
        "device.cuda.availability_warnings is 1"),
]


@pytest.mark.parametrize(("start", "edit", "requirement", "detail"), REQUIREMENTS)
def test_a_requirement_recorded_held_against_its_facts_is_not_authentic(start: str, edit: Edit, requirement: str,
                                                                        detail: str) -> None:
    document = edited(start, edit)
    assert document["ok"] is True
    held_against_its_facts(judged(document), requirement, detail)


# --- the claims a forger moves with the requirement, and the one fact left ------------------------------------

def _on_gpu(kind: str) -> Edit:
    """A CPU result moved to a GPU: every phase, build and library fact, and the worker's probe written as a real
    GPU records it, so that only the views are left to refuse it."""
    def edit(document: dict) -> None:
        device, compute = document["device"], document["checks"]["device_compute"]
        document["arguments"].update(require=[kind], require_device=None)
        document["requirements"] = [{"name": kind, "ok": True, "reason": f"matmul, training, checkpoint save and load "
                                                                         f"each ran on cuda:0 ({kind})"}]
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
        device["views"]["mapped"]["torch_lib"].append(library)
        if kind == "cuda":
            device["cuda"] = {**H200_PROBE, "compiled_cuda": "13.0", "compiled_hip": None}
            device["views"]["driver"] = {"listed": True}
            device["views"]["driver_access"] = {"devices_open": ["nvidiactl", "nvidia0"], "cuda_library": {
                "name": "libcuda.so.1", "from": "system", "deleted": False}}
        else:
            device["cuda"] = {**MI300_PROBE, "compiled_hip": None}  # the worker's compiled HIP left None
            device["views"]["driver_access"] = {"devices_open": ["kfd", "dri/renderD128"], "kfd_gpu_nodes": 1}
    return edit


def _libc10_mapped(document: dict) -> None:  # libc10_cuda.so mapped, the driver view left a one-key one
    document["device"]["views"]["mapped"]["torch_lib"].append("libc10_cuda.so")


def _driver_view_whole(document: dict) -> None:  # every fact of a real listing, but libc10_cuda.so not mapped
    document["device"]["views"]["driver"] = {"listed": True, "source": "proc-driver-nvidia", "driver_gpus": 1,
                                             "reported_uuid_valid": True, "problem": None}


def _as_real_cuda(document: dict) -> None:
    """The GPU edit completed: every driver view a real CUDA box records."""
    _on_gpu("cuda")(document)
    views = document["device"]["views"]
    views["mapped"]["torch_lib"].append("libc10_cuda.so")
    views["driver"] = copy.deepcopy(REAL_DRIVER)
    views["driver_access"] = copy.deepcopy(REAL_ACCESS)
    document["device"]["torch_build"]["backend_files"] = {"libtorch_cuda.so": {"bytes": 1_100_000_000,
                                                                               "format": "elf"}}


def _real_cuda_but(change: Edit) -> Edit:
    return each(_as_real_cuda, lambda d: change(d["device"]["views"]))


def _in_the_container_toolkits_layout(views: dict) -> None:
    # what libnvidia-container lays out (tests/gate/test_driver_containers.py makes it): libcuda and nvidia-smi
    # bound file by file, the GPU's procfs folder bound back at its place, torch on the image's overlay root
    views["driver_access"]["libraries"]["libcuda"].update(mount="file", mount_fstype="ext4")
    for name in ("libtorch_cuda.so", "libc10_cuda.so"):
        views["driver_access"]["libraries"][name]["mount_fstype"] = "overlay"
    views["driver"]["smi_file"]["mount"] = "file"
    views["driver"]["proc_files"] = [{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver/nvidia/gpus/"
                                      "0000:18:00.0", "mount_root": "/driver/nvidia/gpus/0000:18:00.0"}]


def _as_mps(document: dict) -> None:
    device, compute = document["device"], document["checks"]["device_compute"]
    document["arguments"].update(require=["mps"], require_device=None)
    document["requirements"] = [{"name": "mps", "ok": True, "reason": "matmul, training, checkpoint save and load "
                                                                      "each ran on mps (mps)"}]
    document["platform"].update(system="Darwin", release="23.4.0", machine="arm64", mac_version="14.4")
    document["filesystem"].update(type="apfs", method="darwin-statfs", mount_id=None, mount_options=None)
    device.update(type="mps", resolved="mps", ran_on=["mps"],
                  mps={"built": True, "available": True, "fallback_env_set": False})
    for phase in device["phases"].values():  # bytes on the device, as torch.mps counts them
        phase.update(tensor_devices=["mps"], resident_bytes=68171776, on_device=True, allocated_bytes=4096)
    device["peak_allocated_bytes"] = compute["peak_allocated_bytes"] = 4096  # the worker's: its phases' largest
    device["views"]["mapped"]["observed"] = "not-linux"
    device["torch_build"].update(wheel_tags=["cp311-none-macosx_11_0_arm64"], backend_libraries=["libtorch_cpu.dylib"])
    compute.update(ran_on=["mps"], phases=device["phases"])
    compute["matmul"]["device"] = compute["training"]["parameter_device"] = "mps"
    compute["checkpoint"]["saved_from_device"] = ["mps"]
    document["platform"]["binaries"] = {"interpreter": {"format": "mach-o-fat", "header": [0x01000007, 0x0100000C],
                                                        "bits": None, "error": None},
                                        "torch_c": {"format": "mach-o", "header": 0x0100000C, "bits": 64,
                                                    "error": None, "name": "_C.cpython-311-darwin.so"}}


def _as_windows(document: dict) -> None:
    document["arguments"].update(require=["windows"])
    document["requirements"] = [{"name": "windows", "ok": True, "reason": "Windows, volume file system ntfs"}]
    document["platform"].update(system="Windows", release="10", machine="AMD64", windows_version="10.0.20348")
    document["filesystem"].update(type="ntfs", method="win32-GetVolumeInformationW", mount_id=None,
                                  mount_options=None, drive_type="fixed")
    append = document["checks"]["jsonl_append"]
    append["method"] = append["lock_probe"]["method"] = "msvcrt-locking-lockfile"
    document["device"]["views"]["mapped"]["observed"] = "not-linux"
    document["device"]["torch_build"]["wheel_tags"] = ["cp311-cp311-win_amd64"]
    document["platform"]["binaries"] = {"interpreter": {"format": "pe", "header": 0x8664, "bits": None, "error": None},
                                        "torch_c": {"format": "pe", "header": 0x8664, "bits": None, "error": None,
                                                    "name": "_C.cp311-win_amd64.pyd"}}


COMPILERS = {"mps": "Clang 15.0.0 (clang-1500.3.9.4)", "windows": "MSC v.1938 64 bit (AMD64)"}


def _moved_to(kind: str, leftover: str) -> Edit:
    """The whole run moved to macOS (mps) or Windows, every leftover fact but `leftover` set as that system
    records it."""
    def edit(document: dict) -> None:
        (_as_mps if kind == "mps" else _as_windows)(document)
        if leftover != "compiler":
            document["platform"]["python_compiler"] = COMPILERS[kind]
        if leftover != "torch_lib":
            document["device"]["views"]["mapped"]["torch_lib"] = []  # what the gate writes where it is not Linux
        if leftover != "cpu-wheel" and kind == "mps":
            document["device"]["torch_build"].update(version="2.13.0", dist_info="torch-2.13.0.dist-info")
            document["device"]["torch"]["version"] = "2.13.0"
    return edit


def _with_collectives(world: int, device_type: str, **facts: Any) -> Edit:
    """A collective check of `world` ranks on `device_type`, asked for and held, worded as the gate words it."""
    def edit(document: dict) -> None:
        from rules.gate_record import Device, Filesystem
        from rules.requirements import held_reason

        from tests.gate.test_collective_rules import passing_record

        check = {"ok": True, "duration_s": 9.5, "reason": None, **passing_record(world, device_type),
                 "visible_gpus": world if device_type != "cpu" else 0, **facts}
        check["torch"] = document["device"]["torch"]["version"]  # the ranks' torch is the device worker's
        document["checks"]["collectives"] = check
        startup = document.get("isolation", {}).get("worker_startup")
        if isinstance(startup, dict) and startup:  # a gate that records each worker's start-up records the launcher's
            startup["collectives"] = dict(startup["device_compute"])
        document["arguments"].update(collectives=str(world), collectives_timeout_s=60.0)
        document["arguments"]["require"].append("collectives")
        document["requirements"].append({"name": "collectives", "ok": True,
                                         "reason": held_reason("collectives", Device(), Filesystem(), check)})
    return edit


def _fs(drop: tuple[str, ...] = (), **facts: Any) -> Edit:
    def edit(document: dict) -> None:
        document["filesystem"].update(facts)
        for key in drop:
            del document["filesystem"][key]
    return edit


def _darwin(document: dict) -> None:
    """The whole platform claim moved to macOS: the system, and a file system as darwin-statfs names one."""
    document["platform"]["system"] = "Darwin"
    _fs(type="apfs", method="darwin-statfs", mount_id=None, mount_options=None, statfs_f_type=None,
        inode_flags=None)(document)


def _deleting(path: str) -> Edit:
    def edit(document: dict) -> None:
        *parents, last = path.split(".")
        del at(document, ".".join(parents))[last]
    return edit


FILESYSTEMS = "local/filesystems/"
CLAIMS = [
    # a CPU run moved to a GPU: the driver's views, the libraries a GPU torch maps, the worker's compiled HIP
    row("a CPU run moved to CUDA, its driver listed by one key", RUN_LOCAL_GATE,
        each(_on_gpu("cuda"), _libc10_mapped),
        ("device.views.driver.listed is recorded True, its facts do not allow it: "
         "device.views.driver.source is None",)),
    row("a CPU run moved to CUDA whose torch did not map libc10_cuda.so", RUN_LOCAL_GATE,
        each(_on_gpu("cuda"), _driver_view_whole), ("did not map libc10_cuda.so",)),
    row("a CPU run moved to ROCm whose worker compiled no HIP", RUN_LOCAL_GATE, _on_gpu("rocm"),
        ("device.cuda.compiled_hip is None, the installed build's torch_build.hip is '6.4.1'",)),
    row("a CUDA box whose /dev/nvidiactl is no character device", RUN_LOCAL_GATE,
        _real_cuda_but(lambda v: v["driver_access"]["device_nodes"][2].update(char=False)),
        ("/dev/nvidiactl the device worker held is not a character device",)),
    row("a CUDA box whose libcuda an overlay folder laid there", RUN_LOCAL_GATE,
        _real_cuda_but(lambda v: v["driver_access"]["libraries"]["libcuda"].update(mount="folder",
                                                                                  mount_fstype="overlay")),
        ("a mount namespace laid it there",)),
    row("a CUDA box whose libtorch_cuda.so is tiny", RUN_LOCAL_GATE,
        _real_cuda_but(lambda v: v["driver_access"]["libraries"]["libtorch_cuda.so"].update(size=14904)),
        ("14904 bytes, below the 67108864 of any real libtorch_cuda.so",)),
    row("a CUDA box whose /proc/driver is a tmpfs", RUN_LOCAL_GATE,
        _real_cuda_but(lambda v: v["driver"]["proc_files"][0].update(f_type=0x01021994, fstype="tmpfs",
                                                                     mount_point="/proc/driver")),
        ("a 'tmpfs' mount at '/proc/driver'",)),
    # a Linux run moved to macOS or Windows: each fact left as Linux recorded it refutes the claim alone
    row("a Linux run moved to mps, its compiler left GCC", RUN_LOCAL_GATE, _moved_to("mps", "compiler"),
        ("requirements[mps].ok is recorded True, its facts say False",
         "platform.python_compiler is 'GCC 12.2.0': a Linux fact, not Darwin")),
    row("a Linux run moved to mps, its mapped libraries left", RUN_LOCAL_GATE, _moved_to("mps", "torch_lib"),
        ("requirements[mps].ok is recorded True, its facts say False",
         "device.views.mapped.torch_lib is ['libc10.so'")),
    row("a Linux run moved to mps, its +cpu torch left", RUN_LOCAL_GATE, _moved_to("mps", "cpu-wheel"),
        ("requirements[mps].ok is recorded True, its facts say False",
         "the torch build is a CPU one (torch_build.version '2.13.0+cpu'")),
    row("a Linux run moved to Windows, its compiler left GCC", RUN_LOCAL_GATE, _moved_to("windows", "compiler"),
        ("requirements[windows].ok is recorded True, its facts say False",
         "platform.python_compiler is 'GCC 12.2.0': a Linux fact, not Windows")),
    row("a Linux run moved to Windows, its mapped libraries left", RUN_LOCAL_GATE, _moved_to("windows", "torch_lib"),
        ("requirements[windows].ok is recorded True, its facts say False",
         "device.views.mapped.torch_lib is ['libc10.so'")),
    # a collective check whose world the device facts refute
    row("two NCCL ranks on a CPU run that counted no GPU", RUN_LOCAL_GATE, _with_collectives(2, "cuda"),
        ("checks.collectives.visible_gpus is 2, the device worker counted", "is recorded True")),
    row("two NCCL ranks on a CPU build", RUN_LOCAL_GATE, _with_collectives(2, "cuda", visible_gpus=0),
        ("device.torch_build.cuda is None: the installed torch has no cuda backend", "is recorded True")),
    row("two NCCL ranks beside a CPU device", RUN_LOCAL_GATE, _with_collectives(2, "cuda", visible_gpus=0),
        ("checks.collectives.device_type is 'cuda' with world_size 2, but device.type is 'cpu' and "
         "device.cuda.device_count", "is recorded True")),
    row("two RCCL ranks on a build with no HIP", RUN_LOCAL_GATE, _with_collectives(2, "rocm", visible_gpus=0),
        ("device.torch_build.hip is None", "is recorded True")),
    row("gloo ranks that saw three GPUs", RUN_LOCAL_GATE, _with_collectives(2, "cpu", visible_gpus=3),
        ("checks.collectives.visible_gpus is 3", "is recorded True")),
    # the machine: its binaries' headers and wheel tags are the machine's
    row("the ext4 run moved to arm64", EXT4, setting("platform.machine", "arm64"),
        ("platform.machine is 'arm64'", "device.torch_build.wheel_tags shows x86_64")),
    row("the ext4 run moved to aarch64", EXT4, setting("platform.machine", "aarch64"),
        ("platform.machine is 'aarch64'", "device.torch_build.wheel_tags shows x86_64")),
    row("the ext4 run moved to ppc64le", EXT4, setting("platform.machine", "ppc64le"),
        ("platform.machine is 'ppc64le'", "device.torch_build.wheel_tags shows x86_64")),
    row("a run moved to aarch64, refuted by each binary header", RUN_LOCAL_GATE, setting("platform.machine", "aarch64"),
        ("platform.binaries.interpreter shows x86_64", "platform.binaries.torch_c shows x86_64",
         "device.torch_build.wheel_tags shows x86_64")),
    row("a run moved to aarch64 with its wheel tags emptied, refuted by the headers alone", RUN_LOCAL_GATE,
        each(setting("platform.machine", "aarch64"), setting("device.torch_build.wheel_tags", [])),
        ("platform.binaries.interpreter shows x86_64",)),
    row("a binary header of the interpreter deleted", RUN_LOCAL_GATE, _deleting("platform.binaries"),
        ("platform.binaries.interpreter is missing",)),
    row("an extension for Python 3.12 under Python 3.11", EXT4,
        setting("platform.binaries.torch_c.name", "_C.cpython-312-x86_64-linux-gnu.so"),
        ("an extension for Python 3.12, but platform.python is '3.11.7'",)),
    row("a Windows extension for Python 3.10", EXT4,
        setting("platform.binaries.torch_c.name", "_C.cp310-win_amd64.pyd"),
        ("an extension for Python 3.10",)),
    row("no extension name beside a read header", EXT4, setting("platform.binaries.torch_c.name", None),
        ("torch_c.name is None beside a read header",)),
    row("an interpreter error beside a read header", EXT4,
        setting("platform.binaries.interpreter.error", "could not read sys.executable"),
        ("platform.binaries.interpreter.error is 'could not read sys.executable' beside a read elf",)),
    row("an extension error beside a read header", EXT4, setting("platform.binaries.torch_c.error", "no file to read"),
        ("platform.binaries.torch_c.error is 'no file to read' beside a read elf",)),
    row("a 32-bit interpreter beside a 64-bit extension", EXT4, setting("platform.binaries.interpreter.bits", 32),
        ("platform.binaries.interpreter.bits is 32, platform.binaries.torch_c.bits is 64",)),
    row("a 32-bit extension", EXT4, setting("platform.binaries.torch_c.bits", 32),
        ("platform.binaries.torch_c.bits is 32",)),
    row("an ELF header of no bits", EXT4, setting("platform.binaries.interpreter.bits", None),
        ("platform.binaries.interpreter.bits is None: a elf header is 32 or 64 bits",)),
    row("a 64-bit i386 header", EXT4, setting("platform.binaries.interpreter.header", 3),
        ("header 3 (EM_386) is ELFCLASS32 only",)),
    row("a PE header recording bits", EXT4, setting("platform.binaries.interpreter.format", "pe"),
        ("platform.binaries.interpreter.bits is 64: a pe header records no bits",)),
    row("a header of no format and no error", EXT4, setting("platform.binaries.interpreter.format", None),
        ("platform.binaries.interpreter.format and platform.binaries.interpreter.error are",)),
    # the file system: its type is what its own views say
    row("an ext4 type renamed xfs under the kernel's ext4 magic", RUN_LOCAL_GATE, setting("filesystem.type", "xfs"),
        ("filesystem.type is 'xfs', but the kernel's statfs f_type is 0xef53",)),
    row("the kernel's magic of xfs under an ext4 type", RUN_LOCAL_GATE, setting("filesystem.statfs_f_type", 0x58465342),
        ("filesystem.type is 'ext4', but the kernel's statfs f_type is 0x58465342, xfs's",)),
    row("the kernel's magic deleted", RUN_LOCAL_GATE, _deleting("filesystem.statfs_f_type"),
        ("filesystem.statfs_f_type is missing",)),
    row("the kernel's magic nulled", EXT4, setting("filesystem.statfs_f_type", None),
        ("filesystem.statfs_f_type is None: a gate hashing",)),
    row("an ext4 type renamed ext3 under extents", RUN_LOCAL_GATE, setting("filesystem.type", "ext3"),
        ("filesystem.type is 'ext3', but filesystem.inode_flags 0x80000 carries",)),
    row("an ext4 type renamed ext2 under extents", RUN_LOCAL_GATE, setting("filesystem.type", "ext2"),
        ("filesystem.type is 'ext2', but filesystem.inode_flags",)),
    row("the inode flags nulled beside an ext type", RUN_LOCAL_GATE, setting("filesystem.inode_flags", None),
        ("filesystem.inode_flags is None beside an ext super block",)),
    row("ext3 claimed with the inode flags deleted", RUN_LOCAL_GATE, _fs(("inode_flags",), type="ext3"),
        ("filesystem.inode_flags is missing beside filesystem.type 'ext3'",)),
    row("ext2 claimed with the inode flags deleted", RUN_LOCAL_GATE, _fs(("inode_flags",), type="ext2"),
        ("filesystem.inode_flags is missing beside filesystem.type 'ext2'",)),
    row("ext3 claimed with the flags nulled and the magic deleted", RUN_LOCAL_GATE,
        _fs(("statfs_f_type",), type="ext3", inode_flags=None),
        ("filesystem.inode_flags is None beside filesystem.type 'ext3' of a x86_64",)),
    row("ext2 claimed with both views deleted", RUN_LOCAL_GATE, _fs(("inode_flags", "statfs_f_type"), type="ext2"),
        ("filesystem.inode_flags is missing beside filesystem.type 'ext2'",)),
    row("xfs named by macOS's statfs on Linux", RUN_LOCAL_GATE, _fs(type="xfs", method="darwin-statfs"),
        ("filesystem.method is 'darwin-statfs', but on platform.system 'Linux'",)),
    row("btrfs named by Windows' volume API on Linux", RUN_LOCAL_GATE,
        _fs(type="btrfs", method="win32-GetVolumeInformationW"),
        ("filesystem.method is 'win32-GetVolumeInformationW', but on platform.system 'Linux'",)),
    row("ext3 named by no probe the gate runs", RUN_LOCAL_GATE, _fs(("inode_flags",), type="ext3", method="statvfs"),
        ("filesystem.method is 'statvfs', but on platform.system 'Linux'",)),
    row("tmpfs named by a probe that failed", RUN_LOCAL_GATE, _fs(type="tmpfs", method="linux-error"),
        ("filesystem.type is 'tmpfs', but filesystem.method 'linux-error' is a probe",)),
    row("the run moved to macOS with the facts it left saying Linux", RUN_LOCAL_GATE, _darwin,
        ("platform.release is",)),
    row("a Windows drive type beside Linux's mountinfo", RUN_LOCAL_GATE, _fs(drive_type="fixed"),
        ("filesystem.drive_type is 'fixed': a Windows fact",)),
    row("an NFS version beside an ext4 type", RUN_LOCAL_GATE, _fs(nfs_version="4.2"),
        ("filesystem.nfs_version is '4.2' beside filesystem.type",)),
    row("ext3 claimed on the H200 run, recorded before the inode flags", CUDA_GATE, _fs(type="ext3"),
        ("filesystem.inode_flags is missing beside filesystem.type 'ext3'",)),
    row("xfs named by macOS's statfs on the H200 run", CUDA_GATE, _fs(type="xfs", method="darwin-statfs"),
        ("filesystem.method is 'darwin-statfs', but on platform.system 'Linux'",)),
    row("the xfs run renamed ext4 under its own options", FILESYSTEMS + "platform-runtime-cpu-xfs-loop.json",
        setting("filesystem.type", "ext4"), ("filesystem.type", "logbufs")),
    row("the btrfs run renamed xfs under its own options", FILESYSTEMS + "platform-runtime-cpu-btrfs-loop.json",
        setting("filesystem.type", "xfs"), ("filesystem.type", "space_cache")),
    row("the tmpfs run renamed ext4 under its own options", FILESYSTEMS + "platform-runtime-cpu-tmpfs.json",
        setting("filesystem.type", "ext4"), ("filesystem.type", "size")),
    row("the NFS run renamed ext4 under its own options", NFS_GATE, setting("filesystem.type", "ext4"),
        ("filesystem.type", "vers")),
    row("the ext4 run renamed nfs4 under its own options", EXT4, setting("filesystem.type", "nfs4"),
        ("filesystem.type", "no vers=")),
    # the clocks: a start that is a time, and one its finish and duration agree with
    row("a start moved with its finish and duration left", RUN_LOCAL_GATE,
        setting("started_at", "2026-01-01T00:00:00+00:00"),
        ("started_at is '2026-01-01T00:00:00+00:00' and finished_at", "but duration_s is")),
    row("the finish deleted", RUN_LOCAL_GATE, _deleting("finished_at"), ("finished_at is missing",)),
    row("a start that is not a time", EXT4, setting("started_at", "yesterday"),
        ("started_at is 'yesterday': not a time with its zone",)),
    # a held requirement's words are part of its verdict
    row("a held filesystem requirement worded as an NFS mount", EXT4,
        setting("requirements.1.reason", "the work dir's mount is nfs4, vers=4.2"),
        ("requirements[filesystem=ext4].reason is recorded \"the work dir's mount is nfs4",)),
    row("a held device requirement worded as a GPU's", EXT4,
        setting("requirements.0.reason", "matmul, training, checkpoint save and load each ran on cuda:0 (cpu)"),
        ("its facts say 'matmul, training, checkpoint save and load each ran on cpu (cpu)'",)),
    row("a held requirement with no words", EXT4, setting("requirements.1.reason", None),
        ("requirements[filesystem=ext4].reason is",)),
    row("a failing requirement dropped with its failure line", RUN_LOCAL_GATE,
        lambda d: d["arguments"]["require"].append("nfs"),
        ("'nfs' was asked for (arguments) and is recorded 0 time(s)",)),
    # the mount and the device as the gate saw them
    row("the mount options emptied", EXT4, setting("filesystem.mount_options", []),
        ("filesystem.mount_options is []",)),
    row("the mount options nulled", EXT4, setting("filesystem.mount_options", None),
        ("filesystem.mount_options is None",)),
    row("the mount id nulled", EXT4, setting("filesystem.mount_id", None), ("filesystem.mount_id is None",)),
    row("a file system error beside its type", EXT4, setting("filesystem.error", "statfs failed: EACCES"),
        ("filesystem.error is 'statfs failed",)),
    row("torch not from the directory the gate named", EXT4, setting("device.torch.from_named_directory", None),
        ("from_named_directory None",)),
    row("no device resolved beside a CPU type", EXT4, setting("device.resolved", None),
        ("device.resolved is None beside device.type 'cpu'",)),
    row("a GPU resolved beside a CPU type", EXT4, setting("device.resolved", "cuda:0"),
        ("device.resolved is 'cuda:0', device.type is",)),
    row("another device requested than the arguments asked", EXT4, setting("device.requested", "mps"),
        ("device.requested is 'mps', arguments.device",)),
    row("the torch RECORD's digest nulled", EXT4, setting("device.torch_build.record_sha256", None),
        ("device.torch_build.record_sha256 is None",)),
    row("the wheel tags emptied", EXT4, setting("device.torch_build.wheel_tags", []),
        ("device.torch_build.wheel_tags is []",)),
    row("wheel tags of another Python", EXT4, setting("device.torch_build.wheel_tags",
                                                      ["cp312-cp312-manylinux_2_28_x86_64"]),
        ("wheel_tags names 'cp312-cp312-manylinux_2_28_x86_64'",)),
    row("a backend library invented", EXT4, setting("device.torch_build.backend_libraries", ["x"]),
        ("device.torch_build.backend_libraries is ['x']",)),
    # the build cross-check is recomputed from the build, the worker's torch and its views, never echoed
    row("an empty build cross-check beside a worker of another torch", RUN_LOCAL_GATE,
        lambda d: d["device"]["torch"].update(version="2.1.0"),
        ("device.build_cross_check is recorded [], the recorded torch_build",)),
    row("an empty build cross-check beside a build of CUDA", RUN_LOCAL_GATE,
        lambda d: d["device"]["torch_build"].update(cuda="12.8"),
        ("the worker's torch CUDA version (None) is not the installed build's (12.8)",)),
    row("an empty build cross-check beside a torch from another directory", RUN_LOCAL_GATE,
        lambda d: d["device"]["torch"].update(from_named_directory=False),
        ("device.build_cross_check: the worker's torch is not the one the gate's",)),
    row("a CPU build whose version names CUDA", RUN_LOCAL_GATE,
        each(lambda d: d["device"]["torch_build"].update(cuda="12.8"), lambda d: d["device"]["torch"].update(
            cuda="12.8")), ("version 2.13.0+cpu names a CPU build, but its version.py names CUDA 12.8",)),
    row("a build cross-check naming another torch", RUN_LOCAL_GATE,
        lambda d: d["device"].update(build_cross_check=["the worker's torch is 2.1.0"]),
        ("device.build_cross_check: the worker's torch is 2.1.0",)),
]


@pytest.mark.parametrize(("start", "edit", "named"), CLAIMS)
def test_a_gate_result_whose_claim_its_own_facts_refute_is_not_authentic(start: str, edit: Edit,
                                                                         named: tuple[str, ...]) -> None:
    document = edited(start, edit)
    assert document["ok"] is True
    assert_forged(judged(document), *named)


# --- the same edits with every fact genuine: nothing to refute ----------------------------------------------

def test_a_linux_run_with_every_os_fact_rewritten_would_hold_windows() -> None:
    """The rule can hold: the rows above are refused for the one fact left, not because it refuses everything."""
    judgement = judged(edited(RUN_LOCAL_GATE, _as_windows_but(None)))
    assert not any("requirements[windows]" in why for why in said(judgement)), said(judgement)


def test_wines_answers_are_recorded_as_the_gate_records_them() -> None:
    """Off Windows neither is looked for; on Windows both always are (rules.wine): a result whose record says
    otherwise was edited, whichever way."""
    from rules import wine

    windows = edited(RUN_LOCAL_GATE, _as_windows_under_wine(None, False))
    assert wine.record_problems(windows) == [] and not any("platform.wine" in why for why in said(judged(windows)))
    for answers in ({"ntdll_version": None, "registry_key": None}, {"ntdll_version": 8, "registry_key": False},
                    {"ntdll_version": None}):
        forged = {**windows, "platform": {**windows["platform"], "wine": answers}}
        assert wine.record_problems(forged), answers
    linux = edited(RUN_LOCAL_GATE, setting("platform.wine", {"ntdll_version": None, "registry_key": True}))
    assert any("looked for only on Windows" in why for why in wine.record_problems(linux))


@pytest.mark.parametrize("layout", [lambda views: None, _in_the_container_toolkits_layout], ids=[
    "as a bare CUDA box lays it out", "as the NVIDIA container toolkit lays it out"])
def test_a_cuda_box_with_every_driver_fact_genuine_is_refused_for_no_driver_fact(layout: Any) -> None:
    """The CPU run is still refused for what the edit cannot reproduce, but for no driver fact."""
    judgement = judged(edited(RUN_LOCAL_GATE, _real_cuda_but(layout)))
    driver = ("not a character device", "mount namespace laid it there", "below the", "not the kernel's procfs")
    assert not any(words in why for why in said(judgement) for words in driver), said(judgement)


def test_a_gloo_world_on_the_cpu_run_agrees_with_its_device_facts() -> None:
    """By the rules (the record made here carries no deadline, which the schema wants)."""
    from rules.registry import judge

    judgement = judge(edited(RUN_LOCAL_GATE, _with_collectives(2, "cpu")))
    assert (judgement.ok, judgement.forged) == (True, []), said(judgement)

