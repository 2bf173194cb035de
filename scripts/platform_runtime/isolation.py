"""What of the caller's Python environment could run code inside the gate, named (never valued), and where
the workers find the parent's torch.

Every worker runs with `python -I` (no PYTHON* variables, no user site, no script or working directory on
sys.path), so code on PYTHONPATH, in PYTHONSTARTUP, in the user site or in the working directory never runs
inside a worker. What -I cannot remove is the interpreter's own installation (its site-packages .pth files
and sitecustomize) and the dynamic loader's LD_PRELOAD: those are reported so a reader can judge them.
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
import sysconfig
from pathlib import Path

ENV_VECTORS = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "LD_PRELOAD", "LD_AUDIT",
               "DYLD_INSERT_LIBRARIES")
WORKER_FLAGS = ("-I", "-B")  # isolated mode; no .pyc files written beside the gate's sources


def interpreter_site_dirs() -> list[Path]:
    """The interpreter's own site-packages (what -I keeps), never PYTHONPATH or the user site."""
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(Path(d).resolve() for d in dirs))


def _executing_pth_files(directories: list[Path]) -> list[str]:
    """Names of .pth files whose lines run code at start-up (lines that begin with `import`)."""
    names = set()
    for directory in directories:
        try:
            candidates = sorted(directory.glob("*.pth"))
        except OSError:
            continue
        for path in candidates:
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            if any(line.startswith(("import ", "import\t")) for line in lines):
                names.add(path.name)
    return sorted(names)


def injection_vectors() -> dict:
    """Which vectors were present for this (parent) process, by name only."""
    present = [name for name in ENV_VECTORS if os.environ.get(name)]
    for module in ("sitecustomize", "usercustomize"):
        if getattr(sys.modules.get(module), "__file__", None):
            present.append(module)
    user_site = [Path(site.getusersitepackages())] if site.ENABLE_USER_SITE else []
    pth = _executing_pth_files(interpreter_site_dirs() + user_site)
    if pth:
        present.append(".pth")
    return {"present": present, "executing_pth_files": pth, "workers": "python -I",
            "worker_site_dirs": "interpreter site-packages, plus the directory of the torch this interpreter finds"}


def torch_site_dir() -> Path | None:
    """The directory holding the torch package the parent's interpreter would import (not imported here)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve().parent


def found_in(directory: Path | None) -> str | None:
    """Where the torch came from, without naming the path."""
    if directory is None:
        return None
    return "interpreter-site-packages" if directory in interpreter_site_dirs() else "outside-site-packages"
