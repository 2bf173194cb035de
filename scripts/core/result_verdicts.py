"""Rules of the whole gate result: facts recorded outside any one check (the torch build cross-check, the
device's views, the sources, the workspace, the device the work ran on) and the workspace_cleanup check.

Stdlib only."""

from __future__ import annotations

from typing import Any

from core import trust
from core.device_verdicts import device_kind, load_safety_problems
from core.facts import get, obj

CLEANUP_PASSING = ("cleaned", "retained")  # retained: --keep-workspace, whoever keeps it verifies it
NFS_TYPES = ("nfs", "nfs4")  # where a name can vanish for an instant while it is replaced (re-exported by contract)


def workspace_cleanup(check: dict[str, Any]) -> list[str]:
    status = check.get("status")
    return [] if status in CLEANUP_PASSING else [
        f"checks.workspace_cleanup.status is {status!r}, a pass needs one of {', '.join(CLEANUP_PASSING)}"]



def _checks(result: dict[str, Any]) -> dict[str, Any]:
    return obj(result, "checks")


def build_cross_check(result: dict[str, Any]) -> list[str]:
    cross = get(result, "device.build_cross_check")
    if not isinstance(cross, list):
        return [f"device.build_cross_check is {cross!r}: the worker's torch was not checked against the build"]
    return [f"device.build_cross_check: {str(item)[:200]}" for item in cross]


def device_views(result: dict[str, Any]) -> list[str]:
    """Issue 19's views of the torch build a worker cannot forge (core.trust), recomputed where recorded."""
    device = obj(result, "device")
    return [f"device.views: {problem}" for problem in trust.device_view_problems(device)] if "views" in device else []


def load_safety(result: dict[str, Any]) -> list[str]:
    """The checkpoint load the worker records (`device.load_safety`) is the weights_only one, its advisories
    recomputed from the worker's torch version."""
    return load_safety_problems(obj(result, "device"))


def source_files(result: dict[str, Any]) -> list[str]:
    files = get(result, "source.files")
    return [] if isinstance(files, dict) and files else [f"source.files is {files!r}: the result names no source"]


def cleanup_agrees(result: dict[str, Any]) -> list[str]:
    recorded, checked = get(result, "workspace_cleanup.status"), get(_checks(result), "workspace_cleanup.status")
    return [] if recorded == checked else [
        f"workspace_cleanup.status is {recorded!r}, checks.workspace_cleanup.status is {checked!r}"]


def device_agrees(result: dict[str, Any]) -> list[str]:
    """The device the check's work ran on is the one the result names, phase by phase."""
    check = obj(_checks(result), "device_compute")
    device = obj(result, "device")
    kind = device_kind(check)
    problems = []
    if kind is not None and device.get("type") != kind:
        problems.append(f"device.type is {device.get('type')!r}, checks.device_compute ran on {kind!r}")
    for key in ("ran_on", "phases"):
        if key in check and device.get(key) != check.get(key):
            problems.append(f"device.{key} differs from checks.device_compute.{key}")
    return problems


def missing_reads_allowed(result: dict[str, Any]) -> list[str]:
    """The gate tolerates a name missing while it is replaced only on NFS."""
    check = obj(_checks(result), "concurrent_replace")
    fs_type = get(result, "filesystem.type")
    problems = []
    if check.get("missing_reads_tolerated") is True and fs_type not in NFS_TYPES:
        problems.append(f"checks.concurrent_replace.missing_reads_tolerated is true on {fs_type!r}: tolerated only "
                        "on NFS")
    if check.get("tolerate_missing") is True and fs_type not in NFS_TYPES:  # the gate passes it on NFS only
        problems.append(f"checks.concurrent_replace.tolerate_missing is true on {fs_type!r}: the readers are told "
                        "to tolerate a missing name only on NFS")
    return problems
