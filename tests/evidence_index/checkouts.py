"""Checkouts of earlier commits, for results made by earlier sources (the committed CUDA run ran 7f0a071's):
a result is compared with the sources that made it, never with this checkout's."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

CUDA_COMMIT = "7f0a071"  # evidence/cuda/README.md: the sources the committed CUDA run ran
_MADE: dict[str, Path] = {}


def checkout_of(commit: str) -> Path:
    """A git checkout (made once per session) of the commit's scripts and schemas; the test is skipped in a
    clone that lacks the commit (a shallow one)."""
    if commit in _MADE:
        return _MADE[commit]
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                      capture_output=True).returncode:
        pytest.skip(f"this clone lacks commit {commit} (shallow): the sources that made the result are not at hand")
    root = Path(tempfile.mkdtemp(prefix=f"src-{commit}-")) / "checkout"
    # A clone sharing this one's objects, at the commit: its files are the commit's, and its history holds the
    # commit a result names (the judge confirms a result's commit in the source root's history).
    for command in (["clone", "-q", "--shared", "--no-checkout", str(ROOT), str(root)],
                    ["-C", str(root), "checkout", "-q", "--detach", commit]):
        subprocess.run(["git", *command], check=True, capture_output=True)
    _MADE[commit] = root
    return root
