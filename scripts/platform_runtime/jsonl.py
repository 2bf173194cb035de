"""Appending whole JSON lines to one file from many processes, correctly on NFS.

O_APPEND is not atomic between NFS clients (open(2)), and MSVCRT's O_APPEND is a seek followed by a
write. So every append takes an exclusive lock, seeks to the end and writes the whole line:
- POSIX: fcntl.lockf, a POSIX record lock, which the Linux NFS client forwards to the server (NLM or
  NFSv4 locks) and which revalidates the file size on acquire and flushes on release;
- Windows: msvcrt.locking on byte 0 of a sibling .lock file (the data file's own bytes stay unlocked
  so readers never hit a lock violation).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from pathlib import Path

from rules.gate_parameters import (  # noqa: F401 - record_line: the appenders' records, read here by name
    LOCK_METHOD_POSIX,
    LOCK_METHOD_WINDOWS,
    record_line,
)

if os.name == "nt":
    import msvcrt
else:
    import fcntl

METHOD = LOCK_METHOD_WINDOWS if os.name == "nt" else LOCK_METHOD_POSIX  # written once in rules.gate_parameters
# How msvcrt.locking says the byte is another's: the C runtime's _locking sets EACCES (a locking violation; EDEADLOCK
# after LK_LOCK's own retries), and EBADF or EINVAL for a call that is wrong, which is no refusal and is raised.
# Wine 8's _locking sets no errno at all when LockFile refuses (errno 0, which Windows never gives): a refusal too.
WINDOWS_REFUSED_ERRNOS = frozenset({errno.EACCES, getattr(errno, "EDEADLOCK", errno.EDEADLK), 0})


def refused(exc: OSError) -> bool:
    """Whether a failed lock attempt was refused because another holds the lock (any failure off Windows, as
    before: fcntl's EACCES/EAGAIN, and what an NFS client answers)."""
    return os.name != "nt" or exc.errno in WINDOWS_REFUSED_ERRNOS


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class LockedAppender:
    """One process's handle on the shared file; append() holds the lock for exactly one whole line."""

    def __init__(self, path: Path, lock_timeout: float = 60.0) -> None:
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0)
        self.fd = os.open(path, flags, 0o644)
        self.lock_fd = os.open(str(path) + ".lock", flags, 0o644) if os.name == "nt" else None
        self.lock_timeout = lock_timeout
        self.lock_waits = 0

    def lock(self) -> None:
        if os.name != "nt":
            fcntl.lockf(self.fd, fcntl.LOCK_EX)
            return
        give_up = time.monotonic() + self.lock_timeout
        os.lseek(self.lock_fd, 0, os.SEEK_SET)
        while True:
            try:
                msvcrt.locking(self.lock_fd, msvcrt.LK_NBLCK, 1)
                return
            except OSError as exc:
                if not refused(exc) or time.monotonic() > give_up:
                    raise
                self.lock_waits += 1
                time.sleep(0.001)

    def unlock(self) -> None:
        if os.name != "nt":
            fcntl.lockf(self.fd, fcntl.LOCK_UN)
            return
        os.lseek(self.lock_fd, 0, os.SEEK_SET)
        msvcrt.locking(self.lock_fd, msvcrt.LK_UNLCK, 1)

    def try_lock(self) -> bool:
        """One non-blocking attempt with the same call lock() makes; when acquired it is released again."""
        try:
            if os.name != "nt":
                fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                os.lseek(self.lock_fd, 0, os.SEEK_SET)
                msvcrt.locking(self.lock_fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if not refused(exc):
                raise
            return False
        self.unlock()
        return True

    def append(self, line: bytes) -> None:
        self.lock()
        try:
            os.lseek(self.fd, 0, os.SEEK_END)
            _write_all(self.fd, line)
        finally:
            self.unlock()

    def close(self) -> None:
        os.close(self.fd)
        if self.lock_fd is not None:
            os.close(self.lock_fd)


def verify_records(data: bytes, writers: int, records: int) -> dict:
    """Every record whole, none lost, none duplicated, nothing that is not a record."""
    seen: dict[tuple[int, int], int] = {}
    corrupt = 0
    lines = data.split(b"\n")
    unterminated = lines.pop() != b""  # the file must end with a newline
    for raw in lines:
        try:
            record = json.loads(raw)
            body = {key: record[key] for key in ("writer", "seq", "pad")}
            valid = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest() == record["sha256"]
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            corrupt += 1
            continue
        key = (record["writer"], record["seq"])
        seen[key] = seen.get(key, 0) + 1
    expected = {(w, s) for w in range(writers) for s in range(records)}
    missing = len(expected - seen.keys())
    duplicated = sum(count - 1 for count in seen.values() if count > 1)
    unexpected = len(seen.keys() - expected)
    return {
        "expected_records": len(expected),
        "lines": len(lines),
        "valid_records": sum(seen.values()),
        "missing": missing,
        "duplicated": duplicated,
        "corrupt_lines": corrupt,
        "unexpected": unexpected,
        "unterminated_tail": unterminated,
        "ok": missing == 0 and duplicated == 0 and corrupt == 0 and unexpected == 0 and not unterminated,
    }
