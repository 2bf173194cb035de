"""The hash-checked locks of the runtime pins: which one applies here, what it pins, whether it matches.

One lock per platform the actions install on, in requirements/lock/ (made by tools/lock_runtime.py, see
docs/install.md): `linux-cpu` (torch from PyTorch's CPU index), `windows`, `macos-arm64`. Each is
`uv pip compile --generate-hashes` output: every package of the closure, `name==version` and its
`--hash=sha256:` lines. Installs pass it with --require-hashes --no-deps, so a file whose digest is not
in the lock, or a package the lock does not name, stops the install with that package named.
Stdlib only.
"""

from __future__ import annotations

import hashlib
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

LOCK_DIR = Path(__file__).resolve().parents[2] / "requirements" / "lock"
# The locks are compiled for this Python and apply from it on (numpy 2.4 needs 3.11; older Pythons get
# other pins, which no lock covers).
LOCK_PYTHON = (3, 11)
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)\s*(?:;.*)?\\?\s*$")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass
class Lock:
    path: Path
    sha256: str
    entries: dict[str, str] = field(default_factory=dict)  # normalized name -> version
    hashes: dict[str, list[str]] = field(default_factory=dict)
    blocks: dict[str, str] = field(default_factory=dict)  # name -> its lines, as written

    def requirement_text(self, names: list[str]) -> str:
        """The lock's own lines for these packages: a requirements file pip and uv both verify."""
        return "".join(self.blocks[name] for name in names)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_platform(device: str, system: str = sys.platform, machine: str | None = None,
                  python: tuple[int, int] = sys.version_info[:2]) -> str | None:
    """The lock that covers this install, or None where the actions ship none (CUDA, ROCm, other CPUs)."""
    if python < LOCK_PYTHON:
        return None
    machine = (machine or platform.machine()).lower()
    if system.startswith("linux"):
        return "linux-cpu" if device == "cpu" and machine in ("x86_64", "amd64") else None
    if system == "win32":
        return "windows" if machine in ("amd64", "x86_64") else None
    if system == "darwin":
        return "macos-arm64" if machine == "arm64" else None
    return None


def read_lock(path: Path) -> Lock:
    """Parse a lock; a package without a hash is refused (ValueError), so no entry goes unchecked."""
    data = path.read_bytes()
    lock = Lock(path=path, sha256=hashlib.sha256(data).hexdigest())
    current = None
    for line in data.decode("utf-8").splitlines(keepends=True):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ENTRY.match(stripped)
        if match and not line[:1].isspace():
            current = normalize(match.group(1))
            lock.entries[current] = match.group(2)
            lock.hashes[current] = []
            lock.blocks[current] = line if line.endswith("\n") else line + "\n"
        elif current and line[:1].isspace():
            lock.hashes[current] += _HASH.findall(line)
            if stripped.startswith("--hash="):
                lock.blocks[current] += line if line.endswith("\n") else line + "\n"
        else:
            raise ValueError(f"{path.name}: cannot read line {stripped!r}")
    for name, digests in lock.hashes.items():
        if not digests:
            raise ValueError(f"{path.name}: {name} has no --hash=sha256 line")
    if not lock.entries:
        raise ValueError(f"{path.name}: no packages")
    return lock


def version_matches(pinned: str | None, locked: str) -> bool:
    """An exact pin matches the lock's version; a pin without a local label ignores the lock's (+cpu)."""
    if pinned is None:
        return True
    return locked == pinned if "+" in pinned else locked.split("+", 1)[0] == pinned


def mismatches(lock: Lock, pins: list[tuple[str, str | None]]) -> list[str]:
    """Where the pins (name, version) and the lock disagree: each names the package and both versions."""
    problems = []
    for name, version in pins:
        locked = lock.entries.get(normalize(name))
        if locked is None:
            problems.append(f"{name}=={version} is pinned but {lock.path.name} has no {name}")
        elif not version_matches(version, locked):
            problems.append(f"{name}=={version} is pinned but {lock.path.name} has {name}=={locked}")
    return problems
