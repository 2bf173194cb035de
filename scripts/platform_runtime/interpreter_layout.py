"""The interpreter's own folders, as the interpreter itself names them: its standard library's, and those of its
installation's layout. A module in them is the interpreter's, not something dropped beside it.

- The standard library: sysconfig's `stdlib` and `platstdlib`, and where getpath (Modules/getpath.py) puts the
  rest: on POSIX `lib-dynload` and `<LIBDIR>/pythonXY.zip`; on Windows the extension modules' folder,
  `<exec_prefix>\\<platlibdir>` (`DLLs`, PLATSTDLIB_LANDMARK; the folder itself where it has no DLLs, gh-98790,
  as in the embeddable build) and `pythonXY.zip` beside the interpreter's DLL (ZIP_LANDMARK). sysconfig names
  neither of those two on Windows, so without them every `DLLs\\*.pyd` read as a shadow of its own module.
- The installation's layout (sysconfig's install paths: the library, site-packages, the headers, the scripts):
  on Windows `site.getsitepackages()` lists `sys.prefix` itself as a site directory, so its `Lib`, `DLLs`,
  `Scripts` and `Include` folders sit among the modules of a site directory (platform_runtime.site_owners).
- The python.org installer's other folders at an installation's root (CPython's Tools/msi: `libs` from dev,
  `tcl` from tcltk, `Tools` from tools, `Doc` from doc, `include`): folders of the layout, not packages.
Stdlib only.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

# The folders the python.org installer lays out at an installation's root besides python.exe (Tools/msi: core,
# exe, lib, dev, tcltk, tools, doc; test and pip write inside Lib and Scripts). Folder names, as the installer writes
# them; Windows compares them without case.
WINDOWS_INSTALLER_FOLDERS = ("DLLs", "Doc", "include", "Lib", "libs", "Scripts", "tcl", "Tools")
INSTALL_PATHS = ("stdlib", "platstdlib", "purelib", "platlib", "include", "platinclude", "scripts")


def stdlib_dirs(paths: dict[str, str] | None = None, *, os_name: str = os.name, base_prefix: str = sys.base_prefix,
                base_exec_prefix: str = sys.base_exec_prefix, platlibdir: str = sys.platlibdir,
                libdir: str | None = None, version: tuple[int, int] = sys.version_info[:2]) -> list[Path]:
    """The standard library's folders and zip on a start-up sys.path, in getpath's terms (see the module)."""
    own = paths is None
    paths = sysconfig.get_paths() if paths is None else paths
    found = [Path(paths["stdlib"]), Path(paths["platstdlib"])]
    zip_name = f"python{version[0]}{version[1]}.zip"
    if os_name == "nt":
        dlls = Path(base_exec_prefix) / platlibdir
        found += [dlls if dlls.is_dir() else Path(base_exec_prefix), Path(base_prefix) / zip_name]
    else:
        found.append(Path(paths["platstdlib"]) / "lib-dynload")
        libdir = sysconfig.get_config_var("LIBDIR") if libdir is None and own else libdir
        if libdir:
            found.append(Path(libdir) / zip_name)
    return list(dict.fromkeys(found))


def own_dirs(paths: dict[str, str] | None = None, **stdlib: object) -> list[Path]:
    """The standard library's folders and the installation's install paths (INSTALL_PATHS)."""
    paths = sysconfig.get_paths() if paths is None else paths
    return list(dict.fromkeys([*stdlib_dirs(paths, **stdlib), *(Path(paths[key]) for key in INSTALL_PATHS
                                                                 if paths.get(key))]))


def installation_roots(os_name: str = os.name, prefix: str = sys.prefix,
                       base_prefix: str = sys.base_prefix) -> list[Path]:
    """The folders whose top level is the python.org installer's layout: the installation's root, and a venv's
    (which `venv` lays out the same way: Lib, Scripts, Include), on Windows only."""
    return list(dict.fromkeys([Path(prefix), Path(base_prefix)])) if os_name == "nt" else []


def _key(path: Path | str) -> str:
    return os.path.normcase(os.path.abspath(str(path)))


def layout_entries(site: Path, names: list[str], own: list[Path], roots: list[Path]) -> set[str]:
    """The entries of site directory `site` that are the interpreter's own layout: one of its own folders or one
    holding one (`Lib` holds `Lib\\site-packages`), or, at an installation's root, a folder the installer lays out."""
    owned_keys = [_key(path) for path in own]
    at_root = _key(site) in {_key(root) for root in roots}
    installer = {os.path.normcase(name) for name in WINDOWS_INSTALLER_FOLDERS}
    found = set()
    for name in names:
        key = _key(site / name)
        if any(owned == key or owned.startswith(key.rstrip(os.sep) + os.sep) for owned in owned_keys):
            found.add(name)
        elif at_root and os.path.normcase(name) in installer and not _is_package(site / name):
            found.add(name)
    return found


def _is_package(folder: Path) -> bool:
    """Whether `import <folder name>` runs a file of it: an __init__ module (the installer writes none there)."""
    try:
        return any(entry.name.split(".", 1)[0] == "__init__" and not entry.is_dir() for entry in os.scandir(folder))
    except OSError:
        return folder.is_dir()  # a folder that cannot be read may hold one
