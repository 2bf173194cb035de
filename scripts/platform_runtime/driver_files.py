"""What the GPU driver files a device worker used really are, seen by the gate's parent from outside (r5 findings
F6 and F7: the driver views went by name only, and a regular file named /dev/nvidiactl, a dummy libcuda.so.1
laid over the system's library folder in a mount namespace, a tmpfs over /proc/driver and a tiny ELF named
libtorch_cuda.so made `--require cuda` pass on a machine without a GPU). Recorded here, judged by
core.driver_facts:

- device_nodes: each driver device the worker held open, stat(2) of /proc/<pid>/fd/N (the very file the worker
  holds, whatever its path reads): whether it is a character device, its major and minor. A char device can only
  be opened where a driver registered its major, so a node made with mknod on a machine without the driver fails
  to open (ENXIO), and a regular file or another driver's node (/dev/null's 1:3) shows what it is. A descriptor
  opened with O_PATH is not counted: open(2) then never calls the driver, so a node with major 195 made with
  mknod on a machine without the driver is held that way and stats as the driver's (fdinfo `flags`).
- registered: the kernel's own numbers for the drivers whose major is dynamic (/proc/devices' "nvidia-uvm" and
  "kfd" lines) and WSL's misc device (/proc/misc's "dxg" minor).
- libraries: for each backend library the worker mapped (libtorch_cuda.so, libc10_cuda.so, the driver's
  libcuda.so; libtorch_hip.so on ROCm), from the parent's view of the very file mapped (same inode): its ELF
  header (type, machine, against the worker's interpreter's), its size, whether the worker mapped it executable,
  and which kind of mount holds it (the root file system, a bind mount of the file itself as the NVIDIA container
  toolkit makes, WSL's driver store, or a mount over a folder: a mount namespace's overlay or tmpfs).
- proc_files (nvidia_driver): each /proc/driver/nvidia file read for the list of GPUs, the fstatfs(2) magic of
  the handle read and the mount it is on (fdinfo mnt_id in mountinfo): procfs mounted at /proc, or not.

Only kinds, numbers and /proc's own mount point are recorded, never a path (evidence holds no absolute paths).
Linux only.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path

from platform_runtime import binary_arch, filesystem, procmaps

PROC = Path("/proc")
HEAD = 64  # an ELF header: e_type (u16 at 16) and e_machine (u16 at 18)
# The names of /proc/devices' char lines and /proc/misc's lines the judge compares majors and minors with.
DYNAMIC_MAJORS = ("nvidia-uvm", "kfd")
MISC_NAMES = ("dxg",)
WSL_DRIVER_STORE = "/usr/lib/wsl"  # where WSL mounts the Windows driver's libraries (a mount of its own)


O_PATH = getattr(os, "O_PATH", 0o10000000)  # the Linux flag; fdinfo prints a descriptor's flags in octal


def path_only(pid: int | str, entry: str) -> bool:
    """Whether the process opened this descriptor with O_PATH (a handle to the name: the file is not opened, a
    device's driver is never asked), from /proc/<pid>/fdinfo/N's `flags:` line."""
    match = re.search(r"^flags:\s*([0-7]+)\s*$", _read(PROC / str(pid) / "fdinfo" / entry), re.MULTILINE)
    return match is not None and int(match.group(1), 8) & O_PATH != 0


def device_nodes(pid: int | str, wanted: re.Pattern[str]) -> list[dict] | None:
    """{"name", "char", "major", "minor"} of each driver device (`wanted` matches its name under /dev) the process
    holds open, from stat of /proc/<pid>/fd/N; None when its fd folder cannot be read."""
    folder = PROC / str(pid) / "fd"
    try:
        entries = sorted(os.listdir(folder), key=lambda e: int(e) if e.isdigit() else -1)
    except OSError:
        return None
    found: dict[tuple, dict] = {}
    for entry in entries:
        try:
            target = os.readlink(folder / entry)
            if not target.startswith("/dev/") or not wanted.fullmatch(target[len("/dev/"):]) or path_only(pid, entry):
                continue
            info = os.stat(folder / entry)  # follows the fd's own link: the file the worker holds
        except OSError:
            continue
        node = {"name": target[len("/dev/"):], "char": stat.S_ISCHR(info.st_mode),
                "major": os.major(info.st_rdev), "minor": os.minor(info.st_rdev)}
        found.setdefault(tuple(node.values()), node)
    return sorted(found.values(), key=lambda n: (n["name"], n["major"], n["minor"], n["char"]))


def parse_devices(text: str) -> dict[str, int]:
    """The character devices' majors by name, from /proc/devices ("Character devices:" then "major name")."""
    majors: dict[str, int] = {}
    section = None
    for line in text.splitlines():
        if line.endswith(":"):
            section = line
            continue
        fields = line.split()
        if section == "Character devices:" and len(fields) == 2 and fields[0].isdigit():
            majors.setdefault(fields[1], int(fields[0]))
    return majors


def parse_misc(text: str) -> dict[str, int]:
    """The misc devices' minors by name, from /proc/misc ("minor name" lines; their major is 10)."""
    return {fields[1]: int(fields[0]) for fields in (line.split() for line in text.splitlines())
            if len(fields) == 2 and fields[0].isdigit()}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def registered(proc: Path = PROC) -> dict:
    """{"nvidia-uvm": major, "kfd": major, "dxg_misc_minor": minor}, each None where the kernel lists none."""
    majors, misc = parse_devices(_read(proc / "devices")), parse_misc(_read(proc / "misc"))
    return {**{name: majors.get(name) for name in DYNAMIC_MAJORS},
            **{f"{name}_misc_minor": misc.get(name) for name in MISC_NAMES}}


def executable_paths(maps_text: str) -> set[str]:
    """The files a process mapped with execute permission (the text segment a loaded library always has)."""
    paths = set()
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/"):
            paths.add(fields[5].removesuffix(" (deleted)"))
    return paths


def mount_kind(entry: filesystem.MountEntry | None, path: str) -> str | None:
    """Which kind of mount holds a file: "root" (the root file system), "file" (a bind mount of this very file,
    as the NVIDIA container toolkit mounts the host driver's libraries), "wsl" (WSL's driver store), "folder"
    (any other mount over a folder holding the file: a mount namespace's overlay, tmpfs or bind); None unknown."""
    if entry is None:
        return None
    if entry.point == "/":
        return "root"
    if entry.point == path:
        return "file"
    if entry.point == WSL_DRIVER_STORE or entry.point.startswith(WSL_DRIVER_STORE + "/"):
        return "wsl"
    return "folder"


def mount_root(mount_id: int | None, mountinfo: str) -> str | None:
    """The mount's root within its file system (mountinfo's 4th field: "/" for a whole mount, the folder a bind
    mount shows, such as the NVIDIA container toolkit's bind of /proc/driver/nvidia/gpus/<bus id>)."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[0] == str(mount_id):
            return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[3])
    return None


def file_mount(fd: int) -> filesystem.MountEntry | None:
    """The mount an open handle is on: its fdinfo mnt_id looked up in this process's mountinfo."""
    mount_id = filesystem.read_mount_id(_read(PROC / "self" / "fdinfo" / str(fd)))
    if mount_id is None:
        return None
    return next((e for e in filesystem.parse_mountinfo(_read(PROC / "self" / "mountinfo"))
                 if e.mount_id == mount_id), None)


def library_facts(mapping: procmaps.Mapping | None, executable: set[str], machine: int | None) -> dict:
    """{"mapped", "executable", "same_file", "elf_type", "machine", "expected_machine", "size", "mount",
    "mount_fstype"} of one mapped library (None facts where it was not mapped or could not be read)."""
    facts: dict = {"mapped": mapping is not None, "executable": False, "same_file": False, "elf_type": None,
                   "machine": None, "expected_machine": machine, "size": None, "mount": None, "mount_fstype": None}
    if mapping is None:
        return facts
    facts["executable"] = mapping.path in executable
    try:
        fd = os.open(mapping.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return facts
    try:
        info = os.fstat(fd)
        head = os.pread(fd, HEAD, 0)
        entry = file_mount(fd)
    except OSError:
        return facts
    finally:
        os.close(fd)
    facts.update(same_file=not mapping.deleted and info.st_ino == mapping.inode, size=info.st_size,
                 mount=mount_kind(entry, mapping.path), mount_fstype=entry.fstype if entry else None)
    if head[:4] == b"\x7fELF" and len(head) >= 20 and head[5] in (1, 2):
        order = "<" if head[5] == 1 else ">"
        facts["elf_type"], facts["machine"] = struct.unpack_from(order + "HH", head, 16)
    return facts


def interpreter_machine(pid: int | str) -> int | None:
    """The ELF machine of the process's own executable (its interpreter), from /proc/<pid>/exe's header."""
    header = binary_arch.read(PROC / str(pid) / "exe")
    return header["header"] if header["format"] == "elf" and isinstance(header["header"], int) else None


def libraries(maps_text: str, wanted: dict[str, procmaps.Mapping | None], machine: int | None) -> dict:
    """library_facts of each named library (`wanted`: its mapping, None when the worker mapped none)."""
    executable = executable_paths(maps_text)
    return {name: library_facts(mapping, executable, machine) for name, mapping in sorted(wanted.items())}


def torch_library(mappings: list[procmaps.Mapping], lib_dir: Path | None, name: str) -> procmaps.Mapping | None:
    """The worker's mapping of torch/lib/<name> of the torch the gate verified (the same path once resolved)."""
    if lib_dir is None:
        return None
    try:
        wanted = (lib_dir / name).resolve()
    except OSError:
        return None
    for mapping in sorted(mappings, key=lambda m: m.path):
        try:
            if Path(mapping.path).name == name and Path(mapping.path).resolve() == wanted:
                return mapping
        except OSError:
            continue
    return None


def program_facts(path: str | None) -> dict:
    """{"found", "elf", "mount"} of the driver's program the gate ran (nvidia-smi): whether it is an ELF file and
    which kind of mount holds it (a script laid over /usr/bin in a mount namespace printed any UUID asked)."""
    if path is None:
        return {"found": False, "elf": None, "mount": None}
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {"found": False, "elf": None, "mount": None}
    try:
        head, entry = os.pread(fd, 4, 0), file_mount(fd)
    except OSError:
        head, entry = b"", None
    finally:
        os.close(fd)
    return {"found": True, "elf": head == b"\x7fELF", "mount": mount_kind(entry, path)}
