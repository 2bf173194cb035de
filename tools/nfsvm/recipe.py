"""The pinned recipe of the VM image: what goes in, where it is cached, and the hash that names it."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = "bookworm"
MIRROR = os.environ.get("KERNODECK_NFSVM_MIRROR", "http://deb.debian.org/debian")
# minbase plus what the NFS job needs: the server, Python for the harness, sudo for the runner user,
# kmod for modprobe (nfsd, veth), util-linux (mount, runuser), procps, iproute2 (netns + veth).
PACKAGES = ("nfs-kernel-server", "python3", "kmod", "util-linux", "procps", "iproute2", "sudo")
# The systemd variant (`--init systemd`): systemd is PID 1 as on a runner, and nfs-kernel-server is NOT
# installed: its .deb and the .debs it needs lie in OFFLINE_DEBS_DIR so that the guest installs it with
# dpkg while systemd runs, and the package's postinst starts its units as apt-get does on a runner.
INITS = ("busybox", "systemd")
SYSTEMD_PACKAGES = tuple(p for p in PACKAGES if p != "nfs-kernel-server") + ("systemd", "systemd-sysv", "dbus")
OFFLINE_PACKAGE = "nfs-kernel-server"
OFFLINE_DEBS_DIR = "var/cache/kernodeck-nfsvm-debs"  # in the image's root
KERNEL_META = "linux-image-amd64"
# The files whose bytes decide what the image contains: changing one makes a new image.
RECIPE_FILES = ("recipe.py", "image.py", "systemd_image.py", "initramfs.py", "initramfs_init.sh")
RUNNER_USER = "runner"
RUNNER_UID = 1001


def cache_dir() -> Path:
    """KERNODECK_NFSVM_CACHE, else $XDG_CACHE_HOME/kernodeck-nfsvm, else ~/.cache/kernodeck-nfsvm."""
    explicit = os.environ.get("KERNODECK_NFSVM_CACHE")
    if explicit:
        return Path(explicit).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).resolve() / "kernodeck-nfsvm"


def kernel_package() -> str:
    """The ONE exact kernel package name (linux-image-6.1.0-N-amd64) the meta package points at now.

    KERNODECK_NFSVM_KERNEL overrides it (a recorded name, to rebuild an earlier image)."""
    pinned = os.environ.get("KERNODECK_NFSVM_KERNEL")
    if pinned:
        return pinned
    out = subprocess.run(["apt-cache", "depends", KERNEL_META], capture_output=True, text=True, check=True).stdout
    names = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Depends:")]
    kernels = [name for name in names if name.startswith("linux-image-6.1.")]
    if len(kernels) != 1:
        raise RuntimeError(f"expected one linux-image-6.1 dependency of {KERNEL_META}, got {names}")
    return kernels[0]


def packages(init: str) -> tuple[str, ...]:
    """What debootstrap installs for the image of that init."""
    return SYSTEMD_PACKAGES if init == "systemd" else PACKAGES


def recipe_digest(kernel: str, init: str = "busybox") -> str:
    """SHA-256 over the recipe: init, suite, mirror, package list, kernel name and the builder's own code."""
    digest = hashlib.sha256()
    for part in (init, SUITE, MIRROR, " ".join(packages(init)), kernel, RUNNER_USER, str(RUNNER_UID)):
        digest.update(part.encode() + b"\0")
    for name in RECIPE_FILES:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    return digest.hexdigest()
