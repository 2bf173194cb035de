"""Whether a process of the gate's run could have had its system calls answered by someone else: a tracer
(ptrace) or a seccomp filter added for it, judged from `/proc/<pid>/status` as the gate recorded it
(`isolation.processes`). Pure functions of recorded fields: the gate calls `vectors` to name what it found,
the judge (rules.isolation_record) calls it again to recompute `isolation.present`.

- A tracer (TracerPid not 0) sees and can rewrite every system call's arguments and answers: the mount table
  read by mnt_id, fstatfs, the inode-flags ioctl, /proc/<pid>/maps. A gate or a worker with one is a vector,
  always: nothing a runner needs traces its jobs.
- A seccomp filter can answer a system call itself (SECCOMP_RET_ERRNO, or a supervisor through
  SECCOMP_RET_USER_NOTIF / RET_TRACE). Every Docker container runs under Docker's default filter, inherited
  by each process in it, so a filter the gate shares with the process that started it is the environment's:
  recorded, not refused. A filter the gate has and its parent has not, or a worker whose filter count differs
  from the gate's, was added for that process: a vector. Seccomp_filters (Linux 5.9+) counts them; where the
  kernel shows only the mode, the mode is compared.
Stdlib only.
"""

from __future__ import annotations

from typing import Any

TRACER = "tracer"
SECCOMP = "seccomp filter"
STATUS_FIELDS = {"TracerPid": "tracer_pid", "Seccomp": "seccomp", "Seccomp_filters": "seccomp_filters"}


def parse_status(text: str) -> dict[str, Any]:
    """`traced`, `seccomp` (0 none, 1 strict, 2 filter) and `seccomp_filters` from a /proc/<pid>/status text;
    None for a field the kernel does not show. The tracer's pid itself is not kept (evidence holds no pids)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name in STATUS_FIELDS and value.strip().isdigit():
            found[STATUS_FIELDS[name]] = int(value.strip())
    tracer = found.get("tracer_pid")
    return {"traced": None if tracer is None else tracer != 0, "seccomp": found.get("seccomp"),
            "seccomp_filters": found.get("seccomp_filters")}


def _filters(status: dict[str, Any]) -> tuple[Any, Any]:
    return status.get("seccomp"), status.get("seccomp_filters")


def _added(status: dict[str, Any], base: dict[str, Any]) -> bool:
    """Whether `status` shows a seccomp state other than `base`'s (a filter added, or a mode set)."""
    mode, count = _filters(status)
    base_mode, base_count = _filters(base)
    if count is not None and base_count is not None:
        return count != base_count
    return mode is not None and base_mode is not None and mode != base_mode


def _is_status(value: Any) -> bool:
    return isinstance(value, dict)


def vectors(processes: Any) -> list[tuple[str, str]]:
    """(vector, finding) for each process of a recorded `isolation.processes` that was traced or had a seccomp
    filter added for it; [] for anything else (an older result records none)."""
    if not isinstance(processes, dict):
        return []
    found: list[tuple[str, str]] = []
    gate = processes.get("gate") if _is_status(processes.get("gate")) else {}
    parent = processes.get("gate_parent")
    if gate.get("traced") is True:
        found.append((TRACER, "the gate's own process is traced (TracerPid is not 0): its tracer can rewrite "
                              "every answer the kernel gives it"))
    if gate.get("seccomp"):
        if not _is_status(parent):
            found.append((SECCOMP, "the gate's own process runs under a seccomp filter and the process that "
                                   "started it could not be read to show the filter is the environment's"))
        elif _added(gate, parent):
            found.append((SECCOMP, "the gate's own process has a seccomp filter the process that started it has "
                                   "not: one was added for the gate, and a filter can answer its system calls"))
    workers = processes.get("workers")
    for name, status in sorted(workers.items()) if isinstance(workers, dict) else []:
        if not _is_status(status):
            continue  # not read (it ended before its report): its check fails or stands on its own
        if status.get("traced") is True:
            found.append((TRACER, f"the {name} worker is traced (TracerPid is not 0): its tracer can rewrite every "
                                  "answer the kernel gives it"))
        if gate and _added(status, gate):
            found.append((SECCOMP, f"the {name} worker has a seccomp filter count other than the gate's own "
                                   "process: a filter was added for that worker"))
    return found
