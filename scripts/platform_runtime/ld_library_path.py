"""LD_LIBRARY_PATH read as the dynamic loader reads it, the one parser for the gate's own view and the device
worker's (startup, device_views).

glibc (elf/dl-load.c, fillin_rpath) splits the value on ':' AND ';', takes an empty element as the working
directory, and expands the dynamic string tokens $ORIGIN, $LIB and $PLATFORM (also written ${ORIGIN} ...) in
each element; in every directory it also searches the hardware-capability subfolders (glibc-hwcaps/<level>/,
and before glibc 2.37 tls/, haswell/, x86_64/ ...). A token is never expanded here: what $PLATFORM or $LIB
names is the loader's choice for this CPU, so an element holding one is a vector by itself, named as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SEPARATORS = re.compile(r"[:;]")
# A '$' starts a dynamic string token (glibc's is_dst: a name or {name}); whichever, the gate does not expand it.
TOKEN = re.compile(r"\$(\{[^}]*\}|[A-Za-z_])")
# How deep below a listed directory the loader's hwcaps search goes (glibc-hwcaps/x86-64-v3, tls/haswell/x86_64).
HWCAPS_DEPTH = 3


@dataclass(frozen=True)
class LibraryPath:
    directories: frozenset[Path]  # every element, resolved (an empty one is the working directory)
    tokens: bool  # some element holds a dynamic string token, which the loader expands and the gate does not


def parse(values: list[str], cwd: Path | None = None) -> LibraryPath:
    """The directories the loader searches for each LD_LIBRARY_PATH value (those set and non-empty: glibc
    ignores an empty variable), and whether any element holds a token."""
    base = Path.cwd() if cwd is None else cwd
    directories: set[Path] = set()
    tokens = False
    for value in values:
        if not value:
            continue
        for element in SEPARATORS.split(value):
            if TOKEN.search(element):
                tokens = True
                continue
            directories.add((base / element).resolve() if element else base.resolve())
    return LibraryPath(frozenset(directories), tokens)


def searched_from(folder: Path, directories: set[Path] | frozenset[Path]) -> bool:
    """Whether the loader could have taken a library in `folder` from one of `directories`: the directory
    itself or one of its hwcaps subfolders."""
    for directory in directories:
        if folder == directory:
            return True
        try:
            depth = len(folder.relative_to(directory).parts)
        except ValueError:
            continue
        if depth <= HWCAPS_DEPTH:
            return True
    return False
