"""The gate's result document: its one format (schemas/platform-runtime-result.schema.json), how reasons are
scrubbed of local paths, and how it is written (atomically, for a pass and a failure alike)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from platform_runtime.atomic import atomic_write_bytes

SCHEMA_ID = "kernodeck.platform-runtime.result/v1"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def scrub(text: str, private_paths: list[Path]) -> str:
    """Replace absolute local paths (work dir, home, temp dir) with neutral placeholders."""
    placeholders = [(str(p), f"<{label}>") for p, label in zip(private_paths, ("work-dir", "home", "tmp"))]
    placeholders.sort(key=lambda pair: len(pair[0]), reverse=True)
    for path, label in placeholders:
        if path and path not in ("/", "."):
            text = text.replace(path, label)
    return text


def private_paths(work_dir: Path) -> list[Path]:
    return [work_dir.resolve(), Path.home(), Path(tempfile.gettempdir()).resolve()]


def encode(result: dict) -> bytes:
    # LF only, whatever the platform: the bytes are what the evidence index hashes.
    return (json.dumps(result, indent=2, sort_keys=True) + "\n").encode("utf-8")


def write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, encode(result))
