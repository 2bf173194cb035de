"""Fixtures of the gate's tests that several files share."""

from __future__ import annotations

import pytest

from tests.gate import real_environments


@pytest.fixture(scope="session")
def environment_matrix(tmp_path_factory) -> real_environments.Matrix:
    """The environments real teams run (tests/gate/real_environments.py), each built once per session and each
    gate run in it made once, whichever test asks first."""
    try:
        return real_environments.Matrix(tmp_path_factory.mktemp("environments"))
    except real_environments.Unavailable as exc:
        pytest.skip(str(exc))
