"""Small shared pieces: hashing files in constant memory, atomic writes, scrubbing secrets, error types."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHUNK = 1024 * 1024


class InputError(Exception):
    """A user mistake or unusable input: exit 2, clear message, no traceback."""


class FetchError(Exception):
    """A download that failed for good (after retries); reported in the index, not fatal to the rest."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """Remove every secret from a text that may be printed or written (messages of exceptions included)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def atomic_write_bytes(path: Path, data: bytes) -> None:
    # Temp file in the same directory, fsync, replace: a reader sees the old file or the new one, never half.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if os.name == "posix":  # mkstemp makes 0600; an index is meant to be read (and uploaded) by others
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if os.name == "posix":
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def dump_json(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def is_safe_relative(name: str) -> bool:
    """A relative POSIX path with no '..', no absolute root, no drive letter, no backslash, no empty part."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    if len(name) >= 2 and name[1] == ":":
        return False
    parts = name.split("/")
    return all(part not in ("", ".", "..") for part in parts)
