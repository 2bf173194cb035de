"""Which Python runs the project inside the VM: the image's own CPython over the host venv's packages.

The host venv's interpreter can be any build (here pyenv's, without PGO or LTO, and a shared libpython);
under TCG the interpreter's speed is the gate's critical path (importing torch, and torch._dynamo, which
torch.optim imports on first use). Debian's python3 is built with PGO and LTO: measured in the VM, importing
torch and torch._dynamo took 22-25 s with it against 28-30 s with the host's. So the guest makes a venv of
its own at boot, on the tmpfs root overlay, whose site-packages is the host venv's (shared read-only at its
own path): the same packages, files and SHA-256s, run by the image's interpreter. Only when the minor
versions match (compiled extensions and .pyc files are per minor version); otherwise the host's runs.
"""

from __future__ import annotations

import os
from pathlib import Path

VENV = Path("/opt/nfsvm-venv")
WHY_IMAGE = "the image's CPython (PGO+LTO) over the host venv's site-packages: same packages, faster under TCG"
WHY_HOST = "the host venv's own interpreter: its minor version differs from the image's python3"


def choose(host_version: str, image_version: str) -> bool:
    """The image's interpreter only for the same minor version ("3.11" == "3.11")."""
    return bool(host_version) and host_version == image_version


def make_venv(venv: Path, base_python: Path, version: str, site_packages: Path) -> Path:
    """A venv whose interpreter is base_python and whose site-packages is a link to site_packages. No
    system site-packages, as in the host venv; returns its bin/python."""
    lib = venv / "lib" / f"python{version}"
    (venv / "bin").mkdir(parents=True)
    lib.mkdir(parents=True)
    (lib / "site-packages").symlink_to(site_packages, target_is_directory=True)
    (venv / "bin" / "python").symlink_to(base_python)
    (venv / "pyvenv.cfg").write_text(f"home = {base_python.parent}\ninclude-system-site-packages = false\n"
                                     f"version = {version}\n")
    return venv / "bin" / "python"


def guest_python(job: dict, image_version: str, base_python: Path = Path("/usr/bin/python3"),
                 venv: Path = VENV) -> dict:
    """What the guest runs the project's scripts with, and why (recorded in versions.json)."""
    host = job["host_python"]
    if not choose(host["version"], image_version):
        return {"executable": job["python"], "version": host["version"], "why": WHY_HOST}
    executable = make_venv(venv, Path(os.path.realpath(base_python)), image_version, Path(host["site_packages"]))
    return {"executable": str(executable), "version": image_version, "why": WHY_IMAGE,
            "site_packages": host["site_packages"]}
