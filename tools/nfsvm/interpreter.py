"""Which Python runs the project inside the VM: the image's own CPython over the host venv's packages.

The host venv's interpreter can be any build (here pyenv's, without PGO or LTO, and a shared libpython);
under TCG the interpreter's speed is the gate's critical path (importing torch, and torch._dynamo, which
torch.optim imports on first use). Debian's python3 is built with PGO and LTO: measured in the VM, importing
torch and torch._dynamo took 22-25 s with it against 28-30 s with the host's. So the guest makes a venv of
its own at boot, on the tmpfs root overlay, whose site-packages is the host venv's (shared read-only at its
own path): the same packages, files and SHA-256s, run by the image's interpreter. Only when the minor
version and the ABI match (compiled extensions and .pyc files are per minor version and ABI) and the venv
keeps its packages in one site directory; otherwise the host's runs.
"""

from __future__ import annotations

import os
from pathlib import Path

VENV = Path("/opt/nfsvm-venv")
WHY_IMAGE = "the image's CPython (PGO+LTO) over the host venv's site-packages: same packages, faster under TCG"
WHY_HOST = ("the host venv's own interpreter: its minor version or ABI differs from the image's python3, or its "
            "packages are in two site directories")


def choose(host: dict, image: dict) -> bool:
    """The image's interpreter only for the same minor version and ABI (SOABI: a free-threaded build's
    extensions do not load in the default one) and a venv whose packages are in one site directory."""
    return bool(host.get("version")) and host.get("version") == image.get("version") \
        and host.get("soabi") == image.get("soabi") and host.get("one_site_dir") is True


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


def guest_python(job: dict, image: dict, base_python: Path = Path("/usr/bin/python3"), venv: Path = VENV) -> dict:
    """What the guest runs the project's scripts with, and why (recorded in versions.json). `image` is the
    image interpreter's {"version", "soabi"}; any failure to make the venv keeps the host's interpreter."""
    host = job["host_python"]
    kept = {"executable": job["python"], "version": host["version"], "why": WHY_HOST}
    if not choose(host, image):
        return kept
    try:
        executable = make_venv(venv, Path(os.path.realpath(base_python)), image["version"],
                               Path(host["site_packages"]))
    except OSError as error:
        return {**kept, "why": f"the host venv's own interpreter: the image's venv could not be made ({error})"}
    return {"executable": str(executable), "version": image["version"], "why": WHY_IMAGE,
            "site_packages": host["site_packages"]}
