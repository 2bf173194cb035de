"""Where the interpreter's start-up path really comes from: the `._pth` files CPython's getpath honours, and the
start-up modules in every entry of the real sys.path, zips included.

CPython 3.11's Modules/getpath.py, before anything else computes sys.path, reads the first of
`<library>._pth`, `<executable>._pth`, `<real executable>._pth` (on Windows and macOS with the extension
dropped first: python._pth for python.exe) and, if one exists, takes sys.path from it wholesale; an `import
site` line there still runs site. It is honoured on Linux too, and every worker the gate starts with the same
interpreter reads it, -I or not. Such a file is never part of a Python installation the gate runs on, so any
one found is a vector.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path, PurePosixPath

from platform_runtime import procmaps

PTH_OVERRIDE = "._pth"


def _libpython(maps_text: str | None) -> list[Path]:
    """The libpython this process mapped (getpath's `library`, where the interpreter is a shared build)."""
    if not maps_text:
        return []
    return [Path(m.path) for m in procmaps.parse_maps(maps_text) if Path(m.path).name.startswith("libpython")]


def override_candidates(maps_text: str | None = None) -> list[Path]:
    """Every path getpath would read a ._pth from, for this interpreter and the base one a venv points to."""
    executables = [sys.executable, getattr(sys, "_base_executable", "")]
    bases = [*_libpython(maps_text), *(Path(e) for e in executables if e),
             *(Path(os.path.realpath(e)) for e in executables if e)]
    found = []
    for base in bases:
        found.append(base.with_name(base.name + PTH_OVERRIDE))
        if base.suffix:  # Windows' and macOS's form; harmless to look for elsewhere
            found.append(base.with_name(base.stem + PTH_OVERRIDE))
    return list(dict.fromkeys(found))


def override_files(maps_text: str | None = None) -> list[str]:
    """Names of the ._pth files present where getpath looks."""
    return sorted({path.name for path in override_candidates(maps_text) if path.is_file()})


def zip_holds(archive: Path, names: tuple[str, ...]) -> list[str]:
    """Which of the module names a zip on sys.path holds at its top (as a module in any form or a package)."""
    try:
        with zipfile.ZipFile(archive) as handle:
            entries = handle.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return []
    held = set()
    for entry in entries:
        parts = PurePosixPath(entry).parts
        if parts and parts[0].split(".")[0] in names:
            held.add(parts[0].split(".")[0])
    return sorted(held)


def sys_path_entries() -> list[Path]:
    """This process's actual sys.path, each entry resolved ('' is the working directory); existing ones only."""
    found = []
    for entry in sys.path:
        try:
            path = Path(entry or os.getcwd()).resolve()
        except (OSError, RuntimeError):
            continue
        if path.exists():
            found.append(path)
    return list(dict.fromkeys(found))
