"""The reprise folder keeps its own small copies of the project's file primitives on purpose (it runs copied
alone, without scripts/core); these tests hold each copy to the behaviour of scripts/common/files.py, so the
copies cannot drift: the same SHA-256 for the same bytes, and an atomic writer that leaves the old file
whole and no temporary sibling when fsync or the replace fails. The failures are injected from outside
(os.fsync / os.replace patched), not through any switch of the writers.

The diagnostic needs no copy of either: it hashes nothing and never replaces a file (it creates a new
one with O_EXCL); its failing write is held here to the same rule, nothing half-written left behind.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.reprise.reprise_support import ROOT, _load

files = pytest.importorskip("common.files", reason="scripts/common/files.py is not on this branch yet")
common = _load("reprise_common")
_spec = importlib.util.spec_from_file_location("kernodeck_diagnostic", ROOT / "scripts" / "kernodeck_diagnostic.py")
diagnostic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diagnostic)

OLD = b"old bytes, whole\n" * 100
NEW = os.urandom(3 * (1 << 20) + 17)  # more than one 1 MiB block, not a multiple of it


@pytest.mark.parametrize("size", [0, 1, 1 << 20, 3 * (1 << 20) + 17])
def test_the_reprise_hasher_equals_the_cores(tmp_path: Path, size: int) -> None:
    path = tmp_path / "blob"
    path.write_bytes(os.urandom(size))
    assert common.sha256_file(path) == files.sha256_file(path)


WRITERS = {"core": lambda path, data: files.atomic_write_bytes(path, data),
           "reprise": lambda path, data: common.write_bytes_atomic(path, data)}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_both_writers_replace_the_file_with_the_same_bytes_and_mode(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(OLD)
    WRITERS[writer](path, NEW)
    assert path.read_bytes() == NEW and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    reference = tmp_path / "reference"
    files.atomic_write_bytes(reference, b"x")
    assert (path.stat().st_mode & 0o777) == (reference.stat().st_mode & 0o777)


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("stage", ["fsync", "replace"])
def test_a_failing_write_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path, monkeypatch, writer: str,
                                                                     stage: str) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(OLD)

    def broken(*args, **kwargs):
        raise OSError(5, f"injected {stage} failure")

    monkeypatch.setattr(os, stage, broken)
    with pytest.raises(OSError, match="injected"):
        WRITERS[writer](path, NEW)
    monkeypatch.undo()
    assert path.read_bytes() == OLD, f"the {writer} writer damaged the old file when {stage} failed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"], "a temporary sibling was left behind"


def test_the_diagnostics_new_file_writer_leaves_nothing_half_written(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "diagnostic.json"

    def broken(*args, **kwargs):
        raise OSError(5, "injected fsync failure")

    monkeypatch.setattr(os, "fsync", broken)
    assert diagnostic.write_new_file(str(path), "{}\n") is False
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
