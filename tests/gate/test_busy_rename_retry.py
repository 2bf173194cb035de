"""The atomic writer's rename on NFS: ETXTBSY/EBUSY is a transient refusal (the Linux NFS client while the
same client is renaming or unlinking that name, fs/nfs/dir.c), retried a bounded number of times, each
retry counted; any other error is not retried; a refusal that lasts fails with the old file whole."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from common import files
from common.files import RetryCounter, atomic_write_bytes, temporaries_of

from tests.conftest import SCRIPTS


def refusing_replace(monkeypatch, code: int, times: int) -> list:
    """os.replace refuses `times` times with errno `code`, then renames for real (the writer's code unchanged)."""
    calls: list = []
    real = os.replace

    def replace(src, dst, **kwargs):
        calls.append(src)
        if len(calls) <= times:
            raise OSError(code, os.strerror(code), str(src))
        return real(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.mark.parametrize("code", [errno.ETXTBSY, errno.EBUSY])
def test_a_busy_rename_is_retried_counted_and_the_new_bytes_land(tmp_path, monkeypatch, code):
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    calls = refusing_replace(monkeypatch, code, 3)
    counter = RetryCounter()
    atomic_write_bytes(target, b"new", counter=counter)
    assert target.read_bytes() == b"new" and len(calls) == 4
    assert counter.busy_renames == 3 and counter.sharing_violations == 0
    assert temporaries_of(target) == {}


def test_a_rename_busy_for_good_fails_after_bounded_tries_with_the_old_file_whole_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    calls = refusing_replace(monkeypatch, errno.ETXTBSY, 10**6)
    slept: list[float] = []
    monkeypatch.setattr(files.time, "sleep", slept.append)
    counter = RetryCounter()
    with pytest.raises(OSError) as raised:
        atomic_write_bytes(target, b"new", counter=counter)
    assert raised.value.errno == errno.ETXTBSY
    assert len(calls) == files.RENAME_ATTEMPTS and counter.busy_renames == files.RENAME_ATTEMPTS - 1
    assert 9 < sum(slept) < 11  # bounded: about 10 s of tries in all
    assert max(slept) == files.RETRY_MAX_DELAY_S  # polled, so a free instant between readers is found
    assert target.read_bytes() == b"old" and temporaries_of(target) == {}


def test_any_other_error_from_the_rename_is_not_retried(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    calls = refusing_replace(monkeypatch, errno.EIO, 10**6)
    counter = RetryCounter()
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new", counter=counter)
    assert len(calls) == 1 and counter.busy_renames == 0 and target.read_bytes() == b"old"


def test_only_the_rename_retries_busy_errors_not_reads(tmp_path, monkeypatch):
    counter = RetryCounter()
    attempts: list = []

    def busy():
        attempts.append(1)
        raise OSError(errno.ETXTBSY, "Text file busy")

    with pytest.raises(OSError):
        files.retry_sharing(busy, counter)
    assert len(attempts) == 1 and counter.busy_renames == 0


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="bind-mounts a file: Linux, root")
def test_a_real_ebusy_rename_onto_a_mount_point_is_retried_until_the_mount_goes(tmp_path):
    """A file bind-mounted over the target makes the kernel refuse the rename with EBUSY, for real."""
    target, cover = tmp_path / "state.json", tmp_path / "cover"
    target.write_bytes(b"old")
    cover.write_bytes(b"cover")
    subprocess.run(["mount", "--bind", str(cover), str(target)], check=True)
    unmounted = threading.Event()

    def unmount_soon():
        time.sleep(0.3)
        subprocess.run(["umount", str(target)], check=True)
        unmounted.set()

    remover = threading.Thread(target=unmount_soon)
    remover.start()
    counter = RetryCounter()
    try:
        atomic_write_bytes(target, b"new", counter=counter)
    finally:
        remover.join()
    assert unmounted.is_set() and target.read_bytes() == b"new"
    assert counter.busy_renames >= 1 and temporaries_of(target) == {}


def test_the_gate_replace_check_reports_zero_busy_retries_on_a_local_disk(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run([sys.executable, "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"), "fs_worker",
                           "replace", str(workspace), "--writers", "2", "--replaces", "20", "--min-versions", "2"],
                          capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["ok"] is True, result["reason"]
    assert result["writer_busy_rename_retries"] == 0 and result["writer_sharing_retries"] == 0
