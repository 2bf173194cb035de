"""Which device the device worker runs on, and what the backend says of it: CUDA/ROCm probing (names,
capability against the build's arch list, driver and runtime versions), MPS availability, synchronize."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path


def probe_cuda(torch, index: int | None) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
    info: dict = {
        "backend": "rocm" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else None),
        "compiled_cuda": torch.version.cuda, "compiled_hip": getattr(torch.version, "hip", None),
        "available": available, "availability_warnings": len(caught),
        "driver_too_old_warning": any("too old" in str(w.message).lower() for w in caught),
        "device_count": torch.cuda.device_count() if available else 0,
    }
    if available and index is not None and index < info["device_count"]:
        props = torch.cuda.get_device_properties(index)
        arch_list = list(torch.cuda.get_arch_list())
        info.update({"name": props.name, "total_memory_bytes": int(props.total_memory), "arch_list": arch_list,
                     "uuid": str(props.uuid) if getattr(props, "uuid", None) is not None else None,
                     **cuda_versions(torch)})
        if info["backend"] == "rocm":
            arch = getattr(props, "gcnArchName", "").split(":")[0]
            info.update({"arch": arch, "arch_in_build": arch in arch_list})
        else:
            major, minor = torch.cuda.get_device_capability(index)
            info.update({"capability": f"{major}.{minor}", "arch": f"sm_{major}{minor}",
                         "arch_in_build": f"sm_{major}{minor}" in arch_list or any(
                             a.startswith("compute_") and a[8:].isdigit() and int(a[8:]) <= major * 10 + minor
                             and int(a[8:]) // 10 == major for a in arch_list)})
    return info


def _guarded(read):
    try:
        value = read()
    except Exception:  # noqa: BLE001 - a private API that moved is a missing fact, not a failure
        return None
    return value if isinstance(value, (int, str)) else None


def _runtime_version(torch) -> int:
    value = torch.cuda.cudart().cudaRuntimeGetVersion()
    return int(value[-1] if isinstance(value, tuple) else value)


def kernel_driver_version(text: str) -> str | None:
    """The NVIDIA kernel module's version (what nvidia-smi calls the driver) from /proc/driver/nvidia/version."""
    match = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def _read_kernel_driver() -> str | None:
    try:
        return kernel_driver_version(Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def cuda_versions(torch) -> dict:
    """Driver and runtime versions: the CUDA driver API and runtime versions as ints (13000 is 13.0), and
    on Linux the kernel driver's version string (580.159.04)."""
    return {"driver_version": _guarded(lambda: int(torch._C._cuda_getDriverVersion())),
            "runtime_version": _guarded(lambda: _runtime_version(torch)),
            "kernel_driver": _read_kernel_driver()}


def resolve(torch, requested: str) -> tuple[str | None, str | None, dict | None, dict | None]:
    """(device, reason it is unavailable, cuda facts, mps facts)."""
    mps_backend = getattr(torch.backends, "mps", None)
    mps = {"built": bool(mps_backend and mps_backend.is_built()),
           "available": bool(mps_backend and mps_backend.is_available()),
           "fallback_env_set": "PYTORCH_ENABLE_MPS_FALLBACK" in os.environ}
    if requested == "cpu":
        return "cpu", None, None, None
    if requested == "mps" or (requested == "auto" and mps["available"] and not torch.cuda.is_available()):
        return ("mps", None, None, mps) if mps["available"] else (
            None, "MPS requested but torch.backends.mps.is_available() is False"
            + ("" if mps["built"] else " (this torch was built without MPS)"), None, mps)
    match = re.fullmatch(r"cuda(?::(\d+))?", requested)
    if match or requested == "auto":
        index = int(match.group(1)) if match and match.group(1) else 0
        cuda = probe_cuda(torch, index)
        if requested == "auto" and not cuda["available"]:
            return "cpu", None, cuda, None
        if cuda["backend"] is None:
            return None, "CUDA requested but this torch has no CUDA or ROCm backend", cuda, None
        if not cuda["available"]:
            why = "a driver too old for this build" if cuda["driver_too_old_warning"] else "no usable GPU"
            return None, f"CUDA requested but torch.cuda.is_available() is False ({why})", cuda, None
        if index >= cuda["device_count"]:
            return None, f"cuda:{index} requested but only {cuda['device_count']} device(s) are visible", cuda, None
        return f"cuda:{index}", None, cuda, None
    return None, "unknown device", None, None


def synchronize(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def device_kind(torch, device) -> str:
    """The gate's name for the device: ROCm runs under torch's "cuda" device type but is named rocm."""
    return "rocm" if device.type == "cuda" and getattr(torch.version, "hip", None) else device.type
