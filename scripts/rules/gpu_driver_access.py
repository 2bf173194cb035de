"""Whether a GPU claim is backed by the worker's access to the GPU's kernel driver, as the gate's parent saw it
from outside (platform_runtime/driver_access.py records `device.views.driver_access` on Linux). Stdlib only;
the gate sets `ok` from it and the judge recomputes it (through rules.trust.device_view_problems).

Why these facts: a torch that is not the build it claims can print any report, regenerate its own RECORD and
load an empty `libtorch_cuda.so` of its own. It cannot, on a machine without the GPU, hold the driver's device
open (/dev/nvidiactl or /dev/nvidia<N>; /dev/dxg under WSL; /dev/kfd for ROCm), make the kernel's topology
list a GPU node, or have the NVIDIA driver's own `libcuda.so` come from the system's folders: one dropped into
the Python installation or an LD_LIBRARY_PATH folder is named by where it came from.
"""

from __future__ import annotations

import re
from typing import Any

from rules import gpu_driver_files
from rules.gpu_probe import normal_uuid

# Where platform_runtime.nvidia_driver read the driver's list of GPUs (`device.views.driver.source`).
PROC_SOURCE, SMI_SOURCE = "proc-driver-nvidia", "nvidia-smi-L"
DRIVER_SOURCES = (PROC_SOURCE, SMI_SOURCE, f"{PROC_SOURCE}+{SMI_SOURCE}")
CUDA_DEVICES = re.compile(r"nvidiactl|nvidia\d+|dxg")
ROCM_DEVICE = "kfd"
GPU_KINDS = ("cuda", "rocm")


def driver_access_problems(kind: Any, views: dict[str, Any]) -> list[str]:
    """Why the device worker's access to the kernel driver does not back its `kind` claim; empty when it does,
    and for a CPU or MPS claim, or where the parent could not observe the worker (not Linux: judged elsewhere)."""
    mapped = views.get("mapped") if isinstance(views.get("mapped"), dict) else {}
    if kind not in GPU_KINDS or mapped.get("observed") != "linux-proc-maps":
        return []
    access = views.get("driver_access")
    if not isinstance(access, dict):
        return [f"device.views.driver_access is missing: the {kind} claim has no view of the kernel driver"]
    devices = access.get("devices_open")
    if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
        return [f"device.views.driver_access.devices_open is {devices!r}: the device worker's open files were not "
                f"read, so its {kind} claim has no view of the kernel driver"]
    problems = []
    if kind == "cuda":
        if not any(CUDA_DEVICES.fullmatch(d) for d in devices):
            problems.append(f"device.views.driver_access.devices_open is {devices}: the device worker held no NVIDIA "
                            "driver device open (/dev/nvidiactl, /dev/nvidia<N>, or /dev/dxg under WSL)")
        library = access.get("cuda_library")
        origin = library.get("from") if isinstance(library, dict) else None
        if origin != "system" or library.get("deleted") is not False:
            problems.append(f"device.views.driver_access.cuda_library is {library!r}: the NVIDIA driver's libcuda.so "
                            "was not mapped from the system's library folders")
    if kind == "rocm":
        if ROCM_DEVICE not in devices:
            problems.append(f"device.views.driver_access.devices_open is {devices}: the device worker did not hold "
                            "/dev/kfd (the AMD kernel driver's compute device) open")
        nodes = access.get("kfd_gpu_nodes")
        if type(nodes) is not int or nodes < 1:
            problems.append(f"device.views.driver_access.kfd_gpu_nodes is {nodes!r}: the kernel driver's topology "
                            "(/sys/class/kfd/kfd/topology/nodes) lists no GPU")
    # what those devices and libraries are, not only what they are named
    return problems + gpu_driver_files.node_problems(kind, access) + gpu_driver_files.library_problems(kind, access)


def driver_list_problems(driver: dict[str, Any], reported_uuid: Any) -> list[str]:
    """Why `device.views.driver` does not show the worker's device UUID on the kernel driver's list; empty when
    it does. The UUIDs are not recorded (they identify a machine), so `listed` is taken only where every fact
    beside it allows it: a list read from a known source, holding at least one GPU, and a valid UUID reported --
    the worker's own (`device.cuda.uuid`), so `reported_uuid_valid` is recomputed too."""
    if driver.get("listed") is not True:
        return [str(driver.get("problem") or "the device UUID is not on the kernel driver's list")]
    problems = []
    if driver.get("source") not in DRIVER_SOURCES:
        problems.append(f"device.views.driver.source is {driver.get('source')!r}: the driver's list was not read "
                        f"({' or '.join(DRIVER_SOURCES)})")
    gpus = driver.get("driver_gpus")
    if type(gpus) is not int or gpus < 1:
        problems.append(f"device.views.driver.driver_gpus is {gpus!r}: the kernel driver's list holds no GPU")
    valid = normal_uuid(reported_uuid) is not None
    if driver.get("reported_uuid_valid") is not True or not valid:
        problems.append(f"device.views.driver.reported_uuid_valid is {driver.get('reported_uuid_valid')!r} and the "
                        f"worker's device.cuda.uuid is {'a' if valid else 'not a'} UUID: no UUID was looked up")
    if driver.get("problem") is not None:
        problems.append(f"device.views.driver.problem is {driver.get('problem')!r} beside listed true")
    problems += gpu_driver_files.proc_file_problems(driver)
    return [f"device.views.driver.listed is recorded True, its facts do not allow it: {p}" for p in problems]
