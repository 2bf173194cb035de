"""The shared file primitives: streaming SHA-256, canonical JSON bytes, atomic replacement, and reads that
survive Windows sharing violations. Stdlib only: every part of the project imports it.

The replace protocol: a temporary sibling in the same directory, write, flush, fsync, os.replace, fsync the
directory. A writer that fails at any point removes its temporary file and leaves the old file whole. A
writer that is killed cannot remove it: its temporaries are named `.<name>.<pid>-<random>.tmp`, so the next
writer finds them (temporaries_of) and removes those whose process is gone (sweep_temporaries).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

if os.name == "nt":
    import _winapi

T = TypeVar("T")
FILE_SHARE_READ, FILE_SHARE_WRITE = 0x1, 0x2  # what CPython's open() shares a file with (the C runtime's _SH_DENYNO)

# ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: CPython opens files without
# FILE_SHARE_DELETE, so os.replace fails while another process has the target open, and readers can fail
# transiently while it is being replaced.
SHARING_WINERRORS = frozenset({5, 32, 33})
# ETXTBSY, EBUSY from the rename: the Linux NFS client refuses a rename or unlink while another operation of
# the same client is unlinking or renaming that name on the server, or after it was silly-renamed
# (fs/nfs/dir.c, NFS_FSDATA_BLOCKED and DCACHE_NFSFS_RENAMED). Transient, like a sharing violation.
BUSY_RENAME_ERRNOS = frozenset({errno.ETXTBSY, errno.EBUSY})
# The retries' budget: a short backoff, then a try every RETRY_MAX_DELAY_S, for about 10 s in all. A replace onto a
# file that readers hold open succeeds only in the instants none holds it: under Wine, with the replace check's two
# readers each holding the file 70 % of their loop, a writer needed up to 352 tries a millisecond apart (0.77 s), and
# the former 40 tries backing off to 100 ms (3.4 s) failed every writer in three gates out of three. Polling finds
# those instants; the time bound covers a Windows virus scanner or indexer holding a file for seconds.
RETRY_MAX_DELAY_S = 0.01
RENAME_ATTEMPTS = 1000  # the atomic writer's rename: at most 999 counted retries each (rules.sharing bounds the count)
TEMP_SUFFIX = ".tmp"
CHUNK = 1 << 20  # hash in 1 MiB blocks: checkpoints and artifacts can be larger than memory allows


@dataclass
class RetryCounter:
    sharing_violations: int = 0
    busy_renames: int = 0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path | str) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def encode_json(document: object) -> bytes:
    """The one byte form of every JSON document the project writes: sorted keys, indent 2, UTF-8, LF only,
    whatever the platform, because these bytes are what the evidence index hashes."""
    return (json.dumps(finite(document), indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


def finite(value: object) -> object:
    """The document with each non-finite float written as text ("nan", "inf", "-inf"): NaN and Infinity are
    not JSON, and the strict reader (common.strict_json) refuses them, so a NaN loss stays a readable fact."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def is_sharing_violation(exc: BaseException) -> bool:
    return isinstance(exc, PermissionError) and getattr(exc, "winerror", None) in SHARING_WINERRORS


def is_busy_rename(exc: BaseException) -> bool:
    """ETXTBSY or EBUSY from a rename (an NFS client's transient refusal), never a Windows sharing error."""
    return isinstance(exc, OSError) and not is_sharing_violation(exc) and exc.errno in BUSY_RENAME_ERRNOS


def retry_sharing(action: Callable[[], T], counter: RetryCounter | None = None, attempts: int = RENAME_ATTEMPTS,
                  first_delay: float = 0.001, max_delay: float = RETRY_MAX_DELAY_S, *, busy_rename: bool = False) -> T:
    """Run action, retrying Windows sharing violations (and, for a rename, ETXTBSY/EBUSY) with a short backoff,
    then a try every max_delay (about 10 s in all); each retry is counted, the last failure is raised."""
    delay = first_delay
    for attempt in range(attempts):
        try:
            return action()
        except OSError as exc:
            sharing, busy = is_sharing_violation(exc), busy_rename and is_busy_rename(exc)
            if not (sharing or busy) or attempt == attempts - 1:
                raise
            if counter is not None:
                if sharing:
                    counter.sharing_violations += 1
                else:
                    counter.busy_renames += 1
            time.sleep(delay)
            delay = min(max_delay, delay * 2)
    raise AssertionError("unreachable")


def fsync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX). Windows has no directory handles to fsync."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path | str, data: bytes, *, counter: RetryCounter | None = None,
                       parents: bool = False) -> None:
    """Replace path with data atomically: the old file stays whole whatever step fails. parents: create the
    missing folders above it first (an index or report written into a new folder)."""
    path = Path(path)
    directory = path.parent
    if parents:
        directory.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=TEMP_SUFFIX, dir=directory)
    try:
        if os.name == "posix":  # mkstemp makes 0600; results and indexes are meant to be read by others
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        retry_sharing(lambda: os.replace(temp_name, path), counter, RENAME_ATTEMPTS, busy_rename=True)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    fsync_directory(directory)


def temporaries_of(path: Path | str) -> dict[Path, int]:
    """The atomic writer's temporary siblings of path that exist now, each with the pid that made it."""
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(\d+)-[^.]+{re.escape(TEMP_SUFFIX)}")
    found = {}
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(path.parent):
            match = pattern.fullmatch(entry.name)
            if match:
                found[Path(entry.path)] = int(match.group(1))
    return found


def process_alive(pid: int) -> bool:
    """Whether pid runs on this host. Windows has no harmless probe (os.kill there terminates): assume it does."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def sweep_temporaries(path: Path | str, *, exclusive: bool = False) -> int:
    """Remove the temporaries a killed writer left beside path; returns how many were removed. Only those
    whose writer is gone from this host, unless the caller is path's only writer (exclusive): on a shared
    mount another host's live writer has a pid this host cannot see, so only an exclusive writer sweeps all."""
    removed = 0
    for temp, pid in temporaries_of(path).items():
        if exclusive or (pid != os.getpid() and not process_alive(pid)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
                removed += 1
    return removed


def read_whole(path: Path | str) -> bytes:
    """The file's bytes. On Windows through CreateFileW and ReadFile, with open()'s share mode (read and write, not
    delete), for two reasons. A refused open keeps its Windows error: CPython's open() goes through the C runtime's
    _wopen, which turns ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION and ERROR_ACCESS_DENIED alike into errno
    EACCES and drops the Windows error, so a reader refused while a writer replaced the file could not tell that
    from a file it may not read, and gave up (under Wine every replace reader died so). And the file is held open
    only for the open, the reads and the close: CPython's file object adds the C runtime's descriptor, fstat and a
    size probe while it is open, and a replace onto it waits out every one of them (under Wine, a writer needed
    22 tries on average beside two such readers, 2 beside these)."""
    if os.name != "nt":
        with open(path, "rb") as handle:
            return handle.read()
    handle = _winapi.CreateFile(os.fspath(path), _winapi.GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, 0,
                                _winapi.OPEN_EXISTING, 0, 0)
    try:
        blocks = []
        while block := _winapi.ReadFile(handle, CHUNK)[0]:
            blocks.append(block)
        return b"".join(blocks)
    finally:
        _winapi.CloseHandle(handle)


def read_bytes_retrying(path: Path | str, counter: RetryCounter | None = None) -> bytes:
    return retry_sharing(lambda: read_whole(path), counter)


def atomic_write_json(path: Path | str, document: object) -> None:
    atomic_write_bytes(path, encode_json(document))
