"""Which files a process really mapped, from /proc/<pid>/maps (proc(5)): the loader's own record, which code
inside a child cannot rewrite for the parent reading it from outside. Linux only; None elsewhere."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from platform_runtime import ld_library_path


@dataclass(frozen=True)
class Mapping:
    path: str  # absolute, as the kernel names it
    device: str  # "major:minor" (hex, as in maps)
    inode: int
    deleted: bool = False


def parse_maps(text: str) -> list[Mapping]:
    """'address perms offset dev inode pathname' per line; only file-backed lines (an absolute pathname),
    one entry per file. A pathname may hold spaces; a replaced or removed file ends in ' (deleted)'."""
    found: dict[str, Mapping] = {}
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/") or not fields[4].isdigit() or fields[4] == "0":
            continue
        path, deleted = fields[5], fields[5].endswith(" (deleted)")
        if deleted:
            path = path[: -len(" (deleted)")]
        found.setdefault(path, Mapping(path, fields[3], int(fields[4]), deleted))
    return list(found.values())


def read_maps(pid: int | str) -> str | None:
    """The maps of a process (\"self\" for this one); None when there is no /proc or the process is gone."""
    try:
        return Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def mapped_from(mappings: list[Mapping], directories: set[Path], trusted: set[Path] | None = None) -> list[str]:
    """File names of the mapped files whose folder (symlinks resolved) the loader searched from one of
    `directories` (the folder itself or a hwcaps subfolder of it), unless that folder is a `trusted` one."""
    names = set()
    for mapping in mappings:
        try:
            folder = Path(mapping.path).parent.resolve()
        except OSError:
            continue
        if folder not in (trusted or set()) and ld_library_path.searched_from(folder, directories):
            names.add(Path(mapping.path).name)
    return sorted(names)


def is_mapped(mappings: list[Mapping], file: Path) -> bool:
    """Whether this very file (same path once resolved, same inode, not since replaced) is mapped."""
    try:
        wanted, inode = file.resolve(), os.stat(file).st_ino
    except OSError:
        return False
    for mapping in mappings:
        if mapping.deleted or mapping.inode != inode:
            continue
        try:
            if Path(mapping.path).resolve() == wanted:
                return True
        except OSError:
            continue
    return False
