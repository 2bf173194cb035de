"""Fixtures of the evidence index's tests."""

from __future__ import annotations

import pytest

from tests.conftest import run_gate


@pytest.fixture(scope="session")
def real(tmp_path_factory) -> dict:
    """A real gate result, made now on this CPU by this checkout's gate as a user runs it (once a session: the
    tests that need a result of today's sources, where a committed one was made by older ones)."""
    folder = tmp_path_factory.mktemp("real-gate")
    (folder / "work").mkdir()
    run = run_gate(folder, "--device", "cpu", "--work-dir", str(folder / "work"))
    assert run.returncode == 0 and run.result is not None, run.stderr
    return run.result
