"""The `vm` check passes only when the guest powered itself off: qemu's exit status 0 alone proves nothing,
as qemu exits 0 on a host's SIGTERM (and after a guest panic with -no-reboot). Real processes stand in for
qemu at the one seam, vm.run_until_exit's command; one of them is the real qemu, killed by SIGTERM."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import run_checks, vm  # noqa: E402

# What the guest kernel writes last when guest.py (or the systemd unit) triggers sysrq 'o'.
POWER_OFF_TAIL = "[  242.854922] sysrq: Power Off\n[  242.869739] reboot: Power down\n"


def ended(tmp_path, script: str, limit_s: float = 60.0) -> dict:
    """Boot facts of a real process run through the VM's seam, and the vm check judged from them."""
    facts = vm.run_until_exit(["sh", "-c", script], tmp_path / "console.log", limit_s)
    return {**facts, "check": run_checks.vm_check(tmp_path, facts)}


def test_a_guest_that_powered_itself_off_passes(tmp_path):
    run = ended(tmp_path, f"printf '{POWER_OFF_TAIL}'")
    assert run["qemu_exit_code"] == 0 and run["guest_powered_off"] is True and run["host_signal"] is None
    assert run["check"]["ok"] is True, run["check"]


def test_a_process_killed_by_sigterm_fails_naming_the_signal(tmp_path):
    run = ended(tmp_path, f"printf '{POWER_OFF_TAIL}'; kill -TERM $$; sleep 5")
    assert run["qemu_exit_code"] == -15
    assert run["check"]["ok"] is False and "killed by SIGTERM (exit status -15)" in run["check"]["detail"]


@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 is not installed")
def test_the_real_qemu_ended_by_a_host_sigterm_exits_0_and_fails_naming_the_signal(tmp_path):
    """qemu, paused (-S, no guest at all), is sent SIGTERM once its gdb socket exists: qemu_init opens it
    just after os_setup_signal_handling (its pid file comes earlier, before the handlers). It exits 0, and
    only its own line on stderr says why."""
    sock = tmp_path / "gdb.sock"
    run = ended(tmp_path, f"qemu-system-x86_64 -S -accel tcg -nodefaults -display none -m 64 "
                          f"-gdb unix:{sock},server=on,wait=off & q=$!; "
                          f"n=0; while [ ! -S {sock} ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; "
                          "kill -TERM $q; wait $q")
    assert run["qemu_exit_code"] == 0, (tmp_path / "console.log").read_text()  # why exit 0 proves nothing
    assert run["host_signal"] == {"number": 15, "sender": "sh"}
    detail = run["check"]["detail"]
    assert run["check"]["ok"] is False and "qemu ended on the host's SIGTERM (signal 15, sent by sh)" in detail
    assert "the guest never powered itself off" in detail


def test_a_guest_that_panicked_and_reset_fails_although_qemu_exited_0(tmp_path):
    run = ended(tmp_path, "echo '[    3.1] Kernel panic - not syncing: Attempted to kill init!'; "
                          "echo '[    4.1] Rebooting in 1 seconds..'")
    assert run["qemu_exit_code"] == 0 and run["check"]["ok"] is False
    assert "the guest never powered itself off (no 'reboot: Power down' on its console)" in run["check"]["detail"]


def test_a_vm_killed_at_its_wall_clock_limit_fails_naming_the_limit_and_sigkill(tmp_path):
    run = ended(tmp_path, "sleep 30", limit_s=1.0)
    assert run["timed_out"] is True and run["qemu_exit_code"] == -9
    detail = run["check"]["detail"]
    assert "killed at the wall-clock limit of 1.0 s" in detail and "killed by SIGKILL" in detail


def test_the_signal_is_named_from_its_recorded_number_and_the_check_reads_no_recorded_ok(tmp_path):
    # qemu 7.2.22's own line when this session's run was ended by pkill (the VM then passed the old check).
    facts = vm.console_facts("[  OK  ] Finished ...\n"
                             "qemu-system-x86_64: terminating on signal 15 from pid 3929 (pkill)\n")
    assert facts == {"guest_powered_off": False, "host_signal": {"number": 15, "sender": "pkill"}}
    boot = {"qemu_exit_code": 0, "timed_out": False, "ok": True, **facts}
    assert "host's SIGTERM (signal 15, sent by pkill)" in run_checks.vm_check(tmp_path, boot)["detail"]
    assert run_checks.vm_check(tmp_path, {**boot, "host_signal": None, "guest_powered_off": True})["ok"] is True
    assert vm.console_facts("qemu-system-x86_64: terminating on signal 2\n")["host_signal"] == {"number": 2,
                                                                                               "sender": None}
