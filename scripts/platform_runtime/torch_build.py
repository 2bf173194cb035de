"""The torch build the gate's interpreter finds, read from its installed files without importing it, and
the cross-check of a worker's device claim against that build.

A worker's report is only what a process printed; the files on disk say what was built. A CUDA claim needs
a torch whose version.py names a CUDA version and whose lib folder holds the CUDA library; ROCm the same
with HIP; MPS a macOS build on macOS. Whatever the worker said, a claim the build cannot make fails.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from common.files import sha256_file
from rules.build_cross_check import BACKEND_LIBRARIES, build_supports, cross_check  # noqa: F401 - re-exported

from platform_runtime import binary_arch

# What is recorded when the interpreter's own site-packages hold no torch: nothing was read.
NO_BUILD: dict = {"version": None, "cuda": None, "hip": None, "dist_info": None, "record_sha256": None,
                  "wheel_tags": [], "backend_libraries": [], "backend_files": {}}


def _version_py(torch_dir: Path) -> dict:
    """__version__, cuda and hip as literal assignments in torch/version.py (never executed)."""
    values: dict = {"__version__": None, "cuda": None, "hip": None}
    try:
        tree = ast.parse((torch_dir / "version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return values
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in values and node.value is not None:
            try:
                values[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return values


def _dist_info(site_dir: Path, version: str | None) -> Path | None:
    """The torch dist-info that belongs to this version (a site dir can hold stale ones)."""
    candidates = sorted(site_dir.glob("torch-*.dist-info"))
    matching = [c for c in candidates if version and c.name == f"torch-{version}.dist-info"]
    return (matching or candidates or [None])[-1]


def read_build(site_dir: Path | None) -> dict | None:
    """Facts about the torch in site_dir (None when the interpreter finds no torch)."""
    if site_dir is None:
        return None
    torch_dir = site_dir / "torch"
    declared = _version_py(torch_dir)
    dist = _dist_info(site_dir, declared["__version__"])
    record = dist / "RECORD" if dist else None
    wheel_tags: list[str] = []
    if dist and (dist / "WHEEL").is_file():
        wheel_tags = [line.split(":", 1)[1].strip() for line in (dist / "WHEEL").read_text("utf-8").splitlines()
                      if line.startswith("Tag:")]
    libraries = sorted(name for names in BACKEND_LIBRARIES.values() for name in names
                       if (torch_dir / "lib" / name).is_file())
    return {"version": declared["__version__"], "cuda": declared["cuda"], "hip": declared["hip"],
            "dist_info": dist.name if dist else None,
            "record_sha256": sha256_file(record) if record and record.is_file() else None,
            "wheel_tags": wheel_tags, "backend_libraries": libraries,
            "backend_files": {name: backend_file(torch_dir / "lib" / name) for name in libraries}}


def backend_file(path: Path) -> dict:
    """{"bytes", "format"} of one backend library in torch/lib (views.record ties its bytes to RECORD's): a forger's
    RECORD lists an empty or tiny file carrying the name as consistently as a real one, so the name alone proves no
    backend."""
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    return {"bytes": size, "format": binary_arch.read(path)["format"]}


INSTALL_MARKER = "platform-runtime-install.json"  # written last by scripts/steps/install_venv.py


def read_install(site_dir: Path | None, repo_root: Path | None = None) -> dict | None:
    """Who installed this torch (its dist-info INSTALLER file) and the lock the install was checked against
    (the venv's install marker), with the SHA-256 of that lock as it is in this checkout now: recorded and
    re-derived side by side. None when the site dir is not in a venv made by prepare_python."""
    if site_dir is None:
        return None
    venv = next((parent for parent in site_dir.parents[:3] if (parent / "pyvenv.cfg").is_file()), None)
    try:
        marker = json.loads((venv / INSTALL_MARKER).read_text(encoding="utf-8")) if venv else None
    except (OSError, ValueError):
        marker = None
    if not isinstance(marker, dict):
        return None
    dist = _dist_info(site_dir, _version_py(site_dir / "torch")["__version__"])
    try:
        installer = (dist / "INSTALLER").read_text(encoding="utf-8").strip() if dist else None
    except OSError:
        installer = None
    name = marker.get("lock") if isinstance(marker.get("lock"), str) else None
    current = None
    if name and repo_root is not None and "/" not in name and "\\" not in name:
        path = repo_root / "requirements" / "lock" / name
        current = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return {"installer": installer, "lock": name, "lock_sha256": marker.get("lock_sha256"),
            "lock_sha256_in_checkout": current}
