"""Which Python runs the project inside the VM: the image's own CPython over the host venv's packages.

The host venv's interpreter can be any build (here pyenv's, without PGO or LTO, and a shared libpython);
under TCG the interpreter's speed is the gate's critical path (importing torch, and torch._dynamo, which
torch.optim imports on first use). Debian's python3 is built with PGO and LTO: measured in the VM, importing
torch and torch._dynamo took 22-25 s with it against 28-30 s with the host's. So the guest makes a venv of
its own at boot, on the tmpfs root overlay, whose site-packages is the host venv's (shared read-only at its
own path): the same packages, files and SHA-256s, run by the image's interpreter. Only when the minor
version and the ABI match (compiled extensions and .pyc files are per minor version and ABI) and the venv
keeps its packages in one site directory; otherwise the host's runs.

And only when the image's interpreter would not run bytecode another compiler wrote. A .pyc the host wrote
beside a module (an import without -B: uv installs none, so the first import writes them, listed in no RECORD)
is loaded by any 3.11 whose header matches, but its code is what the HOST's release compiled: Debian's 3.11.2
compiles numpy's `pad` otherwise than pyenv's 3.11.7. The gate compares such bytecode with its own compile and
rightly refuses it (platform_runtime.bytecode: it cannot tell another release's compile from a planted one),
so with the releases differing, one such file keeps the host's interpreter (CI's clean clone failed so).
"""

from __future__ import annotations

import os
from pathlib import Path

VENV = Path("/opt/nfsvm-venv")
WHY_IMAGE = "the image's CPython (PGO+LTO) over the host venv's site-packages: same packages, faster under TCG"
WHY_HOST = ("the host venv's own interpreter: its minor version or ABI differs from the image's python3, or its "
            "packages are in two site directories")
WHY_BYTECODE = ("the host venv's own interpreter: its site-packages holds {count} cached .pyc file(s) listed in no "
                "RECORD, written by the host's {host} and run by the image's {image} in place of their sources")


def written_bytecode(site_packages: Path) -> int:
    """How many `__pycache__/*.pyc` files in site_packages no RECORD lists: the bytecode an interpreter wrote
    there after the install (a RECORD-listed one the installer compiled is checked by its hash instead)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # host side only: the gate's reader
    from platform_runtime import dist_record

    listed = {os.path.normpath(path) for record in site_packages.glob("*.dist-info/RECORD")
              for path, _, _ in dist_record.read_record(site_packages, record.parent.name) or []}
    count = 0
    for folder, _, files in os.walk(site_packages):
        if os.path.basename(folder) == "__pycache__":
            relative = os.path.relpath(folder, site_packages)
            count += sum(1 for name in files if name.endswith(".pyc")
                         and os.path.normpath(os.path.join(relative, name)) not in listed)
    return count


def choose(host: dict, image: dict) -> bool:
    """The image's interpreter only for the same minor version and ABI (SOABI: a free-threaded build's
    extensions do not load in the default one), a venv whose packages are in one site directory, and either
    the same release or no bytecode the host wrote (written_bytecode: another release compiles otherwise)."""
    return bool(host.get("version")) and host.get("version") == image.get("version") \
        and host.get("soabi") == image.get("soabi") and host.get("one_site_dir") is True \
        and not foreign_bytecode(host, image)


def foreign_bytecode(host: dict, image: dict) -> bool:
    """Whether the image's interpreter would run bytecode another release compiled: the host's written .pyc
    files (a count that is not 0, or none recorded) under a release that is not the image's."""
    return host.get("release") != image.get("release") and host.get("written_bytecode") != 0


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
    image interpreter's {"version", "release", "soabi"}; any failure to make the venv keeps the host's interpreter."""
    host = job["host_python"]
    kept = {"executable": job["python"], "version": host["version"], "why": WHY_HOST}
    if not choose(host, image):
        if foreign_bytecode(host, image) and host.get("version") == image.get("version"):
            kept["why"] = WHY_BYTECODE.format(count=host.get("written_bytecode"), host=host.get("release"),
                                              image=image.get("release"))
        return kept
    try:
        executable = make_venv(venv, Path(os.path.realpath(base_python)), image["version"],
                               Path(host["site_packages"]))
    except OSError as error:
        return {**kept, "why": f"the host venv's own interpreter: the image's venv could not be made ({error})"}
    return {"executable": str(executable), "version": image["version"], "why": WHY_IMAGE,
            "site_packages": host["site_packages"]}
