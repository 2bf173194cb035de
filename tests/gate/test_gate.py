"""The platform runtime gate, run as a user runs it: every check passes on this machine's CPU and file
system, and each one fails, with ok: false and a non-zero exit, when its property is really broken."""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from common.files import sha256_file
from platform_runtime.sources import GATE_SOURCES

from tests.conftest import ROOT, SCRIPTS, fault_python, run_gate

CHECKS = {"device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "workspace_cleanup"}
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX signals, fork, fcntl or pgrep; not on Windows")
# What this platform's file-system evidence and lock are (the gate chooses them by platform, not by name).
EXPECTED_METHODS = {"linux": ("linux-mountinfo-mnt-id", "fcntl-lockf-exclusive"),
                    "darwin": ("darwin-statfs", "fcntl-lockf-exclusive"),
                    "win32": ("win32-GetVolumeInformationW", "msvcrt-locking-lockfile")}


def test_cpu_gate_passes_with_every_check_and_binds_its_sources(tmp_path):
    audit = tmp_path / "audit"
    audit.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    run = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", "--work-dir", str(work), fault="",
                   env={"PLATFORM_RUNTIME_AUDIT_DIR": str(audit)})
    result = run.result
    assert run.returncode == 0, run.stderr
    assert result["ok"] is True and result["exit_code"] == 0 and result["failures"] == []
    assert set(result["checks"]) == CHECKS and all(c["ok"] for c in result["checks"].values())
    assert result["device"]["resolved"] == "cpu" and result["device"]["ran_on"] == ["cpu"]
    device = result["checks"]["device_compute"]
    assert device["matmul"]["equals_python_answer"] is True
    assert device["training"]["steps"] == 12 and device["training"]["final_loss"] < device["training"]["initial_loss"]
    assert device["checkpoint"]["tensors_compared"] >= 4 and device["checkpoint"]["mismatches"] == []
    assert result["device"]["load_safety"]["weights_only"] is True
    replace = result["checks"]["concurrent_replace"]
    assert replace["writes"] == 200 and replace["readers"] == 2 and replace["partial_reads"] == 0
    assert replace["distinct_versions_seen"] >= 10
    assert replace["writer_busy_rename_retries"] == 0  # counted, and zero off NFS
    append = result["checks"]["jsonl_append"]
    assert append["valid_records"] == append["expected_records"] == 1600
    fs_method, lock_method = EXPECTED_METHODS[sys.platform]
    assert append["method"] == lock_method
    assert append["lock_probe"]["refused_while_held"] is True and append["lock_probe"]["acquired_after_release"] is True
    stages = result["checks"]["failing_writer"]["stages"]
    assert set(stages) == {"before-data", "partial-write", "fsync", "replace"}
    assert all(s["raised"] and s["old_file_intact"] and s["temp_files_left"] == 0 for s in stages.values())
    killed = result["checks"]["failing_writer"]["killed_writer"]
    assert killed["kills"] == 20 and killed["torn"] == killed["lost"] == 0 and isinstance(killed["seed"], int)
    assert killed["temporaries_left_after_cleanup"] == 0
    assert set(result["device"]["phases"]) == {"matmul", "training", "checkpoint_save", "checkpoint_load"}
    assert all(p["tensor_devices"] == ["cpu"] and p["synchronized"] for p in result["device"]["phases"].values())
    assert result["workspace_cleanup"]["status"] == "cleaned" and list(work.iterdir()) == []
    assert result["filesystem"]["method"] == fs_method and result["filesystem"]["type"]
    # The result names the exact bytes that ran.
    assert set(result["source"]["files"]) == set(GATE_SOURCES)
    for path, digest in result["source"]["files"].items():
        assert sha256_file(ROOT / path) == digest
    # Only the device worker imported torch; the file-system processes never did.
    records = [json.loads(p.read_text()) for p in audit.iterdir()]
    assert {r["role"] for r in records} >= {"device", "probe", "replace-writer", "replace-reader", "append-writer",
                                           "cleanup", "failing-writer"}
    assert [r["role"] for r in records if r["torch"]] == ["device"]
    # This run's interpreter is the fault venv: its site-packages sitecustomize does reach the isolated
    # workers (what -I cannot keep out), and the result says so.
    assert result["isolation"]["device_worker_loaded"] == ["sitecustomize"]


def test_result_names_no_local_path_host_or_user(gate, tmp_path):
    run = gate("--device", "cpu", "--keep-workspace")
    text = run.output.read_text(encoding="utf-8")
    for private in {str(tmp_path), str(Path.home()), socket.gethostname(), getpass.getuser()} - {"root"}:
        assert private not in text
    assert '"root"' not in text and "/root" not in text
    # --keep-workspace: reported as retained, never as cleaned, and really left in place.
    assert run.result["workspace_cleanup"]["status"] == "retained"
    assert (tmp_path / run.result["workspace_cleanup"]["workspace"]).is_dir()


@pytest.mark.parametrize("args, message", [
    (["--require", "cuda", "--require", "mps"], "more than one device"),
    (["--device", "cpu", "--require", "cuda"], "cannot satisfy"),
    (["--require", "windows", "--require", "nfs"], "Linux mountinfo"),
    (["--require", "nfs", "--require-filesystem", "ext4"], "contradicts"),
])
def test_conflicting_requirements_are_refused_with_exit_2_and_a_failed_result(gate, args, message):
    run = gate(*args)
    assert run.returncode == 2
    assert run.result["ok"] is False and run.result["checks"] == {}
    assert any(message in failure for failure in run.result["failures"])


@pytest.mark.parametrize("args", [["--device", "gpu"], ["--timeout", "-3"], ["--require", "solaris"],
                                  ["--require-filesystem", "../etc"]])
def test_invalid_arguments_exit_2_with_a_message_no_traceback_and_a_failed_result(gate, args):
    run = gate(*args)
    assert run.returncode == 2
    assert "error:" in run.stderr and "Traceback" not in run.stderr
    # --output could be read, so the result is written: nothing ran, and it says why.
    assert run.result["ok"] is False and run.result["exit_code"] == 2 and run.result["checks"] == {}
    assert run.result["failures"] == [f"invalid arguments: {run.result['usage_error']}"]
    assert "Traceback" not in run.output.read_text(encoding="utf-8")


def test_an_output_option_without_a_value_writes_nothing_and_exits_2(tmp_path):
    completed = subprocess.run([sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"), "--output"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr and list(tmp_path.iterdir()) == []


def test_missing_work_dir_is_a_usage_error_with_a_failed_result(gate, tmp_path):
    run = gate("--device", "cpu", "--work-dir", str(tmp_path / "absent"))
    assert run.returncode == 2 and run.result["ok"] is False
    assert run.result["failures"] == ["--work-dir does not exist"]


@pytest.mark.parametrize("requirement", ["cuda", "mps"])
def test_unavailable_backend_fails_the_requirement(gate, requirement):
    run = gate("--require", requirement)
    assert run.returncode == 1 and run.result["ok"] is False
    verdict = next(v for v in run.result["requirements"] if v["name"] == requirement)
    assert verdict["ok"] is False


@pytest.mark.parametrize("fault, check, words", [
    ("load-returns-other-tensor", "device_compute", "checkpoint reloaded on the CPU differs"),
    ("optimizer-does-not-step", "device_compute", "did not change the parameters"),
    ("matmul-wrong", "device_compute", "differs from the known answer"),
    ("cannot-allocate", "device_compute", "out of memory at stage allocate"),
    ("loss-nan", "device_compute", "not finite"),
    pytest.param("device-crashes", "device_compute", "by signal SIGKILL", marks=POSIX_ONLY),
    ("writer-in-place", "failing_writer", "the old file"),
    ("temp-left-behind", "failing_writer", "temporary sibling"),
    ("replace-not-atomic", "concurrent_replace", "partial or unparsable"),
    ("lost-line", "jsonl_append", "1 record(s) lost"),
    ("torn-line", "jsonl_append", "torn or foreign"),
    ("duplicated-line", "jsonl_append", "1 record(s) duplicated"),
    ("appender-crashes", "jsonl_append", "writer process(es) failed"),
    pytest.param("lock-noop", "jsonl_append", "did not exclude another process", marks=POSIX_ONLY),
    pytest.param("replace-unlinks-first", "concurrent_replace", "found the file missing", marks=POSIX_ONLY),
    ("cleanup-does-nothing", "workspace_cleanup", "still exists"),
])
def test_each_broken_property_fails_its_check(gate, fault, check, words):
    run = gate("--device", "cpu", fault=fault)
    assert run.returncode == 1, run.stderr
    assert run.result["ok"] is False
    assert run.result["checks"][check]["ok"] is False
    assert words in run.result["checks"][check]["reason"]
    assert any(failure.startswith(check) for failure in run.result["failures"])


def test_cleanup_past_its_deadline_fails_explicitly(gate):
    started = time.monotonic()
    run = gate("--device", "cpu", "--cleanup-timeout", "2", fault="cleanup-hangs")
    assert run.returncode == 1 and run.result["ok"] is False
    assert run.result["workspace_cleanup"]["status"] == "timeout"
    assert "did not finish within 2 s" in run.result["checks"]["workspace_cleanup"]["reason"]
    assert time.monotonic() - started < 60


def test_a_hung_check_is_killed_at_the_global_timeout_and_the_workspace_still_cleaned(gate, tmp_path):
    started = time.monotonic()
    run = gate("--device", "cpu", "--timeout", "12", fault="device-hangs")
    assert run.returncode == 3 and run.result["ok"] is False
    assert "did not finish within" in run.result["checks"]["device_compute"]["reason"]
    assert "--timeout" in run.result["checks"]["device_compute"]["reason"]
    assert time.monotonic() - started < 45
    # The cleanup has its own deadline, which the global one does not cut: the exit-3 result says it ran.
    assert run.result["workspace_cleanup"]["status"] == "cleaned"
    assert run.result["workspace_cleanup"]["after_global_timeout"] is True
    assert not list(tmp_path.glob("platform-runtime-*"))


@POSIX_ONLY
def test_a_probe_report_from_a_probe_ended_by_a_signal_does_not_count_and_the_run_fails_naming_it(gate):
    run = gate("--device", "cpu", "--require-filesystem", "ext4", fault="probe-killed-after-report")
    assert run.returncode == 1 and run.result["ok"] is False
    assert any("file-system probe exited by signal SIGKILL without a result" in f for f in run.result["failures"])
    assert run.result["filesystem"].get("type") is None  # its (real) report was not taken


def test_a_probe_that_hangs_after_making_the_workspace_still_gets_it_removed(gate, tmp_path):
    run = gate("--device", "cpu", "--timeout", "6", fault="probe-hangs-after-mkdir")
    assert run.returncode == 3 and run.result["ok"] is False
    cleanup = run.result["workspace_cleanup"]
    assert cleanup["status"] == "cleaned" and cleanup["after_global_timeout"] is True
    assert not list(tmp_path.glob("platform-runtime-*"))


@POSIX_ONLY
def test_a_child_that_cannot_be_reaped_is_abandoned_and_named_within_the_deadline(gate, tmp_path):
    pidfile = tmp_path / "escaped.pid"
    started = time.monotonic()
    try:
        run = gate("--device", "cpu", "--timeout", "8", fault="device-escapes-holding-output",
                   env={"PLATFORM_RUNTIME_FAULT_PIDFILE": str(pidfile)})
        elapsed = time.monotonic() - started
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert run.returncode == 3 and elapsed < 30
    device = run.result["checks"]["device_compute"]
    assert device["abandoned"] is True and "abandoned" in device["reason"]


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@POSIX_ONLY
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_gate_kills_its_children_and_still_writes_a_failed_result(tmp_path, signum):
    output = tmp_path / "result.json"
    env = dict(os.environ, PLATFORM_RUNTIME_FAULT="device-hangs")
    # SIGINT as a terminal delivers it: a suite started in the background by a shell inherits it ignored,
    # and so would the gate (Python then installs no KeyboardInterrupt handler).
    process = subprocess.Popen([str(fault_python()), "-B", str(SCRIPTS / "platform_runtime_check.py"), "--device",
                                "cpu", "--output", str(output)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=default_sigint)
    # The signal comes once the gate has started its hung device worker, however long that took (not after a
    # guessed sleep, which on a loaded machine can strike before the gate is even running).
    worker = f"device_worker.py .*cpu {tmp_path}"  # a regular expression: its options may come first
    give_up = time.monotonic() + 120
    while subprocess.run(["pgrep", "-f", worker], capture_output=True).returncode != 0:
        assert time.monotonic() < give_up and process.poll() is None, "the gate never started its device worker"
        time.sleep(0.1)
    process.send_signal(signum)
    process.communicate(timeout=60)
    assert process.returncode == 130
    result = json.loads(output.read_text())
    assert result["ok"] is False and result["exit_code"] == 130
    assert "interrupted" in result["failures"][-1]
    hung = subprocess.run(["pgrep", "-f", worker], capture_output=True)
    assert hung.returncode == 1, "the hung device worker survived the interrupt"


@pytest.mark.parametrize("told", [b"go\n", b""])
def test_the_early_cleanup_worker_removes_the_workspace_only_when_told_to_go(tmp_path, told):
    """The gate starts its cleanup worker with the device worker (so the removal at the end does not wait for an
    interpreter to start) and says "go" once the checks are over; released without it, it removes nothing."""
    workspace = tmp_path / "platform-runtime-0123456789ab"
    (workspace / "device").mkdir(parents=True)
    (workspace / "device" / "checkpoint.pt").write_bytes(b"x" * 100)
    done = subprocess.run([sys.executable, "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"), "fs_worker",
                           "cleanup", str(workspace), "--wait-for-go"], input=told, capture_output=True, timeout=60)
    report = json.loads(done.stdout.decode().splitlines()[-1])
    assert done.returncode == 0 and report["ok"] is bool(told) and workspace.exists() is not bool(told)
