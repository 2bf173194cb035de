"""The NVIDIA kernel driver's own list of GPUs, read by the gate's parent process (never the device
worker's word): /proc/driver/nvidia/gpus/<bus id>/information, or `nvidia-smi -L` where /proc has none (MIG
instances are listed only there). A device UUID the worker reports must be on this list.

No GPU here: the parsers are tested against recorded outputs in the documented formats
(tests/gate/fixtures/nvidia/, each marked as a fixture written from the format, not captured).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rules import gpu_probe
from rules.gpu_driver_access import PROC_SOURCE, SMI_SOURCE

from platform_runtime import driver_files, filesystem
from platform_runtime.startup import worker_environment

PROC_GPUS = Path("/proc/driver/nvidia/gpus")
SMI_TIMEOUT_S = 15.0
# Where the NVIDIA driver installs nvidia-smi (Linux packages and .run installer, WSL, the Windows driver), never a
# lookup on the caller's PATH: a script named nvidia-smi earlier on PATH printed a UUID a fake torch reported.
SMI_LOCATIONS = {
    "linux": ("/usr/bin/nvidia-smi", "/usr/lib/wsl/lib/nvidia-smi", "/bin/nvidia-smi"),
    "win32": (r"C:\Windows\System32\nvidia-smi.exe", r"C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe"),
}


def normal_uuid(text: str | None) -> str | None:
    """A UUID as torch prints it (8-4-4-4-12 hex, no prefix) or as the driver does (GPU-..., MIG-...),
    lower case without the prefix; None for anything else (rules.gpu_probe's pattern, the judge's too)."""
    return gpu_probe.normal_uuid(text)


def parse_information(text: str) -> str | None:
    """The `GPU UUID:` line of one /proc/driver/nvidia/gpus/*/information file."""
    match = re.search(r"^GPU UUID:\s*(\S+)\s*$", text, re.MULTILINE)
    return normal_uuid(match.group(1)) if match else None


def parse_smi_list(text: str) -> list[str]:
    """Every `(UUID: ...)` of `nvidia-smi -L`: one GPU line each, and its MIG devices' lines beneath."""
    found = [normal_uuid(value) for value in re.findall(r"\(UUID:\s*([^)\s]+)\s*\)", text)]
    return [uuid for uuid in found if uuid]


def proc_uuids(root: Path = PROC_GPUS) -> list[str]:
    found = []
    try:
        folders = sorted(root.iterdir())
    except OSError:
        return []
    for folder in folders:
        try:
            uuid = parse_information((folder / "information").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if uuid:
            found.append(uuid)
    return found


def proc_files(root: Path = PROC_GPUS) -> list[dict]:
    """What each /proc/driver/nvidia/gpus/*/information file read is (a tmpfs laid over /proc/driver can
    answer with a UUID of its own): {"f_type": the fstatfs(2) magic of the handle, "fstype", "mount_point" and
    "mount_root": its mount, by the handle's mnt_id in mountinfo}, once each; rules.gpu_driver_files requires procfs at
    /proc, or the NVIDIA container toolkit's bind of procfs' own /driver/nvidia/gpus/<bus id> folder."""
    found: list[dict] = []
    try:
        folders = sorted(root.iterdir())
    except OSError:
        return []
    for folder in folders:
        try:
            fd = os.open(folder / "information", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:  # mountinfo and fstatfs of /proc itself cannot fail where the file was just opened
            entry = driver_files.file_mount(fd)
            root = driver_files.mount_root(entry.mount_id, Path("/proc/self/mountinfo").read_text()) if entry else None
            facts = {"f_type": filesystem.statfs_magic(fd), "fstype": entry.fstype if entry else None,
                     "mount_point": entry.point if entry else None, "mount_root": root}
        finally:
            os.close(fd)
        if facts not in found:
            found.append(facts)
    return found


def trusted_smi(platform: str = sys.platform) -> str | None:
    """The driver's own nvidia-smi, from where the driver installs it; None where there is none."""
    for candidate in SMI_LOCATIONS.get("linux" if platform.startswith("linux") else platform, ()):
        if os.path.isfile(candidate):
            return candidate
    return None


def smi_environment() -> dict[str, str]:
    """nvidia-smi runs with what every worker starts with (startup.worker_environment), less the loader's and
    library-path variables of the caller's (a shim could answer for it)."""
    return {key: value for key, value in worker_environment().items() if not key.startswith(("LD_", "DYLD_"))}


def smi_uuids() -> list[str]:
    executable = trusted_smi()
    if executable is None:
        return []
    try:
        done = subprocess.run([executable, "-L"], capture_output=True, text=True, timeout=SMI_TIMEOUT_S,
                              env=smi_environment())
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_smi_list(done.stdout) if done.returncode == 0 else []


def uuid_check(reported: str | None, proc_root: Path = PROC_GPUS, smi=smi_uuids) -> dict:
    """Whether the worker's device UUID is on the driver's list: {"listed", "source", "driver_gpus"}; the
    UUIDs themselves are not recorded (they identify a machine)."""
    wanted = normal_uuid(reported)
    listed = proc_uuids(proc_root)
    source = PROC_SOURCE if listed else None
    if wanted is None or wanted not in listed:
        from_smi = smi()
        if from_smi:
            listed, source = sorted(set(listed) | set(from_smi)), SMI_SOURCE if not listed else \
                f"{PROC_SOURCE}+{SMI_SOURCE}"
    return {"listed": wanted is not None and wanted in listed, "source": source, "driver_gpus": len(listed),
            "reported_uuid_valid": wanted is not None, "proc_files": proc_files(proc_root),
            "smi_file": driver_files.program_facts(trusted_smi())}


def uuid_problem(check: dict) -> str | None:
    """Why a CUDA claim is not backed by the kernel driver's list; None when it is."""
    if check.get("listed") is True:
        return None
    if not check.get("reported_uuid_valid"):
        return "the device worker reported no valid device UUID, so the kernel driver's list cannot confirm it"
    if not check.get("driver_gpus"):
        return ("the kernel driver lists no GPU (no /proc/driver/nvidia/gpus, no `nvidia-smi -L`): the CUDA "
                "device the worker reported is not confirmed")
    return "the device UUID the worker reported is not on the kernel driver's list of GPUs"
