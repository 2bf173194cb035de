"""Rules of gate-result facts that no check's rule reads, each from a second view the result itself records
(adversarial review r1, findings F6-F8): the global timeout beside a passing run, the evidence behind the
file-system type, the device asked for and the one resolved, the torch build's own record, and how the gate's
interpreter was started. Where no second view exists the fact is checked for its type and range only;
docs/verdicts.md lists what stays measured but unjudged, and why that is harmless.

Stdlib only. Each rule takes the whole gate result and returns its problems, each naming the field."""

from __future__ import annotations

import re
from typing import Any

from core import isolation_judge
from core.facts import count, get, number, obj
from core.outcomes import DEADLINE_SLACK_S, ROLE_RESERVE_S
from core.platforms import SYSTEMS, WINDOWS_FS_METHOD, os_facts, os_problems
from core.torch_build_rules import BACKEND_LIBRARIES

SHA256 = re.compile(r"[0-9a-f]{64}")
# A wheel's interpreter tag (WHEEL's Tag: lines): cp311 for CPython 3.11.
CPYTHON_TAG = re.compile(r"cp(\d)(\d+)-")
WORKERS = "python -I"  # how the gate starts every worker (platform_runtime.startup.record)
# What the gate sets in every worker's environment (platform_runtime.startup.worker_environment), and how its
# workers find their site directories: a recorded other value is a worker the gate does not start (with
# TORCH_DEVICE_BACKEND_AUTOLOAD not "0", `import torch` in the device worker runs every installed package's
# `torch.backends` entry point, code no .pth or sitecustomize finding shows).
WORKER_ENVIRONMENT = {"SETUPTOOLS_USE_DISTUTILS": "stdlib", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
WORKER_SITE_DIRS = "interpreter site-packages and their .pth path lines; torch only from there"
PARENT_FLAGS = ("isolated", "ignore_environment", "no_site", "no_user_site")
# The gate's cleanup deadline (scripts/platform_runtime/gate.py _cleanup, platform_runtime.budget): the one it
# wants, --cleanup-timeout or, on a hung file system, at most HUNG_CLEANUP_S, cut only by what the budget has
# left (never below MIN_WAIT_S); recorded rounded to the millisecond.
HUNG_CLEANUP_S = 5.0
MIN_WAIT_S = 0.1
ROUNDING_S = 0.0005
# The file-system checks in the order the gate launches them (platform_runtime.gate), each with the same timeout
# capped by what its budget has left: a check launched later never gets a longer one.
FS_CHECKS = ("failing_writer", "concurrent_replace", "jsonl_append")
# Measurement noise: the fields of the file-system checks' times that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = tuple(
    [(f"checks.{name}.{key}", "timing", why) for name in FS_CHECKS for key, why in (
        ("deadline_s", "what the run's --timeout had left when the check started"),
        ("duration_s", "the check's wall time"))]
    + [("checks.failing_writer.killed_writer.deadline_s", "timing", "what its check's deadline left at its start")])
# The methods each system's file-system probe writes (platform_runtime.filesystem.detect, which picks the probe by
# platform.system()): the first of each names a type (Linux: mountinfo by mount id or, failing that, by st_dev),
# the others name none. Any other system is "unsupported-system"; "not-probed" is the result's skeleton, written
# before the probe ran (platform_runtime.gate.skeleton), on any system.
PROBE_METHODS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Linux": (("linux-mountinfo-mnt-id", "linux-mountinfo-st-dev"), ("linux-mountinfo-unmatched", "linux-error")),
    "Windows": ((WINDOWS_FS_METHOD,), ("windows-error",)),
    "Darwin": (("darwin-statfs",), ("darwin-error",)),
}
UNSUPPORTED, NOT_PROBED = "unsupported-system", "not-probed"


def global_timeout(result: dict[str, Any]) -> list[str]:
    """`workspace_cleanup.after_global_timeout` true says the gate's global --timeout expired before the cleanup
    ran: the gate then exits 3 (EXIT_TIMEOUT) and the run did not finish, whatever its checks say."""
    cleanup = obj(result, "workspace_cleanup")
    if "after_global_timeout" not in cleanup:
        return []
    value = cleanup["after_global_timeout"]
    if value is False:
        return []
    if value is True:
        return ["workspace_cleanup.after_global_timeout is True: the gate's global timeout expired, the run did not "
                "finish"]
    return [f"workspace_cleanup.after_global_timeout is {value!r}, a bool"]


def timeout_held(result: dict[str, Any]) -> list[str]:
    """`duration_s` (the gate's monotonic clock, from its run's start to its result) is no longer than
    `arguments.timeout_s`: --timeout counts from the gate process's start and ends at its exit
    (platform_runtime.budget), so a run that outlasted it either had its checks cut by it (after_global_timeout
    true, which never passes) or overran it, and then the gate fails itself by this same rule."""
    duration, timeout = result.get("duration_s"), get(result, "arguments.timeout_s")
    if not (number(duration) and number(timeout)) or get(result, "workspace_cleanup.after_global_timeout") is True:
        return []  # core.result_verdicts.durations and global_timeout name those
    if duration > timeout + ROUNDING_S:
        return [f"duration_s is {duration}, longer than arguments.timeout_s {timeout}, but "
                "workspace_cleanup.after_global_timeout is not True: a run longer than its --timeout did not finish "
                "inside it"]
    return []


def cleanup_deadline(result: dict[str, Any]) -> list[str]:
    """`workspace_cleanup.deadline_s` is the deadline --cleanup-timeout (`arguments.cleanup_timeout_s`) set:
    never longer than it, at most HUNG_CLEANUP_S on a hung file system, and exactly the one wanted unless the
    budget cut it (`deadline_cut_by_budget`, recorded since this rule), and then shorter, at least MIN_WAIT_S."""
    cleanup = obj(result, "workspace_cleanup")
    deadline, asked = cleanup.get("deadline_s"), get(result, "arguments.cleanup_timeout_s")
    if not (number(deadline) and number(asked)):
        return []
    hung = cleanup.get("file_system_hung") is True
    wanted = min(asked, HUNG_CLEANUP_S) if hung else asked
    why = f"arguments.cleanup_timeout_s is {asked}" + (
        " and workspace_cleanup.file_system_hung is True" if hung else "")
    if deadline > wanted + ROUNDING_S:
        return [f"workspace_cleanup.deadline_s is {deadline}, but {why}: the cleanup's deadline is at most {wanted}"]
    if "deadline_cut_by_budget" not in cleanup:
        return []
    cut = cleanup["deadline_cut_by_budget"]
    if cut is False and abs(deadline - wanted) > ROUNDING_S:
        return [f"workspace_cleanup.deadline_s is {deadline}, {why}, and deadline_cut_by_budget is False: an uncut "
                f"deadline is the one wanted, {wanted}"]
    if cut is True and not (MIN_WAIT_S - ROUNDING_S <= deadline < wanted):
        return [f"workspace_cleanup.deadline_s is {deadline} and deadline_cut_by_budget is True, but {why}: a cut "
                f"deadline is shorter than {wanted}, at least {MIN_WAIT_S}"]
    if not isinstance(cut, bool):
        return [f"workspace_cleanup.deadline_cut_by_budget is {cut!r}, a bool"]
    return []


def filesystem_record(result: dict[str, Any]) -> list[str]:
    """A trusted type stands on what the probe read: a probe that recorded an error named no type it can vouch
    for, and a mount found in mountinfo (method linux-mountinfo-*) always has its id and its options, the
    first of which is rw or ro (proc(5), mountinfo's field 6); with them deleted nothing is left to compare the
    type with (core.mount_options)."""
    fs = result.get("filesystem")
    if not isinstance(fs, dict) or not isinstance(fs.get("type"), str):
        return []  # no type: the requirement and the checks fail on their own
    problems = []
    if fs.get("error") is not None:
        problems.append(f"filesystem.error is {str(fs['error'])[:120]!r} beside filesystem.type {fs['type']!r}: a "
                        "probe that failed names no type")
    if str(fs.get("method") or "").startswith("linux-mountinfo"):
        mount_id, options = fs.get("mount_id"), fs.get("mount_options")
        if not count(mount_id):
            problems.append(f"filesystem.mount_id is {mount_id!r}: a mount found in mountinfo has its id")
        if not (isinstance(options, list) and options and all(isinstance(o, str) for o in options)
                and options[0] in ("rw", "ro")):
            problems.append(f"filesystem.mount_options is {str(options)[:120]}: a mount found in mountinfo shows "
                            "its options, rw or ro first")
    return problems


def _device_of(name: Any) -> str | None:
    return name.partition(":")[0] if isinstance(name, str) else None


def device_names(result: dict[str, Any]) -> list[str]:
    """`device.requested` is what --device asked (--device auto with one required device asks for that
    device), and `device.resolved` is a device of that kind and of `device.type` (torch runs ROCm under its
    cuda device type); a resolved device means a type, and none means none."""
    device, asked = obj(result, "device"), get(result, "arguments.device")
    requested, resolved, kind = device.get("requested"), device.get("resolved"), device.get("type")
    problems = []
    if isinstance(asked, str) and asked != "auto" and requested != asked:
        problems.append(f"device.requested is {requested!r}, arguments.device asked for {asked!r}")
    if "resolved" not in device:
        return problems
    if resolved is None:
        if kind is not None:
            problems.append(f"device.resolved is None beside device.type {kind!r}: a device of that type was used")
        return problems
    if not isinstance(resolved, str):
        return problems + [f"device.resolved is {resolved!r}, a device name"]
    wanted = {"rocm": "cuda"}.get(str(kind), kind)
    if _device_of(resolved) != wanted:
        problems.append(f"device.resolved is {resolved!r}, device.type is {kind!r}")
    if isinstance(requested, str) and requested != "auto" and (
            _device_of(requested) != _device_of(resolved) or (":" in requested and requested != resolved)):
        problems.append(f"device.resolved is {resolved!r}, device.requested asked for {requested!r}")
    return problems


def torch_build_record(result: dict[str, Any]) -> list[str]:
    """The installed build's own files as the gate read them: a RECORD that the device views verified was read
    (its SHA-256 is 64 hex digits), a wheel's interpreter tag is the interpreter that ran (cp311 on 3.11), and
    every backend library named is one the gate looks for (core.torch_build_rules.BACKEND_LIBRARIES)."""
    device = obj(result, "device")
    build = device.get("torch_build")
    if not isinstance(build, dict) or build.get("found_in") is None:
        return []
    problems = []
    digest = build.get("record_sha256")
    verified = get(device, "views.record.verified")
    if digest is not None and not (isinstance(digest, str) and SHA256.fullmatch(digest)):
        problems.append(f"device.torch_build.record_sha256 is {str(digest)[:80]!r}, a SHA-256")
    elif digest is None and verified is True:
        problems.append("device.torch_build.record_sha256 is None, but device.views.record verified that RECORD")
    tags = build.get("wheel_tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(f"device.torch_build.wheel_tags is {str(tags)[:80]}, a list of tags")
    elif not tags and isinstance(build.get("dist_info"), str) and verified is True:
        problems.append("device.torch_build.wheel_tags is [], but the dist-info whose RECORD was verified is a "
                        "wheel's (its WHEEL file names its tags)")
    else:
        python = get(result, "platform.python")
        cpython = get(result, "platform.python_implementation") == "CPython" and isinstance(python, str)
        for tag in tags:
            match = CPYTHON_TAG.match(tag)
            if cpython and match and not python.startswith(f"{match.group(1)}.{match.group(2)}."):
                problems.append(f"device.torch_build.wheel_tags names {tag!r}, platform.python is {python!r}")
    libraries = build.get("backend_libraries")
    known = {name for names in BACKEND_LIBRARIES.values() for name in names}
    if not isinstance(libraries, list) or not all(isinstance(n, str) and n in known for n in libraries):
        problems.append(f"device.torch_build.backend_libraries is {str(libraries)[:120]}: the gate names only "
                        f"the backend libraries it looks for ({', '.join(sorted(known))})")
    return problems


def isolation_flags(result: dict[str, Any]) -> list[str]:
    """How the gate's own interpreter was started (sys.flags) and how it starts its workers: each flag a bool,
    -I meaning -E and -s too (python(1)), -E contradicted by a finding that says the gate was started without
    it, and the workers started the one way the gate starts them."""
    isolation = result.get("isolation")
    if not isinstance(isolation, dict):
        return []
    problems = []
    if "workers" in isolation and isolation["workers"] != WORKERS:
        problems.append(f"isolation.workers is {str(isolation['workers'])[:60]!r}: the gate starts every worker "
                        f"as {WORKERS!r}")
    if "worker_site_dirs" in isolation and isolation["worker_site_dirs"] != WORKER_SITE_DIRS:
        problems.append(f"isolation.worker_site_dirs is {str(isolation['worker_site_dirs'])[:80]!r}: the gate's "
                        f"workers use {WORKER_SITE_DIRS!r}")
    environment = isolation.get("worker_environment")
    if ("worker_environment" in isolation or isolation_judge.is_current(result)) and environment != WORKER_ENVIRONMENT:
        problems.append(f"isolation.worker_environment is {str(environment)[:120]}: the gate starts every worker "
                        f"with {WORKER_ENVIRONMENT} (a result of a gate that records it never lacks it)")
    if "parent_flags" not in isolation:
        return problems
    flags = isolation["parent_flags"]
    if not isinstance(flags, dict) or set(flags) != set(PARENT_FLAGS) or not all(
            isinstance(flags[name], bool) for name in PARENT_FLAGS):
        return problems + [f"isolation.parent_flags is {str(flags)[:160]}: the four sys.flags, each a bool"]
    if flags["isolated"] and not (flags["ignore_environment"] and flags["no_user_site"]):
        problems.append(f"isolation.parent_flags is {flags}: -I (isolated) sets ignore_environment and no_user_site")
    findings = isolation.get("findings") if isinstance(isolation.get("findings"), list) else []
    started_without = [f for f in findings if isinstance(f, str)
                       and f.endswith("is set and the gate's own process was started without -I or -E")]
    if started_without and (flags["ignore_environment"] or flags["isolated"]):
        problems.append(f"isolation.parent_flags is {flags}, but isolation.findings says {started_without[0]!r}")
    return problems


def filesystem_probe(result: dict[str, Any]) -> list[str]:
    """The type was named by the probe the gate runs on the recorded `platform.system`: every Linux view of the
    type (the statfs magic, the inode flags, the mount options, core.fs_magic and core.mount_options) is judged
    only on a mountinfo result, so a method edited to another OS's probe, or to one no gate writes, would leave an
    edited type with none of them. `platform.system` itself is then held to every other fact that speaks to the
    OS (core.platforms.os_facts: the kernel release, the compiler, the wheel tags, the lock method...), as a
    requirement's proof holds it: a Linux result edited to Darwin with an apfs type named by darwin-statfs is
    refused by the facts left as they were. An NFS version is derived by the probe from an nfs type's options
    and is null beside any other type."""
    fs = obj(result, "filesystem")
    if "method" not in fs:
        return []  # the schema requires it
    system, method, fs_type = get(result, "platform.system"), fs.get("method"), fs.get("type")
    naming, failing = PROBE_METHODS.get(system, ((), (UNSUPPORTED,))) if isinstance(system, str) else ((), ())
    failing += (NOT_PROBED,)
    problems = []
    if method not in naming + failing:
        problems.append(f"filesystem.method is {method!r}, but on platform.system {system!r} the gate's probe writes "
                        f"{' or '.join(naming + failing) or 'no method'}")
    elif method in failing and fs_type is not None:
        problems.append(f"filesystem.type is {fs_type!r}, but filesystem.method {method!r} is a probe that named no "
                        "type")
    version = fs.get("nfs_version")
    if version is not None and not str(fs_type).startswith("nfs"):  # platform_runtime.filesystem.nfs_version
        problems.append(f"filesystem.nfs_version is {version!r} beside filesystem.type {fs_type!r}: the probe "
                        "records an NFS version for an nfs type only")
    if system in SYSTEMS:
        problems += os_problems(os_facts(result), system)
    return problems


def fs_deadlines(result: dict[str, Any]) -> list[str]:
    """Each file-system check ran inside the run (its `duration_s` at most the run's). The first one's deadlines
    from the later ones' (FS_CHECKS): its timeout is at least any later
    check's, whose recorded deadline_s is at most its timeout. So its own deadline (`deadline_s`, its timeout less
    its process's start) is at least a later check's deadline less its `duration_s`, and its killed-writer stage,
    given what was left less the check's reserve, at least that less ROLE_RESERVE_S: a stage recorded with a
    shorter deadline than the gate gave it hides how long it ran (core.outcomes.timing_problems)."""
    checks = obj(result, "checks")
    problems = []
    total = result.get("duration_s")
    for name in FS_CHECKS:  # launched once the run began (the device worker may start earlier: not these)
        ran = get(checks, f"{name}.duration_s")
        if number(total) and number(ran) and ran > total + 2 * ROUNDING_S:
            problems.append(f"checks.{name}.duration_s is {ran}, longer than the run's duration_s {total}: the gate "
                            "launched it after the run began and collected it before the run ended")
    first = checks.get(FS_CHECKS[0])
    later = [get(checks, f"{name}.deadline_s") for name in FS_CHECKS[1:]]
    later = [value for value in later if number(value)]
    if not isinstance(first, dict) or not later or not number(first.get("duration_s")) or first["duration_s"] < 0:
        return problems  # a duration that is none: core.result_verdicts.durations names it
    floor = max(later) - first["duration_s"]
    why = (f"a later file-system check's deadline_s is {max(later)} and checks.{FS_CHECKS[0]} ran "
           f"{first['duration_s']} s")
    own = first.get("deadline_s")
    if number(own) and own < floor - DEADLINE_SLACK_S:
        problems.append(f"checks.{FS_CHECKS[0]}.deadline_s is {own}, but {why}: it was launched first, with a timeout "
                        "no shorter")
    stage = get(first, "killed_writer.deadline_s")
    if number(stage) and stage < floor - ROLE_RESERVE_S - DEADLINE_SLACK_S:
        problems.append(f"checks.{FS_CHECKS[0]}.killed_writer.deadline_s is {stage}, but {why}: the stage got what was "
                        f"left of its check's deadline less at most {ROLE_RESERVE_S} s")
    return problems
