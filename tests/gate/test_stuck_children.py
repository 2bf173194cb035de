"""A child the kill cannot end (uninterruptible sleep on a hung mount) is named as abandoned from
/proc/<pid>/stat, never awaited; the gate then gives its cleanup a short deadline so that it returns."""

from __future__ import annotations

import sys
import time

import pytest
from platform_runtime import children, stuck


def test_stat_lines_are_read_after_the_last_parenthesis():
    line = "4242 (py (th) read) D 17 4242 4242 0 -1 4194560 105 0 0 0"
    assert stuck.parse_stat(line) == {"pid": 4242, "name": "py (th) read", "state": "D", "ppid": 17,
                                      "pgrp": 4242, "session": 4242}
    assert stuck.parse_stat("garbage") is None and stuck.parse_stat("1 (x) D") is None


def fake_proc(tmp_path, entries: dict[int, str]):
    for pid, stat in entries.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(stat)
    (tmp_path / "self").mkdir()
    return tmp_path


def test_only_the_sessions_members_in_uninterruptible_sleep_are_named(tmp_path):
    proc = fake_proc(tmp_path, {100: "100 (python) S 1 100 100 0", 101: "101 (python) D 100 100 100 0",
                                102: "102 (python) Z 100 100 100 0", 103: "103 (other) D 1 103 103 0",
                                104: "104 (python) R 100 100 100 0"})
    assert stuck.stuck_in(100, proc) == [{"pid": 101, "name": "python", "state": "D"}]
    assert [m["pid"] for m in stuck.session_members(100, proc)] == [100, 101, 104]  # a zombie has exited
    assert stuck.describe(stuck.stuck_in(100, proc)) == "pid 101 (python) in uninterruptible sleep (D)"


def test_a_timed_out_childs_failure_names_its_stuck_processes():
    outcome = children.ChildOutcome(name="jsonl_append", returncode=None, payload=None, duration_s=93.0,
                                    timed_out=True, timeout_s=90.0, global_deadline=True, abandoned=True,
                                    stuck=[{"pid": 77, "name": "python3", "state": "D"}])
    text = outcome.failure()
    assert "--timeout" in text and "abandoned, not awaited: pid 77 (python3) in uninterruptible sleep (D)" in text


def test_a_child_blocked_in_the_kernel_at_its_deadline_says_so_even_when_the_kill_ended_it():
    outcome = children.ChildOutcome(name="concurrent_replace", returncode=-9, payload=None, duration_s=88.0,
                                    timed_out=True, timeout_s=88.0, global_deadline=True,
                                    blocked=[{"pid": 80, "name": "python3", "state": "D"}])
    text = outcome.failure()
    assert "was killed" in text and text.endswith("; at the deadline pid 80 (python3) in uninterruptible sleep (D)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_collect_reads_the_real_state_of_what_is_left_of_a_killed_childs_session(monkeypatch):
    """A real child killed at its timeout: collect looks for what is left of its session in /proc and finds
    nothing in D here (this host cannot make a process that SIGKILL does not end; the NFS VM's server_gone
    phase does, and checks that each one is named)."""
    seen = []
    real = stuck.stuck_in

    def stuck_in(session, proc=stuck.PROC):
        seen.append(session)
        return real(session, proc)

    monkeypatch.setattr(stuck, "stuck_in", stuck_in)
    process = children.start([sys.executable, "-c", "import time; time.sleep(60)"])
    outcome = children.collect("probe", process, time.monotonic(), 0.5, False)
    assert outcome.timed_out and seen == [process.pid, process.pid] and outcome.stuck == outcome.blocked == []
    assert not outcome.abandoned
