"""Role processes started by fork from their check's own process, instead of a fresh interpreter each.

A check's process (`python -I -B platform_runtime_worker.py fs_worker MODE ...`) is started exactly as every
worker is: isolated, in the scrubbed worker environment, in a session of its own at the workers' low weight.
It is the launcher (a "zygote") of its roles: each one is a fork of it, so it is still a separate OS process
(its own pid, its own POSIX record locks, really concurrent, killable), with the very interpreter state the
check's process was started with and whatever its start-up (sitecustomize, a .pth) put there, as a fresh
interpreter would have had. A fork costs about 1 ms where a fresh interpreter costs 55-65 ms of CPU, more
under load (docs/performance.md#gate).

Before the fork, sys.argv is set to the role's own command line (what `platform_runtime_worker.py fs_worker
ROLE ...` would show at start-up), so whatever runs at the fork in the child (an `os.register_at_fork` hook,
as a start-up module can register) sees the role it is. The child then runs the role's main, flushes its
output and ends with os._exit: it never returns into the check's code, and the exit handlers registered in
the check's process (atexit) are the check's, not the role's, so none of them runs in it (as in
multiprocessing's forked children).

Where: Linux and macOS (os.fork; the check's process has imported only the standard library and this
package, the usual safe case on macOS, and the killed-writer stage already forks its writers there). Windows
has no fork: each role stays a fresh interpreter (platform_runtime.roles).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable

FORK = hasattr(os, "fork") and os.name == "posix"


class ForkedProcess:
    """The part of subprocess.Popen that a check uses on its roles: pid, stdout, poll, wait, kill,
    communicate (stdout only; the role's stderr is the check's, as a Popen role without stderr= has)."""

    def __init__(self, argv: list[str], pid: int, stdout_fd: int) -> None:
        self.args = argv
        self.pid = pid
        # Unbuffered: a line read from it (a reader's "ready") leaves nothing in a buffer that communicate's
        # own reads would miss.
        self.stdout = os.fdopen(stdout_fd, "rb", buffering=0)
        self.returncode: int | None = None
        self._output: list[bytes] = []

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone, how is unknown
                self.returncode = 255
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """subprocess.Popen.wait's loop: WNOHANG with a growing pause (up to 50 ms) until the deadline."""
        if timeout is None:
            while self.poll() is None:
                with contextlib.suppress(ChildProcessError):
                    _, status = os.waitpid(self.pid, 0)
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        until, pause = time.monotonic() + timeout, 0.0005
        while self.poll() is None:
            left = until - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[bytes, None]:
        """Read its stdout to the end, then reap it; TimeoutExpired (what was read so far kept for the next
        call) when either is not done within timeout."""
        until = None if timeout is None else time.monotonic() + timeout
        fd = self.stdout.fileno() if not self.stdout.closed else None
        while fd is not None:
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.stdout.close()
                fd = None
            else:
                self._output.append(chunk)
        self.wait(None if until is None else max(until - time.monotonic(), 0.0))
        return b"".join(self._output), None


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return 1


def start(argv: list[str], main: Callable[[list[str]], int], role_argv: list[str]) -> ForkedProcess:
    """Fork a role: its stdout a pipe to this process, its stdin /dev/null, its stderr this process's; in the
    child, sys.argv is `argv` (from the fork on) and main(role_argv) runs; its return is the exit status."""
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    saved, sys.argv = sys.argv, list(argv)
    try:
        pid = os.fork()
    except BaseException:
        sys.argv = saved
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # the child: never returns into the check's code
        code = 1
        try:
            os.close(read_fd)
            os.dup2(write_fd, 1)
            os.close(write_fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            try:
                code = main(role_argv)
            except SystemExit as exc:
                code = _exit_code(exc)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    sys.argv = saved
    os.close(write_fd)
    return ForkedProcess(list(argv), pid, read_fd)
