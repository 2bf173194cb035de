"""Small shared pieces: hashing a stream in constant memory, safe relative names, redacting secrets, error types.

Files are hashed and written by common.files (the project's one hasher and atomic writer), imported from there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import IO, Any

from rules import registry

CHUNK = 1024 * 1024
UNVERIFIABLE = "could not be re-derived: "  # a problem that is a missing fact, not a contradicted one


class InputError(Exception):
    """A user mistake or unusable input: exit 2, clear message, no traceback."""


class FetchError(Exception):
    """A download that failed for good (after retries); reported in the index, not fatal to the rest."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def redact_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """Remove every secret from a text that may be printed or written (messages of exceptions included)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def is_safe_relative(name: str) -> bool:
    """A relative POSIX path with no '..', no absolute root, no drive letter, no backslash, no empty part."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    if len(name) >= 2 and name[1] == ":":
        return False
    parts = name.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def hash_stream(stream: IO[bytes], keep_max: int = 0,
                sink: Callable[[bytes], None] | None = None) -> tuple[str, int, bytes | None]:
    """(sha256, size, bytes) of a stream read in constant memory; the bytes are kept only when there are at
    most keep_max of them (the result documents), and every chunk also goes to `sink` (the log scanner)."""
    digest = hashlib.sha256()
    size = 0
    kept: bytearray | None = bytearray() if keep_max > 0 else None
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if kept is not None:
            kept += chunk
            if len(kept) > keep_max:
                kept = None
        if sink is not None:
            sink(chunk)
    return digest.hexdigest(), size, bytes(kept) if kept is not None else None


def newest_first(artifacts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Artifacts newest first by `created_at`: the list's own order is not age (its documented default is
    direction=desc, and a client may ask otherwise). One without a readable date sorts oldest."""
    def created(artifact: dict[str, Any]) -> float:
        try:
            return datetime.fromisoformat(str(artifact.get("created_at")).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return float("-inf")
    return sorted(artifacts, key=created, reverse=True)


def index_rule(check: str) -> Callable[..., Any]:
    """The registry's rule of a fact across the index's files (its "evidence-index" rows)."""
    return registry.rule("evidence-index", check)
