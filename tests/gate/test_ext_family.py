"""ext2, ext3 and ext4 share the super block magic 0xEF53; the inode flags of the workspace directory tell ext4
(with extents, mkfs.ext4's default) from the other two (reviewer r2, F28). Real images, made and loop-mounted
here (root): what the kernel gives each, the kernel's own refusal that the rule stands on, and its limit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from platform_runtime import filesystem
from rules import fs_magic

pytestmark = [pytest.mark.root, pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0,
                                                   reason="loop-mounts ext images (Linux, root)")]


def _sh(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
def ext_mount(tmp_path):
    """mount(made_by, mounted_as) -> the mount point; each unmounted at the end."""
    points: list[Path] = []
    made = iter(range(100))

    def mount(made_by: str, mounted_as: str) -> Path | None:
        number = next(made)
        image = tmp_path / f"{made_by}-{number}.img"
        if shutil.which(f"mkfs.{made_by}") is None:
            pytest.skip(f"mkfs.{made_by} is not installed")
        _sh("truncate", "-s", "32M", str(image))
        assert _sh(f"mkfs.{made_by}", "-q", "-F", str(image)).returncode == 0
        point = tmp_path / f"mnt-{number}"
        point.mkdir()
        done = _sh("mount", "-t", mounted_as, "-o", "loop", str(image), str(point))
        if done.returncode != 0:
            return None
        points.append(point)
        return point

    yield mount
    for point in points:
        if _sh("umount", str(point)).returncode != 0:
            _sh("umount", "-l", str(point))


def _probe(point: Path) -> dict:
    workspace = point / "platform-runtime-000000000000"
    workspace.mkdir()
    return filesystem.detect_linux(workspace)


@pytest.mark.parametrize("made_by", ["ext2", "ext3", "ext4"])
def test_each_ext_mount_records_what_its_kernel_gives_and_passes(ext_mount, made_by):
    detected = _probe(ext_mount(made_by, made_by))
    assert (detected["type"], detected["statfs_f_type"]) == (made_by, fs_magic.EXT_MAGIC)
    assert bool(detected["inode_flags"] & fs_magic.FS_EXTENT_FL) is (made_by == "ext4"), hex(detected["inode_flags"])
    result = {"filesystem": detected, "platform": {"machine": os.uname().machine}}
    assert fs_magic.extents_problems(result) == [] and fs_magic.problems(result) == []


@pytest.mark.parametrize("renamed", ["ext3", "ext2"])
def test_an_ext4_mount_renamed_ext3_or_ext2_is_refused_by_its_extents_flag(ext_mount, renamed):
    detected = _probe(ext_mount("ext4", "ext4"))
    result = {"filesystem": {**detected, "type": renamed}, "platform": {"machine": os.uname().machine}}
    assert fs_magic.problems(result) == []  # the magic cannot tell them apart
    assert f"filesystem.type is {renamed!r}, but filesystem.inode_flags" in fs_magic.extents_problems(result)[0]


def test_the_kernel_mounts_an_ext4_file_system_only_as_ext4(ext_mount):
    """The fact the rule stands on: ext4_feature_set_ok refuses an ext3 (or ext2) mount of an extents fs."""
    assert ext_mount("ext4", "ext3") is None and ext_mount("ext4", "ext2") is None


def test_an_ext3_file_system_mounted_as_ext4_gives_no_extents_so_ext4_stays_taken_as_recorded(ext_mount):
    """The limit, said in docs/verdicts.md: without the feature no directory gets the flag, so a type raised
    from ext3 to ext4 has no second view beside it."""
    detected = _probe(ext_mount("ext3", "ext4"))
    assert detected["type"] == "ext4" and not detected["inode_flags"] & fs_magic.FS_EXTENT_FL


def test_a_file_system_without_inode_flags_records_none(tmp_path):
    if _sh("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(tmp_path)).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            flags = filesystem.inode_flags(fd)
        finally:
            os.close(fd)
    finally:
        _sh("umount", str(tmp_path))
    assert flags in (None, 0)  # tmpfs answers since 6.0 (its own flags), ENOTTY before


def test_a_machine_with_another_ioctl_layout_is_not_asked():
    fd = os.open("/", os.O_RDONLY)
    try:
        assert filesystem.inode_flags(fd, machine="ppc64le") is None
    finally:
        os.close(fd)
