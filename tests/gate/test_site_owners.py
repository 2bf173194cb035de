"""A module in a site directory is owned when an installed distribution's metadata lists it; any other
importable top-level entry is named (platform_runtime.site_owners), the way a real install never leaves one."""

from __future__ import annotations

from pathlib import Path

import pytest
from platform_runtime import interpreter_layout
from platform_runtime.site_owners import unowned_modules

from tests.gate import windows_layouts


def test_every_kind_of_importable_entry_no_metadata_lists_is_named(tmp_path):
    (tmp_path / "msvcrt.py").write_text("raise ImportError\n")
    (tmp_path / "opt_einsum").mkdir()  # a namespace package (no __init__) holding a module: `import opt_einsum.x`
    (tmp_path / "opt_einsum" / "contract.py").write_text("")
    (tmp_path / "numpy_shim").mkdir()  # a package
    (tmp_path / "numpy_shim" / "__init__.pyc").write_bytes(b"\0")
    (tmp_path / "_speedups.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (tmp_path / "stale.pyc").write_bytes(b"\0")
    assert unowned_modules([tmp_path]) == ["_speedups", "msvcrt", "numpy_shim", "opt_einsum", "stale"]


def test_a_module_anywhere_a_dotted_import_reaches_inside_a_namespace_folder_is_named(tmp_path):
    """`from triton.language import core` runs triton/language/core.py with no __init__ on the way."""
    (tmp_path / "triton" / "language").mkdir(parents=True)
    (tmp_path / "triton" / "language" / "core.py").write_text("")
    assert unowned_modules([tmp_path]) == ["triton"]


def test_a_folder_holding_no_module_runs_no_code_when_imported_and_is_not_named(tmp_path):
    """Importing a folder with no __init__ runs nothing (a namespace package at most): sympy's share/man data, a
    folder of import libraries or of Tcl scripts, an empty folder, a module file below a name no import reaches."""
    for relative in ("share/man/man1/isympy.1", "libs/python312.lib", "tcl/tcl8.6/init.tcl", "etc/jupyter/x.json",
                     "notes/my-tool/run.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("")
    (tmp_path / "empty").mkdir()
    assert unowned_modules([tmp_path]) == []


def windows_scan(root: Path, base: Path | None = None) -> list[str]:
    """The gate's scan of a Windows installation (or venv, with its base installation) at root, as the interpreter
    there names its folders: site.getsitepackages() on Windows is [sys.prefix, sys.prefix\\Lib\\site-packages]."""
    base = base or root
    own = interpreter_layout.own_dirs(windows_layouts.sysconfig_paths(root, base), os_name="nt",
                                      base_prefix=str(base), base_exec_prefix=str(base), platlibdir="DLLs")
    roots = interpreter_layout.installation_roots("nt", str(root), str(base))
    return unowned_modules([root, root / "Lib" / "site-packages"],
                           lambda site, names: interpreter_layout.layout_entries(site, names, own, roots))


@pytest.mark.parametrize("files", [windows_layouts.installer_files, windows_layouts.setup_python_files],
                         ids=["python.org installer", "setup-python"])
def test_a_windows_installation_as_its_maker_lays_it_out_holds_no_unlisted_module(tmp_path, files):
    root = windows_layouts.lay_out(tmp_path / "Python312", files())
    assert unowned_modules([root, root / "Lib" / "site-packages"]) == ["DLLs", "Lib", "Tools"]  # without the layout
    assert windows_scan(root) == []


def test_a_windows_venv_holds_no_unlisted_module(tmp_path):
    base = windows_layouts.lay_out(tmp_path / "Python312", windows_layouts.installer_files())
    venv = windows_layouts.lay_out(tmp_path / "venv", windows_layouts.venv_files())
    assert windows_scan(venv, base) == []


@pytest.mark.parametrize("dropped, named", [("evil.py", "evil"), ("opt_einsum/__init__.py", "opt_einsum"),
                                            ("Tools/__init__.py", "Tools"), ("msvcrt.pyd", "msvcrt"),
                                            ("Lib/site-packages/sitehook.py", "sitehook")])
def test_a_module_dropped_into_a_windows_installation_is_still_named(tmp_path, dropped, named):
    root = windows_layouts.lay_out(tmp_path / "Python312", [*windows_layouts.installer_files(), dropped])
    assert windows_scan(root) == [named]


def test_what_a_record_installed_files_or_top_level_lists_is_owned(tmp_path):
    (tmp_path / "wheelmod.py").write_text("")
    (tmp_path / "wheelpkg").mkdir()
    wheel = tmp_path / "wheelmod-1.0.dist-info"
    wheel.mkdir()
    (wheel / "RECORD").write_text('wheelmod.py,sha256=x,0\n"wheelpkg/a,b.py",sha256=y,0\n../../bin/tool,,\n')
    (tmp_path / "eggmod.py").write_text("")
    egg = tmp_path / "eggmod-2.0.egg-info"
    egg.mkdir()
    (egg / "installed-files.txt").write_text("../eggmod.py\nPKG-INFO\n")
    (tmp_path / "toplevel_only").mkdir()
    listed = tmp_path / "other-3.0.dist-info"
    listed.mkdir()
    (listed / "top_level.txt").write_text("toplevel_only\n")
    assert unowned_modules([tmp_path]) == []


def test_metadata_caches_data_and_names_python_cannot_import_are_not_modules(tmp_path):
    for folder in ("__pycache__", "x-1.0.dist-info", "x-1.0.data", "~orch", "my-tool"):
        (tmp_path / folder).mkdir()
    for name in ("README.txt", "setuptools.pth", "distutils-precedence.pth", "py.typed"):
        (tmp_path / name).write_text("")
    assert unowned_modules([tmp_path]) == []
