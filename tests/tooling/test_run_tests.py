"""The test runner counts and prints every skip with its reason, --fail-on-skip turns one into a failure,
--under-load N runs N busy processes beside the run and stops them however it ends, the tests marked `full` run
only with --full and are otherwise named, and every run ends with its wall time and its slowest tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT


def run_all(tmp_path, *args: str) -> subprocess.CompletedProcess:
    suite = tmp_path / "test_sample.py"
    suite.write_text("import pytest\n\ndef test_runs():\n    pass\n\n"
                     "@pytest.mark.skip(reason='needs a thing this host lacks')\ndef test_skipped():\n    pass\n")
    return subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--no-lint", *args, str(suite), "-q",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PLATFORM_RUNTIME_JUNIT": str(tmp_path / "junit.xml")})


def test_a_skip_is_counted_and_printed_with_its_reason(tmp_path):
    completed = run_all(tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "== skipped: 1 test(s)" in completed.stdout
    assert "test_skipped: needs a thing this host lacks" in completed.stdout


def test_fail_on_skip_fails_a_run_with_a_skip(tmp_path):
    completed = run_all(tmp_path, "--fail-on-skip")
    assert completed.returncode == 1 and "every selected test had to run" in completed.stdout


FULL_SUITE = ("import pytest\n\ndef test_quick():\n    pass\n\n"
              "@pytest.mark.full\ndef test_slow_variant():\n    pass\n")


def ran(output: str, name: str) -> bool:
    """Whether pytest -v said the test passed: `NAME PASSED` in one process, `PASSED file::NAME` on workers."""
    return any(line.rstrip().endswith(f"::{name}") and "PASSED" in line or f"::{name} PASSED" in line
               for line in output.splitlines())


def run_with_full_marker(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """A sample suite under the project's own conftest (its --full option and the `full` marker's handling)."""
    suite = tmp_path / "test_tiers.py"
    suite.write_text(FULL_SUITE)
    return subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--no-lint", *args, str(suite), "-v",
                           "-p", "no:cacheprovider", "-p", "tests.conftest", "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "PLATFORM_RUNTIME_JUNIT": str(tmp_path / "junit.xml")})


def test_a_test_marked_full_runs_only_with_full_and_is_otherwise_named(tmp_path):
    quick = run_with_full_marker(tmp_path)
    assert quick.returncode == 0, quick.stdout + quick.stderr
    assert ran(quick.stdout, "test_quick") and not ran(quick.stdout, "test_slow_variant")
    assert "1 test(s) marked `full` did not run (python3 dev.py test --full runs them)" in quick.stdout
    full = run_with_full_marker(tmp_path, "--full")
    assert full.returncode == 0, full.stdout + full.stderr
    assert ran(full.stdout, "test_quick") and ran(full.stdout, "test_slow_variant")
    assert "marked `full` did not run" not in full.stdout


def test_a_run_ends_with_its_wall_time_and_its_slowest_tests(tmp_path):
    completed = run_all(tmp_path)
    assert "== the 2 slowest tests" in completed.stdout and "test_sample::test_runs" in completed.stdout
    assert completed.stdout.rstrip().splitlines()[-1].startswith("== wall time: ")


LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the busy processes")
# A sample test that counts the busy processes beside it (the runner's children whose command line holds the
# busy loop: other runs on the machine have their own) and says it started, then waits as long as asked.
BESIDE = """
import os, pathlib, time

def busy():
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getppid() and b"os.getppid() == parent" in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except (OSError, ValueError, IndexError):
            pass
    return found

def test_beside_the_load():
    pathlib.Path(os.environ["MARK"]).write_text(str(len(busy())))
    time.sleep(float(os.environ.get("HOLD", "0")))
    assert os.environ.get("FAIL") != "1"
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_loaded(tmp_path, load: str, **env: str) -> tuple[subprocess.Popen, list[int]]:
    suite = tmp_path / "test_beside.py"
    suite.write_text(BESIDE)
    process = subprocess.Popen([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--no-lint", "--under-load",
                                load, str(suite), "-q", "-n", "0", "-p", "no:cacheprovider", "--rootdir",
                                str(tmp_path)],
                               stdout=subprocess.PIPE, text=True, start_new_session=True,
                               # SIGINT as a terminal delivers it, even when this suite runs in the background
                               # (a shell's background job inherits it ignored)
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                               env={**os.environ, "MARK": str(tmp_path / "mark"),
                                    "PLATFORM_RUNTIME_JUNIT": str(tmp_path / "junit.xml"), **env})
    first = process.stdout.readline()
    assert first.startswith(f"== under load: {load} CPU-bound busy process(es), pids "), first
    return process, [int(pid) for pid in first.split("pids ")[1].split()]


def wait_gone(pids: list[int], seconds: float = 20) -> list[int]:
    give_up = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < give_up:
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


@LINUX_ONLY
@pytest.mark.parametrize("fail", ["0", "1"])
def test_under_load_runs_busy_processes_beside_the_tests_and_stops_them_at_the_end(tmp_path, fail):
    process, pids = start_loaded(tmp_path, "2", FAIL=fail)
    output = process.communicate(timeout=120)[0]
    assert process.returncode == (1 if fail == "1" else 0), output
    assert (tmp_path / "mark").read_text() == "2"  # the test ran beside exactly the two busy processes
    assert wait_gone(pids, seconds=0) == []  # stopped before the runner returned, pass or fail


@LINUX_ONLY
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_busy_processes_end_when_the_run_is_killed(tmp_path, signal_number):
    process, pids = start_loaded(tmp_path, "2", HOLD="60")
    try:
        give_up = time.monotonic() + 60
        while not (tmp_path / "mark").exists() and time.monotonic() < give_up:
            time.sleep(0.1)
        assert all(alive(pid) for pid in pids)
        os.kill(process.pid, signal_number)
        process.wait(timeout=30)
        # SIGKILL leaves no code of the runner to stop them: they notice their starter is gone and exit.
        assert wait_gone(pids) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the sample test the runner started, when it survived


@pytest.mark.parametrize("value", ["two", "-1", ""])
def test_under_load_refuses_a_value_that_is_not_a_count(tmp_path, value):
    completed = run_all(tmp_path, "--under-load", value)
    assert completed.returncode != 0 and "--under-load needs a number of busy processes" in completed.stderr


WORKER_SUITE = ("import os, pathlib, time\nimport pytest\n\n{mark}"
                "def test_{name}():\n"
                "    pathlib.Path(os.environ['MARK'] + '-{name}').write_text(str(time.time()))\n"
                "    time.sleep(float(os.environ.get('HOLD', '0')))\n"
                "    assert os.environ.get('FAIL') != '{name}'\n")


def run_on_workers(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Three sample files: two plain, one marked `beside` and collected last by name, under the project's conftest."""
    for name, mark in (("a_first", ""), ("b_second", ""), ("z_emulated", "@pytest.mark.beside\n")):
        (tmp_path / f"test_{name}.py").write_text(WORKER_SUITE.format(name=name, mark=mark))
    return subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--no-lint", *args, str(tmp_path),
                           "-v", "-p", "no:cacheprovider", "-p", "tests.conftest", "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MARK": str(tmp_path / "mark"),
                               "PLATFORM_RUNTIME_JUNIT": str(tmp_path / "junit.xml"), **env})


def started(tmp_path, name: str) -> float:
    return float((tmp_path / f"mark-{name}").read_text())


def test_two_workers_run_two_files_at_the_same_time_the_long_emulated_one_first(tmp_path):
    completed = run_on_workers(tmp_path, HOLD="2")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "== pytest on 2 workers" in completed.stdout
    assert all(ran(completed.stdout, f"test_{name}") for name in ("a_first", "b_second", "z_emulated"))
    # the `beside` file went first although its name sorts last; the other worker took the first plain file
    assert abs(started(tmp_path, "z_emulated") - started(tmp_path, "a_first")) < 2
    assert started(tmp_path, "b_second") - started(tmp_path, "a_first") >= 1.5
    assert "== the 3 slowest tests" in completed.stdout


def test_a_failure_on_either_worker_fails_the_run(tmp_path):
    completed = run_on_workers(tmp_path, FAIL="z_emulated")
    assert completed.returncode == 1 and "test_z_emulated" in completed.stdout and "FAILED" in completed.stdout


def test_no_workers_runs_one_process(tmp_path):
    completed = run_on_workers(tmp_path, PLATFORM_RUNTIME_TEST_WORKERS="0")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "== pytest\n" in completed.stdout and "[gw" not in completed.stdout
