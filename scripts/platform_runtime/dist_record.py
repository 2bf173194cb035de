"""One installed distribution's files against its dist-info RECORD: every file it lists hashed and sized, and
every file in its package folders it does not list. A distribution edited after install (a patched module, a
swapped library, a planted .pyc) is not the one its RECORD names.

A RECORD is written by whoever installs the files, so a forged package can write its own; what this adds is
that the files on disk are exactly the ones it lists, so the gate's other views judge the distribution the
RECORD names. torch_record applies it to torch, dependencies to what torch requires and what the device
worker loaded. Stdlib only.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import sys
import time
from pathlib import Path

from platform_runtime import bytecode

MAX_NAMED = 5


def digest(path: Path) -> tuple[str, int]:
    """urlsafe-base64 SHA-256 without padding (the RECORD encoding, PEP 376/627) and the size read."""
    with open(path, "rb") as handle:
        value = hashlib.file_digest(handle, "sha256")  # C loop, GIL released: hides behind torch's import
        size = handle.tell()
    return base64.urlsafe_b64encode(value.digest()).rstrip(b"=").decode("ascii"), size


def parse_record(text: str) -> list[tuple[str, str | None, int | None]]:
    """(path, sha256 value, size) per RECORD row; the value is None for a row listed without a hash (RECORD
    itself, and the .pyc files an installer compiled after unpacking)."""
    rows: list[tuple[str, str | None, int | None]] = []
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0]:
            continue
        if len(row) < 3 or not row[1]:
            rows.append((row[0], None, None))
            continue
        algorithm, _, value = row[1].partition("=")
        if algorithm != "sha256":
            rows.append((row[0], "", None))  # an algorithm we do not verify is a mismatch, never a pass
            continue
        rows.append((row[0], value, int(row[2]) if row[2].isdigit() else None))
    return rows


def read_record(site_dir: Path | None, dist_info: str | None) -> list[tuple[str, str | None, int | None]] | None:
    """The rows of `site_dir/dist_info/RECORD`, or None when there is none or it cannot be read."""
    if site_dir is None or not dist_info:
        return None
    try:
        return parse_record((site_dir / dist_info / "RECORD").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def own_bytecode_source(relative: str) -> str | None:
    """The source a `__pycache__` file is the interpreter's own bytecode of: `<dir>/__pycache__/<stem>.<this
    interpreter's cache tag>[.opt-N].pyc` -> `<dir>/<stem>.py`; None for any other name."""
    folder, _, name = relative.rpartition("/__pycache__/")
    tag = sys.implementation.cache_tag
    if not folder or not name.endswith(".pyc") or tag is None:
        return None
    stem, dot, rest = name[:-len(".pyc")].partition(f".{tag}")
    return f"{folder}/{stem}.py" if stem and dot and rest in ("", ".opt-1", ".opt-2") else None


def package_folders(rows: list[tuple[str, str | None, int | None]]) -> list[str]:
    """The top-level folders a RECORD installs files into, bar its metadata: the folders searched for files it
    does not list (a top-level module's bytecode lies in the shared __pycache__, checked by dependencies)."""
    tops = {path.replace("\\", "/").split("/", 1)[0] for path, _, _ in rows if "/" in path.replace("\\", "/")}
    return sorted(t for t in tops if t.isidentifier() and t != "__pycache__")


def _unlisted(site_dir: Path, listed: dict[str, str | None], folders: list[str]) -> tuple[list[str], int]:
    """(files in the package folders that RECORD does not name, how many of the rest are bytecode Python wrote).
    An installer that compiles nothing (uv) lists no .pyc, and the first import without -B then writes one
    beside each module: such a file, named for a source RECORD lists with its hash, is counted, not refused.
    Its bytes are not checked here (docs/gate.md#threat-model); anything else unlisted is."""
    found, bytecode = [], 0
    for top in folders:
        for folder, _, files in os.walk(site_dir / top):
            for name in files:
                relative = os.path.relpath(os.path.join(folder, name), site_dir).replace(os.sep, "/")
                if relative in listed:
                    continue
                source = own_bytecode_source(relative)
                if source is not None and listed.get(source):
                    bytecode += 1
                else:
                    found.append(relative)
    return sorted(found), bytecode


def _recompiled(site_dir: Path, mismatched: list[str], listed: dict[str, str | None]) -> set[str]:
    """The mismatched files that are bytecode of a source RECORD lists with its hash, whose code is that source
    compiled (bytecode.py): a wheel that ships a .pyc (numpy's conv_template) which the installer or the first
    import then rewrote (pip wrote 14,212 bytes over the wheel's 14,213, the same code) is not an edit."""
    found = set()
    for path in mismatched:
        source = own_bytecode_source(path)
        if source is not None and listed.get(source):
            cached = f"{path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}"
            if cached not in bytecode.mismatched(site_dir / source):
                found.add(path)
    return found


def installed_by_system(site_dir: Path, paths: list[str]) -> set[str]:
    """The files, among `paths` that differ from their RECORD, whose bytes are exactly what the system's package
    manager recorded when it installed them (dpkg's md5sums): Debian writes a package's RECORD before it strips
    the package's binaries (python3-yaml's `_yaml.cpython-311-x86_64-linux-gnu.so`: RECORD names 1,157,616 bytes,
    dpkg installed and lists the stripped file), so the file is the platform's own as installed, not an edit."""
    from platform_runtime import start_up_owners  # read only when a RECORD disagrees

    owners = start_up_owners.Owners()
    found = set()
    for path in paths:
        resolved = Path(os.path.realpath(site_dir / path))
        owner = owners.dpkg_owner(resolved)
        if owner is None or owner.digest is None:
            continue
        try:
            with open(resolved, "rb") as handle:
                actual = hashlib.file_digest(handle, "md5").hexdigest()
        except (OSError, ValueError):
            continue
        if actual == owner.digest:
            found.add(path)
    return found


def named(count_of: list[str], label: str) -> str:
    shown = ", ".join(count_of[:MAX_NAMED]) + (f" and {len(count_of) - MAX_NAMED} more"
                                               if len(count_of) > MAX_NAMED else "")
    return f"{len(count_of)} file(s) {label}: {shown}"


def verify_distribution(site_dir: Path | None, dist_info: str | None, name: str,
                        folders: list[str] | None = None) -> dict:
    """{"verified", "files", "bytes", "duration_s", "problems", "bytecode_unlisted", "package_manager_verified"} for
    the distribution `name`: verified only when its RECORD exists, lists a file with its hash, every listed file has
    its size and hash (or, where they differ, is byte for byte what dpkg installed: installed_by_system), and
    nothing unlisted lies in `folders` (default: every package folder the RECORD installs into)."""
    started = time.monotonic()
    report: dict = {"verified": False, "files": 0, "bytes": 0, "duration_s": 0.0, "problems": []}
    problems: list[str] = report["problems"]
    rows = read_record(site_dir, dist_info)
    if rows is None:
        problems.append(f"{name} has no readable dist-info RECORD: its files cannot be verified")
    elif not any(expected for path, expected, _ in rows if folders is None or path.split("/", 1)[0] in folders):
        where = f" of the {' or '.join(folders)} package" if folders else ""
        problems.append(f"{name}'s RECORD lists no file{where} with its hash")
    else:
        mismatched, missing = [], []
        for path, expected, size in rows:
            if expected is None:
                continue
            try:
                value, actual_size = digest(site_dir / path)
            except OSError:
                missing.append(path)
                continue
            report["files"] += 1
            report["bytes"] += actual_size
            if value != expected or (size is not None and size != actual_size):
                mismatched.append(path)
        rewritten = _recompiled(site_dir, mismatched, {path: expected for path, expected, _ in rows})
        mismatched = [path for path in mismatched if path not in rewritten]
        by_system = installed_by_system(site_dir, mismatched) if mismatched else set()
        mismatched = [path for path in mismatched if path not in by_system]
        report["package_manager_verified"] = len(by_system)
        unlisted, report["bytecode_unlisted"] = _unlisted(
            site_dir, {**{path: expected for path, expected, _ in rows}, f"{dist_info}/RECORD": None},
            package_folders(rows) if folders is None else folders)
        report["bytecode_unlisted"] += len(rewritten)
        package = " or ".join(folders) if folders else name
        for label, names in ((f"differ from {name}'s RECORD", mismatched),
                             (f"listed in {name}'s RECORD are missing", missing),
                             (f"in the {package} package are not in its RECORD", unlisted)):
            if names:
                problems.append(named(names, label))
    report["verified"] = not problems
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report
