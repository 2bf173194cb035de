"""How this interpreter was started, as facts the gate records and core.interpreter_rules judges: where it reads
bytecode (sys.pycache_prefix), whether sys.executable is the file the kernel runs, and, in a worker, whether it
was started the way the gate starts every worker. Stdlib only: a worker imports this before anything else.

CPython takes sys.executable from argv[0] (`exec -a NAME`, or a symlink chain to a wrapper script): a name the
caller chose. The gate starts its workers from the file the kernel really runs (running_image(), passed to Popen
as `executable`) with sys.executable as their argv[0], so a worker computes the same start-up paths as the gate
and no wrapper script on the way can drop -I or add a sitecustomize.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

START_UP_MODULES = ("sitecustomize", "usercustomize")


def running_image(proc: Path = Path("/proc/self/exe")) -> str | None:
    """The interpreter file the kernel runs (Linux), resolved; None where there is no such view or the file is
    gone (a replaced binary reads '... (deleted)')."""
    try:
        image = os.readlink(proc)
    except OSError:
        return None
    return None if image.endswith(" (deleted)") else image


def executable_is_image(executable: str | None = None, image: str | None = None) -> bool | None:
    """Whether sys.executable is the running image (a venv's symlink resolves to its base interpreter); None where
    the running image cannot be read (Windows, macOS: there sys.executable is trusted, docs/gate.md)."""
    image = running_image() if image is None else image
    if image is None:
        return None
    executable = sys.executable if executable is None else executable
    try:
        return bool(executable) and os.path.samefile(os.path.realpath(executable), image)
    except OSError:
        return False


def _xoption_prefix(cmdline: bytes | None) -> bool:
    """-X pycache_prefix=... among the interpreter's own options in /proc/self/cmdline (before the script)."""
    if cmdline is None:
        return False
    args = [arg.decode("utf-8", "replace") for arg in cmdline.split(b"\0")]
    for index, arg in enumerate(args[1:], 1):
        if not arg.startswith("-"):
            return False  # the script: what follows is the gate's own arguments
        option = arg[2:] if arg.startswith("-X") and len(arg) > 2 else (args[index + 1] if arg == "-X" and
                                                                         index + 1 < len(args) else "")
        if option.split("=")[0] == "pycache_prefix":
            return True
    return False


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def pycache_prefix_set(environments: list[dict[str, str]]) -> bool:
    """sys.pycache_prefix is set now, or was at start-up (start-up code can reset it after its forged modules
    ran): the variable while honoured (not -E/-I), or -X pycache_prefix (honoured under -I too)."""
    honoured = not sys.flags.ignore_environment and any(env.get("PYTHONPYCACHEPREFIX") for env in environments)
    return (sys.pycache_prefix is not None or "pycache_prefix" in getattr(sys, "_xoptions", {}) or honoured
            or _xoption_prefix(_read("/proc/self/cmdline")))


def parent_facts(environments: list[dict[str, str]]) -> dict:
    """`isolation.interpreter`: the gate's own interpreter (names and booleans only, never paths)."""
    return {"pycache_prefix": pycache_prefix_set(environments), "executable_is_image": executable_is_image()}


def worker_facts() -> dict:
    """A worker's own start-up (`startup` in its report): what core.interpreter_rules.WORKER_EXPECTED holds."""
    environ = _read("/proc/self/environ")
    names = set(os.environ) | ({entry.partition(b"=")[0].decode("utf-8", "replace")
                                for entry in environ.split(b"\0") if entry} if environ is not None else set())
    return {"isolated": bool(sys.flags.isolated), "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
            "pycache_prefix": pycache_prefix_set([dict(os.environ)]), "executable_is_image": executable_is_image(),
            "python_variables": sorted(name for name in names if name.startswith("PYTHON")),
            "startup_modules": sorted(name for name in START_UP_MODULES if name in sys.modules)}


STARTUP_KEY = "startup"  # where every worker's report carries worker_facts()


def popen_executable(command: list[str]) -> str | None:
    """What Popen should run for a worker command: the running image, where the command names sys.executable
    (its argv[0] stays sys.executable, so the worker's start-up paths are the gate's); None: the command as is."""
    return running_image() if command and command[0] == sys.executable else None


def take_facts(payload: dict | None) -> dict | None:
    """A worker's start-up facts, taken out of its report (so they are recorded once, under isolation)."""
    facts = payload.pop(STARTUP_KEY, None) if isinstance(payload, dict) else None
    return facts if isinstance(facts, dict) else None


def note_worker(isolation: dict, role: str, facts: dict | None) -> None:
    """Record a worker's start-up facts as `isolation.worker_startup[role]` (null: it reported none, and its
    check fails on its own) and name the vector (core.interpreter_rules) when it was not started as the gate
    starts every worker."""
    from core import interpreter_rules, start_up_rules

    isolation.setdefault("worker_startup", {})[role] = facts
    finding = interpreter_rules.worker_finding(role, facts, start_up_rules.accepted_modules(isolation))
    if finding is not None:
        if interpreter_rules.WORKER_VECTOR not in isolation["present"]:
            isolation["present"].append(interpreter_rules.WORKER_VECTOR)
        if finding not in isolation["findings"]:
            isolation["findings"].append(finding)
