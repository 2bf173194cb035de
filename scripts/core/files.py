"""The shared file primitives: streaming SHA-256, canonical JSON bytes, atomic replacement, and reads that
survive Windows sharing violations. Stdlib only: every part of the project imports it.

The replace protocol: a temporary sibling in the same directory, write, flush, fsync, os.replace, fsync the
directory. A writer that fails at any point removes its temporary file and leaves the old file whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: CPython opens files without
# FILE_SHARE_DELETE, so os.replace fails while another process has the target open, and readers can fail
# transiently while it is being replaced.
SHARING_WINERRORS = frozenset({5, 32, 33})
TEMP_SUFFIX = ".tmp"
CHUNK = 1 << 20  # hash in 1 MiB blocks: checkpoints and artifacts can be larger than memory allows


class InjectedWriteFailure(RuntimeError):
    """Raised by atomic_write_bytes(fail_after=...) to prove what a writer dying mid-write leaves behind."""


@dataclass
class RetryCounter:
    sharing_violations: int = 0


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
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def is_sharing_violation(exc: BaseException) -> bool:
    return isinstance(exc, PermissionError) and getattr(exc, "winerror", None) in SHARING_WINERRORS


def retry_sharing(action: Callable[[], T], counter: RetryCounter | None = None, attempts: int = 40,
                  first_delay: float = 0.001, max_delay: float = 0.1) -> T:
    """Run action, retrying Windows sharing violations with a bounded exponential backoff (about 3 s)."""
    delay = first_delay
    for attempt in range(attempts):
        try:
            return action()
        except OSError as exc:
            if not is_sharing_violation(exc) or attempt == attempts - 1:
                raise
            if counter is not None:
                counter.sharing_violations += 1
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
                       fail_after: int | None = None) -> None:
    """Replace path with data atomically. fail_after=N writes N bytes of the temp file, then raises."""
    path = Path(path)
    directory = path.parent
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        if os.name == "posix":  # mkstemp makes 0600; results and indexes are meant to be read by others
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            if fail_after is not None:
                handle.write(data[:fail_after])
                handle.flush()
                raise InjectedWriteFailure(f"writer failed after {fail_after} of {len(data)} bytes")
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        retry_sharing(lambda: os.replace(temp_name, path), counter)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    fsync_directory(directory)


def read_bytes_retrying(path: Path | str, counter: RetryCounter | None = None) -> bytes:
    def read() -> bytes:
        with open(path, "rb") as handle:
            return handle.read()

    return retry_sharing(read, counter)


def atomic_write_json(path: Path | str, document: object) -> None:
    atomic_write_bytes(path, encode_json(document))
