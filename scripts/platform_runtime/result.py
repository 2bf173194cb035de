"""The gate's result document: its one format (schemas/platform-runtime-result.schema.json), how reasons are
redacted of local paths, and how it is written (atomically, for a pass and a failure alike)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from core.files import atomic_write_json
from core.names import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE  # noqa: F401 - re-exported


def redact_local_paths(text: str, private_paths: list[Path]) -> str:
    """Replace absolute local paths (work dir, home, temp dir) with neutral placeholders."""
    placeholders = [(str(p), f"<{label}>") for p, label in zip(private_paths, ("work-dir", "home", "tmp"))]
    placeholders.sort(key=lambda pair: len(pair[0]), reverse=True)
    for path, label in placeholders:
        if path and path not in ("/", "."):
            text = text.replace(path, label)
    return text


def private_paths(work_dir: Path) -> list[Path]:
    return [work_dir.resolve(), Path.home(), Path(tempfile.gettempdir()).resolve()]


def write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, result)
