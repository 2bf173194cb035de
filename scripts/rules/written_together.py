"""Facts of a gate result the judge holds beyond the gate's own rules, each of which,
edited alone, no other rule read: fields the gate writes together, the torch build's dist-info name and the kernel's
seccomp and tracer states.

Fields a gate writes together: where a check recorded one of them, it recorded all.

The judge recomputes each derived flag it finds (`training.loss_decreased`, `lock_probe.ok`, ...) and refuses one
its measurements contradict; a flag deleted was not compared, and the result verified. The gate writes each of
these groups as one dict literal (platform_runtime/device_training.py `facts`, lock_probe.py's return,
fs_worker.py's stage facts and `check`, roles.py `collect`), so a record holding the group's marker without one of
its fields was not written by the gate. Markers are fields every gate version wrote in that group, so a check that
stopped before the group (no marker) is judged by its own rules. The judge's, not the gate's: the gate never
loads it, so it is not among GATE_SOURCES. Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.values import is_int

# (where the group lies, its marker, the fields written with it); a path ending "[]" is each item of a list.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("checks.device_compute.training", "losses",
     ("steps", "optimizer", "initial_loss", "final_loss", "losses_finite", "loss_decreased", "parameters_changed",
      "update_rule_max_relative_error", "update_rule_ok", "parameter_device")),
    ("checks.failing_writer", "stages", ("old_file_intact", "temp_files_left")),
    ("checks.concurrent_replace", "writes", ("missing_reads_tolerated", "reader_sharing_retries",
                                             "writer_sharing_retries")),
    ("checks.jsonl_append.lock_probe", "method", ("ok", "refused_while_held", "acquired_after_release")),
    ("checks.concurrent_replace.roles[]", "answer", ("abandoned",)),
    ("checks.jsonl_append.roles[]", "answer", ("abandoned",)),
    ("checks.jsonl_append.lock_probe.while_held", "answer", ("abandoned",)),
    ("checks.jsonl_append.lock_probe.after_release", "answer", ("abandoned",)),
)


def _groups(document: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    """(its dotted path, the dict) of each record at `path`."""
    holder, where = document, []
    parts = path.split(".")
    for number, part in enumerate(parts):
        key = part.removesuffix("[]")
        holder = holder.get(key) if isinstance(holder, dict) else None
        where.append(key)
        if part.endswith("[]"):
            rest = ".".join(parts[number + 1:])
            items = holder if isinstance(holder, list) else []
            found = []
            for index, item in enumerate(items):
                prefix = ".".join(where) + f".{index}"
                found += [(prefix + (f".{p}" if p else ""), d) for p, d in _groups(item, rest)] if rest else \
                    ([(prefix, item)] if isinstance(item, dict) else [])
            return found
    return [(".".join(where), holder)] if isinstance(holder, dict) else []


def _at(document: Any, *keys: str) -> Any:
    """document[k1][k2]... where each holder is a dict, else None: a result of the wrong shape (a list where an
    object belongs) is the schema's to refuse, never a crash of the judge."""
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document


def absent_fields(document: Any) -> list[str]:
    """Each field of a group the gate writes together that a gate result holds the group of without it."""
    problems = []
    for path, marker, fields in GROUPS:
        for where, group in (_groups(document, path) if path else []):
            if marker in group:
                problems += [f"{where}.{field} is missing beside {where}.{marker}: the gate writes them together"
                             for field in fields if field not in group]
    return problems


def dist_info_problems(document: Any) -> list[str]:
    """`device.torch_build.dist_info` is the folder the installer named after the build it found
    (platform_runtime/torch_build.py reads `torch_build.version` from that folder's METADATA): `torch-<version>
    .dist-info`, the local part (`+cpu`, `+cu130`) kept or left out as the installer wrote it (pip keeps it, the
    committed CUDA run's installer did not). Edited alone, it named another build."""
    build = _at(document, "device", "torch_build")
    if not isinstance(build, dict) or not isinstance(build.get("version"), str) or "dist_info" not in build:
        return []
    version, named = build["version"], build.get("dist_info")
    allowed = {f"torch-{version}.dist-info", f"torch-{version.partition('+')[0]}.dist-info"}
    if isinstance(named, str) and named in allowed:
        return []
    return [f"device.torch_build.dist_info is {named!r}, the build found is torch_build.version {version!r} "
            f"({' or '.join(sorted(allowed))})"]


def _status_of(processes: dict[str, Any]) -> list[tuple[str, dict[str, Any], str | None]]:
    """(field, its status, the field of the process it was started by) of each recorded process."""
    found = [("isolation.processes.gate_parent", processes.get("gate_parent"), None),
             ("isolation.processes.gate", processes.get("gate"), "isolation.processes.gate_parent")]
    workers = processes.get("workers")
    found += [(f"isolation.processes.workers.{name}", status, "isolation.processes.gate")
              for name, status in (sorted(workers.items()) if isinstance(workers, dict) else [])]
    return [(field, status, parent) for field, status, parent in found if isinstance(status, dict)]


def process_problems(document: Any) -> list[str]:
    """Each recorded /proc/<pid>/status view (rules.process_status.parse_status) is one the kernel shows: `Seccomp`
    1 (strict mode) allows only read, write and exit, so no process that started another or ran Python shows it;
    `Seccomp` is 2 exactly when `Seccomp_filters` counts one or more; and a filter is inherited and never removed,
    so a process started by another counts at least its filters (the gate its parent's, each worker the gate's).
    Edited alone, each of these verified PASS."""
    processes = _at(document, "isolation", "processes")
    if not isinstance(processes, dict):
        return []
    statuses = _status_of(processes)
    by_field = {field: status for field, status, _ in statuses}
    problems = []
    for field, status, parent in statuses:
        mode, count = status.get("seccomp"), status.get("seccomp_filters")
        if mode is not None and (type(mode) is not int or mode not in (0, 2)):
            problems.append(f"{field}.seccomp is {mode!r}: a process that ran shows 0 or 2 (1, strict mode, "
                            "allows only read, write and exit)")
        if count is not None and (type(count) is not int or count < 0):
            problems.append(f"{field}.seccomp_filters is {count!r}, not a count")
        elif is_int(mode) and is_int(count) and (mode == 2) != (count > 0):
            problems.append(f"{field}.seccomp is {mode!r} beside seccomp_filters {count!r}: the kernel shows 2 "
                            "exactly when a filter is counted")
        base = by_field.get(parent) if parent else None
        base_count = base.get("seccomp_filters") if isinstance(base, dict) else None
        if is_int(count) and is_int(base_count) and count < base_count:
            problems.append(f"{field}.seccomp_filters is {count!r}, fewer than {parent}.seccomp_filters "
                            f"{base_count!r}: a filter is inherited and never removed")
    return problems


def record_problems(document: Any) -> list[str]:
    """Every problem of this module's rules, for one gate result."""
    return absent_fields(document) + dist_info_problems(document) + process_problems(document)
