"""dev.py builds .venv/ with uv and the kept cache, as prepare_python does, in a scratch copy of the files
it needs (never the shared .venv): offline, from a find-links folder of a wheel this test builds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.steps.test_install import build_wheel, tool_root  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]


def scratch_copy(target: Path) -> Path:
    for name in ("dev.py", "scripts/steps/installer.py", "requirements/installer.txt",
                 "requirements/lock/installer.txt"):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, target / name)
    (target / "requirements" / "dev.txt").write_text("kpr-alpha==1.0\n")
    return target


def run_dev(copy: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import dev; print(dev.ensure_venv())"], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)


def test_dev_py_installs_with_uv_into_its_own_venv_and_reuses_the_kept_cache(tmp_path, tool_root):  # noqa: F811
    copy = scratch_copy(tmp_path / "repo")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "kpr-alpha", "1.0")
    cache = tmp_path / "cache"
    cache.mkdir()
    tool = next(tool_root.glob("uv-tool-*"))
    (cache / tool.name).symlink_to(tool)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    env.update({"PIP_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1", "PIP_NO_INDEX": "1",
                "PIP_CONFIG_FILE": os.devnull, "PLATFORM_RUNTIME_CACHE_DIR": str(cache)})
    first = run_dev(copy, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "into .venv with uv (cache empty" in first.stdout, first.stdout
    python = copy / ".venv" / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import kpr_alpha; print(kpr_alpha.VALUE)"], capture_output=True,
                           text=True)
    assert check.stdout.strip() == "1" and (copy / ".venv" / ".requirements.sha256").exists()
    shutil.rmtree(copy / ".venv")
    second = run_dev(copy, env)
    assert second.returncode == 0 and "into .venv with uv (cache kept" in second.stdout, second.stdout


def test_dev_py_takes_pip_when_told_to(tmp_path, tool_root):  # noqa: F811
    copy = scratch_copy(tmp_path / "repo")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "kpr-alpha", "1.0")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    env.update({"PIP_FIND_LINKS": str(wheels), "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull,
                "PLATFORM_RUNTIME_INSTALLER": "pip", "PLATFORM_RUNTIME_CACHE_DIR": str(tmp_path / "cache")})
    done = run_dev(copy, env)
    assert done.returncode == 0 and "with pip" in done.stdout and "with uv" not in done.stdout, done.stdout
