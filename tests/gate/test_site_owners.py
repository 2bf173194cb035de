"""A module in a site directory is owned when an installed distribution's metadata lists it; any other
importable top-level entry is named (platform_runtime.site_owners), the way a real install never leaves one."""

from __future__ import annotations

from platform_runtime.site_owners import unowned_modules


def test_every_kind_of_importable_entry_no_metadata_lists_is_named(tmp_path):
    (tmp_path / "msvcrt.py").write_text("raise ImportError\n")
    (tmp_path / "opt_einsum").mkdir()  # a package folder (or a namespace package: no __init__ needed)
    (tmp_path / "_speedups.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (tmp_path / "stale.pyc").write_bytes(b"\0")
    assert unowned_modules([tmp_path]) == ["_speedups", "msvcrt", "opt_einsum", "stale"]


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
