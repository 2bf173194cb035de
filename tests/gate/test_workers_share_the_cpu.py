"""The gate's critical path keeps its share of the CPU: the device worker and, with --training-stack, the compile
check (most of such a run) keep their session's full weight; the file-system workers, and the autocast and
data-loader checks while they import torch, lower their own (Linux's autogroup at nice 10), since they check
correctness, not speed. A training check takes its full weight back where its timed work begins, or after a
quarter of its deadline, whichever comes first, so it does not keep the lowered weight for most of its deadline
on a loaded machine; a write the kernel's rate limit refuses is retried for a training check, never waited for
by a file-system worker (platform_runtime.cpu_share)."""

from __future__ import annotations

import errno
import os
import shutil
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


@pytest.mark.parametrize(("worker", "args", "after"), [
    ("training_worker", ["autocast", "folder", "cpu", "1100"], 25.0),  # a quarter of the 100 s its deadline leaves
    ("training_worker", ["autocast", "folder", "cpu", "900"], 0.0),  # a deadline already passed: at once
    ("training_worker", ["autocast", "folder", "cpu", "soon"], None),
    ("training_worker", ["autocast"], None),
    ("fs_worker", ["replace", "ws", "--deadline-at", "1100"], None),  # milliseconds of CPU: yields to its end
    ("torch_record", ["site", "dist"], None),
])
def test_when_a_yielding_worker_takes_its_full_weight_back(worker, args, after):
    assert cpu_share.restore_after(worker, args, now=1000.0) == after


def test_full_share_stops_the_timer_and_takes_the_weight_back(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_share._State, "yielded", False)
    monkeypatch.setattr(cpu_share._State, "timer", None)
    autogroup = str(tmp_path / "autogroup")
    assert cpu_share.yield_cpu(autogroup) is True and Path(autogroup).read_text() == "10"
    cpu_share.restore_later(600, autogroup)
    timer = cpu_share._State.timer
    cpu_share.full_share(autogroup)
    assert not timer.is_alive()  # what forks next (the data loader's workers) forks one thread
    assert Path(autogroup).read_text() == "0" and cpu_share._State.timer is None


def test_full_share_where_the_process_did_not_yield_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_share._State, "yielded", False)
    monkeypatch.setattr(cpu_share._State, "timer", None)
    cpu_share.full_share(str(tmp_path / "autogroup"))
    assert not (tmp_path / "autogroup").exists()


def refusing(monkeypatch, target: Path, times: int, code: int = errno.EAGAIN) -> list:
    """Writes of `target` refused `times` times with `code` (EAGAIN: the kernel refuses an unprivileged autogroup
    write within 100 ms of another one on the machine); then written for real."""
    monkeypatch.setattr(cpu_share, "RETRY_S", 0.0)
    monkeypatch.setattr(cpu_share._State, "yielded", False)
    monkeypatch.setattr(cpu_share._State, "timer", None)
    target.write_text("")
    attempts: list = []
    real_open = open

    def refused(path, mode="r", *rest, **kwargs):
        if str(path) == str(target) and "w" in mode:
            attempts.append(path)
            if len(attempts) <= times:
                raise OSError(code, "refused")
        return real_open(path, mode, *rest, **kwargs)

    monkeypatch.setattr("builtins.open", refused)
    return attempts


def test_a_refused_write_is_retried_only_when_the_kernel_says_try_again(tmp_path, monkeypatch):
    target = tmp_path / "autogroup"
    attempts = refusing(monkeypatch, target, times=2)
    assert cpu_share._write("0", str(target), retries=5) is True and len(attempts) == 3
    assert target.read_text() == "0"

    attempts = refusing(monkeypatch, target, times=1, code=errno.EPERM)  # not permitted: no use asking again
    assert cpu_share._write("0", str(target), retries=5) is False and len(attempts) == 1


def test_a_training_check_refused_by_the_kernel_s_rate_limit_retries_and_yields(tmp_path, monkeypatch):
    target = tmp_path / "autogroup"
    attempts = refusing(monkeypatch, target, times=3)
    assert cpu_share.on_start("training_worker", ["dataloader", "f", "cpu", "1400"], str(target), now=1000.0)
    assert len(attempts) == 4 and target.read_text() == "10"
    timer = cpu_share._State.timer
    assert timer is not None and timer.interval == 100.0  # a quarter of the 400 s its deadline leaves
    cpu_share.full_share(str(target))
    assert target.read_text() == "0" and not timer.is_alive()


def test_a_file_system_worker_refused_by_the_kernel_starts_at_once_without_yielding(tmp_path, monkeypatch):
    target = tmp_path / "autogroup"
    attempts = refusing(monkeypatch, target, times=1)
    assert cpu_share.on_start("fs_worker", ["replace", "ws"], str(target), now=1000.0) is False
    assert len(attempts) == 1 and cpu_share._State.timer is None and cpu_share._State.yielded is False


def test_the_timer_s_restore_is_not_written_again_by_full_share(tmp_path, monkeypatch):
    target = tmp_path / "autogroup"
    attempts = refusing(monkeypatch, target, times=0)
    assert cpu_share.yield_cpu(str(target)) is True
    cpu_share.restore_later(0.0, str(target))
    cpu_share._State.timer.join()
    cpu_share.full_share(str(target))
    assert target.read_text() == "0" and len(attempts) == 2  # the yield and the timer's restore, nothing more


def held_worker(tmp_path: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    """A worker through the real entry point, in a session of its own as the gate starts it, told to hold after
    its report (given a folder that holds no torch, it reports at once and waits: no torch import)."""
    command = [*prefix, sys.executable, "-I", "-B", "-X", "platform_runtime_hold",
               str(SCRIPTS / "platform_runtime_worker.py"), *args]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=tmp_path)


def release(*processes: subprocess.Popen) -> None:
    """Let held workers end: stdin closed, each waited for."""
    for process in processes:
        process.stdin.close()
        process.wait(timeout=60)
        process.stdout.close()


def autogroup_nice(process: subprocess.Popen) -> int:
    """The worker's autogroup weight, read once it has printed its report (it yields before anything else)."""
    process.stdout.readline()
    return read_nice(process.pid)


def read_nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/autogroup").read_text().rsplit("nice", 1)[1])


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
        release(process)


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
        release(process)


@needs_autogroup
def test_the_autocast_check_takes_its_full_weight_back_after_a_quarter_of_its_deadline(tmp_path):
    process = held_worker(tmp_path, "training_worker", "autocast", str(tmp_path / "a"), "cpu",
                          f"{time.time() + 20:.3f}", str(tmp_path / "no-torch-here"))
    try:
        assert autogroup_nice(process) == 10
        waited = 0.0
        while read_nice(process.pid) != 0 and waited < 30:  # restored about 5 s after its start
            time.sleep(0.1)
            waited += 0.1
        assert read_nice(process.pid) == 0
    finally:
        release(process)


@needs_autogroup
def test_the_data_loader_yields_while_it_imports_and_takes_its_full_weight_back_before_its_timed_work(tmp_path):
    """The real check, torch and all, with a deadline whose quarter is far away: its weight is seen lowered while
    it imports torch, and full again after its report, which only its own restore before the loader can have
    made."""
    from platform_runtime import isolation

    process = held_worker(tmp_path, "training_worker", "dataloader", str(tmp_path / "d"), "cpu",
                          f"{time.time() + 600:.3f}", str(isolation.locate_torch().site_dir))
    seen: set[int] = set()
    try:
        while process.poll() is None and not (tmp_path / "d" / "loader-worker-0.jsonl").exists():
            try:
                seen.add(read_nice(process.pid))
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.02)
        assert 10 in seen
        assert autogroup_nice(process) == 0
    finally:
        release(process)


CAP_SYS_ADMIN = 21


@needs_autogroup
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="drops CAP_SYS_ADMIN with setpriv, as root")
def test_training_checks_started_together_without_cap_sys_admin_all_yield(tmp_path):
    """Without CAP_SYS_ADMIN the kernel takes one autogroup write per 100 ms machine-wide (kernel/sched/
    autogroup.c), and the gate starts its workers within milliseconds of each other: a refused write is retried.
    Four started together here, each without the capability (one in four yielded when nothing was retried)."""
    prefix = ("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin")
    deadline = f"{time.time() + 60:.3f}"
    processes = [held_worker(tmp_path, "training_worker", "autocast", str(tmp_path / f"a{i}"), "cpu", deadline,
                             str(tmp_path / "no-torch-here"), prefix=prefix) for i in range(4)]
    try:
        nice = [autogroup_nice(process) for process in processes]
        capabilities = [int(line.split()[1], 16) for process in processes
                        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
                        if line.startswith("CapEff:")]
        assert capabilities and not any(c >> CAP_SYS_ADMIN & 1 for c in capabilities)
        assert nice == [10, 10, 10, 10]
    finally:
        release(*processes)
