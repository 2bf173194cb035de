"""The gate's result document: its one format (schemas/platform-runtime-result.schema.json), how reasons are
redacted of local paths, and how it is written (atomically, for a pass and a failure alike)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from common.files import atomic_write_json
from common.names import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE  # noqa: F401 - re-exported


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


def output_problem(path: Path) -> str | None:
    """Why the result could not be written to `path` (checked before anything runs, so a bad --output costs no
    run); None when it can. The writer makes a temporary sibling and renames it over `path`: so `path` must not be
    a folder or another kind of file, and its folder (or, when missing, the nearest one above, where write() makes
    it) must accept a new file, which only making one shows (root passes every access() test; /proc takes none)."""
    if path.is_dir():
        return "--output names a folder, not a file"
    if path.exists() or path.is_symlink():
        if not path.is_file():
            return "--output names something that is not a regular file (a device, a pipe, a socket or a dangling link)"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        if folder.is_symlink():
            return "--output lies under a dangling link"
        folder = folder.parent
    if not folder.is_dir():
        return f"--output lies under {folder.name!r}, which is not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".platform-runtime-output-", suffix=".probe"):
            pass
    except OSError as exc:
        return f"--output's folder does not accept a new file ({exc.strerror or type(exc).__name__})"
    return None
