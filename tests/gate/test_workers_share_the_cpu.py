"""The gate's critical path keeps its share of the CPU: the device worker and, with --training-stack, the compile
check (most of such a run) keep their session's full weight; every other worker lowers its own (Linux's autogroup
at nice 10), since it checks correctness, not speed (platform_runtime.cpu_share)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_runtime import cpu_share

from tests.conftest import SCRIPTS

AUTOGROUP = Path("/proc/self/autogroup")
needs_autogroup = pytest.mark.skipif(not AUTOGROUP.exists(), reason="no autogroup scheduling on this kernel")


@pytest.mark.parametrize(("worker", "args", "yields"), [
    ("fs_worker", ["replace", "ws"], True),
    ("fs_worker", ["cleanup", "ws", "--wait-for-go"], True),
    ("torch_record", ["site"], True),
    ("training_worker", ["autocast", "folder", "cpu", "0"], True),
    ("training_worker", ["dataloader", "folder", "cpu", "0"], True),
    ("training_worker", ["compile", "folder", "cpu", "0"], False),  # the training stack's critical path
    ("training_worker", [], False),
    ("collective_worker", ["folder", "2"], False),  # ranks share their launcher's session
    ("killed_writer", ["folder"], False),
], ids=lambda value: value if isinstance(value, str) else None)
def test_which_workers_yield_the_cpu(worker, args, yields):
    assert cpu_share.yields(worker, args) is yields


def test_yielding_where_the_kernel_has_no_autogroup_changes_nothing(tmp_path):
    assert cpu_share.yield_cpu(str(tmp_path / "missing" / "autogroup")) is False


def held_worker(tmp_path: Path, *args: str) -> subprocess.Popen:
    """A worker through the real entry point, in a session of its own as the gate starts it, told to hold after
    its report. Its torch folder is one that holds no torch, so it reports at once and waits: no torch import."""
    command = [sys.executable, "-I", "-B", "-X", "platform_runtime_hold", str(SCRIPTS / "platform_runtime_worker.py"),
               *args]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=tmp_path)


def autogroup_nice(process: subprocess.Popen) -> int:
    """The worker's autogroup weight, read once it has printed its report (it yields before anything else)."""
    process.stdout.readline()
    text = Path(f"/proc/{process.pid}/autogroup").read_text()
    return int(text.rsplit("nice", 1)[1])


@needs_autogroup
@pytest.mark.parametrize(("args", "nice"), [
    (["training_worker", "compile"], 0),
    (["training_worker", "autocast"], 10),
    (["training_worker", "dataloader"], 10),
    (["torch_record"], 10),
], ids=lambda value: "-".join(value) if isinstance(value, list) else None)
def test_a_worker_started_as_the_gate_starts_it_has_its_weight(tmp_path, args, nice):
    if args[0] == "training_worker":
        args = [*args, str(tmp_path / args[1]), "cpu", f"{time.time() + 60:.3f}", str(tmp_path / "no-torch-here")]
    else:  # torch's RECORD in a folder without torch: reported at once
        args = [*args, str(tmp_path / "no-torch-here"), "torch-2.13.0.dist-info"]
    process = held_worker(tmp_path, *args)
    try:
        assert autogroup_nice(process) == nice
    finally:
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()


@needs_autogroup
def test_yielding_lowers_only_the_workers_own_session(tmp_path):
    """The weight is its session's: the test's own session (the one that started it) keeps nice 0."""
    before = AUTOGROUP.read_text()
    process = held_worker(tmp_path, "training_worker", "autocast", str(tmp_path / "a"), "cpu",
                          f"{time.time() + 60:.3f}", str(tmp_path / "no-torch-here"))
    try:
        assert autogroup_nice(process) == 10
        assert AUTOGROUP.read_text() == before
    finally:
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()
