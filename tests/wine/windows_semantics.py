"""Run by the Windows Python under Wine (tests/wine/test_windows_under_wine.py): the Windows semantics the project's
own code must get right, each measured in this one process (no torch), printed as one JSON object.

    python windows_semantics.py WORK_DIR
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import _winapi  # noqa: E402
import msvcrt  # noqa: E402

from common import (
    files,
    wine_probe,  # noqa: E402
)
from platform_runtime import import_folders, interpreter_layout, jsonl, site_owners, startup  # noqa: E402
from platform_runtime.isolation import interpreter_site_dirs  # noqa: E402


def _error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "errno": getattr(exc, "errno", None),
            "winerror": getattr(exc, "winerror", None)}


def held_exclusively(path: Path, seconds: float) -> None:
    """Open path sharing nothing (as a writer in the middle of its replace, or a virus scanner, may) and close it
    after `seconds`, from a thread."""
    handle = _winapi.CreateFile(str(path), _winapi.GENERIC_READ, 0, 0, _winapi.OPEN_EXISTING, 0, 0)
    threading.Timer(seconds, _winapi.CloseHandle, [handle]).start()


def reader_side(work: Path) -> dict:
    """A read refused by a sharing violation is retried, counted, and returns the bytes once the holder lets go;
    CPython's own open() reports that refusal as EACCES with no Windows error."""
    target = work / "held.json"
    target.write_bytes(b'{"v": 1}')
    held_exclusively(target, 0.5)
    try:
        open(target, "rb").close()
        plain = None
    except OSError as exc:
        plain = _error(exc)
    counter = files.RetryCounter()
    started = time.monotonic()
    try:
        data, error = files.read_bytes_retrying(target, counter), None
    except OSError as exc:
        data, error = None, _error(exc)
    return {"plain_open_error": plain, "read": data.decode() if data else None, "error": error,
            "sharing_retries": counter.sharing_violations, "seconds": round(time.monotonic() - started, 3)}


def writer_side(work: Path, hold_s: float) -> dict:
    """A replace onto a file a reader holds open (CPython's open(): no FILE_SHARE_DELETE) waits until the reader
    lets go, counted, within its budget; the reader holds it longer than the former 40 tries (3.4 s) lasted."""
    target = work / "state.json"
    target.write_bytes(b"old")
    reader = open(target, "rb")
    threading.Timer(hold_s, reader.close).start()
    counter = files.RetryCounter()
    started = time.monotonic()
    try:
        files.atomic_write_bytes(target, b"new", counter=counter)
        error = None
    except OSError as exc:
        error = _error(exc)
    return {"error": error, "content": target.read_bytes().decode(), "sharing_retries": counter.sharing_violations,
            "seconds": round(time.monotonic() - started, 3), "temporaries": len(files.temporaries_of(target))}


def locks(work: Path) -> dict:
    """msvcrt.locking as the JSONL appender takes it: refused while another handle holds it (with the errno the C
    runtime set), granted after; a call on a closed descriptor is an error, not a refusal."""
    target = work / "records.jsonl"
    holder, other = jsonl.LockedAppender(target), jsonl.LockedAppender(target)
    holder.lock()
    os.lseek(other.lock_fd, 0, os.SEEK_SET)
    try:
        msvcrt.locking(other.lock_fd, msvcrt.LK_NBLCK, 1)
        refused_errno = None
    except OSError as exc:
        refused_errno = exc.errno
    refused_while_held = other.try_lock() is False
    holder.unlock()
    granted_after = other.try_lock()
    with open(target, "ab") as handle:  # the data file itself is never locked: a reader never meets a lock
        handle.write(b"x\n")
    holder.close()
    other.close()
    closed = jsonl.LockedAppender(target)
    closed.close()
    try:
        closed.try_lock()
        bad_descriptor = "refused"
    except OSError as exc:
        bad_descriptor = _error(exc)
    return {"refused_errno": refused_errno, "refused_while_held": refused_while_held, "granted_after": granted_after,
            "bad_descriptor": bad_descriptor}


def layout() -> dict:
    """The installation this interpreter runs from, as the injection scan judges it."""
    site_dirs = interpreter_site_dirs()
    own, roots = interpreter_layout.own_dirs(), interpreter_layout.installation_roots()
    found = startup.scan()
    return {"site_dirs": [str(d) for d in site_dirs], "stdlib_dirs": [str(d) for d in interpreter_layout.stdlib_dirs()],
            "unowned": site_owners.unowned_modules(site_dirs, lambda site, names: interpreter_layout.layout_entries(
                site, names, own, roots)),
            "stdlib_shadows": import_folders.stdlib_shadows(), "present": found.present, "findings": found.findings}


def main(argv: list[str]) -> int:
    work = Path(argv[0])
    work.mkdir(parents=True, exist_ok=True)
    started, report = time.monotonic(), {}
    for name, measure in (("wine", wine_probe.probe), ("reader", lambda: reader_side(work)),
                          ("writer", lambda: writer_side(work, 4.0)), ("locks", lambda: locks(work)),
                          ("layout", layout)):
        report[name] = measure()
        report.setdefault("seconds", {})[name] = round(time.monotonic() - started, 2)
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
