"""What of the caller's Python environment could run code inside the gate, named (never valued), and where
the workers find the parent's torch.

Every worker runs with `python -I` (no PYTHON* variables, no user site, no script or working directory on
sys.path), so code on PYTHONPATH, in PYTHONSTARTUP, in the user site or in the working directory never runs
inside a worker. What -I cannot remove (the interpreter's own installation, the dynamic loader's variables,
and whatever ran in the gate's own process) is found by platform_runtime.startup.
"""

from __future__ import annotations

import importlib.machinery
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

SITE_PACKAGES = "site-packages"  # found_in: torch came from the interpreter's own site directories
WORKER_FLAGS = ("-I", "-B")  # isolated mode; no .pyc files written beside the gate's sources


def interpreter_site_dirs() -> list[Path]:
    """The interpreter's own site-packages (what -I keeps), never PYTHONPATH or the user site."""
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(Path(d).resolve() for d in dirs))


def _pth_path_dirs(site_dir: Path) -> list[Path]:
    """The entries a site dir's .pth files add to sys.path (their path lines), as site.addpackage does."""
    found = []
    try:
        pth_files = sorted(site_dir.glob("*.pth"))
    except OSError:
        return []
    for pth in pth_files:
        try:
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.rstrip()
            # site.addpackage adds any path line that exists: a folder, or a zip (zipimport reads it).
            if line and not line.startswith(("#", "import ", "import\t")) and (site_dir / line).exists():
                found.append((site_dir / line).resolve())
    return found


def torch_search_dirs() -> list[Path]:
    """Where the gate may take torch from, in sys.path order: each of the interpreter's own site-packages,
    then what its .pth path lines name. Exactly what a `python -I` worker has besides the standard library."""
    dirs: list[Path] = []
    for base in interpreter_site_dirs():
        dirs += [base, *_pth_path_dirs(base)]
    return list(dict.fromkeys(dirs))


def _torch_spec(directory: Path):
    try:
        return importlib.machinery.PathFinder.find_spec("torch", [str(directory)])
    except (ImportError, OSError, ValueError):
        return None


def _category(entry: str) -> str:
    """Where a sys.path entry came from, named by kind (never by its path)."""
    path = Path(entry or os.getcwd()).resolve()
    python_path = {Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    script = Path(sys.argv[0]).resolve().parent if sys.argv and sys.argv[0] else None
    user_site = Path(site.getusersitepackages()).resolve() if site.ENABLE_USER_SITE else None
    for category, matches in (("PYTHONPATH", path in python_path), ("script-directory", path == script),
                              ("working-directory", path == Path.cwd().resolve()), ("user-site", path == user_site)):
        if matches:
            return category
    return "other-sys-path"


@dataclass(frozen=True)
class TorchLocation:
    site_dir: Path | None  # the interpreter's own directory holding the torch package, or None
    ignored: tuple[str, ...]  # kinds of places on the gate's sys.path holding another torch, never used

    @property
    def found_in(self) -> str | None:
        return SITE_PACKAGES if self.site_dir is not None else None


def locate_torch() -> TorchLocation:
    """The torch package in the interpreter's own site-packages (not imported here), and where else on this
    process's sys.path (PYTHONPATH, the gate's folder, the working directory, the user site) a torch lies
    that a plain `import torch` might have picked instead: those copies are named and never used."""
    own = torch_search_dirs()
    site_dir = next((d for d in own if (spec := _torch_spec(d)) is not None and spec.origin), None)
    ignored = {_category(entry) for entry in sys.path
               if Path(entry or os.getcwd()).resolve() not in own and _torch_spec(Path(entry or os.getcwd()))}
    return TorchLocation(site_dir, tuple(sorted(ignored)))


def missing_torch_reason(location: TorchLocation) -> str | None:
    """Why the gate has no torch to run, naming the ignored copies by kind; None when it has one."""
    if location.site_dir is not None:
        return None
    text = "torch could not be imported: there is none in the interpreter's own site-packages"
    if location.ignored:
        text += (f"; the torch found via {', '.join(location.ignored)} was ignored (the gate takes torch only "
                 "from the interpreter's own site-packages)")
    return text
