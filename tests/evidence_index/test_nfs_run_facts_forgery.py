"""nfs-vm-run.json against the image and the guest's versions it copied its facts from (outside reviewer r4, #13
and #18's NFS parts): forged in copies of the committed evidence/nfs and evidence/nfs-systemd, the run's checks
made again by the forger (run_checks), then re-indexed and verified: refused naming the field; untouched, PASS.
The constants the judge holds the image to are tools/nfsvm's (recipe.py, initramfs.py): held equal here."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT
from tests.evidence_index.test_nfs_phase_records_forgery import committed, forged_copy, judged, verified

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import initramfs, recipe  # noqa: E402
from rules import nfs_vm_image  # noqa: E402


def test_the_judges_image_facts_are_the_recipes():
    for init in recipe.INITS:
        assert nfs_vm_image.IMAGE_PACKAGES[init] == recipe.packages(init)
    assert nfs_vm_image.OFFLINE_PACKAGE == recipe.OFFLINE_PACKAGE
    assert nfs_vm_image.INITRAMFS_TARGETS == initramfs.TARGETS
    for folder in ("nfs", "nfs-systemd"):
        manifest = committed(folder, "nfsvm-image.json")
        assert nfs_vm_image.packages_digest(manifest["packages"]) == manifest["packages_sha256"]
        assert sorted(committed(folder, "nfs-vm-run.json")["image"]) == sorted(nfs_vm_image.IMAGE_BLOCK)


def _evil_versions(d: dict) -> None:
    for name in ("adduser", "apt", "base-files"):
        assert name in d["packages"]
        d["packages"][name] = "9.99-evil"


def _evil_versions_rehashed(d: dict) -> None:
    _evil_versions(d)
    d["packages_sha256"] = nfs_vm_image.packages_digest(d["packages"])


IMAGE_FORGERIES = [
    ("nfs", _evil_versions, "packages_sha256 is"),
    ("nfs", _evil_versions_rehashed, "image.packages_sha256 is '0cebdf4d"),
    ("nfs", lambda d: d.update(vmlinuz_sha256="0" * 64), "image.vmlinuz_sha256 is '85667e6c"),
    ("nfs", lambda d: d.update(initrd_sha256="not-a-digest"), "initrd_sha256 is 'not-a-digest', not a SHA-256"),
    ("nfs", lambda d: d.update(requested_packages=[p for p in d["requested_packages"] if p != "nfs-kernel-server"]),
     "requested_packages is"),
    ("nfs", lambda d: d.update(initramfs_modules=[]), "initramfs_modules lack"),
    ("nfs", lambda d: d["packages"].update({"nfs-kernel-server": "1:9.9"}),
     "versions.json packages.nfs-kernel-server is '1:2.6.2-4+deb12u1', the image carries '1:9.9'"),
    ("nfs", lambda d: d.update(init="systemd"), "init is 'busybox', nfsvm-image.json records 'systemd'"),
    ("nfs-systemd", lambda d: d["offline_debs"].pop("nfs-kernel-server"), "offline_debs holds no nfs-kernel-server"),
    ("nfs-systemd", lambda d: d.update(recipe_sha256="1" * 64), "image.recipe_sha256 is '94b95f85"),
]


@pytest.mark.parametrize("folder, change, words", IMAGE_FORGERIES,
                         ids=["packages-under-a-stale-digest", "packages-rehashed", "another-vmlinuz", "initrd-digest",
                              "no-nfs-kernel-server-asked", "no-initramfs-modules", "another-nfs-kernel-server",
                              "another-init", "systemd-image-without-the-deb", "another-recipe"])
def test_an_image_manifest_that_is_not_the_runs_image_is_refused(tmp_path, folder, change, words):
    found = judged(forged_copy(tmp_path, folder, "nfsvm-image.json", change))
    assert any(words in why for why in found), found


def test_packages_rewritten_under_a_stale_digest_do_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs", "nfsvm-image.json", _evil_versions))
    assert code == 3 and any("packages_sha256 is" in why and "its packages give" in why for why in found), found


def test_another_kernel_images_digest_does_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs", "nfsvm-image.json",
                                       lambda d: d.update(vmlinuz_sha256="0" * 64)))
    assert code == 3 and any("image.vmlinuz_sha256 is" in why for why in found), found


@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
@pytest.mark.parametrize("key", ["kernel_release", "proc_version", "packages", "python"])
def test_a_versions_field_deleted_is_refused(tmp_path, folder, key):
    found = judged(forged_copy(tmp_path, folder, "versions.json", lambda d: d.pop(key)))
    assert any(f"versions.json {key} is None" in why for why in found), found


RUN_DELETIONS = [
    (lambda d: d["vm"].pop("limit_seconds"), "vm.limit_seconds is None"),
    (lambda d: d.pop("init"), "init is None"),
    (lambda d: d.pop("kernel_release"), "kernel_release is None"),
    (lambda d: d.pop("nfs_kernel_server"), "nfs_kernel_server is None"),
    (lambda d: d["image"].pop("vmlinuz_sha256"), "image.vmlinuz_sha256 is None"),
    (lambda d: d["image"].pop("packages_sha256"), "image.packages_sha256 is None"),
    (lambda d: d.update(kernel_release="6.1.0-99-amd64"), "kernel_release is '6.1.0-99-amd64', versions.json records"),
]


@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
@pytest.mark.parametrize("change, words", RUN_DELETIONS,
                         ids=["limit", "init", "kernel-release", "nfs-kernel-server", "image-vmlinuz",
                              "image-packages", "another-kernel-release"])
def test_a_runs_own_field_deleted_or_not_its_records_is_refused(tmp_path, folder, change, words):
    found = judged(forged_copy(tmp_path, folder, "nfs-vm-run.json", change))
    assert any(words in why for why in found), found


def test_a_run_without_its_vm_limit_does_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs", "nfs-vm-run.json", lambda d: d["vm"].pop("limit_seconds")))
    assert code in (1, 3) and any("vm.limit_seconds is None" in why for why in found), found


def test_a_versions_file_without_its_kernel_does_not_verify(tmp_path):
    code, found = verified(forged_copy(tmp_path, "nfs-systemd", "versions.json", lambda d: d.pop("kernel_release")))
    assert code == 3 and any("versions.json kernel_release is None" in why for why in found), found
