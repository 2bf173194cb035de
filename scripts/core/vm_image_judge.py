"""The NFS VM run's own facts (nfs-vm-run.json) against the image and the guest's versions it was made from:
tools/nfsvm/cli.judge_run copies its `image` block from the image's manifest (nfsvm-image.json, written by
tools/nfsvm/image.write_manifest) and its kernel_release / nfs_kernel_server from versions.json; the manifest's
packages_sha256 is the digest of its own packages. r4's #13 and #18: another kernel image's digest, packages
rewritten under a stale digest, an image without nfs-kernel-server, the run's fields deleted. Stdlib only."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

# tools/nfsvm/recipe.py: what each image asks debootstrap for (recipe.packages(init)), and the package the systemd
# image carries as .debs instead (recipe.OFFLINE_PACKAGE). recipe.py is hashed into the image's recipe digest,
# so it cannot import these without rebuilding every image: tests/evidence_index/
# test_the_judge_and_what_it_judges_share_one_definition.py holds the two equal.
IMAGE_PACKAGES = {
    "busybox": ("nfs-kernel-server", "python3", "kmod", "util-linux", "procps", "iproute2", "sudo"),
    "systemd": ("python3", "kmod", "util-linux", "procps", "iproute2", "sudo", "systemd", "systemd-sysv", "dbus"),
}
OFFLINE_PACKAGE = "nfs-kernel-server"
# tools/nfsvm/initramfs.TARGETS: the modules the initramfs loads to reach the root and the shares (their
# dependencies come with them, in load order).
INITRAMFS_TARGETS = ("virtio_pci", "9pnet_virtio", "9p", "overlay")
# The manifest's fields cli.judge_run copies into the run's `image` block.
IMAGE_BLOCK = ("recipe_sha256", "kernel_package", "kernel_package_version", "kernel_deb_sha256", "packages_sha256",
               "vmlinuz_sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# tools/nfsvm/recipe.SUITE (held equal like IMAGE_PACKAGES, by the same test), and the packages
# tools/nfsvm/phases.versions asks dpkg-query for: each is installed in every image (nfs-common with
# nfs-kernel-server, python3 by the recipe), so a versions.json without one lost it.
SUITE = "bookworm"
VERSION_PACKAGES = ("nfs-kernel-server", "nfs-common", "python3")
# The manifest's kernel, which one_run compares with the guest's and the run's only where it is recorded (r6: deleted,
# it verified PASS).
MANIFEST_KERNEL = ("kernel_release", "kernel_package", "kernel_package_version")


def packages_digest(packages: Any) -> str:
    """image.write_manifest's packages_sha256: SHA-256 of the packages as sorted-key JSON."""
    return hashlib.sha256(json.dumps(packages, sort_keys=True).encode()).hexdigest()


def run_fields_problems(run: dict[str, Any]) -> list[str]:
    """The fields every run records (cli.judge_run), each required: the VM's limit, its init, the guest's kernel
    and nfs-kernel-server, the image block."""
    vm = run.get("vm") if isinstance(run.get("vm"), dict) else {}
    limit = vm.get("limit_seconds")
    problems = []
    if not (isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0):
        problems.append(f"vm.limit_seconds is {limit!r}: the VM ran under no wall-clock limit")
    if run.get("init") not in IMAGE_PACKAGES:
        problems.append(f"init is {run.get('init')!r}, not one of {sorted(IMAGE_PACKAGES)}")
    for key in ("kernel_release", "nfs_kernel_server"):
        if not (isinstance(run.get(key), str) and run[key]):
            problems.append(f"{key} is {run.get(key)!r}: the run does not say what it ran")
    image = run.get("image") if isinstance(run.get("image"), dict) else {}
    problems += [f"image.{key} is {image.get(key)!r}" for key in IMAGE_BLOCK
                 if not (isinstance(image.get(key), str) and image[key])]
    return problems


def image_problems(manifest: dict[str, Any]) -> list[str]:
    """The image's manifest by its own facts: its digests are digests, packages_sha256 its packages', the
    packages its recipe asks for (nfs-kernel-server in the image, or as the systemd image's .debs), and the
    initramfs loads the modules the boot needs."""
    init = manifest.get("init")
    problems = [f"nfsvm-image.json {key} is {manifest.get(key)!r}, not a SHA-256"
                for key in ("recipe_sha256", "kernel_deb_sha256", "vmlinuz_sha256", "initrd_sha256", "packages_sha256")
                if not (isinstance(manifest.get(key), str) and _SHA256.fullmatch(manifest[key]))]
    packages = manifest.get("packages")
    if not (isinstance(packages, dict) and packages and all(isinstance(v, str) for v in packages.values())):
        problems.append(f"nfsvm-image.json packages is {str(packages)[:80]}: no installed packages")
    elif manifest.get("packages_sha256") != packages_digest(packages):
        problems.append(f"nfsvm-image.json packages_sha256 is {str(manifest.get('packages_sha256'))[:16]}..., its "
                        f"packages give {packages_digest(packages)[:16]}...: the packages are not the ones it hashed")
    wanted = IMAGE_PACKAGES.get(init) if isinstance(init, str) else None
    if wanted is None:
        problems.append(f"nfsvm-image.json init is {init!r}")
    elif manifest.get("requested_packages") != list(wanted):
        problems.append(f"nfsvm-image.json requested_packages is {manifest.get('requested_packages')!r}, the "
                        f"{init} recipe asks for {list(wanted)!r}")
    if isinstance(packages, dict):
        missing = [p for p in wanted or () if p not in packages]
        if missing:
            problems.append(f"nfsvm-image.json packages lack {missing}, which its recipe installs")
    if init == "systemd":
        offline = manifest.get("offline_debs") if isinstance(manifest.get("offline_debs"), dict) else {}
        entry = offline.get(OFFLINE_PACKAGE) if isinstance(offline.get(OFFLINE_PACKAGE), dict) else {}
        if not (isinstance(entry.get("file"), str) and isinstance(entry.get("sha256"), str)
                and _SHA256.fullmatch(entry["sha256"])):
            problems.append(f"nfsvm-image.json offline_debs holds no {OFFLINE_PACKAGE} .deb: the systemd image cannot "
                            "install it")
    problems += [f"nfsvm-image.json {key} is {manifest.get(key)!r}: the image does not say its kernel"
                 for key in MANIFEST_KERNEL if not (isinstance(manifest.get(key), str) and manifest[key])]
    if manifest.get("suite") != SUITE:
        problems.append(f"nfsvm-image.json suite is {manifest.get('suite')!r}, the recipe's is {SUITE!r}")
    modules = manifest.get("initramfs_modules")
    names = modules if isinstance(modules, list) else []
    lacking = [t for t in INITRAMFS_TARGETS if f"{t}.ko" not in names]
    if lacking:
        problems.append(f"nfsvm-image.json initramfs_modules lack {[t + '.ko' for t in lacking]}: the initramfs "
                        "cannot reach its root or shares")
    return problems


def versions_problems(versions: dict[str, Any]) -> list[str]:
    """versions.json (the guest's reading, tools/nfsvm/guest.py): each field required."""
    problems = [f"versions.json {key} is {versions.get(key)!r}" for key in ("kernel_release", "proc_version")
                if not (isinstance(versions.get(key), str) and versions[key])]
    packages = versions.get("packages")
    if not (isinstance(packages, dict) and packages.get(OFFLINE_PACKAGE)):
        problems.append(f"versions.json packages is {str(packages)[:80]}: no {OFFLINE_PACKAGE} in the guest")
    else:
        problems += [f"versions.json packages.{name} is {packages.get(name)!r}: every image installs it"
                     for name in VERSION_PACKAGES if not (isinstance(packages.get(name), str) and packages[name])]
    python = versions.get("python")
    if not (isinstance(python, dict) and isinstance(python.get("version"), str) and python["version"]):
        problems.append(f"versions.json python is {str(python)[:80]}: the guest's Python is not recorded")
    return problems


def run_image_problems(run: dict[str, Any], manifest: dict[str, Any] | None,
                       versions: dict[str, Any] | None) -> list[str]:
    """Forged where the run's copies disagree with the files they were copied from (both bound beside it)."""
    problems = []
    if manifest is not None:
        image = run.get("image") if isinstance(run.get("image"), dict) else {}
        problems += [f"image.{key} is {image.get(key)!r}, nfsvm-image.json records {manifest.get(key)!r}"
                     for key in IMAGE_BLOCK if image.get(key) != manifest.get(key)]
        if run.get("init") != manifest.get("init"):
            problems.append(f"init is {run.get('init')!r}, nfsvm-image.json records {manifest.get('init')!r}")
    if versions is not None:
        if run.get("kernel_release") != versions.get("kernel_release"):
            problems.append(f"kernel_release is {run.get('kernel_release')!r}, versions.json records "
                            f"{versions.get('kernel_release')!r}")
        packages = versions.get("packages") if isinstance(versions.get("packages"), dict) else {}
        if run.get("nfs_kernel_server") != packages.get(OFFLINE_PACKAGE):
            problems.append(f"nfs_kernel_server is {run.get('nfs_kernel_server')!r}, versions.json records "
                            f"{packages.get(OFFLINE_PACKAGE)!r}")
    if manifest is not None and versions is not None:
        # The guest read its packages from the image it booted (or, on the systemd image, installed them from the
        # .debs the image carries): one version of each.
        packages = versions.get("packages") if isinstance(versions.get("packages"), dict) else {}
        image = manifest.get("packages") if isinstance(manifest.get("packages"), dict) else {}
        offline = manifest.get("offline_debs") if isinstance(manifest.get("offline_debs"), dict) else {}
        for name, version in sorted(packages.items()):
            carried = image.get(name) if name in image else (offline.get(name) or {}).get("version") \
                if isinstance(offline.get(name), dict) else None
            if carried != version:
                problems.append(f"versions.json packages.{name} is {version!r}, the image carries {carried!r}")
    return problems
