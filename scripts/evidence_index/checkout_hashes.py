"""SHA-256 of source files at a checkout, to compare with what each result says it ran."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from common.files import sha256_file

from .common import is_safe_relative

# The CLI and the gate modules it reuses (the package's own modules are added by indexer_files).
INDEXER_FILES = ("scripts/build_evidence_index.py", "scripts/common/files.py",
                 "scripts/platform_runtime/sources.py")
CORE_FILES = ("scripts/common/__init__.py", "scripts/rules/__init__.py", "scripts/rules/registry.py",
              "scripts/rules/kinds.py", "scripts/common/provenance.py", "scripts/rules/trust.py")
# What an indexer hashed before the rules became one package: the committed indexes name these.
EARLIER_INDEXER_FILES = ("scripts/build_evidence_index.py", "scripts/core/files.py",
                         "scripts/platform_runtime/sources.py", "scripts/core/__init__.py", "scripts/core/contract.py",
                         "scripts/core/provenance.py", "scripts/core/trust.py")


def hash_sources(root: Path, paths: Iterable[str], resolved: dict[str, str] | None = None) -> dict[str, str | None]:
    """{path: sha256}, None for a file that is absent or a path that is not a plain relative path.

    A path that is not a file at the root but names a tracked file by its tail (a result that lists
    `train.py` for `scripts/reprise/train.py`) is hashed from that file; where the tail names several
    (`strict_json.py`: common's, and reprise's byte-for-byte copy), only when they are the same bytes, since
    then whichever ran, those bytes ran. `resolved`, when given, receives {claimed: repo path(s)} for each
    such case so the index says what was compared.
    """
    resolved_root = root.resolve()
    tracked: list[str] | None = None
    hashes: dict[str, str | None] = {}
    for name in sorted(set(paths)):
        if not is_safe_relative(name):
            hashes[name] = None
            continue
        actual = name
        if not (root / name).is_file():
            if tracked is None:
                tracked = _tracked_files(root)
            candidates = [t for t in tracked if t.endswith("/" + name)]
            if not candidates or len({_digest_or_none(root / c, resolved_root) for c in candidates}) != 1:
                hashes[name] = None
                continue
            actual = candidates[0]
            if resolved is not None:
                resolved[name] = ", ".join(candidates)
        path = root / actual
        try:
            if not path.resolve().is_relative_to(resolved_root) or not path.is_file():
                hashes[name] = None
                continue
            hashes[name] = sha256_file(path)
        except OSError:
            hashes[name] = None
    return hashes


def _digest_or_none(path: Path, root: Path) -> str | None:
    try:
        return sha256_file(path) if path.resolve().is_relative_to(root) and path.is_file() else None
    except OSError:
        return None


def _tracked_files(root: Path) -> list[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [p for p in done.stdout.decode("utf-8", "replace").split("\0") if p] if done.returncode == 0 else []


def indexer_files(root: Path) -> dict[str, str | None]:
    """The indexer's own code, so an index says which bytes built it."""
    package = root / "scripts" / "evidence_index"
    names = list(INDEXER_FILES) + list(CORE_FILES)
    if package.is_dir():
        names += [f"scripts/evidence_index/{p.name}" for p in package.glob("*.py")]
    return hash_sources(root, names)


def digest_of_files(files: dict[str, Any] | None) -> str | None:
    """One short digest for a {path: sha256} map, for summaries and cross-platform comparison."""
    if not files:
        return None
    canonical = "".join(f"{path}\0{files[path]}\n" for path in sorted(files))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def files_digest_problems(source_root: Any) -> list[str]:
    """An index's `source_root.files_sha256` is digest_of_files over its own `source_root.files` (the builder
    writes it so): one edited without the other is not what the builder wrote."""
    if not isinstance(source_root, dict) or "files_sha256" not in source_root:
        return []  # an index that records no sources at all is judged by what it lacks elsewhere
    files = source_root.get("files")
    actual = digest_of_files(files) if isinstance(files, dict) else None
    if source_root["files_sha256"] == actual:
        return []
    return [f"predicate.source_root.files_sha256 is {source_root['files_sha256']!r}, the digest of its "
            f"source_root.files is {actual!r}"]
