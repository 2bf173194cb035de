"""What the gate's parent sees of each worker from outside while the worker waits after its report: its
`/proc/<pid>/status` (a tracer, its seccomp filters: rules.process_status judges them) and its `/proc/<pid>/maps`
(every library it mapped from an LD_LIBRARY_PATH folder, not only the names the gate itself maps).

A worker loads libraries the gate's own process never does (the file-system probe's ctypes maps libffi; the
device worker's torch maps libstdc++, libgcc_s, libssl, libuuid), so a shim of one of those on LD_LIBRARY_PATH
runs only in the worker: the gate's own maps cannot show it. Every library a worker maps from an untrusted
LD_LIBRARY_PATH folder (outside the system's and the interpreter's own library folders) is a vector, except,
in a worker that imports torch (the device worker, the training-stack checks, the collectives' launcher), a GPU
vendor's runtime library (CUDA's, ROCm's), which a CUDA or ROCm box's LD_LIBRARY_PATH exists to provide and a
GPU build of torch loads from there on import. Linux only; elsewhere nothing is read.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

from rules import process_status
from rules.training_stack import CHECKS as TRAINING_CHECKS

from platform_runtime import procmaps, startup
from platform_runtime.children import WORKER_ENTRY

# platform_runtime_worker.py waits for stdin to close after the worker's report. An interpreter option (-X, in
# sys._xoptions), not an argument, so the worker's sys.argv is what it always was (start-up code keys on it).
HOLD = ("-X", "platform_runtime_hold")
DEVICE_WORKER = "device_compute"
# The workers that import torch: a CUDA or ROCm build maps its runtime libraries into each of them.
TORCH_WORKERS = frozenset({DEVICE_WORKER, "collectives", *TRAINING_CHECKS})
ROLES_KEY = "role_processes"  # a check worker's report: its forked roles' status, read by it (roles.py)
# The libraries a CUDA or ROCm torch takes from the toolkit folder LD_LIBRARY_PATH names on such a box.
GPU_RUNTIME = re.compile(
    r"^lib(cuda|cudart|cublas|cublasLt|cufft|cufftw|curand|cusolver|cusolverMg|cusparse|cusparseLt|cudnn[a-z_]*"
    r"|cupti|cufile[a-z_]*|nccl|nvrtc[a-z-]*|nvJitLink|nvToolsExt|nvidia-[a-z-]+|nvshmem[a-z_]*|amdhip64"
    r"|hiprtc[a-z-]*|hsa-runtime64|amd_comgr|rocblas|rocsolver|rocsparse|rocfft|rocrand|roctracer64|roctx64"
    r"|rocprofiler[a-z-]*|hipblas|hipblaslt|hipfft|hiprand|hipsparse|hipsolver|MIOpen|rccl|rocm_smi64|rocm-core"
    r"|drm|drm_amdgpu|numa)\.so(\.[0-9.]+)?$")


def read_status(pid: int | str) -> dict | None:
    """rules.process_status.parse_status of /proc/<pid>/status; None where it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return process_status.parse_status(text)


def held(command: list[str]) -> list[str]:
    """A worker command through platform_runtime_worker.py, told to wait after its report (HOLD)."""
    entry = str(WORKER_ENTRY)
    if entry not in command or HOLD[1] in command:
        return command
    at = command.index(entry)
    return [*command[:at], *HOLD, *command[at:]]


def worker_finding(library: str, worker: str) -> str:
    where = "device worker" if worker == DEVICE_WORKER else f"{worker} worker"
    return f"{library} is mapped into the {where} from an LD_LIBRARY_PATH directory"


class WorkerWatch:
    """Collects each worker's status and LD_LIBRARY_PATH libraries; record() writes them into `isolation`."""

    def __init__(self) -> None:
        self.linux = sys.platform.startswith("linux")
        self.gate = read_status("self") if self.linux else None
        self.gate_parent = read_status(os.getppid()) if self.linux else None
        self.workers: dict[str, dict | None] = {}
        self.libraries: dict[str, list[str]] = {}
        self._lock = threading.Lock()  # workers are collected from a pool of threads

    def observe(self, name: str, pid: int) -> None:
        """Read a live worker's status and maps (it waits after its report, or for its go)."""
        if not self.linux:
            return
        status = read_status(pid)
        text = procmaps.read_maps(pid)
        names: list[str] = []
        directories = startup.untrusted_library_path_dirs()
        if text and directories:
            names = procmaps.mapped_from(procmaps.parse_maps(text), directories, startup.trusted_library_dirs())
            if name in TORCH_WORKERS:
                names = [n for n in names if not GPU_RUNTIME.match(n)]
        with self._lock:
            self.workers[name] = status
            self.libraries[name] = names

    def observe_roles(self, name: str, payload: dict | None) -> None:
        """Take a check worker's report of its roles' status (popped: it is no measurement of the check)."""
        roles = payload.pop(ROLES_KEY, None) if isinstance(payload, dict) else None
        if isinstance(roles, dict) and self.linux:
            with self._lock:
                self.workers[f"{name} roles"] = {k: roles.get(k) for k in ("traced", "seccomp", "seccomp_filters")}

    def record(self, isolation: dict) -> None:
        """isolation.processes, and a finding (with its vector in `present`) for each thing found."""
        if not self.linux:
            return
        with self._lock:
            isolation["processes"] = {"gate": self.gate, "gate_parent": self.gate_parent,
                                      "workers": dict(sorted(self.workers.items()))}
            found = process_status.vectors(isolation["processes"])
            found += [("LD_LIBRARY_PATH", worker_finding(library, worker))
                      for worker, names in sorted(self.libraries.items()) for library in names]

        for vector, finding in found:
            if vector not in isolation["present"]:
                isolation["present"].append(vector)
            if finding not in isolation["findings"]:
                isolation["findings"].append(finding)

