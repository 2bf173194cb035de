"""Modules in the interpreter's site directories that no installed distribution owns.

`python -I` keeps the interpreter's site-packages on every worker's path, so a module file dropped there runs
in whichever process imports its name: not only `import x` in our code, but the optional imports the standard
library and torch probe at start (subprocess tries `import msvcrt` on every platform, torch tries
`opt_einsum`), where a file of that name on Linux is executed and can rewrite what the process then reads.
A real install always names its files: a wheel's `*.dist-info/RECORD`, an sdist's
`*.egg-info/installed-files.txt` or `top_level.txt`, Debian's `/var/lib/dpkg/info/*.list`, conda's
`conda-meta/*.json`. A top-level module (a `.py`, `.pyc`, extension module or package folder) that none of
them lists was put there by hand: it is reported by name (never by path) as an injection vector.

A folder runs code only through a module file in it: `import x` of a folder with no `__init__` runs nothing (it
is a namespace package at most), while `import x.y` or `from x import y` runs `x/y.py`. So a folder is a module
here when a module file lies in it or in its subfolders (those with an identifier's name, the ones a dotted
import reaches); a folder of data (sympy's `share`, the python.org installer's `libs` and `tcl`) is none. And the
interpreter's own layout is none (platform_runtime.interpreter_layout): on Windows `sys.prefix` itself is a site
directory, holding `Lib`, `DLLs`, `Scripts` and the installer's other folders.
Stdlib only.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

EXTENSION_SUFFIXES = (".so", ".pyd", ".dylib")
DPKG_INFO = Path("/var/lib/dpkg/info")
MAX_DEPTH = 12  # deeper than any package's layout; a folder deeper still is taken to hold code (a link loop too)


def module_name(entry: str, is_dir: bool) -> str | None:
    """The importable top-level name an entry of a site directory provides, or None (metadata, data, caches)."""
    if is_dir:
        if entry.endswith((".dist-info", ".egg-info", ".data")) or entry == "__pycache__":
            return None
        return entry if entry.isidentifier() else None
    stem, dot, suffix = entry.partition(".")
    if not dot or not stem.isidentifier():
        return None
    last = "." + entry.rsplit(".", 1)[-1]
    return stem if last in (".py", ".pyc", *EXTENSION_SUFFIXES) else None


def _top(site: str, relative: str) -> str | None:
    """The first component, below `site`, of a path a metadata file lists (relative to `site` or absolute);
    string operations only: a RECORD lists thousands of paths (torch's: 12,251)."""
    relative = relative.replace("\\", "/")
    if os.path.isabs(relative):
        if not relative.startswith(site.rstrip("/") + "/"):
            return None
        relative = relative[len(site.rstrip("/")) + 1:]
    normal = os.path.normpath(relative) if ".." in relative or "./" in relative else relative
    top = normal.split("/", 1)[0]
    return None if top in ("", "..", ".") else top


def _listed(site: Path, meta: Path) -> set[str]:
    found: set[str] = set()
    for name in ("RECORD", "installed-files.txt", "top_level.txt"):
        try:
            text = (meta / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if name == "RECORD":
            # A RECORD row is `path,hash,size`; only a path holding a comma or a quote is quoted (csv).
            rows = [line.split(",", 1)[0] if not line.startswith('"') else next(csv.reader([line]))[0]
                    for line in text.splitlines() if line]
        elif name == "installed-files.txt":  # relative to the .egg-info folder
            rows = [str(Path(meta.name) / line.strip()) for line in text.splitlines() if line.strip()]
        else:
            rows = [line.strip().replace("\\", "/").split("/")[0] for line in text.splitlines() if line.strip()]
        for row in rows:
            top = _top(str(site), row)
            if top is not None:
                found.add(top)
    return found


def _listed_by_system(site: Path, candidates: set[str]) -> set[str]:
    """The candidates Debian's or conda's package database lists in `site` (read only when there are any)."""
    owned: set[str] = set()
    wanted = {str(site / entry) for entry in candidates}
    lists = sorted(DPKG_INFO.glob("*.list")) if DPKG_INFO.is_dir() else []
    for listing in lists:
        try:
            lines = listing.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        owned.update(Path(line).name for line in lines if line in wanted)
    conda_meta = Path(sys.prefix) / "conda-meta"
    for record in sorted(conda_meta.glob("*.json")) if conda_meta.is_dir() else []:
        try:
            files = json.loads(record.read_text(encoding="utf-8")).get("files") or []
        except (OSError, ValueError, AttributeError):
            continue
        owned.update(Path(str(f)).name for f in files if str(Path(sys.prefix) / str(f)) in wanted)
    return owned


def holds_code(folder: Path, depth: int = 0) -> bool:
    """Whether importing through this folder can run a file of it: a module file in it, or in a subfolder a dotted
    name reaches. A folder that cannot be read, or lies too deep, is taken to hold one."""
    try:
        entries = [(e.name, e.is_dir(), e.path) for e in os.scandir(folder)]
    except OSError:
        return True
    for name, is_dir, path in entries:
        if module_name(name, is_dir) is None:
            continue
        if not is_dir or depth >= MAX_DEPTH or holds_code(Path(path), depth + 1):
            return True
    return False


def unowned_modules(site_dirs: list[Path], layout: Callable[[Path, list[str]], set[str]] | None = None) -> list[str]:
    """Top-level module names in the site directories that no installed distribution lists, sorted. `layout`
    names the entries of a site directory that are the interpreter's own (interpreter_layout.layout_entries)."""
    found: set[str] = set()
    for site in site_dirs:
        try:
            entries = [(e.name, e.is_dir()) for e in os.scandir(site)]
        except OSError:
            continue
        if layout is not None:
            own = layout(site, [name for name, is_dir in entries if is_dir])
            entries = [(name, is_dir) for name, is_dir in entries if name not in own]
        owned: set[str] = set()
        for name, is_dir in entries:
            if is_dir and name.endswith((".dist-info", ".egg-info")):
                owned |= _listed(site, site / name)
            elif name.endswith(".egg-info"):  # a distutils install: one PKG-INFO file, its module beside it
                owned.add(name.split("-")[0])
        candidates = {name for name, is_dir in entries
                      if (module := module_name(name, is_dir)) is not None and name not in owned
                      and module not in owned and (not is_dir or holds_code(site / name))}
        if candidates:
            candidates -= _listed_by_system(site, candidates)
        found |= {module_name(name, is_dir) or name for name, is_dir in entries if name in candidates}
    return sorted(found)
