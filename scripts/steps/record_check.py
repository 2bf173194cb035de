"""Installed files read back against their dist-info RECORD: size, then SHA-256, every file, every time.

uv links installed files from its cache, which it does not re-verify: a corrupted or tampered cache entry
would land in the venv unnoticed, so this read-back is what vouches for a venv before its marker is
written. It is most of a kept-cache install's cost (torch: 12,000 files, 700 MB, one of them 434 MB), so
the files are hashed in a few threads, the largest first: hashlib releases the GIL while it hashes a
buffer, and one thread can read or hash while another waits on the disk. No file is skipped, whatever
its link count or age: a cache entry is only as trustworthy as every job that could have written it, and
a recorded "verified" stamp would be a field trusted instead of re-derived.
Stdlib only.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

# Read whole below this size (one read, one hash call); above it, in blocks this large, into one buffer.
WHOLE = 1 << 20
BLOCK = 1 << 22


class Entry(NamedTuple):
    package: str
    path: Path
    name: str  # as RECORD writes it
    size: int | None
    digest: str  # urlsafe base64, unpadded, as RECORD writes it


def entries(site_packages: Path, pip_compiled: bool = False) -> list[Entry]:
    """Every file a RECORD in site_packages vouches for with a sha256, in RECORD order, packages sorted.

    pip_compiled: pip byte-compiles after installing, rewriting the .pyc files a wheel ships (numpy does)
    from the sources it just verified, so those differ from RECORD by design and are not compared.
    """
    found = []
    for record in sorted(site_packages.glob("*.dist-info/RECORD")):
        package = record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0].replace("_", "-").lower()
        for row in csv.reader(record.read_text(encoding="utf-8").splitlines()):
            if len(row) < 3 or not row[1].startswith("sha256=") or (pip_compiled and row[0].endswith(".pyc")):
                continue
            found.append(Entry(package, site_packages / row[0], row[0], int(row[2]) if row[2] else None, row[1][7:]))
    return found


def file_problem(entry: Entry) -> str | None:
    """What is wrong with one installed file (wrong size, unreadable, another SHA-256), or None."""
    try:
        with open(entry.path, "rb", buffering=0) as handle:
            size = os.fstat(handle.fileno()).st_size
            if entry.size is not None and size != entry.size:
                return f"{entry.name} has {size} bytes, RECORD says {entry.size}"
            if size <= WHOLE:
                digest = hashlib.sha256(handle.readall())
            else:
                digest = hashlib.sha256()
                buffer = bytearray(BLOCK)
                view = memoryview(buffer)
                while count := handle.readinto(buffer):
                    digest.update(view[:count])
    except OSError as error:
        return f"{entry.name} cannot be read ({error.strerror})"
    if base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() != entry.digest:
        return f"{entry.name} differs from its RECORD hash"
    return None


def problems(site_packages: Path, pip_compiled: bool = False, workers: int | None = None) -> list[str]:
    """Installed files that differ from their RECORD, the first one of each package (in RECORD order)."""
    todo = entries(site_packages, pip_compiled)
    workers = max(1, min(workers or 4, os.cpu_count() or 1, len(todo)))
    # One batch a thread, balanced by bytes, largest first: the one big library starts at once instead of
    # finishing last on its own, and no future is made per file (12,000 of them cost more than they save).
    batches: list[list[int]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for number in sorted(range(len(todo)), key=lambda n: -(todo[n].size or 0)):
        lightest = loads.index(min(loads))
        batches[lightest].append(number)
        loads[lightest] += (todo[number].size or 0) + 4096  # a file costs an open and a read, however small
    answers: dict[int, str | None] = {}

    def check(batch: list[int]) -> None:
        for number in batch:
            answers[number] = file_problem(todo[number])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(check, batches))  # list(): a worker's exception is raised here, not lost
    first: dict[str, str] = {}
    for number, entry in enumerate(todo):
        if answers[number] and entry.package not in first:
            first[entry.package] = f"{entry.package}: {answers[number]}"
    return list(first.values())
