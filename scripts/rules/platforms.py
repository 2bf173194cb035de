"""What recorded facts prove a platform: the one rule for the gate's `--require windows` / `--require nfs`
and for the judge's re-derivation of those requirements (rules.requirements) and the index's proof
(rules.platform_proof). Stdlib only.

`platform.system` is one fact among many that speak to the operating system: the kernel release string,
how the file system was named (mountinfo, GetVolumeInformationW, statfs), the lock method (fcntl or msvcrt),
how the device worker's libraries were seen (/proc/<pid>/maps) and which it mapped, the compiler that built
the interpreter, the torch wheel's platform tag and its libraries' suffix. Each is read here as the set of
systems it allows; a system is proven only when every recorded fact allows it, so a Linux result edited to
say Windows (or Darwin) is refused by the facts left as they were recorded.
"""

from __future__ import annotations

import re
from typing import Any

from rules import mount_options, wine
from rules.gate_record import OS_FACT_PATHS, Filesystem, Platform, os_facts
from rules.whole_result import NFS_TYPES

WINDOWS_FS_METHOD = "win32-GetVolumeInformationW"
# What GetVolumeInformationW names; a Linux file system type (ext4, xfs, tmpfs, overlay...) never proves Windows.
WINDOWS_FS_TYPES = ("ntfs", "refs", "fat", "fat32", "exfat", "csvfs", "udf", "cdfs")
SYSTEMS = ("Linux", "Windows", "Darwin")
LINUX, WINDOWS, DARWIN = ({"Linux"}, {"Windows"}, {"Darwin"})
POSIX = LINUX | DARWIN
# An executable header's format (platform_runtime.binary_arch) is its OS's: ELF here only on Linux, PE on Windows.
BINARY_FORMATS = {"elf": LINUX, "pe": WINDOWS, "mach-o": DARWIN, "mach-o-fat": DARWIN}
# NFS's own mount options: the Linux client always shows vers=, proto= and sec= (fs/nfs/super.c).
NFS_OPTION_KEYS = ("vers", "nfsvers", "proto", "sec")
NFS_SHOWN_OPTIONS = ("proto", "sec")
# How the client shows where its locks and failed writes go (fs/nfs/super.c nfs_show_mount_options, every mount):
# "hard" unless soft or softerr, "nolock" with NFS_MOUNT_NONLM, and exactly one local_lock= (none, all, flock,
# posix; `nolock` sets local flock and fcntl locks, so it shows local_lock=all too). `--require nfs` promises that
# the checks' locks and writes reached the server: every lock is the server's only under local_lock=none (flock
# and posix keep one kind local, all keeps both), and a write is retried until the
# server answers only on a hard mount (nfs(5): a soft or softerr mount fails the call after retrans
# retransmissions, and warns that a soft timeout can corrupt data).
NFS_SOFT_OPTIONS = ("soft", "softerr")


def _release(value: str) -> set[str] | None:
    if re.fullmatch(r"\d+\.\d+\.\d+", value):  # Darwin's kernel (23.4.0), or a bare Linux one
        return POSIX
    if re.match(r"\d+\.\d+(\.\d+)*[-+_~a-zA-Z]", value):  # a Linux kernel's local version: 6.1.0-57-amd64
        return LINUX
    if re.fullmatch(r"(\d+|post)?\d*(Server(R2)?)?|Vista|XP", value) and value:  # 10, 11, 2022Server
        return WINDOWS
    return None


def _wheel_tags(tags: list[Any]) -> set[str] | None:
    allowed: set[str] | None = None
    for tag in tags:
        platforms = str(tag).split("-")[-1].split(".")
        for name in platforms:
            systems = (LINUX if name.startswith(("manylinux", "musllinux", "linux")) else WINDOWS
                       if name.startswith("win") else DARWIN if name.startswith("macosx") else None)
            if systems is not None:
                allowed = systems if allowed is None else allowed & systems
    return allowed


def _libraries(names: list[Any]) -> set[str] | None:
    allowed: set[str] | None = None
    for name in names:
        name = str(name)
        systems = (LINUX if ".so" in name else WINDOWS if name.endswith(".dll") else DARWIN
                   if name.endswith(".dylib") else None)
        if systems is not None:
            allowed = systems if allowed is None else allowed & systems
    return allowed


def _compiler(value: str) -> set[str] | None:
    """The systems the compiler that built the interpreter allows, as CPython writes it (the bracket of
    sys.version that platform.python_compiler() returns): MSVC's `MSC v.1938 64 bit (AMD64)` (PC/pyconfig.h;
    a clang-cl build keeps `MSC v.` and the `NN bit (ARCH)` suffix), Apple's clang `Clang 15.0.0
    (clang-1500.3.9.4)` (its __clang_version__), GCC's `GCC 12.2.0` (Linux), an LLVM clang's bare `Clang 18.1.8`
    (python-build-standalone on Linux, conda-forge on macOS)."""
    if "MSC v." in value or re.search(r"\d+ bit \(", value):
        return WINDOWS
    if value.startswith("Clang") and ("(clang-" in value or "Apple" in value):
        return DARWIN
    if value.startswith("GCC"):
        return DARWIN if "Apple" in value else LINUX
    if value.startswith("Clang"):
        return POSIX
    return None


def _lock_method(value: str) -> set[str] | None:
    return POSIX if value.startswith("fcntl") else WINDOWS if value.startswith("msvcrt") else None


def _allowed(path: str, value: Any) -> set[str] | None:
    """The systems a recorded fact allows; None when it says nothing (not recorded, or no OS in it)."""
    if value is None:
        return None
    if path == "platform.system":
        return {value} if value in SYSTEMS else set()
    if path == "platform.release":
        return _release(str(value))
    if path == "platform.machine":
        return {"AMD64": WINDOWS, "ARM64": WINDOWS, "x86": WINDOWS, "x86_64": POSIX, "aarch64": LINUX,
                "arm64": DARWIN}.get(str(value))
    if path == "platform.windows_version" or path == "filesystem.drive_type":
        return WINDOWS
    if path == "platform.mac_version":
        return DARWIN
    if path == "filesystem.method":
        prefixes = {"linux-": LINUX, "win32-": WINDOWS, "windows-": WINDOWS, "darwin-": DARWIN}
        return next((systems for prefix, systems in prefixes.items() if str(value).startswith(prefix)), None)
    if path in ("filesystem.mount_id", "filesystem.mount_options"):
        return LINUX  # only mountinfo gives either
    if path.endswith(".method"):
        return _lock_method(str(value))
    if path == "device.type":
        return DARWIN if value == "mps" else LINUX | WINDOWS if value in ("cuda", "rocm") else None
    if path == "device.views.mapped.observed":
        return LINUX if value in ("linux-proc-maps", "unreadable") else WINDOWS | DARWIN if value == "not-linux" \
            else None
    if path == "platform.python_compiler":
        return _compiler(str(value))
    if path == "device.views.mapped.torch_lib" and isinstance(value, list):
        # Only the Linux observer (/proc/<pid>/maps) names mapped libraries: elsewhere the gate records [].
        return LINUX if value else None
    if path.startswith("platform.binaries.") and path.endswith(".format"):
        return BINARY_FORMATS.get(str(value))
    if path == "platform.binaries.torch_c.name":  # PEP 3149's EXT_SUFFIX: -linux-gnu.so, -darwin.so, .pyd
        name = str(value)
        return LINUX if "-linux-" in name else DARWIN if name.endswith("-darwin.so") else WINDOWS \
            if name.endswith(".pyd") else None
    if path == "device.torch_build.wheel_tags" and isinstance(value, list):
        return _wheel_tags(value)
    if path == "device.torch_build.backend_libraries" and isinstance(value, list):
        return _libraries(value)
    return None


def os_problems(facts: dict[str, Any], system: str) -> list[str]:
    """Why these recorded facts do not all show `system` (empty when every one that speaks to the OS allows
    it): each fact that refutes it is named with its value. `platform.system` itself is each caller's first
    check (named once, there)."""
    problems = []
    for path in OS_FACT_PATHS[1:]:
        allowed = _allowed(path, facts.get(path))
        if allowed is not None and system not in allowed:
            named = "/".join(sorted(allowed)) or "no known system"
            problems.append(f"{path} is {facts.get(path)!r}: a {named} fact, not {system}")
    return problems


def windows_problems(platform: Platform, fs: Filesystem, facts: dict[str, Any] | None = None) -> list[str]:
    """Why these facts do not show a Windows file system (empty when they do). The one rule, for the gate's
    `--require windows` and for the index's proof: every Windows fact agrees -- Windows, whose API named
    the file system, a Windows one, with no Linux mount id beside it, and a recorded Windows version -- and no
    other recorded fact (`facts`, rules.platforms.os_facts of the whole result) speaks for another system."""
    system, fs_type = platform.system, str(fs.type or "")
    if system != "Windows":
        return [f"platform.system is {system!r}, not Windows"]
    under_wine = wine.named(platform.raw)
    wanted = [
        (under_wine is None, f"this ran under {under_wine} (platform.wine), not Windows: Wine implements Windows' API "
                             "on another OS, and its answers (NTFS for its Z: drive) are not Windows'"),
        (fs.method == WINDOWS_FS_METHOD, f"the file system was not named by {WINDOWS_FS_METHOD} "
                                         f"(method {fs.method!r})"),
        (fs_type.casefold() in WINDOWS_FS_TYPES, f"filesystem.type {fs_type!r} is not a Windows file system"),
        (fs.mount_id is None, f"filesystem.mount_id is {fs.mount_id!r}: a Linux mount"),
        (bool(platform.windows_version), "platform.windows_version is not recorded"),
    ]
    facts = facts if facts is not None else os_facts({"platform": platform.raw, "filesystem": fs.raw})
    return [why for held, why in wanted if not held] + os_problems(facts, "Windows")


def derived_nfs_version(fs: Filesystem) -> str | None:
    """The NFS version the mount options name (vers= or nfsvers=), as the gate's probe derives it."""
    options = fs.options
    return options.get("vers") or options.get("nfsvers") or None


def nfs_server_problems(fs: Filesystem) -> list[str]:
    """Why the recorded mount options do not show a mount whose fcntl locks and writes reach the server (empty
    when they do): a hard mount, shown as `hard` and neither soft nor softerr; no `nolock`; one local_lock=, not
    all or posix."""
    keys = fs.option_keys
    locks = [str(option).partition("=")[2] for option in fs.option_list if str(option).startswith("local_lock=")]
    problems = []
    soft = [key for key in NFS_SOFT_OPTIONS if key in keys]
    if soft or "hard" not in keys:
        problems.append(f"filesystem.mount_options show {'/'.join(soft) or 'no hard'}: a pass needs a hard mount "
                        "(the client shows hard unless soft or softerr; a soft mount gives up on the server and "
                        "returns an error, so a write may be lost)")
    if "nolock" in keys:
        problems.append("filesystem.mount_options show nolock: the fcntl locks stay on this client, never the "
                        "server's")
    if locks != ["none"]:
        problems.append(f"filesystem.mount_options show local_lock={'/'.join(locks) or '(none shown)'}: a pass needs "
                        "local_lock=none (the client shows it once for every mount), so fcntl locks reach the server")
    return problems


def nfs_problems(platform: Platform, fs: Filesystem, facts: dict[str, Any] | None = None,
                 options_recorded: bool = True) -> list[str]:
    """Why these facts do not show an NFS mount (empty when they do). The one rule, for the gate's
    `--require nfs` and for the index's proof: Linux by every recorded fact, the work dir's own mount found
    in mountinfo, of type nfs or nfs4, whose options are NFS's own and name the NFS version recorded, of the
    major version its type says (the kernel shows v4 mounts as nfs4, v2/v3 as nfs). `options_recorded` False
    (the index's claims, which keep no options) skips the options: the judge checks them on the result."""
    system = platform.system
    if system != "Linux":
        return [f"platform.system is {system!r}; nfs is proven only through Linux mountinfo"]
    facts = facts if facts is not None else os_facts({"platform": platform.raw, "filesystem": fs.raw})
    contradicted = os_problems(facts, "Linux")
    if contradicted:
        return contradicted
    if not str(fs.method or "").startswith(("linux-mountinfo-mnt-id", "linux-mountinfo-st-dev")):
        return [f"the work dir's mount was not found in mountinfo (method {fs.method!r})"]
    fs_type = fs.type
    if fs_type not in NFS_TYPES:
        return [f"the work dir's own mount is {fs_type or 'unknown'}, not nfs/nfs4"]
    if not fs.nfs_version:
        return ["the mount's NFS version (vers=) is not recorded"]
    derived, options = derived_nfs_version(fs), fs.options
    problems = []
    if not options_recorded:
        pass
    elif derived is None:
        problems.append(f"filesystem.mount_options {fs.mount_options!r} name no vers=: not an NFS "
                        "client's mount as the kernel shows it")
    elif derived != fs.nfs_version:
        problems.append(f"filesystem.nfs_version is {fs.nfs_version!r}, its mount options say vers={derived}")
    missing = [key for key in NFS_SHOWN_OPTIONS if key not in options]
    if missing and options_recorded:
        problems.append(f"filesystem.mount_options lack {', '.join(k + '=' for k in missing)}, which the kernel "
                        "shows for every NFS mount")
    if options_recorded:
        problems += nfs_server_problems(fs)
    major = str(fs.nfs_version).split(".")[0]
    if (fs_type == "nfs4") != (major == "4"):
        problems.append(f"filesystem.type is {fs_type!r} with NFS version {fs.nfs_version!r}: the kernel "
                        "shows a v4 mount as nfs4, a v2/v3 one as nfs")
    return problems


# The types only Windows' own API names (GetVolumeInformationW): Linux shows FAT as vfat/msdos, and its ntfs driver
# (read-only; removed in 6.9) could never pass the write checks. exfat and udf are Linux's types too.
WINDOWS_ONLY_FS_TYPES = ("ntfs", "refs", "fat", "fat32", "csvfs", "cdfs")


def filesystem_problems(wanted: str, fs: Filesystem, platform: Platform | None = None,
                        facts: dict[str, Any] | None = None) -> list[str]:
    """Why the work dir's file system is not `wanted` (--require-filesystem), by its type and, where recorded,
    its mount options: NFS's own options or an NFS version beside a local type contradict that type. An NFS
    type is proven as `--require nfs` proves it (nfs_problems: Linux mountinfo, vers=, proto=, sec=, the
    version agreeing); any other by the method that named it, which must be the platform's own (`platform`,
    `facts`: rules.platforms.os_facts of the result) -- ntfs named by Linux mountinfo is not Windows' NTFS."""
    wanted, fs_type = wanted.lower(), fs.type
    if not (fs_type == wanted or (wanted == "nfs" and fs_type in NFS_TYPES)):
        return [f"the work dir's file system is {fs_type or 'unknown'}, not {wanted}"]
    if fs_type in NFS_TYPES:
        return nfs_problems(platform or Platform(), fs, facts)
    foreign = [key for key in NFS_OPTION_KEYS if key in fs.options
               and fs_type not in mount_options.OPTION_TYPES.get(key, mount_options.NFS)]  # SMB shows vers=, sec=
    problems = [f"filesystem.mount_options name {', '.join(k + '=' for k in foreign)} (NFS's own) on a {fs_type} "
                "mount"] if foreign else []
    if fs.nfs_version is not None:
        problems.append(f"filesystem.nfs_version is {fs.nfs_version!r} on a {fs_type} mount")
    named_by = _allowed("filesystem.method", fs.method)
    if not named_by:
        problems.append(f"filesystem.method is {fs.method!r}: no OS's file-system probe named {fs_type}")
    elif str(fs_type).casefold() in WINDOWS_ONLY_FS_TYPES and named_by != WINDOWS:
        problems.append(f"filesystem.type {fs_type!r} was named by {fs.method!r}: only Windows' "
                        f"{WINDOWS_FS_METHOD} names it")
    elif named_by == WINDOWS and platform is not None and wine.named(platform.raw) is not None:
        problems.append(f"filesystem.type {fs_type!r} was named by {wine.named(platform.raw)}'s {WINDOWS_FS_METHOD}, "
                        "which answers NTFS for its Z: drive whatever Linux file system lies under it")
    system = platform.system if platform is not None else None
    if platform is not None and named_by and system not in named_by:
        problems.append(f"filesystem.method {fs.method!r} is a {'/'.join(sorted(named_by))} probe, "
                        f"platform.system is {system!r}")
    if facts is not None and isinstance(system, str):
        problems += os_problems(facts, system)
    return problems

