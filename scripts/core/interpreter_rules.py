"""The vectors in how an interpreter of the gate's run was started, from the facts the gate records about it: one
pure function, which the gate calls to write `isolation.present`/`findings` and the judge calls to recompute
them (core.isolation_judge), so a vector deleted from `present` while its fact remains is refused.

- `isolation.interpreter` (the gate's own process): `pycache_prefix` true when sys.pycache_prefix was set
  (PYTHONPYCACHEPREFIX, or `-X pycache_prefix=`, which -I does not stop): the interpreter then reads every
  module's bytecode (the standard library's and the gate's own) from that folder, where a .pyc stamped with the
  source's mtime and size runs in the source's place. `executable_is_image` false when sys.executable (which
  CPython takes from argv[0], `exec -a`) is not the file the kernel runs (/proc/self/exe): the start-up paths
  (pyvenv.cfg, the standard library, site-packages) were computed from a name the caller chose.
- `isolation.worker_startup` (each worker, by role): what the worker reported of its own start-up against how the
  gate starts every worker (`python -I -B`, no PYTHON* variable, no pycache prefix, the same interpreter file).
Stdlib only.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

PYCACHE_VECTOR = "PYTHONPYCACHEPREFIX"
EXECUTABLE_VECTOR = "sys.executable"
WORKER_VECTOR = "worker start-up"
PYCACHE_FINDING = ("PYTHONPYCACHEPREFIX is set: sys.pycache_prefix (the variable, or -X pycache_prefix) makes the "
                   "gate's own interpreter read the bytecode of every module it imports, the standard library's "
                   "and the gate's own, from another folder")
EXECUTABLE_FINDING = ("sys.executable is not the interpreter file the kernel runs (/proc/self/exe): its start-up "
                      "paths were computed from a name the caller chose (argv[0])")
# A worker's own start-up facts, and what each must be (platform_runtime.worker_startup writes them).
WORKER_EXPECTED: dict[str, Any] = {"isolated": True, "dont_write_bytecode": True, "pycache_prefix": False,
                                   "executable_is_image": True, "python_variables": [], "startup_modules": []}


def interpreter_vectors(interpreter: Any) -> list[tuple[str, str]]:
    """(vector, finding) for the gate's own interpreter facts (`isolation.interpreter`)."""
    if not isinstance(interpreter, dict):
        return []
    found = []
    if interpreter.get("pycache_prefix") is True:
        found.append((PYCACHE_VECTOR, PYCACHE_FINDING))
    if interpreter.get("executable_is_image") is False:
        found.append((EXECUTABLE_VECTOR, EXECUTABLE_FINDING))
    return found


def worker_finding(role: str, facts: Any, accepted: Collection[str] = ()) -> str | None:
    """Why a worker was not started as the gate starts it (its own report of its start-up); None when it was.
    A worker that reported nothing of its start-up (facts None) is not judged here: its check fails on its own.
    accepted: the start-up modules the platform's owner installed unchanged (core.start_up_rules.accepted_modules):
    `python -I` still imports a sitecustomize of the standard library (Debian's), so a worker loading one of
    those was started as the gate starts it."""
    if facts is None:
        return None
    if not isinstance(facts, dict):
        return f"the {role} worker was not started as the gate starts it: it reported no start-up facts"
    wrong = []
    for name, want in WORKER_EXPECTED.items():
        got = facts.get(name)
        if name == "startup_modules" and isinstance(got, list) and all(m in accepted for m in got):
            continue
        if got != want and not (name == "executable_is_image" and got is None):  # None: no /proc/self/exe here
            wrong.append(f"{name} {got!r}")
    if not wrong:
        return None
    return f"the {role} worker was not started as the gate starts it: {', '.join(wrong)}"


def worker_vectors(worker_startup: Any, accepted: Collection[str] = ()) -> list[tuple[str, str]]:
    """(vector, finding) for each worker whose reported start-up is not the gate's (`isolation.worker_startup`)."""
    if not isinstance(worker_startup, dict):
        return []
    found = []
    for role in sorted(worker_startup):
        finding = worker_finding(str(role), worker_startup[role], accepted)
        if finding is not None:
            found.append((WORKER_VECTOR, finding))
    return found
