"""Attacks on the gate's view of the machine set up from OUTSIDE the project's code (issue 31, the r5 review):
programs and libraries compiled here with the system's cc from tests/gate/fixtures/gate_view/, a copy of the
checkout with a module dropped into scripts/. Nothing here imports the gate.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gate_view"
SYSTEM_LIBS = Path("/lib/x86_64-linux-gnu")


def _cc(*args: str) -> None:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    subprocess.run(["cc", *args], check=True, capture_output=True, timeout=120)


def program(name: str, folder: Path) -> Path:
    """fixtures/gate_view/<name>.c compiled into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    _cc("-O2", "-w", "-o", str(folder / name), str(FIXTURES / f"{name}.c"))
    return folder / name


def ffi_shim_dir(folder: Path) -> Path:
    """An LD_LIBRARY_PATH folder holding r5's libffi.so.8 shim: libffi's version nodes and no symbol of its own,
    a dependency on a copy of the system's libffi (the real code), a constructor that makes the interpreter's
    json.dumps write every file-system probe answer as an NFS 4.2 mount."""
    real = SYSTEM_LIBS / "libffi.so.8"
    if not real.exists():
        pytest.skip("no system libffi.so.8 to wrap")
    folder.mkdir(parents=True, exist_ok=True)
    stub = folder / "stub.c"
    stub.write_text("int stub;\n", encoding="utf-8")
    _cc("-shared", "-fPIC", "-o", str(folder / "libffi_real.so"), "-Wl,-soname,libffi_real.so", str(stub))
    _cc("-shared", "-fPIC", "-o", str(folder / "libffi.so.8"), "-Wl,-soname,libffi.so.8",
        f"-Wl,--version-script={FIXTURES / 'ffi_shim.map'}", str(FIXTURES / "ffi_shim.c"), f"-L{folder}",
        "-Wl,--no-as-needed", "-l:libffi_real.so", "-ldl")
    shutil.copy(real.resolve(), folder / "libffi_real.so")
    return folder


def nfs_mountinfo_for(work: Path, path: Path) -> Path:
    """This machine's mountinfo whose line for the work dir's mount (its device's major:minor) says nfs4 with
    NFS's own options: what r5's supervisor hands the gate for every open of a mountinfo."""
    dev = os.stat(work).st_dev
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    lines = []
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        fields = line.split(" ")
        if fields[2] == wanted:
            separator = fields.index("-")
            fields[separator + 1:] = ["nfs4", "127.0.0.1:/export",
                                      "rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,"
                                      "retrans=2,sec=sys,clientaddr=127.0.0.1,local_lock=none,addr=127.0.0.1"]
        lines.append(" ".join(fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def checkout_copy(root: Path, folder: Path) -> Path:
    """The gate's files (scripts/, schemas/) copied to `folder`, which the gate then runs from."""
    for part in ("scripts", "schemas"):
        shutil.copytree(root / part, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    return folder
