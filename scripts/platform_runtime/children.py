"""Child processes with deadlines: every check runs in one, and none may hang the gate.

A child prints one JSON object as the last line of its stdout. On POSIX it leads a new session, so a
timeout kills it together with the processes it started; on Windows taskkill /T does the same. A child that
neither exits nor releases its output within KILL_GRACE_S of the kill (a process in uninterruptible sleep on
a hung NFS mount, or one that escaped its group holding the pipe) is abandoned and named, never waited for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from common import strict_json
from rules.role_outcomes import KILL_GRACE_S  # written once there (its rules bound the recorded times by it)

from platform_runtime import interpreter_state, stuck
from platform_runtime.isolation import WORKER_FLAGS

# A file-system check's deadline when the gate's --timeout is the default (600 s); it grows with --timeout
# (FS_CHECK_SHARE of it), so a user who gives a slow machine more time gives it to every check and role.
FS_CHECK_TIMEOUT_S = 120.0
FS_CHECK_SHARE = FS_CHECK_TIMEOUT_S / 600.0
PACKAGE_DIR = Path(__file__).resolve().parent
WORKER_ENTRY = PACKAGE_DIR.parent / "platform_runtime_worker.py"


class Deadline:
    """The gate's global budget; each child's timeout is capped by what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds

    @classmethod
    def until(cls, expires: float, seconds: float) -> Deadline:
        """A deadline at a monotonic instant (platform_runtime.budget sets the checks' one)."""
        deadline = cls(seconds)
        deadline.expires = expires
        return deadline

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())

    def cap(self, seconds: float) -> tuple[float, bool]:
        """The timeout to give a child, and whether the global budget (not the child's own) set it."""
        left = self.remaining()
        return (left, True) if left < seconds else (seconds, False)


@dataclass
class ChildOutcome:
    name: str
    returncode: int | None
    payload: dict | None
    duration_s: float
    timed_out: bool = False
    timeout_s: float = 0.0
    global_deadline: bool = False
    abandoned: bool = False
    stderr_tail: str = ""
    errors: list[str] = field(default_factory=list)
    stuck: list[dict] = field(default_factory=list)  # its session's processes left in uninterruptible sleep
    blocked: list[dict] = field(default_factory=list)  # those in uninterruptible sleep when its deadline came
    grace_s: float = KILL_GRACE_S  # how long it was given to go after the kill

    def failure(self) -> str | None:
        """Why this child did not deliver a result, or None when it did."""
        if self.timed_out:
            who = "the gate's --timeout" if self.global_deadline else "its deadline"
            text = (f"NO ANSWER: {self.name} did not finish within {self.timeout_s:.0f} s ({who}) and was killed "
                    f"after {self.duration_s:.1f} s")
            if self.blocked:  # why it did not finish: blocked in the kernel (a hung mount), not computing
                text += f"; at the deadline {stuck.describe(self.blocked)}"
            if self.abandoned and self.stuck:
                text += (f"; abandoned, not awaited: {stuck.describe(self.stuck)} {self.grace_s:.1f} s after "
                         "the kill")
            elif self.abandoned:
                text += (f"; it did not exit or release its output within {self.grace_s:.1f} s of the kill "
                         "(uninterruptible sleep?) and was abandoned")
            return text
        if self.payload is None:
            how = describe_returncode(self.returncode)
            return f"{self.name} exited {how} without a result"
        return None


def ended_by_signal(code: int | None) -> bool:
    """Whether a child's exit status says a signal ended it (Popen's negative returncode on POSIX)."""
    return code is not None and code < 0


def describe_returncode(code: int | None) -> str:
    if code is None:
        return "abnormally"
    if code < 0:
        try:
            return f"by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"by signal {-code}"
    return f"with code {code}"


def worker_command(module: str, *args: str) -> list[str]:
    """Run one of this package's worker modules in a fresh isolated interpreter (never a fork), through the
    entry script that puts scripts/ on sys.path (`python -I` leaves it off)."""
    return [sys.executable, *WORKER_FLAGS, str(WORKER_ENTRY), module, *args]


def device_worker_command(*args: str) -> list[str]:
    """The device worker runs as its own file (it puts scripts/ on its path itself), isolated like the others and
    at its own scheduling weight: it is the gate's critical path."""
    return [sys.executable, *WORKER_FLAGS, str(PACKAGE_DIR / "device_worker.py"), *args]


def start(command: list[str], env: dict[str, str] | None = None, hold: bool = False) -> subprocess.Popen:
    """hold: the child's stdin is a pipe it waits on after its report (collect_after_report)."""
    kwargs: dict = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE,
                    "stdin": subprocess.PIPE if hold else subprocess.DEVNULL}
    if os.name == "nt":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    # The interpreter the kernel runs, never what sys.executable names (argv[0]: a wrapper script could drop -I).
    return subprocess.Popen(command, env=env, executable=interpreter_state.popen_executable(command), **kwargs)


def kill_tree(process: subprocess.Popen) -> None:
    if process.poll() is not None and os.name == "nt":
        return
    try:
        if os.name == "nt":
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True, timeout=30)
        else:
            # SIGKILL also ends a stopped (SIGSTOP) child; the group holds what it spawned.
            os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError, subprocess.TimeoutExpired):
        pass
    try:
        process.kill()
    except OSError:
        pass


def parse_last_json(stdout: bytes) -> dict | None:
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if line:
            try:  # strictly: a duplicate key or a NaN is no payload a worker of ours writes
                value = strict_json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def default_grace() -> float:
    return KILL_GRACE_S


def collect(name: str, process: subprocess.Popen, started: float, timeout: float,
            global_deadline: bool, grace: Callable[[], float] = default_grace,
            input: bytes | None = None) -> ChildOutcome:
    """Wait for a started child until its timeout, killing its whole tree when it runs over; grace() says, at
    the kill, how long it may then take to go (the gate's budget shrinks it near --timeout). input: written to
    a child started with hold=True, then its stdin is closed."""
    grace_s = KILL_GRACE_S
    try:
        stdout, stderr = process.communicate(input=input, timeout=max(timeout - (time.monotonic() - started), 0.01))
        timed_out = False
    except subprocess.TimeoutExpired:
        blocked = stuck.stuck_in(process.pid) if os.name == "posix" else []
        kill_tree(process)
        abandoned = False
        grace_s = grace()
        try:
            stdout, stderr = process.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            stdout, stderr, abandoned = b"", b"", True
        timed_out = True
        # A child leads its own session (start): whatever of it still sleeps in the kernel is named.
        left = stuck.stuck_in(process.pid) if os.name == "posix" else []
        abandoned = abandoned or bool(left)
    else:
        abandoned, left, blocked = False, [], []
    duration = time.monotonic() - started
    # A report counts only from a child that exited by itself: one ended by a signal (SIGKILLed after another
    # process wrote a line into its stdout, /proc/<pid>/fd/1) did not finish what it reports.
    payload = None if timed_out or ended_by_signal(process.returncode) else parse_last_json(stdout)
    return ChildOutcome(
        name=name, returncode=process.returncode, payload=payload, duration_s=round(duration, 3),
        timed_out=timed_out, timeout_s=timeout, global_deadline=global_deadline and timed_out, abandoned=abandoned,
        stderr_tail=stderr.decode("utf-8", "replace")[-2000:], stuck=left, blocked=blocked, grace_s=grace_s,
    )



def collect_after_report(name: str, process: subprocess.Popen, started: float, timeout: float,
                         global_deadline: bool, on_report: Callable[[int, dict], None],
                         grace: Callable[[], float] = default_grace) -> ChildOutcome:
    """collect() for a child that prints its report and then waits for its stdin to close: on_report(pid,
    report) runs while the child is still alive (the parent reads what it mapped), then stdin is closed. A child that
    exits at once after printing (a forged report) leaves nothing to read, and on_report sees that."""
    out: list[bytes] = []
    err: list[bytes] = []

    def release() -> None:
        try:
            process.stdin.close()
        except (OSError, AttributeError):
            pass

    def read_stdout() -> None:
        reported = False
        try:
            for line in process.stdout:
                out.append(line)
                if not reported and (report := parse_last_json(line)) is not None:
                    reported = True
                    try:
                        on_report(process.pid, report)
                    finally:
                        release()
        finally:
            release()

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=lambda: err.append(process.stderr.read()), daemon=True)]
    for reader in readers:
        reader.start()
    timed_out = abandoned = False
    blocked: list[dict] = []
    try:
        process.wait(timeout=max(timeout - (time.monotonic() - started), 0.01))
    except subprocess.TimeoutExpired:
        blocked = stuck.stuck_in(process.pid) if os.name == "posix" else []
        kill_tree(process)
        timed_out = True
    # One window for everything after the kill (the output released, the process reaped), never one per wait.
    grace_s = grace() if timed_out else max(timeout - (time.monotonic() - started), KILL_GRACE_S)
    until = time.monotonic() + grace_s
    for reader in readers:
        reader.join(timeout=max(until - time.monotonic(), 0.01))
    if any(reader.is_alive() for reader in readers):  # a grandchild holds the pipe: never waited for
        kill_tree(process)
        abandoned = True
    try:
        process.wait(timeout=max(until - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        abandoned = True
    left = stuck.stuck_in(process.pid) if os.name == "posix" and (timed_out or abandoned) else []
    stdout = b"" if abandoned else b"".join(out)
    stderr = b"" if abandoned else b"".join(err)
    payload = None if timed_out or abandoned or ended_by_signal(process.returncode) else parse_last_json(stdout)
    return ChildOutcome(
        name=name, returncode=process.returncode, payload=payload, duration_s=round(time.monotonic() - started, 3),
        timed_out=timed_out or abandoned, timeout_s=timeout, global_deadline=global_deadline and timed_out,
        abandoned=abandoned or bool(left), stderr_tail=stderr.decode("utf-8", "replace")[-2000:], stuck=left,
        blocked=blocked, grace_s=grace_s if timed_out else KILL_GRACE_S,
    )
