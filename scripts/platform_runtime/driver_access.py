"""How the device worker reached the GPU's kernel driver, seen by the parent from outside: the driver's
character devices the worker holds open (/proc/<pid>/fd), the vendor's user-space driver library it mapped
and where that library came from (/proc/<pid>/maps), and on ROCm the kernel's own list of GPU nodes (KFD
topology in sysfs). A torch that is not what it claims can print any report and can load a library of its
own, but on a machine without the GPU it cannot open /dev/nvidiactl or /dev/kfd, nor make the kernel list a
GPU node; and a `libcuda.so` dropped into the Python installation or an LD_LIBRARY_PATH folder is named as
such. core.driver_views judges what is recorded here. Linux only (the parent records nothing elsewhere).

Only names are recorded: a device's name under /dev and the kind of folder a library came from, never a
path (evidence holds no absolute paths).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from pathlib import Path

from platform_runtime import driver_files, isolation, procmaps, startup

PROC = Path("/proc")
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
# The driver devices worth naming: NVIDIA's (nvidiactl, nvidia0, nvidia-uvm, ...), WSL's GPU paravirtual
# device (dxg, through which CUDA reaches the Windows driver), AMD's compute device (kfd) and DRM render nodes.
DRIVER_DEVICE = re.compile(r"nvidia[\w-]*|dxg|kfd|dri/renderD\d+")
# The CUDA driver API library: installed with the NVIDIA driver, never in torch's wheel.
CUDA_DRIVER_LIBRARY = re.compile(r"libcuda\.so(\.\d+)*")


def driver_devices(link_targets: list[str]) -> list[str]:
    """The driver devices among a process's open file targets (as readlink gives them), names under /dev."""
    names = set()
    for target in link_targets:
        if target.startswith("/dev/") and DRIVER_DEVICE.fullmatch(target[len("/dev/"):]):
            names.add(target[len("/dev/"):])
    return sorted(names)


def open_targets(pid: int | str) -> list[str] | None:
    """What each open file descriptor of a process names, those opened with O_PATH left out (they hold a name,
    not the file: driver_files.path_only); None when /proc/<pid>/fd cannot be read."""
    folder = PROC / str(pid) / "fd"
    try:
        entries = os.listdir(folder)
    except OSError:
        return None
    targets = []
    for entry in entries:
        try:
            target = os.readlink(folder / entry)
        except OSError:
            continue
        if not driver_files.path_only(pid, entry):
            targets.append(target)
    return targets


def _under(folder: Path, roots: set[Path]) -> bool:
    return any(folder == root or root in folder.parents for root in roots)


def python_installation_dirs() -> set[Path]:
    """The Python installation's folders where a file can be dropped: its site directories and, in a venv, the
    venv itself. (A system Python's prefix is /usr itself, so the prefix alone would cover the system's own
    libraries.)"""
    roots = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *isolation.interpreter_site_dirs()}
    if sys.prefix != sys.base_prefix:
        roots.add(sys.prefix)
    return {Path(root).resolve() for root in roots if root}


def library_origin(folder: Path, library_path_dirs: set[Path], installation: set[Path]) -> str:
    """The kind of folder a mapped library came from: "python-installation", "library-path" (an LD_LIBRARY_PATH
    folder outside /usr), "system" (under /usr, /lib or /lib64: the system's library folders, /usr/local/cuda/compat,
    a container's /usr/local/nvidia/lib64, WSL's /usr/lib/wsl/lib), or "other" (anywhere else, an interpreter's
    own LIBDIR outside /usr included: a fake torch can load a library from any path it names)."""
    if _under(folder, installation):
        return "python-installation"
    if folder in library_path_dirs and not _under(folder, {Path("/usr")}):
        return "library-path"
    if _under(folder, {Path("/usr"), Path("/lib"), Path("/lib64")}):
        return "system"
    return "other"


def cuda_driver_mapping(mappings: list[procmaps.Mapping]) -> procmaps.Mapping | None:
    """The worker's mapping of the NVIDIA driver's libcuda.so (the first by path); None when it mapped none."""
    return next((m for m in sorted(mappings, key=lambda m: m.path) if CUDA_DRIVER_LIBRARY.fullmatch(Path(m.path).name)),
                None)


def cuda_driver_library(mappings: list[procmaps.Mapping], library_path_dirs: set[Path],
                        installation: set[Path]) -> dict | None:
    """The libcuda.so the worker mapped and the kind of folder it came from; None when it mapped none."""
    mapping = cuda_driver_mapping(mappings)
    if mapping is None:
        return None
    path = Path(mapping.path)
    try:
        folder = path.parent.resolve()
    except OSError:
        folder = path.parent
    return {"name": path.name, "from": library_origin(folder, library_path_dirs, installation),
            "deleted": mapping.deleted}


def kfd_gpu_nodes(root: Path = KFD_NODES) -> int:
    """GPU nodes in the AMD kernel driver's topology (a node whose gpu_id is not 0; node 0 is the CPU)."""
    count = 0
    try:
        nodes = sorted(root.iterdir())
    except OSError:
        return 0
    for node in nodes:
        try:
            gpu_id = int((node / "gpu_id").read_text(encoding="ascii").strip() or "0")
        except (OSError, ValueError):
            continue
        count += gpu_id != 0
    return count


# The backend libraries whose files are judged (core.driver_facts), per claim; "libcuda" is the driver's.
JUDGED_LIBRARIES = {"cuda": ("libtorch_cuda.so", "libc10_cuda.so"), "rocm": ("libtorch_hip.so",)}


def summarize(targets: list[str] | None, mappings: list[procmaps.Mapping] | None, kind: str | None,
              seen: dict | None = None, lib_dir: Path | None = None) -> dict:
    """device.views.driver_access for a CUDA or ROCm claim, from the worker's open files and mappings taken
    while it waited after its report; `seen` (DeviceViews.observe: its device nodes, maps text and interpreter's
    machine, taken while it lived) adds what those files are (platform_runtime.driver_files)."""
    access: dict = {"devices_open": driver_devices(targets) if targets is not None else None}
    if kind == "cuda":
        access["cuda_library"] = cuda_driver_library(mappings or [], startup.untrusted_library_path_dirs(),
                                                     python_installation_dirs())
    if kind == "rocm":
        access["kfd_gpu_nodes"] = kfd_gpu_nodes()
    if seen is not None and kind in JUDGED_LIBRARIES:
        access["device_nodes"] = seen.get("device_nodes")
        access["registered"] = driver_files.registered()
        wanted = {name: driver_files.torch_library(mappings or [], lib_dir, name) for name in JUDGED_LIBRARIES[kind]}
        if kind == "cuda":
            wanted["libcuda"] = cuda_driver_mapping(mappings or [])
        access["libraries"] = driver_files.libraries(seen.get("maps_text") or "", wanted, seen.get("machine"))
    return access
