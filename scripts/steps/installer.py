"""uv where it can, pip where it must: the installer, its kept cache, and the checks after an install.

uv comes from PyPI at the version pinned in requirements/installer.txt, installed with the base Python's
pip into a tool venv beside the cache (`<root>/uv-tool-<version>`), so it runs wherever pip does; where
that fails (no wheel for this platform, pip refused) the caller falls back to pip and says so.
The cache root is `--cache-dir`, else RUNNER_TOOL_CACHE or RUNNER_TEMP on a runner, else the user cache
dir. A manifest in it names the OS, CPU, Python and uv that made it: a cache from anything else is
emptied before use (uv's cache is not meant to cross platforms). uv reads none of pip's configuration,
so pip's find-links and index settings are passed to it (a machine with local wheels keeps using them).
Stdlib only.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALLER_PINS = ROOT / "requirements" / "installer.txt"
INSTALLER_LOCK = ROOT / "requirements" / "lock" / "installer.txt"
MANIFEST = "platform-runtime-cache.json"
# What actions/cache saves and restores under the root: uv's cache and its manifest. Not uv's tool venv:
# a restored cache is only as trustworthy as every job that could save one, and an executable from it
# would run unchecked; uv is reinstalled, hash-checked, on each hosted job (a few seconds).
CACHED_NAMES = ("uv-cache", MANIFEST)
# uv must not download an interpreter or read a project's uv.toml: it installs into the venv it is given.
UV_ENV = {"UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}


def uv_pin() -> str:
    """`uv==X.Y.Z`, the one line of requirements/installer.txt that is not a comment."""
    lines = [line.split("#", 1)[0].strip() for line in INSTALLER_PINS.read_text(encoding="utf-8").splitlines()]
    (pin,) = [line for line in lines if line]
    return pin


def uv_requirement() -> list[str]:
    """pip arguments for uv: hash-checked against requirements/lock/installer.txt when that lock pins the
    same release (every wheel of it), else the bare pin (a test's other release, or a lock not yet made)."""
    if INSTALLER_LOCK.exists():
        lines = [line.strip() for line in INSTALLER_LOCK.read_text(encoding="utf-8").splitlines()]
        if any(line.startswith(uv_pin() + " ") or line == uv_pin() for line in lines):
            return ["--require-hashes", "--no-deps", "-r", str(INSTALLER_LOCK)]
    return [uv_pin()]


def uv_version() -> str:
    return uv_pin().split("==", 1)[1]


def default_root(env: dict | None = None) -> Path:
    """Where the cache lives when --cache-dir is not given: a runner's tool cache (kept on self-hosted
    boxes), its temp folder, else the user's cache dir."""
    env = os.environ if env is None else env
    for variable in ("RUNNER_TOOL_CACHE", "RUNNER_TEMP"):
        if env.get(variable):
            return Path(env[variable]) / "platform-runtime-install"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "platform-runtime" / "install"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "platform-runtime" / "install"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "platform-runtime" / "install"


def facts(python_version: str | None = None) -> dict:
    """What a cache is only good for: this OS, CPU, Python and installer version."""
    return {"os": platform.system(), "machine": platform.machine().lower(),
            "python": python_version or platform.python_version(), "uv": uv_version()}


def cache_key(made_for: dict, pins_digest: str) -> tuple[str, str]:
    """(key, restore prefix) for actions/cache: OS, CPU, Python, uv version, then the pins' SHA-256."""
    prefix = (f"platform-runtime-install-{made_for['os']}-{made_for['machine']}-py{made_for['python']}"
              f"-uv{made_for['uv']}-")
    return prefix + pins_digest[:32], prefix


def prepare_cache(root: Path, made_for: dict) -> tuple[Path, str]:
    """The uv cache folder under root, and its state: `kept` (it has entries), `empty`, or `discarded ...`
    when a manifest says another OS, CPU, Python or uv made it (the folder is emptied, never mixed)."""
    cache = root / "uv-cache"
    manifest = root / MANIFEST
    state = "kept" if cache.is_dir() and any(cache.iterdir()) else "empty"
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8")) if manifest.exists() else None
    except (OSError, ValueError):
        recorded = {"unreadable": True}
    if recorded is not None and recorded != made_for:
        differs = sorted(key for key in set(made_for) | set(recorded) if made_for.get(key) != recorded.get(key))
        # Only what this step owns and actions/cache restores: the root is a folder the user named, and
        # uv's tool venv there is checked on its own (it must run and say the pinned version).
        shutil.rmtree(cache, ignore_errors=True)
        state = f"discarded (made for another {', '.join(differs)})"
    elif recorded is None and state == "kept":
        shutil.rmtree(cache, ignore_errors=True)
        state = "discarded (no manifest says what made it)"
    root.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(made_for, sort_keys=True) + "\n", encoding="utf-8")
    return cache, state


def _tool_uv(tool: Path) -> Path:
    return tool / ("Scripts/uv.exe" if sys.platform == "win32" else "bin/uv")


def ensure_uv(root: Path, base_python: str = sys.executable) -> tuple[Path | None, str]:
    """uv at the pinned version in its tool venv (made once, kept with the cache), or (None, why not)."""
    version = uv_version()
    tool = root / f"uv-tool-{version}"
    uv = _tool_uv(tool)
    if (tool / ".complete").exists() and _runs(uv) == version:
        return uv, f"uv {version} (kept in the tool venv)"
    shutil.rmtree(tool, ignore_errors=True)
    made = subprocess.run([base_python, "-m", "venv", str(tool)], capture_output=True, text=True)
    if made.returncode != 0:
        return None, f"cannot make a tool venv for uv: {_tail(made.stderr)}"
    pip = subprocess.run([str(_venv_python(tool)), "-m", "pip", "install", "--disable-pip-version-check",
                          "--no-input", "-q", *uv_requirement()], capture_output=True, text=True)
    if pip.returncode != 0:
        return None, f"pip could not install {uv_pin()} here: {_tail(pip.stderr)}"
    if _runs(uv) != version:
        return None, f"uv {version} was installed but does not run on this platform"
    (tool / ".complete").write_text(version + "\n", encoding="utf-8")
    return uv, f"uv {version} (installed with pip into the tool venv)"


def _runs(uv: Path) -> str | None:
    try:
        done = subprocess.run([str(uv), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"uv (\S+)", done.stdout)
    return match.group(1) if done.returncode == 0 and match else None


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def pip_sources_for_uv(env: dict | None = None) -> list[str]:
    """pip's own find-links and index settings (environment and pip config files) as uv arguments.

    uv reads none of them; without this, a machine whose pip is set up for local wheels would send uv
    to PyPI (and, for torch on Linux, to the CUDA build). UV_* variables already set win.
    """
    env = os.environ if env is None else env
    config = _pip_config(env)
    args: list[str] = []
    if not env.get("UV_FIND_LINKS"):
        for value in (env.get("PIP_FIND_LINKS") or config.get("find-links", "")).split():
            args += ["--find-links", value]
    if not env.get("UV_DEFAULT_INDEX") and not env.get("UV_INDEX_URL"):
        index = env.get("PIP_INDEX_URL") or config.get("index-url")
        if index:
            args += ["--default-index", index]
    if not env.get("UV_INDEX") and not env.get("UV_EXTRA_INDEX_URL"):
        for value in (env.get("PIP_EXTRA_INDEX_URL") or config.get("extra-index-url", "")).split():
            args += ["--index", value]
    return args


def _pip_config(env: dict) -> dict[str, str]:
    """[global] settings from pip's config files (site, XDG, user), later files winning, as pip reads them."""
    import configparser

    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return {}  # as pip: PIP_CONFIG_FILE=os.devnull loads no config file at all
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf"),
             Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip" / "pip.conf",
             Path.home() / ".pip" / "pip.conf"]
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    values: dict[str, str] = {}
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                values.update({key: " ".join(value.split()) for key, value in parser.items(section)})
    return values


def site_packages(python: Path) -> Path:
    done = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def uv_install(uv: Path, python: Path, cache: Path | None, requirements: Path, index: str,
               sources: list[str], hashed: bool, reinstall: list[str] = ()) -> list[str]:
    """`uv pip install` of one requirements file into the venv: its index first, pip's sources after."""
    command = [str(uv), "pip", "install", "--python", str(python), "--no-progress", "-r", str(requirements)]
    command += ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    command += ["--require-hashes", "--no-deps"] if hashed else []
    command += ["--index-url", index] if index else []
    command += sources
    if any(arg == "--index" for arg in sources):
        command += ["--index-strategy", "unsafe-best-match"]  # as pip: every index, best version wins
    for name in reinstall:
        command += ["--reinstall-package", name]
    return command


def pip_install(python: Path, requirements: Path, index: str, hashed: bool) -> list[str]:
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
               "-r", str(requirements)]
    command += ["--require-hashes", "--no-deps"] if hashed else []
    return command + (["--index-url", index] if index else [])


_HASH_MISMATCH = (re.compile(r"[Hh]ash mismatch for `([^`]+)`"),
                  re.compile(r"^\s+([A-Za-z0-9._-]+==\S+) from ", re.MULTILINE),  # pip's table of bad hashes
                  re.compile(r"[Hh]ashes are required .* `([^`]+)`"))
_NO_SPACE = re.compile(r"No space left on device|os error 28|Errno 28|disk quota", re.IGNORECASE)
_NETWORK = re.compile(r"Failed to fetch|error sending request|Connection refused|client error \(Connect\)|"
                      r"dns error|Could not connect|timed out|NewConnectionError|Max retries exceeded",
                      re.IGNORECASE)


def classify(stderr: str) -> tuple[str, str]:
    """Why an install failed: ('hash', package), ('space', ''), ('network', ''), or ('other', '')."""
    if "hash" in stderr.lower():
        for pattern in _HASH_MISMATCH:
            match = pattern.search(stderr)
            if match:
                return "hash", match.group(1)
    if _NO_SPACE.search(stderr):
        return "space", ""
    if _NETWORK.search(stderr):
        return "network", ""
    return "other", ""
