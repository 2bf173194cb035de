"""Unpack an artifact zip into a fresh folder, refusing anything that could escape it or exhaust the disk.

Every entry is checked before a single byte is written: relative POSIX names only (no '..', no
absolute path, no drive letter, no backslash), no symbolic links or other special files (the Unix
mode in external_attr), no encrypted entries, no duplicate names (case-insensitively: they would
overwrite each other on Windows and macOS), a capped entry count and declared total size. While
writing, the real decompressed bytes are counted too, since headers can lie. Files are created with
O_EXCL|O_NOFOLLOW so no existing file or link is ever followed or replaced. On refusal or error the
folder we created is removed, so nothing half-unpacked is left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from .common import CHUNK, is_safe_relative


class UnsafeArchive(Exception):
    """The zip was refused; nothing of it was written."""


@dataclass(frozen=True)
class Caps:
    max_entries: int = 1000
    max_total_bytes: int = 2 * 1024**3
    max_entry_bytes: int = 1024**3


@dataclass(frozen=True)
class Entry:
    name: str
    sha256: str
    size: int
    data: bytes | None = None


def check_entries(archive: zipfile.ZipFile, caps: Caps) -> list[zipfile.ZipInfo]:
    """The regular-file entries to write, or UnsafeArchive naming the first problem."""
    infos = archive.infolist()
    if len(infos) > caps.max_entries:
        raise UnsafeArchive(f"{len(infos)} entries, more than the cap of {caps.max_entries}")
    seen: set[str] = set()
    files: list[zipfile.ZipInfo] = []
    total = 0
    for info in infos:
        name = info.filename
        is_dir = name.endswith("/")
        bare = name[:-1] if is_dir else name
        if not is_safe_relative(bare):
            raise UnsafeArchive(f"entry {name!r} is not a plain relative path inside the folder")
        mode = info.external_attr >> 16
        if mode and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "a special file"
            raise UnsafeArchive(f"entry {name!r} is {kind}")
        if info.flag_bits & 0x1:
            raise UnsafeArchive(f"entry {name!r} is encrypted")
        key = bare.casefold()
        if key in seen:
            raise UnsafeArchive(f"entry {name!r} appears twice")
        seen.add(key)
        if is_dir or stat.S_ISDIR(mode):
            continue
        if info.file_size > caps.max_entry_bytes:
            raise UnsafeArchive(f"entry {name!r} declares {info.file_size} bytes, over the cap")
        total += info.file_size
        if total > caps.max_total_bytes:
            raise UnsafeArchive(f"entries declare more than {caps.max_total_bytes} bytes in total")
        files.append(info)
    # A file and a folder of the same name (a, a/b) cannot both exist: refuse rather than guess.
    file_names = {info.filename.casefold() for info in files}
    for info in files:
        parents = info.filename.split("/")[:-1]
        for depth in range(1, len(parents) + 1):
            if "/".join(parents[:depth]).casefold() in file_names:
                raise UnsafeArchive(f"entry {info.filename!r} lies under a file entry")
    return files


def safe_extract(zip_path: Path, target: Path | None, caps: Caps = Caps(),
                 keep: Callable[[str], bool] = lambda name: False, keep_max: int = 32 * 1024**2) -> list[Entry]:
    """Unpack zip_path into target (which must not exist yet); return each file's name, SHA-256 and size.

    target None: check and hash every entry without writing anything (nothing is kept, so why write).
    keep(name): also return that entry's bytes (the result JSON documents), up to keep_max bytes.
    """
    if target is not None and (target.exists() or target.is_symlink()):
        raise UnsafeArchive(f"target folder {target.name!r} already exists")
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as error:
        raise UnsafeArchive(f"not a readable zip ({type(error).__name__})") from error
    with archive:
        files = check_entries(archive, caps)
        if target is None:
            return [_copy(archive, info, None, caps, keep(info.filename) and info.file_size <= keep_max)
                    for info in files]
        target.mkdir(parents=True)
        root = target.resolve()
        try:
            return [_copy(archive, info, root, caps, keep(info.filename) and info.file_size <= keep_max)
                    for info in files]
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise


def _open_destination(root: Path, info: zipfile.ZipInfo) -> BinaryIO:
    destination = root.joinpath(*info.filename.split("/"))
    parent = destination.parent
    parent.mkdir(parents=True, exist_ok=True)
    if not parent.resolve().is_relative_to(root):
        raise UnsafeArchive(f"entry {info.filename!r} would land outside the folder")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(destination, flags, 0o644), "wb")


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, root: Path | None, caps: Caps, keep: bool) -> Entry:
    digest = hashlib.sha256()
    size = 0
    kept = bytearray() if keep else None
    try:
        with archive.open(info) as source, (_open_destination(root, info) if root else nullcontext()) as sink:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > caps.max_entry_bytes or size > info.file_size:
                    raise UnsafeArchive(f"entry {info.filename!r} unpacks to more than it declares")
                digest.update(chunk)
                if sink is not None:
                    sink.write(chunk)
                if kept is not None:
                    kept += chunk
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        # No str(error): an OSError's text carries the absolute path of the folder.
        detail = getattr(error, "strerror", None) or type(error).__name__
        raise UnsafeArchive(f"entry {info.filename!r} could not be unpacked: {detail}") from error
    return Entry(info.filename, digest.hexdigest(), size, bytes(kept) if kept is not None else None)


@contextlib.contextmanager
def _zip_stream(zip_path: Path, entry: str) -> Iterator[IO[bytes]]:
    with zipfile.ZipFile(zip_path) as archive, archive.open(entry) as source:
        yield source


def zip_entry(root: Path, relative: str) -> Any:
    """The entry `rest` of `root/<artifact>.zip` for a subject `<artifact>/<rest>`, or None when absent."""
    if "/" not in relative:
        return None
    artifact, entry = relative.split("/", 1)
    zip_path = root / f"{artifact}.zip"
    if not zip_path.is_file() or zip_path.is_symlink():
        return None
    with zipfile.ZipFile(zip_path) as archive:
        if entry not in archive.namelist():
            return None
    return _zip_stream(zip_path, entry)
