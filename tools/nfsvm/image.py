"""Build (or reuse) the VM image in the cache folder: a debootstrap root, the Debian kernel, an initramfs.

The image lives in <cache>/image-<recipe sha256 prefix>/ and is complete only once manifest.json is
there (written last); a half-built folder is removed and built again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parents[2] / "scripts")]

from common.files import sha256_file  # noqa: E402

from nfsvm import initramfs, recipe, systemd_image  # noqa: E402

BUSYBOX = Path("/bin/busybox")
TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "debootstrap": "debootstrap", "apt-get": "apt"}


class ImageError(RuntimeError):
    pass


def missing_tools() -> list[str]:
    """Debian packages that must be installed first (the names to pass to apt-get install)."""
    missing = [package for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if not BUSYBOX.exists() or b"cpio" not in subprocess.run([str(BUSYBOX), "--list"], capture_output=True).stdout:
        missing.append("busybox-static")
    return missing


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("nfsvm: +", " ".join(command), flush=True)
    result = subprocess.run(command, **kwargs)
    if result.returncode != 0:
        raise ImageError(f"{' '.join(command[:3])} ... exited {result.returncode}")
    return result


def build_rootfs(rootfs: Path, packages: tuple[str, ...] = recipe.PACKAGES) -> None:
    run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", recipe.SUITE,
         str(rootfs), recipe.MIRROR], stdout=subprocess.DEVNULL)
    # The unprivileged user of a GitHub runner: passwordless sudo, no password of its own.
    run(["chroot", str(rootfs), "useradd", "-m", "-u", str(recipe.RUNNER_UID), "-s", "/bin/bash", recipe.RUNNER_USER])
    sudoers = rootfs / "etc" / "sudoers.d" / "runner"
    sudoers.write_text(f"{recipe.RUNNER_USER} ALL=(ALL) NOPASSWD:ALL\nDefaults:{recipe.RUNNER_USER} !requiretty\n")
    sudoers.chmod(0o440)
    (rootfs / "etc" / "hostname").write_text("nfsvm\n")
    # Debian's python3 runs apport's hook from a sitecustomize; a runner's Python (setup-python) has none,
    # and the gate would rightly report it as start-up code in its workers (tools/nfsvm/interpreter.py).
    for hook in (*rootfs.glob("etc/python3*/sitecustomize.py"), *rootfs.glob("usr/lib/python3*/sitecustomize.py")):
        hook.unlink()
    # No apt caches in the image: they are large and not inputs of anything.
    shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)


def add_kernel(rootfs: Path, package: str, downloads: Path) -> tuple[Path, str]:
    """apt-get download of exactly `package`, dpkg-deb -x into the root, depmod in a chroot."""
    downloads.mkdir(parents=True, exist_ok=True)
    run(["apt-get", "download", "-q", package], cwd=downloads, stdout=subprocess.DEVNULL)
    debs = sorted(downloads.glob(f"{package}_*.deb"))
    if len(debs) != 1:
        raise ImageError(f"expected one {package} .deb, found {[d.name for d in debs]}")
    # Not straight into the root: tar would replace bookworm's merged-/usr symlink /lib with a folder.
    extracted = downloads / "extracted"
    run(["dpkg-deb", "-x", str(debs[0]), str(extracted)])
    for folder in ("boot", "lib/modules"):
        (rootfs / folder).mkdir(parents=True, exist_ok=True)
        for item in (extracted / folder).iterdir():
            shutil.move(str(item), str(rootfs / folder / item.name))
    versions = sorted(p.name for p in (rootfs / "lib" / "modules").iterdir())
    if len(versions) != 1:
        raise ImageError(f"expected one kernel module tree, found {versions}")
    run(["chroot", str(rootfs), "depmod", "-a", versions[0]])
    return debs[0], versions[0]


def package_versions(rootfs: Path) -> dict[str, str]:
    out = run(["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package} ${Version}\\n"],
              capture_output=True, text=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())


def write_manifest(image: Path, kernel_deb: Path, kernel_version: str, order: list[str], digest: str,
                   package: str, seconds: float, init: str = "busybox", offline: dict | None = None) -> dict:
    installed = package_versions(image / "rootfs")
    manifest = {
        "schema": "kernodeck.nfsvm-image/v1",
        "init": init,
        "recipe_sha256": digest,
        "suite": recipe.SUITE,
        "mirror": recipe.MIRROR,
        "requested_packages": list(recipe.packages(init)),
        "kernel_package": package,
        "kernel_package_version": installed.get(package) or kernel_deb.name.split("_")[1],
        "kernel_deb_sha256": sha256_file(kernel_deb),
        "kernel_release": kernel_version,
        "vmlinuz_sha256": sha256_file(image / "vmlinuz"),
        "initrd_sha256": sha256_file(image / "initrd.img"),
        "initramfs_modules": [Path(p).name for p in order],
        "packages": installed,
        "packages_sha256": hashlib.sha256(json.dumps(installed, sort_keys=True).encode()).hexdigest(),
        "build_seconds": round(seconds, 1),
    }
    if offline is not None:
        manifest["offline_debs"] = offline
    (image / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def ensure_image(cache: Path | None = None, log=print, init: str = "busybox") -> tuple[Path, dict]:
    """The image folder and its manifest: reused when its recipe hash matches, else built (root only).
    init "systemd": systemd as PID 1 and nfs-kernel-server only as .debs to install in the VM."""
    cache = cache or recipe.cache_dir()
    package = recipe.kernel_package()
    digest = recipe.recipe_digest(package, init)
    image = cache / (f"image-{digest[:16]}" if init == "busybox" else f"image-{init}-{digest[:16]}")
    manifest_path = image / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("recipe_sha256") == digest:
            return image, manifest
    if os.geteuid() != 0:
        raise ImageError("building the VM image needs root (debootstrap, chroot); run as root or with sudo")
    started = time.monotonic()
    log(f"nfsvm: building the VM image in {image} (debootstrap {recipe.SUITE} + {package})")
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="building-", dir=cache))
    try:
        build_rootfs(staging / "rootfs", recipe.packages(init))
        offline = systemd_image.prepare(staging / "rootfs", staging / "debs") if init == "systemd" else None
        kernel_deb, kernel_version = add_kernel(staging / "rootfs", package, staging / "downloads")
        shutil.copy2(staging / "rootfs" / "boot" / f"vmlinuz-{kernel_version}", staging / "vmlinuz")
        order = initramfs.build(staging / "rootfs", kernel_version, BUSYBOX, staging / "initrd.img")
        manifest = write_manifest(staging, kernel_deb, kernel_version, order, digest, package,
                                  time.monotonic() - started, init, offline)
        shutil.rmtree(staging / "downloads")
        shutil.rmtree(staging / "debs", ignore_errors=True)
        if image.exists():
            shutil.rmtree(image)
        staging.rename(image)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return image, manifest


if __name__ == "__main__":
    built, facts = ensure_image()
    print(built, facts["kernel_release"], facts["build_seconds"])
