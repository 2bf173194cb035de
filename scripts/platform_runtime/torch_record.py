"""Every file torch's dist-info RECORD lists, hashed and sized against it, and every file in the torch
package that RECORD does not list: a torch edited after install (a patched __init__.py, a swapped library,
a .pyc forged with its source's mtime and size) is not the build it names.

A RECORD is written by whoever installs the files, so a fake torch can write its own; what this adds is that
the files on disk are exactly the ones it lists, so the other views (the backend libraries the device worker
really mapped, the kernel driver's list of GPUs) judge the build the RECORD names. It runs in a thread of the
gate's parent while the device worker imports torch (hashlib releases the GIL), so its cost hides there;
benchmarks/bench_gate.py measures it alone.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

MAX_NAMED = 5


def _digest(path: Path) -> tuple[str, int]:
    """urlsafe-base64 SHA-256 without padding (the RECORD encoding, PEP 376/627) and the size read."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")  # C loop, GIL released: hides behind torch's import
        size = handle.tell()
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii"), size


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


def own_bytecode_source(relative: str) -> str | None:
    """The source a `__pycache__` file is the interpreter's own bytecode of: `<dir>/__pycache__/<stem>.<this
    interpreter's cache tag>[.opt-N].pyc` -> `<dir>/<stem>.py`; None for any other name."""
    folder, _, name = relative.rpartition("/__pycache__/")
    tag = sys.implementation.cache_tag
    if not folder or not name.endswith(".pyc") or tag is None:
        return None
    stem, dot, rest = name[:-len(".pyc")].partition(f".{tag}")
    return f"{folder}/{stem}.py" if stem and dot and rest in ("", ".opt-1", ".opt-2") else None


def _unlisted(site_dir: Path, listed: dict[str, str | None]) -> tuple[list[str], int]:
    """(files in site_dir/torch that RECORD does not name, how many of the rest are bytecode Python wrote).
    An installer that compiles nothing (uv) lists no .pyc, and the first import without -B then writes one
    beside each module: such a file, named for a source RECORD lists with its hash, is counted, not refused.
    Its bytes are not checked (docs/gate.md#threat-model); anything else unlisted is."""
    found, bytecode = [], 0
    for folder, _, files in os.walk(site_dir / "torch"):
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


def verify(site_dir: Path | None, dist_info: str | None) -> dict:
    """{"verified", "files", "bytes", "duration_s", "problems"}: verified only when RECORD exists, lists the
    torch package, and every listed file has its size and hash, and nothing unlisted lies in torch/."""
    started = time.monotonic()
    report: dict = {"verified": False, "files": 0, "bytes": 0, "duration_s": 0.0, "problems": []}
    problems: list[str] = report["problems"]
    record = site_dir / dist_info / "RECORD" if site_dir is not None and dist_info else None
    try:
        rows = parse_record(record.read_text(encoding="utf-8")) if record is not None else None
    except (OSError, UnicodeDecodeError, csv.Error):
        rows = None
    if rows is None:
        problems.append("torch has no readable dist-info RECORD: its files cannot be verified")
    elif not any(path.startswith("torch/") and expected for path, expected, _ in rows):
        problems.append("torch's RECORD lists no file of the torch package with its hash")
    else:
        mismatched, missing = [], []
        for path, expected, size in rows:
            if expected is None:
                continue
            try:
                digest, actual_size = _digest(site_dir / path)
            except OSError:
                missing.append(path)
                continue
            report["files"] += 1
            report["bytes"] += actual_size
            if digest != expected or (size is not None and size != actual_size):
                mismatched.append(path)
        unlisted, report["bytecode_unlisted"] = _unlisted(
            site_dir, {**{path: expected for path, expected, _ in rows}, f"{dist_info}/RECORD": None})
        for label, names in (("differ from torch's RECORD", mismatched), ("listed in torch's RECORD are missing",
                             missing), ("in the torch package are not in its RECORD", unlisted)):
            if names:
                shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more"
                                                        if len(names) > MAX_NAMED else "")
                problems.append(f"{len(names)} file(s) {label}: {shown}")
    report["verified"] = not problems
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report


def main(argv: list[str]) -> int:
    """`platform_runtime_worker.py torch_record SITE_DIR DIST_INFO`: the check in a process of its own, at the
    file-system workers' low scheduling weight, so hashing 700 MB yields the CPU to the device worker."""
    site_dir, dist_info = (argv + ["", ""])[:2]
    sys.stdout.write(json.dumps(verify(Path(site_dir) if site_dir else None, dist_info or None), sort_keys=True))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
