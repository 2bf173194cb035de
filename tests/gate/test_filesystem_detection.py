"""File-system evidence comes from the operating system, matched by mount id, and names no host or path."""
# ruff: noqa: E501 - mountinfo lines are kept whole

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from platform_runtime import filesystem

# The first four lines were recorded on this project's VM (ext4 root, tmpfs, a loop-mounted ext4). The
# overlay, btrfs and NFS lines follow proc(5)'s format with the options those file systems print; they were
# not recorded here (this VM's kernel has no NFS client): the NFS workflow job produces the real one.
MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684092k
42 27 7:0 / /tmp/mt rw,relatime - ext4 /dev/loop0 rw
512 480 0:91 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,upperdir=/var/lib/docker/overlay2/x/diff,workdir=/var/lib/docker/overlay2/x/work
77 27 0:45 /@home /home rw,relatime shared:30 - btrfs /dev/nvme0n1p3 rw,ssd,space_cache=v2,subvolid=256,subvol=/@home
120 27 0:52 / /mnt/nfs\\040share rw,relatime shared:60 - nfs4 127.0.0.1:/ rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=127.0.0.1,local_lock=none,addr=127.0.0.1
"""


def test_mountinfo_is_parsed_into_type_device_and_options():
    entries = {e.mount_id: e for e in filesystem.parse_mountinfo(MOUNTINFO)}
    assert entries[27].fstype == "ext4" and entries[27].device == "254:0"
    assert entries[120].fstype == "nfs4" and "vers=4.2" in entries[120].options


POSIX_ONLY = pytest.mark.skipif(not hasattr(os, "makedev"), reason="os.makedev is POSIX only")
LINUX_ONLY = pytest.mark.skipif(sys.platform != "linux", reason="reads this host's /proc mountinfo and GNU stat")


@POSIX_ONLY
def test_the_mount_is_matched_by_mount_id_not_by_device_number():
    entries = filesystem.parse_mountinfo(MOUNTINFO)
    # btrfs reports an anonymous st_dev (0:52 here would even point at the NFS mount): the id decides.
    entry, method = filesystem.match_mount(entries, 77, os.makedev(0, 52))
    assert entry.fstype == "btrfs" and method == "linux-mountinfo-mnt-id"


@POSIX_ONLY
def test_st_dev_is_only_a_fallback_when_the_kernel_gives_no_mount_id():
    entries = filesystem.parse_mountinfo(MOUNTINFO)
    entry, method = filesystem.match_mount(entries, None, os.makedev(7, 0))
    assert entry.mount_id == 42 and method == "linux-mountinfo-st-dev"
    assert filesystem.match_mount(entries, 999, os.makedev(9, 9)) == (None, "linux-mountinfo-unmatched")


def test_nfs_mount_reports_its_version_but_no_server_address():
    entry = next(e for e in filesystem.parse_mountinfo(MOUNTINFO) if e.mount_id == 120)
    report = filesystem.describe_mount(entry, "linux-mountinfo-mnt-id")
    assert report["type"] == "nfs4" and report["nfs_version"] == "4.2"
    assert not any("127.0.0.1" in option for option in report["mount_options"])
    assert not any(option.startswith(("addr=", "clientaddr=")) for option in report["mount_options"])


def test_overlay_and_btrfs_options_with_paths_are_dropped():
    for mount_id in (512, 77):
        entry = next(e for e in filesystem.parse_mountinfo(MOUNTINFO) if e.mount_id == mount_id)
        options = filesystem.describe_mount(entry, "x")["mount_options"]
        assert not any("/" in option for option in options)


def test_fdinfo_mount_id_is_read():
    assert filesystem.read_mount_id("pos:\t0\nflags:\t0100000\nmnt_id:\t24\nino:\t3\n") == 24
    assert filesystem.read_mount_id("pos:\t0\n") is None


@LINUX_ONLY
def test_this_directory_is_detected_as_the_kernel_reports_it(tmp_path):
    expected = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    report = filesystem.detect(tmp_path)
    assert report["method"] == "linux-mountinfo-mnt-id"
    assert report["type"] == {"ext2/ext3": "ext4"}.get(expected, expected) or report["type"].startswith("ext")


@pytest.mark.parametrize("fs_name, drive_type, kind", [("NTFS", 3, "fixed"), ("ReFS", 3, "fixed"),
                                                        ("NFS", 4, "remote"), ("FAT32", 2, "removable")])
def test_windows_volume_information_is_reported_as_returned(fs_name, drive_type, kind):
    report = filesystem.describe_windows_volume(fs_name, drive_type)
    assert report["type"] == fs_name.lower() and report["drive_type"] == kind and report["error"] is None


def test_windows_volume_without_a_file_system_name_is_an_error():
    assert filesystem.describe_windows_volume("", 3)["error"]
