"""A bad --output is refused before anything runs (r5 F8): an empty value (an unset CI variable), a folder,
something that is not a regular file, a path under a file, a folder that takes no new file; each a one-line
usage error with exit 2, no traceback, no device worker or workspace started, nothing written. A missing folder
is still made (the documented `--output outputs/runtime-audit/...`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from common.names import WORKSPACE_PREFIX

from tests.conftest import SCRIPTS

GATE = SCRIPTS / "platform_runtime_check.py"


def gate_with_output(cwd: Path, output: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-B", str(GATE), "--device", "cpu", *args, "--output", output], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("make, words", [
    (lambda d: "", "argument --output: is empty"),
    (lambda d: str(d), "--output names a folder, not a file"),
    (lambda d: (os.mkfifo(d / "pipe"), str(d / "pipe"))[1], "not a regular file"),
    (lambda d: ((d / "plain").write_text("x"), str(d / "plain" / "result.json"))[1], "which is not a folder"),
    (lambda d: "/proc/version", "--output's folder does not accept a new file"),
    (lambda d: "/proc/self/no/such/result.json", "--output's folder does not accept a new file"),
])
def test_a_bad_output_is_a_usage_error_before_anything_runs(tmp_path, make, words):
    work = tmp_path / "work"
    work.mkdir()
    output = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    done = gate_with_output(work, output)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "error:" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""  # no result printed: the gate never ran
    assert not any(p.name.startswith(WORKSPACE_PREFIX) for p in work.iterdir())  # no workspace made
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, not even the writer's probe file


def test_a_bad_output_beside_another_bad_argument_is_named_and_nothing_is_written(tmp_path):
    done = gate_with_output(tmp_path, str(tmp_path), "--timeout", "-3")
    assert done.returncode == 2 and "--output names a folder" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_output_in_a_missing_folder_is_still_written_there(tmp_path):
    done = gate_with_output(tmp_path, "outputs/runtime-audit/result.json", "--timeout", "-3")  # nothing runs
    assert done.returncode == 2 and (tmp_path / "outputs" / "runtime-audit" / "result.json").is_file()
