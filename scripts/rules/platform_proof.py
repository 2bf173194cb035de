"""What proves a platform job of an index: its own gate result, never the job's or the artifact's name (the
registry's "platform" rows, applied by the evidence index to each platform job). The judge's, not the gate's:
the gate's own rules for the same facts are rules.platforms', which these call.

Stdlib only.
"""

from __future__ import annotations

from typing import Any

from rules.platforms import nfs_problems, os_facts, os_problems, windows_problems
from rules.trust import injection_problems


def _requirement_held(document: dict[str, Any], name: str) -> bool:
    requirements = document.get("requirements") if isinstance(document.get("requirements"), list) else []
    return any(isinstance(r, dict) and r.get("name") == name and r.get("ok") is True for r in requirements)


def _proof(platform: str, gate: Any, wanted: Any) -> list[str]:
    """Why this gate result does not prove `platform` ran (empty when it does): a platform is proven only by a
    result that shows that platform, never by the job's or the artifact's name. Every recorded fact that speaks
    to the OS (os_facts) is held to it, and so is the result's own view, which injection may have rewritten."""
    if not isinstance(gate, dict):
        return [f"{platform}: no gate result to prove it"]
    facts = gate.get("platform") if isinstance(gate.get("platform"), dict) else {}
    device = gate.get("device") if isinstance(gate.get("device"), dict) else {}
    fs = gate.get("filesystem") if isinstance(gate.get("filesystem"), dict) else {}
    found: list[tuple[bool, str]] = []
    if platform != "linux":
        found.append((_requirement_held(gate, platform), f"the {platform!r} requirement did not hold"))
    found += wanted(facts, device, fs, os_facts(gate))
    found += [(False, why) for why in injection_problems(gate)]
    return [f"{platform} not proven: {why}" for held, why in found if not held]


def prove_linux(gate: Any) -> list[str]:
    """`platform.system` is Linux, and no recorded fact names another system."""
    return _proof("linux", gate, lambda facts, device, fs, recorded: [
        (facts.get("system") == "Linux", f"platform.system is {facts.get('system')!r}, not Linux"),
        *((False, why) for why in os_problems(recorded, "Linux"))])


def prove_windows(gate: Any) -> list[str]:
    """The `windows` requirement held, and the file system and every OS fact are Windows' (windows_problems)."""
    return _proof("windows", gate, lambda facts, device, fs, recorded: [
        (False, why) for why in windows_problems(facts, fs, recorded)])


def prove_mps(gate: Any) -> list[str]:
    """The `mps` requirement held, `device.type` is mps, and every OS fact is Darwin's."""
    return _proof("mps", gate, lambda facts, device, fs, recorded: [
        (device.get("type") == "mps", f"device.type is {device.get('type')!r}, not mps"),
        *((False, why) for why in os_problems(recorded, "Darwin"))])


def prove_cuda(gate: Any) -> list[str]:
    """The `cuda` requirement held and `device.type` is cuda."""
    return _proof("cuda", gate, lambda facts, device, fs, recorded: [
        (device.get("type") == "cuda", f"device.type is {device.get('type')!r}, not cuda")])


def prove_nfs(gate: Any) -> list[str]:
    """The `nfs` requirement held, and the work dir's own mount is an NFS client's (nfs_problems)."""
    return _proof("nfs", gate, lambda facts, device, fs, recorded: [
        (False, why) for why in nfs_problems(facts, fs, recorded, options_recorded="mount_options" in fs)])
