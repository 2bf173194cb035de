"""The committed locks against real wheel files: every wheel that pip's configured local sources hold (its
find-links folders and file:// indexes) at a locked version must have its SHA-256 in that lock.

This verifies what this machine can: the pure-Python wheels every platform installs, pyyaml's manylinux
wheel and the Linux CPU torch for Python 3.11. Windows and macOS platform wheels, and the cp312 CPU torch,
are not in any local source here; their hashes are what the index declared when the lock was made
(docs/install.md says which), and this test does not claim them.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import installer  # noqa: E402
import runtime_lock  # noqa: E402

LOCKS = ("linux-cpu", "windows", "macos-arm64")


def local_wheels(name: str) -> list[Path]:
    """Wheel files of `name` in pip's find-links folders and file:// indexes (as uv is given them)."""
    args = installer.pip_sources_for_uv()
    found = []
    for option, value in zip(args, args[1:]):
        if option == "--find-links" and Path(value).is_dir():
            found += Path(value).glob("*.whl")
        elif option in ("--index", "--default-index") and value.startswith("file:"):
            page = Path(unquote(urlparse(value).path)) / name / "index.html"
            if page.exists():
                for href in re.findall(r'href="([^"#]+)', page.read_text(encoding="utf-8")):
                    found.append(Path(unquote(urlparse(urljoin(page.as_uri(), href)).path)))
    return [wheel for wheel in found if wheel.suffix == ".whl" and wheel.exists()
            and runtime_lock.normalize(wheel.name.split("-")[0]) == name]


def checked(lock: runtime_lock.Lock) -> tuple[list[str], list[str]]:
    """(local wheels whose SHA-256 the lock has, local wheels of a locked version whose SHA-256 it lacks)."""
    good, bad = [], []
    for name, version in lock.entries.items():
        for wheel in local_wheels(name):
            if wheel.name.split("-")[1] != version:
                continue
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            (good if digest in lock.hashes[name] else bad).append(wheel.name)
    return good, bad


@pytest.mark.parametrize("name", LOCKS)
def test_every_local_wheel_of_a_locked_version_has_its_sha256_in_the_lock(name):
    good, bad = checked(runtime_lock.read_lock(runtime_lock.LOCK_DIR / f"{name}.txt"))
    assert bad == [], f"{name}.txt lacks the SHA-256 of {bad}"
    if not good:
        pytest.skip("no local wheel of a locked version here (pip has no local find-links or file:// index)")
    if name == "linux-cpu" and any(w.name.startswith("torch-2.13.0+cpu-cp311") for w in local_wheels("torch")):
        assert any(w.startswith("torch-2.13.0+cpu-cp311") for w in good)


def test_a_local_wheel_whose_bytes_are_not_in_the_lock_is_named(tmp_path, monkeypatch):
    """The check above can fail: a find-links wheel of a locked version with other bytes."""
    lock = runtime_lock.read_lock(runtime_lock.LOCK_DIR / "linux-cpu.txt")
    wheel = tmp_path / f"attrs-{lock.entries['attrs']}-py3-none-any.whl"
    wheel.write_bytes(b"not the published wheel")
    monkeypatch.setattr(installer, "pip_sources_for_uv", lambda env=None: ["--find-links", str(tmp_path)])
    assert checked(lock) == ([], [wheel.name])
