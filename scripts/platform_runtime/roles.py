"""The role processes a file-system check starts (writers, readers, appenders, lock attempts), each with a
deadline derived from the check's own, and what each one was seen to do.

A role's outcome is one of:
- "answered": it exited 0 with its JSON result;
- "failed": it reported the exception that ended it (type, errno name, the failing operation);
- "no-answer": it gave no result within its deadline and was killed ("abandoned" when it would not even
  exit then): on a slow or loaded machine this is what happens, and it is named as such, never as the
  property under test failing;
- "no-result": it exited (a code or a signal) without a result.

On POSIX each role is a fork of its check's process (platform_runtime.forked: about 1 ms, where a fresh
interpreter costs 55-65 ms of CPU); on Windows a fresh interpreter on the worker entry. Either way it is a
separate process, and what ends it is reported the same way (guarded).

A check's deadline reaches its process as a wall-clock instant (`--deadline-at`), so the time its own
interpreter took to start counts against it exactly as it does for the gate, which kills it on its own
monotonic clock whatever happens; every role's deadline is what is left of it, less a reserve for the
check's own verdict.
"""

from __future__ import annotations

import errno
import json
import linecache
import os
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rules import process_status
from rules.role_outcomes import ROLE_RESERVE_S, error_text, role_reserve

from platform_runtime import forked
from platform_runtime.children import KILL_GRACE_S, WORKER_ENTRY, describe_returncode, parse_last_json, worker_command

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # scripts/
# What a check keeps for itself after its roles' deadline: killing a late role and reading what it left
# (rules.role_outcomes, whose rule bounds the recorded times by it).
RESERVE_S = ROLE_RESERVE_S
ABSOLUTE_PATH = re.compile(r"(?:[A-Za-z]:)?[\\/][^\s'\"]+")


class CheckDeadline:
    """The end of the check this process runs, on its monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.total_s = seconds
        self.reserve_s = role_reserve(seconds)
        self.expires = time.monotonic() + seconds

    @classmethod
    def at(cls, epoch: float) -> CheckDeadline:
        return cls(max(0.0, epoch - time.time()))

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())

    def for_role(self) -> float:
        """A role started now must answer within this many seconds."""
        return max(0.0, self.remaining() - self.reserve_s)


# --- what ended a role -----------------------------------------------------------------------------------

def _frames(tb):
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _where(frame, lineno: int) -> str:
    module = Path(frame.f_code.co_filename).stem
    return f"{module}.{frame.f_code.co_name}"


def failing_operation(exc: BaseException) -> str:
    """Where it was raised: the innermost call in our own code and its source line, and the innermost
    library function beneath it when there is one. Module and function names only, never a path."""
    frames = list(_frames(exc.__traceback__))
    if not frames:
        return "unknown"
    ours = [(f, n) for f, n in frames if Path(f.f_code.co_filename).resolve().is_relative_to(PACKAGE_ROOT)]
    frame, lineno = (ours or frames)[-1]
    line = linecache.getline(frame.f_code.co_filename, lineno).strip()
    text = f"{_where(frame, lineno)}: {line[:120]}" if line else _where(frame, lineno)
    inner_frame, inner_line = frames[-1]
    if inner_frame is not frame:
        text += f" (in {_where(inner_frame, inner_line)})"
    return text


def without_paths(text: str) -> str:
    return ABSOLUTE_PATH.sub("<path>", text)


def describe_error(exc: BaseException) -> dict:
    """The exception that ended a role, as evidence: type, errno name, message, the failing operation."""
    code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
    message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return {"type": type(exc).__name__, "errno": errno.errorcode.get(code) if isinstance(code, int) else None,
            "winerror": getattr(exc, "winerror", None), "message": without_paths(message)[:200],
            "operation": without_paths(failing_operation(exc))}


# --- starting and collecting roles ----------------------------------------------------------------------

@dataclass
class Role:
    role: str
    name: str
    process: subprocess.Popen | forked.ForkedProcess
    started: float
    deadline_s: float


# The main of the check's process (fs_worker.main), set by launch(): where it is set and the platform forks,
# each role is a fork of the check's process (platform_runtime.forked); otherwise a fresh interpreter.
_LAUNCHER: list = []


def start(role: str, name: str, deadline: CheckDeadline, *args: str) -> Role:
    if forked.FORK and _LAUNCHER:
        argv = [str(WORKER_ENTRY), "fs_worker", role, *args]  # what a fresh role's sys.argv is at start-up
        process = forked.start(argv, lambda role_argv: guarded(_LAUNCHER[0], role_argv), [role, *args])
    else:
        process = subprocess.Popen(worker_command("fs_worker", role, *args), stdout=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL)
    return Role(role, name, process, time.monotonic(), round(deadline.for_role(), 3))


def wait_ready(role: Role, seconds: float) -> None:
    """Wait up to `seconds` for the role's first line (a reader's "ready"). A forked role's pipe is waited on
    with select, so that no thread is alive in this process when it forks the next role."""
    stdout = role.process.stdout
    assert stdout is not None
    if isinstance(role.process, forked.ForkedProcess):
        if select.select([stdout.fileno()], [], [], max(seconds, 0.0))[0]:
            stdout.readline()
        return
    ready = threading.Thread(target=stdout.readline, daemon=True)
    ready.start()
    ready.join(seconds)


# /proc/<pid>/status of each role this process started, read when it is collected (still running, or not yet
# reaped): the check reports them summed (status_summary) for the gate (platform_runtime.worker_watch).
STATUSES: list[tuple[int, dict]] = []


def read_role_status(pid: int) -> None:
    try:
        text = open(f"/proc/{pid}/status", encoding="utf-8", errors="replace").read()
    except OSError:
        return
    STATUSES.append((os.getpid(), process_status.parse_status(text)))


def status_summary() -> dict | None:
    """Of the roles this very process started (a forked role inherits its parent's list): any traced, and the
    highest seccomp mode and filter count (a filter is inherited at fork and never removed, so a filter
    added for one role shows as a higher count). None when none was read."""
    own = [status for pid, status in STATUSES if pid == os.getpid()]
    if not own:
        return None

    def highest(key: str) -> int | None:
        values = [s[key] for s in own if isinstance(s.get(key), int)]
        return max(values) if values else None
    return {"traced": any(s.get("traced") is True for s in own), "seccomp": highest("seccomp"),
            "seccomp_filters": highest("seccomp_filters"), "read": len(own)}


def collect(role: Role) -> dict:
    """The role's outcome record; its JSON result, when it answered, under "result"."""
    outcome = {"role": role.role, "name": role.name, "deadline_s": role.deadline_s}
    if os.name == "posix":
        read_role_status(role.process.pid)
    left = role.deadline_s - (time.monotonic() - role.started)
    try:
        stdout, _ = role.process.communicate(timeout=max(left, 0.01))
    except subprocess.TimeoutExpired:
        role.process.kill()
        try:
            role.process.communicate(timeout=KILL_GRACE_S)
            abandoned = False
        except subprocess.TimeoutExpired:  # unkillable for now (uninterruptible sleep): abandoned, not awaited
            abandoned = True
        return {**outcome, "answer": "no-answer", "ran_s": round(time.monotonic() - role.started, 3),
                "exit": None, "abandoned": abandoned, "error": None}
    outcome.update(ran_s=round(time.monotonic() - role.started, 3), exit=role.process.returncode, abandoned=False)
    payload = parse_last_json(stdout)
    if role.process.returncode == 0 and payload is not None:
        return {**outcome, "answer": "answered", "error": None, "result": payload}
    error = payload.get("error") if payload else None
    if isinstance(error, dict):
        return {**outcome, "answer": "failed", "error": error}
    return {**outcome, "answer": "no-result", "error": None, "exit_text": describe_returncode(role.process.returncode)}


def record(outcome: dict) -> dict:
    """The outcome as the check records it (the role's own result is summed into the check's fields)."""
    return {key: value for key, value in outcome.items() if key != "result"}


def results(outcomes: list[dict]) -> list[dict]:
    return [o["result"] for o in outcomes if o["answer"] == "answered"]


def launch(main, argv: list[str]) -> int:
    """The check's process: run main(argv) guarded, with main as the entry of the roles it forks."""
    _LAUNCHER[:] = [main]
    return guarded(main, argv)


def guarded(run, argv: list[str]) -> int:
    """Run a role's main: the exception that ends it becomes its JSON result naming the error, exit 1."""
    try:
        return run(argv)
    except Exception as exc:  # noqa: BLE001 - whatever ended the role is its report, never a traceback
        error = describe_error(exc)
        sys.stdout.write(json.dumps({"ok": False, "reason": error_text(error), "error": error}, sort_keys=True)
                         + "\n")
        sys.stdout.flush()
        return 1

