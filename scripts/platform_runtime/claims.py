"""What --require, --require-device and --require-filesystem demand, their conflicts, and whether they held.

Every condition is judged on evidence the gate produced (the device worker's report, the file-system
probe, platform.system()), never on names, host names or environment variables.
"""

from __future__ import annotations

from rules import collectives
from rules.device_compute import PHASES  # noqa: F401 - re-exported
from rules.gate_record import Device, Filesystem, Platform
from rules.platforms import filesystem_problems, nfs_problems, windows_problems
from rules.requirements import GPU_KINDS, MPS_FALLBACK, device_problems, held_reason  # noqa: F401 - MPS_FALLBACK
from rules.trust import INJECTION_EXEMPT
from rules.whole_result import NFS_TYPES

from platform_runtime.request import DEVICE_TYPES, REQUIRABLE, Requirements  # noqa: F401 - re-exported


def conflicts(req: Requirements, requested_device: str) -> list[str]:
    """Combinations that no machine can satisfy; the gate refuses them before doing any work."""
    found = []
    devices = req.device_types()
    if len(devices) > 1:
        found.append(f"requirements name more than one device: {', '.join(sorted(devices))}")
    explicit = requested_device.split(":")[0]
    # torch runs ROCm under its "cuda" device type, so --device cuda can satisfy --require rocm.
    satisfiable = {explicit, "rocm"} if explicit == "cuda" else {explicit}
    if requested_device != "auto" and devices and not satisfiable & devices:
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


def _on_device(device: Device, kind: str, compute_ok: bool, environment: dict,
               facts: dict | None = None) -> tuple[bool, str]:
    """Whether the device check really ran on `kind`: rules.requirements' rule, which the judge re-derives."""
    problems = device_problems(device, kind, compute_ok, environment, facts)
    return not problems, "; ".join(problems[:4]) or held_reason(f"device={kind}", device, Filesystem())


def _windows(platform: Platform, filesystem: Filesystem, facts: dict | None = None) -> tuple[bool, str]:
    problems = windows_problems(platform, filesystem, facts)
    return not problems, "; ".join(problems) or held_reason("windows", Device(), filesystem)


def _nfs(platform: Platform, filesystem: Filesystem, facts: dict | None = None) -> tuple[bool, str]:
    problems = nfs_problems(platform, filesystem, facts)
    return not problems, "; ".join(problems) or held_reason("nfs", Device(), filesystem)


def evaluate(req: Requirements, platform: dict, device: dict, compute_ok: bool, filesystem: dict,
             environment: dict | None = None, collectives_check: dict | None = None,
             injection: str | None = None, facts: dict | None = None) -> list[dict]:
    """One verdict per requirement; each holds only on positive evidence. `platform` is the gate's own
    platform facts (common.provenance), the file-system rules are rules.platforms' (the index proves a platform
    with the same ones). `environment` holds the parent's own view of variables that change what a device
    claim means (never the worker's word for them); `collectives_check` the collective check's record, when it
    ran (--require collectives holds by rules.collectives.requirement, the judge's rule too). `injection`
    (rules.trust.injection_refusal) fails every requirement but INJECTION_EXEMPT, naming the vectors and what
    the requirement would otherwise have said. `facts` (rules.platforms.os_facts of the result so far) are every
    recorded fact that speaks to the OS: a platform holds only when none of them refutes it. The parts are read
    once into the records the judge reads them as (rules.gate_record)."""
    environment = environment or {}
    platform_record, filesystem_record = Platform.of(platform), Filesystem.of(filesystem)
    device_record = Device.of(device)
    verdicts = []
    for platform_name in req.platforms:
        if platform_name in GPU_KINDS:
            ok, reason = _on_device(device_record, platform_name, compute_ok, environment, facts)
        elif platform_name == "windows":
            ok, reason = _windows(platform_record, filesystem_record, facts)
        elif platform_name == "collectives":
            ok, reason = collectives.requirement(collectives_check)
        else:
            ok, reason = _nfs(platform_record, filesystem_record, facts)
        verdicts.append({"name": platform_name, "ok": ok, "reason": reason})
    if req.device:
        ok, reason = _on_device(device_record, req.device, compute_ok, environment, facts)
        verdicts.append({"name": f"device={req.device}", "ok": ok, "reason": reason})
    if req.filesystem:
        problems = filesystem_problems(req.filesystem, filesystem_record, platform_record, facts)
        verdicts.append({"name": f"filesystem={req.filesystem}", "ok": not problems,
                         "reason": "; ".join(problems) or held_reason(f"filesystem={req.filesystem}", Device(),
                                                                      filesystem_record)})
    if injection:
        for verdict in verdicts:
            if verdict["name"] not in INJECTION_EXEMPT:
                verdict.update(ok=False, reason=f"{injection} (otherwise: {verdict['reason']})")
    return verdicts
