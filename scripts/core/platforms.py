"""What file-system facts prove a platform: the one rule for the gate's `--require windows` / `--require nfs`
and for the judge's re-derivation of those requirements (core.requirements) and the index's proof
(core.contract.prove_platform). Stdlib only; re-exported by core.contract."""

from __future__ import annotations

from typing import Any

from core.verdicts import NFS_TYPES

WINDOWS_FS_METHOD = "win32-GetVolumeInformationW"
# What GetVolumeInformationW names; a Linux file system type (ext4, xfs, tmpfs, overlay...) never proves Windows.
WINDOWS_FS_TYPES = ("ntfs", "refs", "fat", "fat32", "exfat", "csvfs", "udf", "cdfs")


def windows_problems(platform: dict[str, Any], fs: dict[str, Any]) -> list[str]:
    """Why these facts do not show a Windows file system (empty when they do). The one rule, for the gate's
    `--require windows` and for the index's proof: every Windows fact agrees -- Windows, whose API named
    the file system, a Windows one, with no Linux mount id beside it, and a recorded Windows version."""
    system, fs_type = platform.get("system"), str(fs.get("type") or "")
    if system != "Windows":
        return [f"platform.system is {system!r}, not Windows"]
    wanted = [
        (fs.get("method") == WINDOWS_FS_METHOD, f"the file system was not named by {WINDOWS_FS_METHOD} "
                                                f"(method {fs.get('method')!r})"),
        (fs_type.casefold() in WINDOWS_FS_TYPES, f"filesystem.type {fs_type!r} is not a Windows file system"),
        (fs.get("mount_id") is None, f"filesystem.mount_id is {fs.get('mount_id')!r}: a Linux mount"),
        (bool(platform.get("windows_version")), "platform.windows_version is not recorded"),
    ]
    return [why for held, why in wanted if not held]


def nfs_problems(platform: dict[str, Any], fs: dict[str, Any]) -> list[str]:
    """Why these facts do not show an NFS mount (empty when they do). The one rule, for the gate's
    `--require nfs` and for the index's proof: Linux, the work dir's own mount found in mountinfo, of type
    nfs or nfs4, with the NFS version its options name."""
    system = platform.get("system")
    if system != "Linux":
        return [f"platform.system is {system!r}; nfs is proven only through Linux mountinfo"]
    if not str(fs.get("method") or "").startswith(("linux-mountinfo-mnt-id", "linux-mountinfo-st-dev")):
        return [f"the work dir's mount was not found in mountinfo (method {fs.get('method')!r})"]
    if fs.get("type") not in NFS_TYPES:
        return [f"the work dir's own mount is {fs.get('type') or 'unknown'}, not nfs/nfs4"]
    return [] if fs.get("nfs_version") else ["the mount's NFS version (vers=) is not recorded"]
