"""Which file system holds a directory, read from the operating system, never guessed from a path name.

- Linux: /proc/self/mountinfo, matched by the mount id of an open handle on the directory (mnt_id in
  /proc/self/fdinfo); st_dev is only a fallback because btrfs and overlayfs report a device number that
  differs from mountinfo's major:minor.
- Windows: GetVolumePathNameW, then GetVolumeInformationW and GetDriveTypeW on the volume root.
- macOS: statfs(2) f_fstypename.
Only the type, the mount id and neutral options are reported: no mount points, sources, server
addresses, volume names or serial numbers.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from rules.fs_magic import GENERIC_IOCTL_MACHINES  # the generic _IOC layout: dir bits 30-31, size bits 16-29

# Option keys that name hosts, addresses, users or paths; dropped from the report.
PRIVATE_OPTION_KEYS = frozenset({
    "addr", "clientaddr", "mountaddr", "mounthost", "mountport", "uid", "gid", "context", "fscontext",
    "defcontext", "rootcontext", "lowerdir", "upperdir", "workdir", "user_id", "group_id", "subvol", "source",
    "resuid", "resgid",
})
NEUTRAL_OPTION = re.compile(r"^[a-z0-9_]+(=[A-Za-z0-9_.:-]+)?$")
IP_LIKE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$|:.*:")

WINDOWS_DRIVE_TYPES = {0: "unknown", 1: "no-root-dir", 2: "removable", 3: "fixed", 4: "remote", 5: "cdrom",
                       6: "ramdisk"}


@dataclass(frozen=True)
class MountEntry:
    mount_id: int
    device: str  # "major:minor"
    fstype: str
    options: tuple[str, ...]  # per-mount options followed by super-block options
    point: str = ""  # where it is mounted (unescaped)
    source: str = ""  # what is mounted ("127.0.0.1:/", "/dev/sda1", ...)


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Parse proc(5) mountinfo: 'id parent major:minor root point options [optional...] - type source super'."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 7:
            continue
        separator = fields.index("-")
        if len(fields) < separator + 3:
            continue
        super_options = fields[separator + 3].split(",") if len(fields) > separator + 3 else []
        entries.append(MountEntry(
            mount_id=int(fields[0]), device=fields[2], fstype=_unescape(fields[separator + 1]),
            options=tuple(fields[5].split(",")) + tuple(super_options),
            point=_unescape(fields[4]), source=_unescape(fields[separator + 2]),
        ))
    return entries


def read_mount_id(fdinfo_text: str) -> int | None:
    match = re.search(r"^mnt_id:\s*(\d+)\s*$", fdinfo_text, re.MULTILINE)
    return int(match.group(1)) if match else None


def neutral_options(options: tuple[str, ...]) -> list[str]:
    kept: list[str] = []
    for option in options:
        key, _, value = option.partition("=")
        if key in PRIVATE_OPTION_KEYS or not NEUTRAL_OPTION.match(option) or (value and IP_LIKE.search(value)):
            continue
        if option not in kept:
            kept.append(option)
    return kept


def nfs_version(fstype: str, options: list[str]) -> str | None:
    if not fstype.startswith("nfs"):
        return None
    for option in options:
        if option.startswith(("vers=", "nfsvers=")):
            return option.split("=", 1)[1]
    return "4" if fstype == "nfs4" else None


def match_mount(entries: list[MountEntry], mount_id: int | None, st_dev: int | None) -> tuple[MountEntry | None, str]:
    """The directory's own mount: by mount id when the kernel gives one, else the last mount of its device."""
    if mount_id is not None:
        for entry in entries:
            if entry.mount_id == mount_id:
                return entry, "linux-mountinfo-mnt-id"
    if st_dev is not None:
        device = f"{os.major(st_dev)}:{os.minor(st_dev)}"
        candidates = [entry for entry in entries if entry.device == device]
        if candidates:
            return candidates[-1], "linux-mountinfo-st-dev"
    return None, "linux-mountinfo-unmatched"


def describe_mount(entry: MountEntry | None, method: str) -> dict:
    if entry is None:
        return {"type": None, "method": method, "mount_id": None, "mount_options": None, "nfs_version": None,
                "drive_type": None, "error": "the directory's mount was not found in mountinfo"}
    options = neutral_options(entry.options)
    return {"type": entry.fstype.lower(), "method": method, "mount_id": entry.mount_id, "mount_options": options,
            "nfs_version": nfs_version(entry.fstype.lower(), options), "drive_type": None, "error": None}


def statfs_magic(fd: int) -> int | None:
    """The kernel's super-block magic for an open handle: fstatfs(2)'s f_type, the first field of glibc's and
    musl's `struct statfs` (a long: __fsword_t / unsigned long), read through ctypes (Python has no binding).
    The low 32 bits: a magic is 32 bits, and a 32-bit long makes 0xFF534D42 negative. None if it fails."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        buffer = ctypes.create_string_buffer(512)  # struct statfs is 120 bytes on x86_64, 84 on 32-bit
        if libc.fstatfs(fd, buffer) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


IOC_READ = 2


def getflags_request(long_size: int | None = None) -> int:
    """FS_IOC_GETFLAGS, _IOR('f', 1, long), in the generic ioctl layout (include/uapi/asm-generic/ioctl.h)."""
    import ctypes

    size = ctypes.sizeof(ctypes.c_long) if long_size is None else long_size
    return (IOC_READ << 30) | (size << 16) | (ord("f") << 8) | 1


def inode_flags(fd: int, machine: str | None = None) -> int | None:
    """The inode flags of the workspace directory the probe just made (FS_IOC_GETFLAGS, lsattr's view): the
    second view of an ext2/ext3/ext4 type that statfs cannot give (the three share 0xEF53). ext4 with its extents
    feature (mkfs.ext4's default) gives every new directory FS_EXTENT_FL (ext4_new_inode); the kernel mounts a
    file system that has the feature only as ext4, so an ext2 or ext3 directory never carries it
    (rules.fs_magic.extents_problems). Machines whose ioctl layout differs (powerpc, mips, sparc, alpha) are not
    asked, and record None, as does a file system without the request (NFS: ENOTTY)."""
    if (machine or platform.machine()) not in GENERIC_IOCTL_MACHINES:
        return None
    import array
    import fcntl  # POSIX only: this module is loaded on Windows too, where this is never called

    buffer = array.array("i", [0, 0])  # the kernel writes an int; a long's room in case
    try:
        fcntl.ioctl(fd, getflags_request(), buffer, True)
    except OSError:
        return None
    return buffer[0] & 0xFFFFFFFF


def detect_linux(path: Path, proc: Path = Path("/proc")) -> dict:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        st_dev = os.fstat(fd).st_dev
        magic = statfs_magic(fd)  # the same handle whose mount id names the mountinfo line
        flags = inode_flags(fd)  # ext4's extents flag, which ext2 and ext3 never give (rules.fs_magic)
        try:
            mount_id = read_mount_id((proc / "self" / "fdinfo" / str(fd)).read_text())
        except OSError:
            mount_id = None
    finally:
        os.close(fd)
    entries = parse_mountinfo((proc / "self" / "mountinfo").read_text())
    return {**describe_mount(*match_mount(entries, mount_id, st_dev)), "statfs_f_type": magic, "inode_flags": flags}


def describe_windows_volume(fs_name: str, drive_type: int) -> dict:
    """The report for what GetVolumeInformationW and GetDriveTypeW returned (kept pure to be testable)."""
    name = fs_name.strip()
    return {"type": name.lower() or None, "method": "win32-GetVolumeInformationW", "mount_id": None,
            "mount_options": None, "nfs_version": None,
            "drive_type": WINDOWS_DRIVE_TYPES.get(drive_type, "unknown"),
            "error": None if name else "GetVolumeInformationW returned no file-system name"}


def detect_windows(path: Path) -> dict:
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    root = ctypes.create_unicode_buffer(261)
    if not kernel32.GetVolumePathNameW(ctypes.c_wchar_p(str(path.resolve())), root, len(root)):
        return {**describe_windows_volume("", 0), "error": f"GetVolumePathNameW failed ({ctypes.get_last_error()})"}
    fs_name = ctypes.create_unicode_buffer(261)
    serial, max_component, flags = wintypes.DWORD(), wintypes.DWORD(), wintypes.DWORD()
    if not kernel32.GetVolumeInformationW(root, None, 0, ctypes.byref(serial), ctypes.byref(max_component),
                                          ctypes.byref(flags), fs_name, len(fs_name)):
        return {**describe_windows_volume("", kernel32.GetDriveTypeW(root)),
                "error": f"GetVolumeInformationW failed ({ctypes.get_last_error()})"}
    return describe_windows_volume(fs_name.value, kernel32.GetDriveTypeW(root))


def detect_darwin(path: Path) -> dict:
    import ctypes
    import ctypes.util

    class StatFs(ctypes.Structure):  # <sys/mount.h>, 64-bit inode layout
        _fields_ = [
            ("f_bsize", ctypes.c_uint32), ("f_iosize", ctypes.c_int32), ("f_blocks", ctypes.c_uint64),
            ("f_bfree", ctypes.c_uint64), ("f_bavail", ctypes.c_uint64), ("f_files", ctypes.c_uint64),
            ("f_ffree", ctypes.c_uint64), ("f_fsid", ctypes.c_int32 * 2), ("f_owner", ctypes.c_uint32),
            ("f_type", ctypes.c_uint32), ("f_flags", ctypes.c_uint32), ("f_fssubtype", ctypes.c_uint32),
            ("f_fstypename", ctypes.c_char * 16), ("f_mntonname", ctypes.c_char * 1024),
            ("f_mntfromname", ctypes.c_char * 1024), ("f_flags_ext", ctypes.c_uint32),
            ("f_reserved", ctypes.c_uint32 * 7),
        ]

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    try:  # x86_64 exports the 64-bit-inode variant under this name; arm64 has only plain statfs
        statfs = libc["statfs$INODE64"]
    except AttributeError:
        statfs = libc.statfs
    buffer = StatFs()
    if statfs(str(path).encode(), ctypes.byref(buffer)) != 0:
        return {"type": None, "method": "darwin-statfs", "mount_id": None, "mount_options": None,
                "nfs_version": None, "drive_type": None, "error": f"statfs failed (errno {ctypes.get_errno()})"}
    fstype = buffer.f_fstypename.decode("ascii", "replace").lower()
    return {"type": fstype or None, "method": "darwin-statfs", "mount_id": None, "mount_options": None,
            "nfs_version": "unknown" if fstype == "nfs" else None, "drive_type": None, "error": None}


def detect(path: Path) -> dict:
    system = platform.system()
    try:
        if system == "Linux":
            return detect_linux(path)
        if system == "Windows":
            return detect_windows(path)
        if system == "Darwin":
            return detect_darwin(path)
    except OSError as exc:
        return {"type": None, "method": f"{system.lower()}-error", "mount_id": None, "mount_options": None,
                "nfs_version": None, "drive_type": None, "error": f"{type(exc).__name__}: {exc.strerror}"}
    return {"type": None, "method": "unsupported-system", "mount_id": None, "mount_options": None,
            "nfs_version": None, "drive_type": None, "error": f"no file-system detection for {system}"}
