#!/usr/bin/env python3
"""Set up the project's virtual environment and run its two jobs.

    python3 dev.py check   # every local check on this machine -> outputs/, one-screen summary
    python3 dev.py test    # lint + the whole test suite (what .ci/run runs)
    python3 dev.py nfs     # the NFS job on a real Linux 6.1 kernel in a qemu VM -> outputs/nfs/ (root, Linux)
    python3 dev.py wine    # Windows' CPython and the pinned runtime under Wine: the gate, the diagnostic, the reprise

Standard library only, so it runs on a machine that has nothing but Python 3.10+.
The venv lives in .venv/ and is reinstalled only when requirements/*.txt change, with uv (pinned in
requirements/installer.txt, installed with pip) and its kept cache in the user cache dir, or pip where uv
cannot run (PLATFORM_RUNTIME_INSTALLER=pip forces pip; PLATFORM_RUNTIME_CACHE_DIR moves the cache).
Set TORCH_INDEX_URL (for example the PyTorch CPU wheel index) to choose where torch comes from.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements" / "dev.txt"
STAMP = VENV / ".requirements.sha256"
SCRIPTS = {"check": "scripts/run_local.py", "test": "tools/run_tests.py", "nfs": "tools/nfsvm/cli.py",
           "wine": "tools/wine/cli.py"}


def venv_python() -> Path:
    if os.name == "nt":
        return VENV / "Scripts" / "python.exe"
    return VENV / "bin" / "python"


def _requirements_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "requirements").glob("*.txt")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(os.environ.get("TORCH_INDEX_URL", "").encode())
    return digest.hexdigest()


def _install_with_uv(python: Path) -> bool:
    """uv (pinned in requirements/installer.txt) with the kept cache in the user cache dir: False where uv
    cannot be installed or fails, and the caller uses pip, as scripts/steps/prepare_python.py does."""
    sys.path.insert(0, str(ROOT / "scripts" / "steps"))
    import installer  # stdlib only, like this file

    root = Path(os.environ["PLATFORM_RUNTIME_CACHE_DIR"]) if os.environ.get("PLATFORM_RUNTIME_CACHE_DIR") \
        else installer.default_root()
    uv, why = installer.ensure_uv(root)
    if uv is None:
        print(f"dev.py: {why}; using pip", flush=True)
        return False
    cache, state = installer.prepare_cache(root, installer.facts())
    sources = installer.pip_sources_for_uv()
    index = os.environ.get("TORCH_INDEX_URL")
    env = {**os.environ, **installer.UV_ENV}
    if not python.exists():
        print("dev.py: creating .venv with uv", flush=True)
        made = subprocess.run([str(uv), "venv", "--clear", "--seed", "--python", sys.executable, *sources, str(VENV)],
                              env=env)
        if made.returncode != 0 and subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)]).returncode:
            return False
    command = installer.uv_install(uv, python, cache, REQUIREMENTS, "", sources + (["--index", index] if index else []),
                                   hashed=False)
    print(f"dev.py: installing requirements/dev.txt into .venv with uv (cache {state}: {cache})", flush=True)
    done = subprocess.run(command, env=env)
    if done.returncode != 0:
        print("dev.py: uv failed; using pip", flush=True)
        return False
    return True


def ensure_venv() -> Path:
    if sys.version_info < (3, 10):  # noqa: UP036 - the message is for users of older Pythons
        sys.exit("dev.py: Python 3.10 or newer is required")
    python = venv_python()
    wanted = _requirements_digest()
    if python.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return python
    STAMP.unlink(missing_ok=True)  # written last: a stopped install is redone, never taken as complete
    if os.environ.get("PLATFORM_RUNTIME_INSTALLER") != "pip" and _install_with_uv(python):
        STAMP.write_text(wanted + "\n")
        return python
    pip = [str(python), "-m", "pip"]
    if not python.exists():
        print("dev.py: creating .venv", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", str(VENV)]).returncode != 0:
            # Debian and Ubuntu ship Python without ensurepip unless python3-venv is installed: make the venv
            # without pip and drive it with this interpreter's own pip (pip 22.3+ has --python).
            if subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(VENV)]).returncode != 0:
                sys.exit("dev.py: cannot create .venv; install your distribution's python3-venv package")
    if subprocess.run([*pip, "--version"], capture_output=True).returncode != 0:
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            sys.exit("dev.py: .venv has no pip and neither has this Python; install python3-venv (or python3-pip)")
        pip = [sys.executable, "-m", "pip", "--python", str(python)]
    print("dev.py: installing requirements/dev.txt into .venv with pip (torch takes a minute)", flush=True)
    command = [*pip, "install", "--disable-pip-version-check", "-q", "-r", str(REQUIREMENTS)]
    index = os.environ.get("TORCH_INDEX_URL")
    if index:
        command += ["--extra-index-url", index]
    subprocess.run(command, check=True)
    STAMP.write_text(wanted + "\n")
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in SCRIPTS:
        print(__doc__.strip())
        return 2
    python = ensure_venv()
    job, rest = argv[0], argv[1:]
    return subprocess.run([str(python), "-B", str(ROOT / SCRIPTS[job]), *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
