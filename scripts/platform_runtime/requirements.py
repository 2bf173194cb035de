"""What --require, --require-device and --require-filesystem demand, their conflicts, and whether they held.

Every condition is judged on evidence the gate produced (the device worker's report, the file-system
probe, platform.system()), never on names, host names or environment variables.
"""

from __future__ import annotations

from dataclasses import dataclass

PLATFORMS = ("cuda", "mps", "windows", "nfs")
DEVICE_TYPES = ("cpu", "cuda", "mps")
NFS_TYPES = ("nfs", "nfs4")


@dataclass(frozen=True)
class Requirements:
    platforms: tuple[str, ...]
    device: str | None
    filesystem: str | None

    def device_types(self) -> set[str]:
        wanted = {p for p in self.platforms if p in ("cuda", "mps")}
        if self.device:
            wanted.add(self.device)
        return wanted


def conflicts(req: Requirements, requested_device: str) -> list[str]:
    """Combinations that no machine can satisfy; the gate refuses them before doing any work."""
    found = []
    devices = req.device_types()
    if len(devices) > 1:
        found.append(f"requirements name more than one device: {', '.join(sorted(devices))}")
    explicit = requested_device.split(":")[0]
    if requested_device != "auto" and devices and explicit not in devices:
        found.append(f"--device {requested_device} cannot satisfy a requirement for {', '.join(sorted(devices))}")
    if "windows" in req.platforms and "nfs" in req.platforms:
        found.append("--require nfs is proven through Linux mountinfo and cannot hold on Windows")
    if "mps" in req.platforms and ({"windows", "nfs"} & set(req.platforms)):
        found.append("MPS exists only on macOS: it cannot be combined with --require windows or nfs")
    if req.filesystem:
        fs = req.filesystem.lower()
        if "nfs" in req.platforms and fs not in NFS_TYPES:
            found.append(f"--require nfs contradicts --require-filesystem {req.filesystem}")
    return found


def evaluate(req: Requirements, system: str, device: dict, compute_ok: bool, filesystem: dict) -> list[dict]:
    """One verdict per requirement; each holds only on positive evidence."""
    verdicts = []
    ran_on = set(device.get("ran_on") or [])

    def ran_only_on(kind: str) -> tuple[bool, str]:
        if device.get("type") != kind:
            if not device.get("resolved"):
                return False, f"no {kind} device could be used (see device_compute)"
            return False, f"the device resolved to {device.get('resolved')}, not {kind}"
        if not compute_ok:
            return False, f"the device check on {device.get('resolved')} failed"
        if ran_on != {kind}:
            return False, f"the work ran on {sorted(ran_on)}"
        if kind != "cpu" and not (device.get("peak_allocated_bytes") or 0) > 0:
            return False, f"no memory was allocated on {kind}"
        return True, f"matmul, training and checkpoint ran on {device.get('resolved')}"

    for platform_name in req.platforms:
        if platform_name in ("cuda", "mps"):
            ok, reason = ran_only_on(platform_name)
        elif platform_name == "windows":
            ok = system == "Windows" and filesystem.get("method") == "win32-GetVolumeInformationW" \
                and bool(filesystem.get("type"))
            reason = (f"Windows, volume file system {filesystem.get('type')}" if ok else
                      f"platform.system() is {system}" if system != "Windows" else
                      "GetVolumeInformationW did not name the volume's file system")
        else:
            fstype = filesystem.get("type")
            ok = system == "Linux" and str(filesystem.get("method", "")).startswith("linux-mountinfo") \
                and fstype in NFS_TYPES
            reason = (f"the work dir's mount is {fstype}, vers={filesystem.get('nfs_version')}" if ok else
                      f"platform.system() is {system}; nfs is proven only through Linux mountinfo"
                      if system != "Linux" else f"the work dir's own mount is {fstype or 'unknown'}, not nfs/nfs4")
        verdicts.append({"name": platform_name, "ok": ok, "reason": reason})
    if req.device:
        ok, reason = ran_only_on(req.device)
        verdicts.append({"name": f"device={req.device}", "ok": ok, "reason": reason})
    if req.filesystem:
        wanted = req.filesystem.lower()
        fstype = filesystem.get("type")
        ok = fstype == wanted or (wanted == "nfs" and fstype in NFS_TYPES)
        verdicts.append({"name": f"filesystem={req.filesystem}", "ok": ok,
                         "reason": f"the work dir's file system is {fstype or 'unknown'}"})
    return verdicts
