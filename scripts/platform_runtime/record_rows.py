"""A dist-info RECORD's rows, read: each file's path, its SHA-256 as RECORD encodes it, and its size. The one
reader, for the distributions the gate verifies (dist_record) and the owners it asks about start-up code
(start_up_owners), which import it and not each other. Stdlib only."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
from pathlib import Path


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
