"""The file-system checks run alone (no torch), broken from outside the project's code through the fault
venv's site-packages: a lock that does not lock fails every time, and a replace that leaves the name absent
is a failure on a local file system while on NFS it is counted and reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import SCRIPTS, fault_python

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the faults patch fcntl.lockf and POSIX rename")


def fs_worker(tmp_path, fault: str, *args: str) -> dict:
    workspace = tmp_path / f"ws-{len(list(tmp_path.iterdir()))}"
    workspace.mkdir()
    completed = subprocess.run([str(fault_python()), "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"),
                                "fs_worker", *args[:1], str(workspace), *args[1:]],
                               env=dict(os.environ, PLATFORM_RUNTIME_FAULT=fault), capture_output=True, text=True,
                               timeout=120)
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("attempt", range(3))
def test_a_lock_that_does_not_lock_fails_every_time(tmp_path, attempt):
    result = fs_worker(tmp_path, "lock-noop", "append", "--writers", "2", "--records", "5")
    assert result["ok"] is False and "did not exclude another process" in result["reason"]
    assert result["lock_probe"]["refused_while_held"] is False


def test_a_real_lock_passes_the_probe_and_records_its_method(tmp_path):
    result = fs_worker(tmp_path, "", "append", "--writers", "2", "--records", "5")
    assert result["ok"] is True, result["reason"]
    probe = result["lock_probe"]
    assert (probe["method"], probe["refused_while_held"], probe["acquired_after_release"], probe["ok"]) == (
        "fcntl-lockf-exclusive", True, True, True)
    assert probe["while_held"]["acquired"] is False and probe["after_release"]["acquired"] is True


def test_missing_reads_fail_on_a_local_file_system_and_are_counted_where_nfs_allows_them(tmp_path):
    local = fs_worker(tmp_path, "replace-unlinks-first", "replace")
    assert local["ok"] is False and local["missing_reads"] > 0 and "found the file missing" in local["reason"]
    nfs = fs_worker(tmp_path, "replace-unlinks-first", "replace", "--tolerate-missing")
    assert nfs["ok"] is True, nfs["reason"]
    assert nfs["missing_reads"] > 0 and nfs["missing_reads_tolerated"] is True and nfs["partial_reads"] == 0
