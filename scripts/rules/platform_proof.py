"""What proves a platform job of an index: its own gate result, never the job's or the artifact's name (the
registry's "platform" rows, applied by the evidence index to each platform job). The judge's, not the gate's:
the gate's own rules for the same facts are rules.platforms', which these call.

Stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rules.gate_record import GateRecord, read_gate
from rules.platforms import nfs_problems, os_problems, windows_problems
from rules.trust import injection_problems

Found = list[tuple[bool, str]]


def _requirement_held(record: GateRecord, name: str) -> bool:
    return any(r.recorded and r.name == name and r.ok is True for r in record.requirements or ())


def _proof(platform: str, gate: Any, wanted: Callable[[GateRecord], Found]) -> list[str]:
    """Why this gate result does not prove `platform` ran (empty when it does): a platform is proven only by a
    result that shows that platform, never by the job's or the artifact's name. The result is read once
    (rules.gate_record); every recorded fact that speaks to the OS is held to it, and so is the result's own view,
    which injection may have rewritten."""
    if not isinstance(gate, dict):
        return [f"{platform}: no gate result to prove it"]
    record = read_gate(gate)
    found: Found = []
    if platform != "linux":
        found.append((_requirement_held(record, platform), f"the {platform!r} requirement did not hold"))
    found += wanted(record)
    found += [(False, why) for why in injection_problems(gate)]
    return [f"{platform} not proven: {why}" for held, why in found if not held]


def prove_linux(gate: Any) -> list[str]:
    """`platform.system` is Linux, and no recorded fact names another system."""
    return _proof("linux", gate, lambda r: [
        (r.platform.system == "Linux", f"platform.system is {r.platform.system!r}, not Linux"),
        *((False, why) for why in os_problems(r.os_facts, "Linux"))])


def prove_windows(gate: Any) -> list[str]:
    """The `windows` requirement held, and the file system and every OS fact are Windows' (windows_problems)."""
    return _proof("windows", gate, lambda r: [
        (False, why) for why in windows_problems(r.platform, r.filesystem, r.os_facts)])


def prove_mps(gate: Any) -> list[str]:
    """The `mps` requirement held, `device.type` is mps, and every OS fact is Darwin's."""
    return _proof("mps", gate, lambda r: [
        (r.device.type == "mps", f"device.type is {r.device.type!r}, not mps"),
        *((False, why) for why in os_problems(r.os_facts, "Darwin"))])


def prove_cuda(gate: Any) -> list[str]:
    """The `cuda` requirement held and `device.type` is cuda."""
    return _proof("cuda", gate, lambda r: [
        (r.device.type == "cuda", f"device.type is {r.device.type!r}, not cuda")])


def prove_nfs(gate: Any) -> list[str]:
    """The `nfs` requirement held, and the work dir's own mount is an NFS client's (nfs_problems)."""
    return _proof("nfs", gate, lambda r: [
        (False, why) for why in nfs_problems(r.platform, r.filesystem, r.os_facts,
                                             options_recorded=r.filesystem.options_recorded)])
