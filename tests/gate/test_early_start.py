"""The device worker starts as soon as the gate's arguments are parsed, before the gate's own modules are
imported (platform_runtime.early_start): its torch import is the critical path. What the gate promises does
not change: a run that cannot go on leaves no worker behind, and the worker's time counts from its start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS

# The gate's heavy modules: none may be imported before the device worker is started.
HEAVY = ("platform_runtime.gate", "rules.registry", "rules.gate_result", "platform_runtime.claims")


def test_the_entry_script_starts_the_device_worker_before_it_imports_the_gates_modules(tmp_path):
    probe = f"""
import sys
sys.argv = ["platform_runtime_check.py", "--device", "cpu", "--work-dir", {str(tmp_path)!r}]
sys.path.insert(0, {str(SCRIPTS)!r})
import platform_runtime_check as cli
from platform_runtime import early_start
seen = []
def start(device, requirements, work_dir):
    seen.append(sorted(name for name in {HEAVY!r} if name in sys.modules))
    raise SystemExit(7)
early_start.start = start
try:
    cli.main()
except SystemExit as stop:
    print(stop.code, seen)
"""
    done = subprocess.run([sys.executable, "-I", "-B", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "7 [[]]", done.stderr


def live_commands_naming(path: Path) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if str(path) in command:
                found.append(command)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_conflicting_requirements_kill_the_early_device_worker_and_leave_nothing_running(gate, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    run = gate("--device", "cpu", "--require", "mps", "--work-dir", str(work))
    assert run.returncode == 2 and run.result["ok"] is False
    assert any("conflicting requirements" in failure for failure in run.result["failures"])
    assert run.result["checks"] == {}
    deadline = time.monotonic() + 0.5  # killed and reaped before the gate returned
    while live_commands_naming(work) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_commands_naming(work) == []
    assert list(work.iterdir()) == []


def test_the_device_checks_duration_counts_from_the_early_start_and_fits_in_the_run(gate):
    run = gate("--device", "cpu")
    assert run.returncode == 0, run.result["failures"]
    device = run.result["checks"]["device_compute"]
    # The run's clock starts with the early worker, so the run holds the check.
    assert 0 < device["duration_s"] <= run.result["duration_s"]
    assert os.path.basename(run.result["workspace_cleanup"]["workspace"]).startswith("platform-runtime-")


def test_started_at_is_read_with_the_early_start_so_slow_imports_after_it_do_not_split_the_results_clocks(tmp_path):
    # In the NFS VM under load the gate's imports, between the early worker's start (where duration_s counts
    # from) and the result's skeleton, took over 2 s: started_at read there made the result's own clocks
    # disagree (rules.times) and failed a sound run. 3 s of sleep stands for those imports here.
    done, result = gate_with_early_start(tmp_path, "time.sleep(3)")
    from rules import times

    assert result["duration_s"] >= 3
    assert times.problems(result) == [], result["failures"]
    assert done.returncode == 0 and result["ok"] is True, result["failures"]


def gate_with_early_start(tmp_path: Path, after_start: str) -> tuple[subprocess.CompletedProcess, dict]:
    """A real CPU gate whose early start (platform_runtime.early_start.start) runs `after_start`, a line of Python
    with the started worker as `early` (and `dt`, `time` imported), before the gate goes on: the run and its
    result."""
    import json

    out = tmp_path / "result.json"
    probe = f"""
import datetime as dt, sys, time
sys.argv = ["platform_runtime_check.py", "--device", "cpu", "--work-dir", {str(tmp_path)!r}, "--output", {str(out)!r}]
sys.path.insert(0, {str(SCRIPTS)!r})
import platform_runtime_check as cli
from platform_runtime import early_start
start = early_start.start
def changed_start(*args):
    early = start(*args)
    {after_start}
    return early
early_start.start = changed_start
sys.exit(cli.main())
"""
    done = subprocess.run([sys.executable, "-I", "-B", "-c", probe], capture_output=True, text=True, timeout=240)
    return done, json.loads(out.read_text())
