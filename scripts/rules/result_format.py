"""Which fields a gate result must hold, from what it says it is: its `schema_version` (written by the gate
since version 2) or, for a result that records none, the gate sources it names. Version 3 holds the fields of
version 2; its gate derives the sources it hashes from what its processes import (rules.gate_sources), where a
version-2 gate kept the list by hand (V2_SOURCES, which every committed version-2 result names).

A field the current gate always writes is never excused as "legacy" because it is absent: only a result that is
older by those recorded facts (version 1: no `schema_version`, and none of the sources that write those fields
among its `source.files`) may lack them. Deleting a field never makes a current result old; deleting
`schema_version` too does not either, while the result still names the sources of the current gate. A result
judged at version 1 names exactly the version-1 gate's list (V1_SOURCES, the only such gate), and one declaring a
later version names the file that version is written in (WRITTEN_IN): so cutting `source.files` down to an older
list is seen without a source root. With one, rules.source_sets makes the list and the version facts of that
root's files.

Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.values import obj

SCHEMA_VERSION = 3  # the gate records it as `schema_version`
FIELDS_SINCE = 2  # every field below is required of a result of this version or a later one
# The sources a version-1 gate hashed (evidence/cuda/run): a result naming any other gate module of
# scripts/core (the rules' folder until version 3) or scripts/platform_runtime was made by a gate that writes every
# field below.
V1_SOURCES = frozenset({
    "schemas/platform-runtime-result.schema.json", "scripts/core/__init__.py", "scripts/core/contract.py",
    "scripts/core/files.py", "scripts/core/provenance.py", "scripts/platform_runtime/__init__.py",
    "scripts/platform_runtime/children.py", "scripts/platform_runtime/claims.py",
    "scripts/platform_runtime/device_worker.py", "scripts/platform_runtime/filesystem.py",
    "scripts/platform_runtime/fs_worker.py", "scripts/platform_runtime/gate.py",
    "scripts/platform_runtime/isolation.py", "scripts/platform_runtime/jsonl.py",
    "scripts/platform_runtime/result.py", "scripts/platform_runtime/sources.py",
    "scripts/platform_runtime/torch_build.py", "scripts/platform_runtime_check.py",
    "scripts/platform_runtime_worker.py"})
# The sources the last version-2 gate hashed, kept by hand in its sources.py. A later gate derives its list, so a
# source root of today judges a version-2 result against this one (rules.source_sets): its fields are version 3's.
V2_SOURCES = frozenset({
    "schemas/platform-runtime-result.schema.json", "scripts/core/__init__.py", "scripts/core/collectives.py",
    "scripts/core/contract.py", "scripts/core/device_verdicts.py", "scripts/core/diagnostic_judge.py",
    "scripts/core/driver_facts.py", "scripts/core/driver_views.py", "scripts/core/facts.py", "scripts/core/files.py",
    "scripts/core/fleet.py", "scripts/core/fs_magic.py", "scripts/core/gate_judge.py",
    "scripts/core/gate_parameters.py", "scripts/core/git_provenance.py", "scripts/core/gpu_view.py",
    "scripts/core/harness_judge.py", "scripts/core/interpreter_rules.py", "scripts/core/isolation_judge.py",
    "scripts/core/kill_record.py", "scripts/core/machine_views.py", "scripts/core/mount_options.py",
    "scripts/core/names.py", "scripts/core/outcomes.py", "scripts/core/platforms.py",
    "scripts/core/process_views.py", "scripts/core/provenance.py", "scripts/core/record_rules.py",
    "scripts/core/requirements.py", "scripts/core/result_format.py", "scripts/core/result_verdicts.py",
    "scripts/core/sharing_verdicts.py", "scripts/core/strict_json.py", "scripts/core/time_views.py",
    "scripts/core/torch_build_rules.py", "scripts/core/trust.py", "scripts/core/verdicts.py",
    "scripts/core/writer_verdicts.py", "scripts/platform_runtime/__init__.py",
    "scripts/platform_runtime/binary_arch.py", "scripts/platform_runtime/budget.py",
    "scripts/platform_runtime/bytecode.py", "scripts/platform_runtime/children.py",
    "scripts/platform_runtime/claims.py", "scripts/platform_runtime/collective_record.py",
    "scripts/platform_runtime/collective_worker.py", "scripts/platform_runtime/dependencies.py",
    "scripts/platform_runtime/device_checkpoint.py", "scripts/platform_runtime/device_resolve.py",
    "scripts/platform_runtime/device_training.py", "scripts/platform_runtime/device_views.py",
    "scripts/platform_runtime/device_worker.py", "scripts/platform_runtime/dist_record.py",
    "scripts/platform_runtime/driver_access.py", "scripts/platform_runtime/driver_files.py",
    "scripts/platform_runtime/early_start.py", "scripts/platform_runtime/filesystem.py",
    "scripts/platform_runtime/forked.py", "scripts/platform_runtime/fs_worker.py",
    "scripts/platform_runtime/gate.py", "scripts/platform_runtime/import_folders.py",
    "scripts/platform_runtime/interpreter_state.py", "scripts/platform_runtime/isolation.py",
    "scripts/platform_runtime/jsonl.py", "scripts/platform_runtime/killed_writer.py",
    "scripts/platform_runtime/ld_library_path.py", "scripts/platform_runtime/loaded_files.py",
    "scripts/platform_runtime/lock_probe.py", "scripts/platform_runtime/nvidia_driver.py",
    "scripts/platform_runtime/path_config.py", "scripts/platform_runtime/procmaps.py",
    "scripts/platform_runtime/request.py", "scripts/platform_runtime/result.py",
    "scripts/platform_runtime/result_records.py", "scripts/platform_runtime/roles.py",
    "scripts/platform_runtime/site_owners.py", "scripts/platform_runtime/sources.py",
    "scripts/platform_runtime/startup.py", "scripts/platform_runtime/stuck.py",
    "scripts/platform_runtime/torch_build.py", "scripts/platform_runtime/torch_record.py",
    "scripts/platform_runtime/worker_watch.py", "scripts/platform_runtime_check.py",
    "scripts/platform_runtime_worker.py"})
# A gate module of version 2 (its layout: scripts/core/ held the rules) that the version-1 gate did not hash, and one
# of version 3 (scripts/common/ and scripts/rules/): a result naming one was made by a gate of that version at least.
GATE_MODULES = ("scripts/core/", "scripts/platform_runtime/")
LAYOUT_SINCE = {3: ("scripts/common/", "scripts/rules/")}
# Every gate that writes a schema_version hashes the file it is written in.
WRITTEN_IN = {2: "scripts/core/result_format.py", 3: "scripts/rules/result_format.py"}
THIS_FILE = WRITTEN_IN[SCHEMA_VERSION]
# Where a gate source lived before the rules became one package (scripts/core/ until then): a result recorded
# before the move names the earlier path, and is the same gate's result. Each marker below is looked for under
# both names, so the committed evidence keeps its meaning and a current result is held to the same rules.
EARLIER_PATHS: dict[str, str] = {
    "scripts/rules/result_format.py": "scripts/core/result_format.py",
    "scripts/rules/times.py": "scripts/core/time_views.py",
    "scripts/rules/fs_magic.py": "scripts/core/fs_magic.py",
    "scripts/rules/kill_record.py": "scripts/core/kill_record.py",
    "scripts/rules/gpu_driver_files.py": "scripts/core/driver_facts.py",
    "scripts/rules/trust.py": "scripts/core/trust.py",
    "scripts/rules/start_up_code.py": "scripts/core/start_up_rules.py",
    "scripts/rules/wine.py": "scripts/core/wine.py",
}


# What the current gate always writes, per check, once the check recorded its measurements (`marker`): a check
# whose process gave no payload has only its outcome, and fails by its own rule.
REQUIRED: dict[str, tuple[str, tuple[str, ...]]] = {
    "failing_writer": ("stages", ("killed_writer",)),
    "concurrent_replace": ("writes", ("roles", "final_version", "final_version_complete", "temp_files_left",
                                      "failed_processes", "writer_busy_rename_retries", "tolerate_missing")),
    "jsonl_append": ("processes", ("roles", "failed_processes", "lock_probe.while_held", "lock_probe.after_release")),
    "device_compute": ("stage", ("error",)),
}
# ... and of a device check that finished (stage "done"): one that stopped earlier (a checkpoint that could not be
# saved on a full disk) never reached the load, and fails by its own rule and error.
REQUIRED_DONE_DEVICE_CHECK = ("checkpoint.load",)
# ... and of the result, once the device worker reported (checks.device_compute.stage is "done").
REQUIRED_DEVICE = ("views", "load_safety", "torch_build.found_in", "build_cross_check")
MAX_NAMED = 6  # paths named in a refusal (the rest counted)
# What a version-1 gate always wrote of its injection vectors (7f0a071's isolation.injection_vectors, and the device
# worker's start-up modules once the worker reported): lists of names, which a v1 result may not drop or
# empty while its other half still names them.
V1_ISOLATION_LISTS = ("present", "executing_pth_files")
V1_ISOLATION_TEXTS = ("workers", "worker_site_dirs")


# Second views recorded since version 2 was first recorded: required of a result
# whose gate hashed the module that writes them (its source.files names it); the version-2 results recorded
# before lack them, and are judged by the views they hold (the wheel tags, the mount options, the index's times).
VIEWS_SINCE: dict[str, tuple[str, ...]] = {
    "scripts/platform_runtime/binary_arch.py": ("platform.binaries.interpreter", "platform.binaries.torch_c"),
    "scripts/rules/times.py": ("finished_at",),
    "scripts/rules/fs_magic.py": ("filesystem.statfs_f_type",),  # of a mount found in Linux mountinfo
    # each kill's own record: its totals are made again from it
    "scripts/rules/kill_record.py": ("checks.failing_writer.killed_writer.per_kill",),
    # what the GPU driver's files are (not only their names): where the gate records driver_access (a CUDA or ROCm claim
    # observed on Linux) and, on CUDA, the driver's list (CONDITIONAL_VIEWS)
    "scripts/platform_runtime/driver_files.py": ("device.views.driver_access.device_nodes",
                                                 "device.views.driver_access.registered",
                                                 "device.views.driver_access.libraries",
                                                 "device.views.driver.proc_files",
                                                 "device.views.driver.smi_file"),
    "scripts/rules/gpu_driver_files.py": ("device.torch_build.backend_files",),  # the build's libraries' own files
    "scripts/rules/wine.py": ("platform.wine",),  # whether the Windows it ran on is Wine (rules.wine)
}
# Views recorded only inside an object the gate writes for some claims: required where that object is recorded
# (a claim without it is refused by its own rule: rules.gpu_driver_access names a missing driver_access or driver list).
# The killed-writer stage's record likewise: a failing_writer check that raised before it (ENOSPC on a full disk)
# records no killed_writer, and fails by its own error, not by a per-kill list it never had.
CONDITIONAL_VIEWS = ("device.views.driver_access.", "device.views.driver.", "device.torch_build.",
                     "checks.failing_writer.killed_writer.")


def missing_views(result: dict[str, Any]) -> list[str]:
    """Each second view (VIEWS_SINCE) a result lacks, or records as null, although its gate's sources write it:
    null is the view removed as surely as the key (a null statfs_f_type would leave filesystem.type alone; the
    gate's fstatfs on the handle it just opened does not fail, and a run where it did has no second view of its
    type and fails by this rule)."""
    files = obj(result, "source").get("files")
    names = set(files) if isinstance(files, dict) else set()
    linux = str(obj(result, "filesystem").get("method") or "").startswith("linux-mountinfo")
    found = []
    for current, fields in VIEWS_SINCE.items():
        module = current if current in names else EARLIER_PATHS.get(current, current)
        for field in fields if module in names else ():
            if not (linux or not field.startswith("filesystem.")):
                continue
            parent = next((p for p in CONDITIONAL_VIEWS if field.startswith(p)), None)
            if parent is not None and not isinstance(_value(result, parent[:-1]), dict):
                continue
            if not _has(result, field):
                found.append(f"{field} is missing: a gate hashing {module} always records it")
            elif _value(result, field) is None:
                found.append(f"{field} is None: a gate hashing {module} always records it, and null leaves "
                             "nothing to compare with")
    return found


def _has(record: Any, path: str) -> bool:
    *parents, key = path.split(".")
    for part in parents:
        record = record.get(part) if isinstance(record, dict) else None
    return isinstance(record, dict) and key in record


def _value(record: Any, path: str) -> Any:
    for part in path.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


def _listed(paths: set[str]) -> str:
    named = sorted(paths)
    return ", ".join(named[:MAX_NAMED]) + (f" and {len(named) - MAX_NAMED} more" if len(named) > MAX_NAMED else "")


def set_problems(field: str, claimed: Any, expected: list[str], whose: str) -> list[str]:
    """`field` must name exactly `expected`: the missing and the extra paths, named."""
    names = set(claimed) if isinstance(claimed, dict) else set()
    missing, extra = set(expected) - names, names - set(expected)
    if not missing and not extra:
        return []
    parts = ([f"missing {len(missing)}: {_listed(missing)}"] if missing else []) + (
        [f"extra {len(extra)}: {_listed(extra)}"] if extra else [])
    return [f"{field} names {len(names)} path(s), {whose} {len(expected)}: {'; '.join(parts)}"]


def made_by(names: list[str]) -> tuple[int, str | None]:
    """The least version whose gate hashes one of these sources, and that source (1, None: none of them)."""
    for version, prefixes in sorted(LAYOUT_SINCE.items(), reverse=True):
        later = sorted(n for n in names if n.startswith(prefixes))
        if later:
            return version, later[0]
    current = sorted(n for n in names if n.startswith(GATE_MODULES) and n not in V1_SOURCES)
    return (2, current[0]) if current else (1, None)


def version_of(result: dict[str, Any]) -> tuple[int | None, list[str]]:
    """The format the result is judged at, and the problems of its `schema_version` (None: unusable)."""
    declared = result.get("schema_version")
    files = obj(result, "source").get("files")
    names = [str(n) for n in files] if isinstance(files, dict) else []
    if "schema_version" in result and (type(declared) is not int or not 1 <= declared <= SCHEMA_VERSION):
        return None, [f"schema_version is {declared!r}: this judge knows versions 1 to {SCHEMA_VERSION}"]
    least, named = made_by(names)
    if declared is not None and declared < least:
        return least, [f"schema_version is {declared}, but source.files names the current gate's {named}: the "
                       f"result is judged as version {least}"]
    version = declared if declared is not None else least
    if version == 1:
        return 1, set_problems("source.files", files, sorted(V1_SOURCES), "the version-1 gate hashed")
    if WRITTEN_IN[version] not in names:
        return version, [f"schema_version is {version}, but source.files does not name {WRITTEN_IN[version]}, "
                         "which every gate that writes a version hashes"]
    return version, []


def missing_fields(result: dict[str, Any]) -> list[str]:
    """Each field the result's format requires and it lacks, named "missing"."""
    version, problems = version_of(result)
    if version == 1:
        return problems + v1_isolation_problems(result)
    if version is None or version < FIELDS_SINCE:
        return problems
    problems = problems + missing_views(result)
    why = f"a schema_version {FIELDS_SINCE} gate always records it"
    checks = obj(result, "checks")
    for name, (marker, fields) in REQUIRED.items():
        check = checks.get(name)
        if isinstance(check, dict) and marker in check:
            problems += [f"checks.{name}.{field} is missing: {why}" for field in fields if not _has(check, field)]
    if isinstance(checks.get("device_compute"), dict) and checks["device_compute"].get("stage") == "done":
        problems += [f"checks.device_compute.{field} is missing: {why}" for field in REQUIRED_DONE_DEVICE_CHECK
                     if not _has(checks["device_compute"], field)]
        device = obj(result, "device")
        problems += [f"device.{field} is missing: {why}" for field in REQUIRED_DEVICE if not _has(device, field)]
        record = obj(obj(device, "views"), "record")
        # rules.trust excuses a record without it as older; a current one that found no problem always counts it
        # (only a RECORD check cut at its deadline records none, and fails by its problems).
        if record.get("problems") == [] and "bytecode_unlisted" not in record:
            problems.append(f"device.views.record.bytecode_unlisted is missing: {why}")
    return problems


def v1_isolation_problems(result: dict[str, Any]) -> list[str]:
    """A version-1 result's `isolation`, as the version-1 gate always wrote it: the vectors present and the .pth
    files that run code (".pth" is among the vectors exactly when such a file was found), how workers start, and,
    once the device worker reported (checks.device_compute.stage recorded), the modules it loaded at start-up."""
    why = "the version-1 gate always recorded it"
    isolation = result.get("isolation")
    if not isinstance(isolation, dict):
        return [f"isolation is {'missing' if 'isolation' not in result else repr(isolation)[:40]}: {why}"]
    problems = [f"isolation.{key} is {'missing' if key not in isolation else repr(isolation[key])[:40]}: a list of "
                f"names, {why}" for key in V1_ISOLATION_LISTS
                if not (isinstance(isolation.get(key), list) and all(isinstance(v, str) for v in isolation[key]))]
    problems += [f"isolation.{key} is {'missing' if key not in isolation else repr(isolation[key])[:40]}: {why}"
                 for key in V1_ISOLATION_TEXTS if not isinstance(isolation.get(key), str)]
    device = obj(result, "checks").get("device_compute")
    loaded = isolation.get("device_worker_loaded")
    if isinstance(device, dict) and "stage" in device and not (
            isinstance(loaded, list) and all(isinstance(v, str) for v in loaded)):
        shown = "missing" if "device_worker_loaded" not in isolation else repr(loaded)[:40]
        problems.append(f"isolation.device_worker_loaded is {shown}: the device worker reported, and {why}")
    if not problems and (".pth" in isolation["present"]) != bool(isolation["executing_pth_files"]):
        problems.append(f"isolation.present is {isolation['present']!r} and isolation.executing_pth_files names "
                        f"{len(isolation['executing_pth_files'])} file(s): the gate lists \".pth\" exactly when it "
                        "found one")
    return problems
