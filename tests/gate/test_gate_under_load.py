"""The gate's answer does not change with the machine's load, only its duration: the same run, quiet and
beside CPU-bound busy processes (as many as this machine has cores), gives the same verdicts and reasons."""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import ROOT, run_gate

sys.path.insert(0, str(ROOT / "tools"))
from cpu_load import CpuLoad  # noqa: E402


def verdicts(result: dict) -> dict:
    """Everything the gate concluded, and what each role process was seen to do; no duration, count or name
    that a run chooses (workspace, start time, reads seen)."""
    checks = {}
    for name, check in result["checks"].items():
        roles = check.get("roles", []) + [check["lock_probe"][k] for k in ("while_held", "after_release")
                                          if k in check.get("lock_probe", {})]
        checks[name] = {"ok": check["ok"], "reason": check["reason"],
                        "roles": sorted((r["role"], r["name"], r["answer"]) for r in roles)}
    return {"exit_code": result["exit_code"], "ok": result["ok"], "failures": result["failures"],
            "requirements": result["requirements"], "checks": checks,
            "filesystem": (result["filesystem"]["type"], result["filesystem"]["method"]),
            "device": (result["device"]["resolved"], result["device"]["type"], result["device"].get("ran_on"))}


# A passing run, and one whose failure is the same whatever the scheduling (a writer ended by a full disk).
# Not a lock that does not lock: whether its appenders then collide is the scheduler's choice, which is why
# the lock probe exists, so its lost and torn counts differ from run to run, loaded or not.
@pytest.mark.slow
@pytest.mark.parametrize("fault", [None, pytest.param("appender-disk-full", marks=pytest.mark.skipif(
    os.name != "posix", reason="the fault patches os.write"))])
def test_a_loaded_machine_gets_the_same_verdicts_and_reasons_as_a_quiet_one(tmp_path, fault):
    quiet = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", fault=fault)
    with CpuLoad(max(2, os.cpu_count() or 2)):
        loaded = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", fault=fault)
    assert verdicts(loaded.result) == verdicts(quiet.result)
    assert quiet.returncode == loaded.returncode == (1 if fault else 0), quiet.result["failures"]
    if fault:
        assert "w5 ended with OSError ENOSPC" in quiet.result["checks"]["jsonl_append"]["reason"]
