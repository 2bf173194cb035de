"""The inode flags of the workspace directory the probe just made (Linux FS_IOC_GETFLAGS, lsattr's view): the
second view of an ext2/ext3/ext4 type that statfs cannot give (the three share the magic 0xEF53). ext4 with its
extents feature (mkfs.ext4's default) gives every new directory FS_EXTENT_FL (ext4_new_inode); the kernel
mounts a file system that has the feature only as ext4 (ext4_feature_set_ok refuses ext2 and ext3 mounts of
it), so an ext2 or ext3 directory never carries the flag. core.fs_magic.extents_problems judges it.

The request number is _IOR('f', 1, long) in the generic ioctl layout (include/uapi/asm-generic/ioctl.h); the
architectures whose layout differs (powerpc, mips, sparc, alpha) are not asked, and record None, as does a file
system without the request (NFS, tmpfs before 6.0: ENOTTY). The flags are an int (the kernel writes one).
"""

from __future__ import annotations

import array
import ctypes
import platform

from core.fs_magic import GENERIC_IOCTL_MACHINES  # the generic _IOC layout: dir bits 30-31, size bits 16-29

IOC_READ = 2


def getflags_request(long_size: int = ctypes.sizeof(ctypes.c_long)) -> int:
    return (IOC_READ << 30) | (long_size << 16) | (ord("f") << 8) | 1


def read(fd: int, machine: str | None = None) -> int | None:
    """FS_IOC_GETFLAGS of an open handle; None where this kernel is not asked or the file system has no flags."""
    if (machine or platform.machine()) not in GENERIC_IOCTL_MACHINES:
        return None
    import fcntl  # POSIX only: the module is loaded on Windows too, by the probe that never calls this there

    buffer = array.array("i", [0, 0])  # the kernel writes an int; a long's room in case
    try:
        fcntl.ioctl(fd, getflags_request(), buffer, True)
    except OSError:
        return None
    return buffer[0] & 0xFFFFFFFF
