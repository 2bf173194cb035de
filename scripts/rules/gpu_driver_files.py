"""Whether the driver files a GPU claim rests on are the driver's, judged from what the gate's parent recorded of
them (platform_runtime/driver_files.py): the device nodes the worker held open (`device.views.driver_access.
device_nodes`, beside the kernel's own numbers in `registered`), the backend libraries it mapped
(`driver_access.libraries`) and the /proc/driver/nvidia files the driver's list of GPUs was read from
(`device.views.driver.proc_files`). Stdlib only; rules.gpu_driver_access calls these for the gate (setting `ok`) and the
judge (recomputing it).

Why: by name only, a regular file named /dev/nvidiactl, a dummy libcuda.so.1 laid over the
system's library folder, a tmpfs over /proc/driver and a tiny ELF named libtorch_cuda.so in a torch whose RECORD
was rewritten made `--require cuda` pass on a CPU machine. A result made before these facts were recorded lacks
them and is judged by its other views; rules.result_format requires them of a result whose gate writes them.
What a root adversary with a kernel module, or a whole fake /proc, still defeats: docs/gate.md#threat-model.
"""

from __future__ import annotations

import re
from typing import Any

from common.values import int_or_none

# The NVIDIA kernel driver's fixed character major (NV_MAJOR_DEVICE_NUMBER in its kernel interface) for
# /dev/nvidiactl and /dev/nvidia<N>; nvidia-uvm's and AMD's kfd major are dynamic (/proc/devices); WSL's /dev/dxg
# is a misc device (major 10, its minor in /proc/misc).
NVIDIA_MAJOR = 195
MISC_MAJOR = 10
PROC_SUPER_MAGIC = 0x9FA0  # include/uapi/linux/magic.h
ET_DYN = 3  # an ELF shared object
# A floor far below every real build's file (a CUDA wheel's libtorch_cuda.so is hundreds of MB; libc10_cuda.so
# about 1 MB; the driver's libcuda.so tens of MB, WSL's forwarding libcuda.so.1 about 150 KB) and far above a dummy
# compiled to carry the name (about 15 KB). Only a floor: a padded dummy passes it (docs/gate.md#threat-model).
MIN_BYTES = {"libtorch_cuda.so": 64 << 20, "libc10_cuda.so": 128 << 10, "libcuda": 64 << 10,
             "libtorch_hip.so": 64 << 20}
LIBRARIES = {"cuda": ("libtorch_cuda.so", "libc10_cuda.so", "libcuda"), "rocm": ("libtorch_hip.so",)}
# The mounts the driver's libcuda.so may come from: the root file system, a bind mount of the file itself (the
# NVIDIA container toolkit's), WSL's driver store. A mount over a folder holding it is a mount namespace's.
LIBCUDA_MOUNTS = ("root", "file", "wsl")
CLAIM_DEVICES = {"cuda": re.compile(r"nvidiactl|nvidia\d+|dxg"), "rocm": re.compile(r"kfd")}
JUDGED_DEVICES = re.compile(r"nvidiactl|nvidia\d+|nvidia-uvm(-tools)?|dxg|kfd")


def expected_node(name: str, registered: dict[str, Any]) -> tuple[int | None, int | None]:
    """The (major, minor) a genuine node of this driver device has; minor None where any minor is the driver's."""
    if re.fullmatch(r"nvidiactl|nvidia\d+", name):
        return NVIDIA_MAJOR, None
    if name.startswith("nvidia-uvm"):
        return int_or_none(registered.get("nvidia-uvm")), None
    if name == "kfd":
        return int_or_none(registered.get("kfd")), None
    return MISC_MAJOR, int_or_none(registered.get("dxg_misc_minor"))  # dxg


def node_problem(node: Any, registered: dict[str, Any]) -> str | None:
    """Why one recorded node is not the driver's device its name says; None when it is."""
    if not isinstance(node, dict) or not isinstance(node.get("name"), str):
        return f"device.views.driver_access.device_nodes holds {node!r}: not a node's facts"
    name = node["name"]
    major, minor = expected_node(name, registered)
    if node.get("char") is not True:
        return f"/dev/{name} the device worker held is not a character device (char {node.get('char')!r})"
    if major is None:
        return (f"/dev/{name} the device worker held has major {node.get('major')!r}, and the kernel registers no "
                f"{'nvidia-uvm' if name.startswith('nvidia-uvm') else name} driver (/proc/devices, /proc/misc)")
    held_minor = int_or_none(node.get("minor"))
    if int_or_none(node.get("major")) != major or (name == "dxg" and (minor is None or held_minor != minor)):
        wanted = f"{major}:{minor if minor is not None else '*'}"
        return (f"/dev/{name} the device worker held is char {node.get('major')!r}:{node.get('minor')!r}, not the "
                f"driver's {wanted}")
    return None


def node_problems(kind: Any, access: dict[str, Any]) -> list[str]:
    """Why the driver devices the worker held (stat of its open handles) do not back its `kind` claim."""
    if kind not in CLAIM_DEVICES or "device_nodes" not in access:
        return []
    nodes, registered = access.get("device_nodes"), access.get("registered")
    if not isinstance(nodes, list):
        return [f"device.views.driver_access.device_nodes is {nodes!r}: what the worker's driver devices are was "
                "not read"]
    if not isinstance(registered, dict):
        return [f"device.views.driver_access.registered is {registered!r}: the kernel's driver numbers were not read"]
    judged = [n for n in nodes if not isinstance(n, dict) or JUDGED_DEVICES.fullmatch(str(n.get("name")))]
    problems = [p for p in (node_problem(n, registered) for n in judged) if p]
    genuine = [n for n in judged if node_problem(n, registered) is None and CLAIM_DEVICES[kind].fullmatch(n["name"])]
    if not genuine:
        held = ", ".join(sorted(str(n.get("name")) for n in judged if isinstance(n, dict))) or "none"
        problems.append(f"device.views.driver_access.device_nodes names no genuine {kind} driver device the worker "
                        f"held ({held})")
    return problems


def library_problem(name: str, facts: Any) -> list[str]:
    """Why one backend library the worker mapped is not a real one (each fact that says so); empty when it is."""
    field = f"device.views.driver_access.libraries[{name!r}]"
    if not isinstance(facts, dict):
        return [f"{field} is {facts!r}: the library's file was not read"]
    if facts.get("mapped") is not True:
        return [f"{field}: the device worker did not map {name}"]
    problems = []
    if facts.get("executable") is not True:
        problems.append(f"{field}: the device worker never mapped {name} executable (no text segment was loaded)")
    if facts.get("same_file") is not True:
        problems.append(f"{field}: the file read is not the one the worker mapped (same_file "
                        f"{facts.get('same_file')!r})")
    if int_or_none(facts.get("elf_type")) != ET_DYN:
        problems.append(f"{field}: not an ELF shared object (e_type {facts.get('elf_type')!r})")
    machine = int_or_none(facts.get("machine"))
    if machine is None or machine != int_or_none(facts.get("expected_machine")):
        problems.append(f"{field}: ELF machine {facts.get('machine')!r} is not the worker's interpreter's "
                        f"{facts.get('expected_machine')!r}")
    size = int_or_none(facts.get("size"))
    if size is None or size < MIN_BYTES[name]:
        problems.append(f"{field}: {facts.get('size')!r} bytes, below the {MIN_BYTES[name]} of any real {name}")
    if name == "libcuda" and facts.get("mount") not in LIBCUDA_MOUNTS:
        problems.append(f"{field}: mapped from a {facts.get('mount_fstype')!r} mount over a folder of the system "
                        f"(mount {facts.get('mount')!r}; the driver's comes from the root file system, a bind of the "
                        "file itself or WSL's driver store): a mount namespace laid it there")
    return problems


def library_problems(kind: Any, access: dict[str, Any]) -> list[str]:
    """Why the backend libraries the worker mapped are not real ELF shared objects of its machine and size."""
    if kind not in LIBRARIES or "libraries" not in access:
        return []
    libraries = access.get("libraries")
    if not isinstance(libraries, dict):
        return [f"device.views.driver_access.libraries is {libraries!r}: the mapped libraries' files were not read"]
    return [p for name in LIBRARIES[kind] for p in library_problem(name, libraries.get(name))]


def _procfs_mount(facts: dict[str, Any]) -> bool:
    """procfs at /proc (a whole mount), or the NVIDIA container toolkit's bind of procfs' own
    /driver/nvidia/gpus/<bus id> folder at that very place (libnvidia-container's mount_procfs_gpu). A result
    recorded before `mount_root` was (none has been: this file came with it) is judged by the mount point only."""
    point, root = facts.get("mount_point"), facts.get("mount_root", "/")
    if point == "/proc" and root == "/":
        return True
    return isinstance(point, str) and isinstance(root, str) and re.fullmatch(r"/driver/nvidia/gpus/[^/]+", root) \
        is not None and point == "/proc" + root


def proc_file_problems(driver: dict[str, Any]) -> list[str]:
    """Why the /proc/driver/nvidia files the driver's list was read from are not the kernel's procfs at /proc."""
    if "proc_files" not in driver:
        return []
    files = driver.get("proc_files")
    if not isinstance(files, list):
        return [f"device.views.driver.proc_files is {files!r}: what the driver's files are was not read"]
    problems = []
    if str(driver.get("source") or "").startswith("proc-driver-nvidia") and not files:
        problems.append("device.views.driver.source names /proc/driver/nvidia, and proc_files records no file read")
    smi = driver.get("smi_file")
    if "nvidia-smi" in str(driver.get("source") or "") and "smi_file" in driver and not (
            isinstance(smi, dict) and smi.get("elf") is True and smi.get("mount") in LIBCUDA_MOUNTS):
        problems.append(f"device.views.driver.smi_file is {smi!r}: the driver's list came from an nvidia-smi that is "
                        "not an ELF program on the root file system, a bind of the file itself or WSL's driver store")
    for facts in files:
        facts = facts if isinstance(facts, dict) else {}
        f_type = int_or_none(facts.get("f_type"))
        if f_type != PROC_SUPER_MAGIC or facts.get("fstype") != "proc" or not _procfs_mount(facts):
            magic = hex(facts["f_type"]) if int_or_none(facts.get("f_type")) is not None else facts.get("f_type")
            problems.append(f"device.views.driver.proc_files: a /proc/driver/nvidia file was read from f_type "
                            f"{magic!r}, a {facts.get('fstype')!r} mount at {facts.get('mount_point')!r}, not the "
                            f"kernel's procfs at /proc ({hex(PROC_SUPER_MAGIC)}): a mount laid over /proc/driver")
    return problems
