"""Rules of the whole gate result: facts recorded outside any one check (the torch build cross-check, the
device's views, the sources, the workspace, the device the work ran on) and the workspace_cleanup check.

Stdlib only."""

from __future__ import annotations

import re
from typing import Any

from core import collectives, mount_options, trust
from core.device_verdicts import device_kind, load_safety_problems
from core.facts import get, number, obj
from core.names import WORKSPACE_PREFIX
from core.torch_build_rules import MISSING_TORCH, recorded_cross_check

CLEANUP_PASSING = ("cleaned", "retained")  # retained: --keep-workspace, whoever keeps it verifies it
# The workspace the gate makes in the work dir (scripts/platform_runtime/gate.py): one name, never a path.
WORKSPACE_NAME = re.compile(re.escape(WORKSPACE_PREFIX) + r"[0-9a-f]{12}")
NFS_TYPES = ("nfs", "nfs4")  # where a name can vanish for an instant while it is replaced (re-exported by contract)
# Measurement noise: the fields of the workspace_cleanup check that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = (("checks.workspace_cleanup.duration_s", "timing", "the workspace removal's wall time"),)


def workspace_cleanup(check: dict[str, Any]) -> list[str]:
    status = check.get("status")
    return [] if status in CLEANUP_PASSING else [
        f"checks.workspace_cleanup.status is {status!r}, a pass needs one of {', '.join(CLEANUP_PASSING)}"]



def _checks(result: dict[str, Any]) -> dict[str, Any]:
    return obj(result, "checks")


def build_cross_check(result: dict[str, Any]) -> list[str]:
    """The worker's torch against the installed build, as the gate lists it (`device.build_cross_check`), made
    again from the recorded facts (core.torch_build_rules): a recorded list that differs is refused, and
    every disagreement fails the result."""
    device = obj(result, "device")
    cross = device.get("build_cross_check")
    if not isinstance(cross, list):
        return [f"device.build_cross_check is {cross!r}: the worker's torch was not checked against the build"]
    problems = [f"device.build_cross_check: {str(item)[:200]}" for item in cross]
    expected = recorded_cross_check(device, get(result, "platform.system"))
    if expected is None:
        return problems
    missing_first = bool(expected) and expected[0] == MISSING_TORCH
    agrees = (len(cross) == len(expected) and cross[1:] == expected[1:] and str(cross[0]).startswith(MISSING_TORCH)
              ) if missing_first else cross == expected
    if not agrees:
        problems.insert(0, f"device.build_cross_check is recorded {[str(c)[:120] for c in cross]!r}, the recorded "
                           f"torch_build, torch, type and views say {[str(e)[:120] for e in expected]!r}")
    return problems + [f"device.build_cross_check: {str(item)[:200]}" for item in expected if item not in cross]


# A gate hashing this source records device.views.distributions (issue 28): a result without it was edited.
DISTRIBUTIONS_SOURCE = "scripts/platform_runtime/dependencies.py"


def device_views(result: dict[str, Any]) -> list[str]:
    """Issue 19's views of the torch build a worker cannot forge (core.trust), recomputed where recorded."""
    device = obj(result, "device")
    if "views" not in device:
        return []
    problems = [f"device.views: {problem}" for problem in trust.device_view_problems(device)]
    files = obj(result, "source").get("files")
    views = device["views"] if isinstance(device["views"], dict) else {}
    if isinstance(files, dict) and DISTRIBUTIONS_SOURCE in files and "distributions" not in views:
        problems.append(f"device.views.distributions is missing, though the gate hashed {DISTRIBUTIONS_SOURCE}, "
                        "which records it: the files the device worker loaded are not shown checked")
    return problems


def collectives_ran(result: dict[str, Any]) -> list[str]:
    """`--collectives` asked for (`arguments.collectives`) records its check, which then must pass by its
    own rule (core.collectives); a result that drops the check drops what was asked."""
    asked = get(result, "arguments.collectives")
    if asked is None or "collectives" in obj(result, "checks"):
        return []
    return [f"checks.collectives is missing, but arguments.collectives asked for {asked!r}: what was asked did "
            "not run"]


def collectives_device(result: dict[str, Any]) -> list[str]:
    """The collective check ran on the devices the result's own device facts show (core.collectives)."""
    check = obj(result, "checks").get("collectives")
    return collectives.device_problems(check, obj(result, "device")) if isinstance(check, dict) else []


def load_safety(result: dict[str, Any]) -> list[str]:
    """The checkpoint load the worker records (`device.load_safety`) is the weights_only one, its advisories
    recomputed from the worker's torch version."""
    return load_safety_problems(obj(result, "device"))


def source_files(result: dict[str, Any]) -> list[str]:
    files = get(result, "source.files")
    return [] if isinstance(files, dict) and files else [f"source.files is {files!r}: the result names no source"]


def cleanup_agrees(result: dict[str, Any]) -> list[str]:
    """The two records of the cleanup agree, and the workspace is "retained" exactly when --keep-workspace asked
    for it (scripts/platform_runtime/gate.py): retained without it is a cleanup that did not happen, which no
    harness then verifies; anything else with it is another run's record."""
    recorded, checked = get(result, "workspace_cleanup.status"), get(_checks(result), "workspace_cleanup.status")
    problems = [] if recorded == checked else [
        f"workspace_cleanup.status is {recorded!r}, checks.workspace_cleanup.status is {checked!r}"]
    kept = get(result, "arguments.keep_workspace")
    if (recorded == "retained") != (kept is True) and (recorded == "retained" or recorded == "cleaned"):
        problems.append(f"workspace_cleanup.status is {recorded!r} while arguments.keep_workspace is {kept!r}: the "
                        "gate retains the workspace when, and only when, --keep-workspace asks")
    return problems


def device_agrees(result: dict[str, Any]) -> list[str]:
    """The device the check's work ran on is the one the result names, phase by phase."""
    check = obj(_checks(result), "device_compute")
    device = obj(result, "device")
    kind = device_kind(check)
    problems = []
    if kind is not None and device.get("type") != kind:
        problems.append(f"device.type is {device.get('type')!r}, checks.device_compute ran on {kind!r}")
    for key in ("ran_on", "phases", "peak_allocated_bytes"):  # the gate copies each from the one worker report
        if key in check and (device.get(key) != check.get(key) or type(device.get(key)) is not type(check[key])):
            problems.append(f"device.{key} differs from checks.device_compute.{key}")
    return problems


def missing_reads_allowed(result: dict[str, Any]) -> list[str]:
    """The gate tolerates a name missing while it is replaced on NFS, and only there."""
    check = obj(_checks(result), "concurrent_replace")
    fs_type = get(result, "filesystem.type")
    problems = []
    if check.get("missing_reads_tolerated") is True and fs_type not in NFS_TYPES:
        problems.append(f"checks.concurrent_replace.missing_reads_tolerated is true on {fs_type!r}: tolerated only "
                        "on NFS")
    if check.get("tolerate_missing") is True and fs_type not in NFS_TYPES:  # the gate passes it on NFS only
        problems.append(f"checks.concurrent_replace.tolerate_missing is true on {fs_type!r}: the readers are told "
                        "to tolerate a missing name only on NFS")
    if fs_type in NFS_TYPES and "tolerate_missing" in check and check["tolerate_missing"] is not True:
        # ... and always on NFS (gate.py passes --tolerate-missing there): false is another run's record.
        problems.append(f"checks.concurrent_replace.tolerate_missing is {check['tolerate_missing']!r} on "
                        f"{fs_type!r}: the gate always tells the readers to tolerate a missing name on NFS")
    return problems


def workspace_name(result: dict[str, Any]) -> list[str]:
    """`workspace_cleanup.workspace` is the one name the gate made in the work dir (platform-runtime- and 12 hex
    digits), never a path such as ../../etc: what was cleaned is that name. None only where no workspace was
    made, and then nothing was cleaned."""
    name, status = get(result, "workspace_cleanup.workspace"), get(result, "workspace_cleanup.status")
    if name is None and status not in CLEANUP_PASSING:
        return []
    if isinstance(name, str) and WORKSPACE_NAME.fullmatch(name):
        return []
    return [f"workspace_cleanup.workspace is {str(name)[:80]!r}: the gate's workspace is one name, "
            f"{WORKSPACE_PREFIX} and 12 hex digits, in the work dir"]


def _is_duration(key: str) -> bool:
    return key.endswith("_s") or key == "seconds"


def durations(result: dict[str, Any]) -> list[str]:
    """Every duration, deadline and timeout the result records (a key ending in _s, or `seconds`) is a finite
    number of seconds, never negative, or None where nothing was timed."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if _is_duration(str(key)) and item is not None and not (number(item) and item >= 0):
                    found.append(f"{where} is {item!r}: a duration is a non-negative number of seconds")
                walk(item, where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    walk(result, "")
    return found


def filesystem_agrees(result: dict[str, Any]) -> list[str]:
    """The work dir's recorded file-system type against the mount options recorded beside it."""
    return mount_options.type_problems(result.get("filesystem"))
