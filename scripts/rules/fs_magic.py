"""`filesystem.type` (the name mountinfo gives the work dir's mount) against the kernel's own answer for the
same open handle: statfs(2)'s `f_type`, the super block's magic number (`filesystem.statfs_f_type`, recorded by
the Linux probe beside mountinfo's type). A mount whose options say nothing of its type (a bare `rw,relatime`
loop mount, rules.mount_options) is told apart by it: an ext4 result edited to xfs still records 0xEF53.

The magic numbers are the kernel's (include/uapi/linux/magic.h; XFS_SB_MAGIC from fs/xfs/libxfs/xfs_format.h,
FUSE_SUPER_MAGIC from fs/fuse/inode.c, the SMB client's from fs/smb/client, ntfs3's from fs/ntfs3/super.c,
ZFS_SUPER_MAGIC from OpenZFS include/sys/fs/zfs.h). What is judged:
- a magic this table knows must be one of the types it names, and a type it knows must have one of its magics:
  either edit alone is refused, naming both values;
- a magic it does not know beside a type it does not know (a file system this project never met) cannot be
  confirmed: the result is not failed for it, and `unconfirmed` says so (the index lists it beside the result).
Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.values import count

MAGICS: dict[int, tuple[str, ...]] = {
    0xEF53: ("ext2", "ext3", "ext4"),
    0x58465342: ("xfs",),
    0x9123683E: ("btrfs",),
    0x01021994: ("tmpfs", "devtmpfs"),  # shmem; devtmpfs is a tmpfs when the kernel has CONFIG_TMPFS
    0x858458F6: ("ramfs", "tmpfs", "devtmpfs"),  # tmpfs without CONFIG_SHMEM is ramfs (mm/shmem.c)
    0x958458F6: ("hugetlbfs",),
    0x6969: ("nfs", "nfs4"),
    0x794C7630: ("overlay",),
    0x65735546: ("fuse", "fuseblk"),  # fuse_statfs answers FUSE_SUPER_MAGIC for every FUSE file system
    0x01021997: ("9p",),
    0x2FC12FC1: ("zfs",),
    0xFF534D42: ("cifs", "smb3"),
    0xFE534D42: ("cifs", "smb3"),  # SMB2_SUPER_MAGIC: the client's magic for an SMB 2.0 dialect mount
    0x4D44: ("vfat", "msdos"),
    0x2011BAB0: ("exfat",),
    0x7366746E: ("ntfs3", "ntfs"),  # ntfs3 registers "ntfs" too since 6.9
    0x5346544E: ("ntfs",),  # the old read-only driver (removed in 6.9)
    0xF2F52010: ("f2fs",),
    0x00C36400: ("ceph",),
    0xCA451A4E: ("bcachefs",),
    0x73717368: ("squashfs",),
    0xE0F5E1E2: ("erofs",),
    0x15013346: ("udf",),
    0x9660: ("iso9660",),
}
KNOWN_TYPES = frozenset(name for names in MAGICS.values() for name in names)
MOUNTINFO = "linux-mountinfo"
# ext2, ext3 and ext4 share 0xEF53; the workspace directory's inode flags (FS_IOC_GETFLAGS, recorded as
# `filesystem.inode_flags` by platform_runtime.filesystem.inode_flags) tell ext4 with extents from the other two.
EXT_MAGIC = 0xEF53
FS_EXTENT_FL = 0x00080000  # include/uapi/linux/fs.h; EXT4_EXTENTS_FL, set on each new inode of an extents fs
WITHOUT_EXTENTS = ("ext2", "ext3")
# Machines whose kernel uses the generic _IOC layout, where the gate asks FS_IOC_GETFLAGS (by uname's name).
GENERIC_IOCTL_MACHINES = frozenset({"x86_64", "i386", "i486", "i586", "i686", "aarch64", "arm64", "armv6l",
                                    "armv7l", "armv8l", "riscv64", "s390x", "loongarch64"})


def types_of(magic: int) -> tuple[str, ...]:
    return MAGICS.get(magic, ())


def _named(fs_type: str, names: tuple[str, ...]) -> bool:
    return fs_type in names or ("fuse" in names and fs_type.startswith("fuse."))  # fuse.sshfs, fuse.gcsfuse...


def _recorded(fs: Any) -> tuple[Any, Any] | None:
    """(type, magic) of a Linux mountinfo result that recorded a magic; None where there is no second view."""
    if not isinstance(fs, dict) or not str(fs.get("method") or "").startswith(MOUNTINFO):
        return None
    if fs.get("statfs_f_type") is None:
        return None  # not recorded: older gates, or statfs failed (rules.result_format says when it must be)
    return fs.get("type"), fs.get("statfs_f_type")


def problems(result: dict[str, Any]) -> list[str]:
    """The recorded type against the recorded magic, each named with its value."""
    recorded = _recorded(result.get("filesystem"))
    if recorded is None:
        return []
    fs_type, magic = recorded
    if not count(magic) or magic > 0xFFFFFFFF:  # the probe records the low 32 bits
        return [f"filesystem.statfs_f_type is {magic!r}: not a super block's magic number"]
    names = types_of(magic)
    if not isinstance(fs_type, str):
        return [f"filesystem.type is {fs_type!r}, the kernel's statfs f_type is {magic:#x}"]
    if names and not _named(fs_type, names):
        return [f"filesystem.type is {fs_type!r}, but the kernel's statfs f_type is {magic:#x}, "
                f"{'/'.join(names)}'s"]
    expected = sorted(f"{m:#x}" for m, n in MAGICS.items() if _named(fs_type, n))
    if not names and expected:
        return [f"filesystem.type is {fs_type!r}, whose statfs f_type is {' or '.join(expected)}, but the kernel "
                f"answered filesystem.statfs_f_type {magic:#x}"]
    return []


def unconfirmed(result: dict[str, Any]) -> list[str]:
    """What this rule cannot confirm on a result it does not fail: a magic and a type both unknown to it."""
    recorded = _recorded(result.get("filesystem"))
    if recorded is None or not count(recorded[1]) or problems(result):
        return []
    fs_type, magic = recorded
    if types_of(magic):
        return []
    return [f"filesystem.type {fs_type!r} is taken as recorded: its statfs f_type {magic:#x} is not in "
            "rules.fs_magic's table"]


def extents_problems(result: dict[str, Any]) -> list[str]:
    """ext2 and ext3 against the extents flag of the workspace directory (0xEF53 is all three's magic, so
    the magic alone cannot tell them apart): the kernel mounts a
    file system with the extents feature only as ext4 (fs/ext4/super.c ext4_feature_set_ok), and on it every new
    directory carries FS_EXTENT_FL, so an ext2 or ext3 type beside the flag is an ext4 mount renamed. On an ext
    super block (0xEF53) of a machine the gate asks, the flags are always answered: null is the view removed.
    An ext2 or ext3 type is a claim that only the flags support (statfs gives the three one magic), so it must
    carry them: deleted (or null where the gate asks, whatever statfs_f_type says) the claim stands on nothing
    and is refused; an ext2/ext3 result of a gate before the flags (95dd4dd) is refused so too, while an ext4 one
    of such a gate (evidence/cuda) is judged without them. An ext4 without the extents feature (mkfs.ext4 -O
    ^extent, an ext3 mounted as ext4) records no flag and passes: a type raised from ext3 to ext4 stays taken
    as recorded."""
    fs = result.get("filesystem")
    if not isinstance(fs, dict) or not str(fs.get("method") or "").startswith(MOUNTINFO):
        return []
    fs_type = fs.get("type")
    claimed = fs_type in WITHOUT_EXTENTS
    if "inode_flags" not in fs:
        if claimed:
            return [f"filesystem.inode_flags is missing beside filesystem.type {fs_type!r}: ext2 and ext3 share "
                    f"ext4's statfs f_type {EXT_MAGIC:#x}, and only the workspace directory's flags tell them from "
                    "an ext4 mount renamed"]
        return []  # older gates' ext4 and other types: judged by the views they hold
    flags = fs["inode_flags"]
    machine = (result.get("platform") or {}).get("machine") if isinstance(result.get("platform"), dict) else None
    asked = isinstance(machine, str) and machine in GENERIC_IOCTL_MACHINES  # a list or a dict is no machine
    if flags is None:
        if asked and (claimed or fs.get("statfs_f_type") == EXT_MAGIC):
            beside = f"filesystem.type {fs_type!r}" if claimed else f"an ext super block (statfs_f_type {EXT_MAGIC:#x})"
            return [f"filesystem.inode_flags is None beside {beside} of a {machine} kernel: FS_IOC_GETFLAGS always "
                    "answers there"]
        return []
    if not count(flags) or flags > 0xFFFFFFFF:
        return [f"filesystem.inode_flags is {flags!r}: FS_IOC_GETFLAGS gives a 32-bit set of flags"]
    if claimed and flags & FS_EXTENT_FL:
        return [f"filesystem.type is {fs_type!r}, but filesystem.inode_flags {flags:#x} carries FS_EXTENT_FL "
                f"({FS_EXTENT_FL:#x}): only an ext4 mount gives a new directory extents"]
    return []
