"""The systemd variant of the VM image (`dev.py nfs --init systemd`): what a runner has before the nfs job.

On an ubuntu runner systemd is PID 1 and the action's `apt-get install nfs-kernel-server` runs the
package's postinst, which starts nfs-server.service (nfsd with the default 90 s grace, rpc.mountd) before
the harness does anything. So this image has systemd, and nfs-kernel-server only as .debs (it and every
package it would pull in, resolved against the image's own dpkg status, downloaded with `apt-get download`
of exact versions) in recipe.OFFLINE_DEBS_DIR: the guest installs them with dpkg while systemd runs
(tools/nfsvm/postinst.py). A oneshot unit starts the guest job once boot is done; the guest powers the
VM off itself, and the unit's ExecStopPost does it too should the job not even start.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from nfsvm import recipe

UNIT_NAME = "nfsvm-guest.service"
UNIT = """[Unit]
Description=kernodeck nfsvm guest job (tools/nfsvm/guest.py), then power-off
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 -I -B /nfsvm-job/guest.py
# guest.py powers off itself on success and failure; this is for a guest.py that could not even start.
ExecStopPost=/bin/sh -c 'sync; echo o > /proc/sysrq-trigger'
TimeoutStartSec=infinity
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""
# tmpfs where the NFS server and the job write: the root is an overlay over read-only 9p, and neither
# 9p nor an overlay on it can be exported (the busybox variant's guest.py mounts the same ones itself).
FSTAB = "tmpfs /tmp tmpfs mode=1777 0 0\ntmpfs /var/lib/nfs tmpfs mode=0755 0 0\n"
# A login prompt on the serial console would only wait; nothing here logs in.
MASKED = ("serial-getty@ttyS0.service", "getty@tty1.service", "systemd-timesyncd.service")
INST = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) ")


def simulated_installs(simulation: str) -> list[tuple[str, str]]:
    """(package, version) of every `Inst` line of `apt-get -s install`: new packages and upgrades alike."""
    return [(m.group(1), m.group(2)) for m in map(INST.match, simulation.splitlines()) if m]


def resolve(rootfs: Path, package: str = recipe.OFFLINE_PACKAGE) -> list[tuple[str, str]]:
    """What `apt-get install package` would install into this root: the host's apt lists against the
    image's own dpkg status (the image has no lists of its own to resolve with)."""
    done = subprocess.run(["apt-get", "-s", "-o", f"Dir::State::status={rootfs / 'var/lib/dpkg/status'}",
                           "install", package], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"apt-get -s install {package} against the image exited {done.returncode}: "
                           f"{done.stderr.strip()[-300:]}")
    found = simulated_installs(done.stdout)
    if package not in {name for name, _ in found}:
        raise RuntimeError(f"apt-get -s install {package} would not install it: {done.stdout.strip()[-300:]}")
    return found


def download(pinned: list[tuple[str, str]], folder: Path) -> dict[str, dict]:
    """apt-get download of exactly those versions; name -> {version, file, sha256}."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["apt-get", "download", "-q", *(f"{name}={version}" for name, version in pinned)],
                          cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"apt-get download exited {done.returncode}: {done.stderr.strip()[-300:]}")
    debs = sorted(folder.glob("*.deb"))
    if len(debs) != len(pinned):
        raise RuntimeError(f"expected {len(pinned)} .debs, found {[d.name for d in debs]}")
    by_name = {deb.name.split("_", 1)[0]: deb for deb in debs}
    return {name: {"version": version, "file": by_name[name].name,
                   "sha256": hashlib.sha256(by_name[name].read_bytes()).hexdigest()} for name, version in pinned}


def configure(rootfs: Path) -> None:
    """fstab tmpfs mounts, the guest unit enabled, getty masked."""
    with (rootfs / "etc" / "fstab").open("a") as fstab:
        fstab.write(FSTAB)
    system = rootfs / "etc" / "systemd" / "system"
    (system / UNIT_NAME).write_text(UNIT)
    wants = system / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / UNIT_NAME).symlink_to(f"/etc/systemd/system/{UNIT_NAME}")
    for unit in MASKED:
        (system / unit).unlink(missing_ok=True)
        (system / unit).symlink_to("/dev/null")


def prepare(rootfs: Path, downloads: Path) -> dict:
    """The systemd image's own part, after debootstrap; returns what the manifest records of the .debs."""
    offline = download(resolve(rootfs), downloads)
    target = rootfs / recipe.OFFLINE_DEBS_DIR
    target.mkdir(parents=True, exist_ok=True)
    for facts in offline.values():
        shutil.copy2(downloads / facts["file"], target / facts["file"])
    configure(rootfs)
    return offline
