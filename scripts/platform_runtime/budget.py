"""The gate's time budget: --timeout counts from the gate process's own start and ends at its exit.

A run cut by --timeout still has to kill its children (and wait a moment for each to go), remove its workspace,
judge and write its result; before this budget all of that came after the deadline (a gate given 90 s ended
after 94.6 s, and on a hard NFS mount whose server was gone, with a 30 s cleanup, later still). The budget keeps
that teardown inside --timeout, in this order from the end:

    exit_at      = start + timeout - EXIT_RESERVE_S        (judge, write the result, the interpreter's exit)
    cleanup slot = min(--cleanup-timeout, CLEANUP_SHARE of --timeout, at least CLEANUP_MIN_S) + CLEANUP_GRACE_S
    checks_at    = exit_at - cleanup slot - KILL_GRACE_S   (every check's deadline is capped here)

so that a check killed at checks_at has KILL_GRACE_S to go (or is abandoned and named), the cleanup then has at
least its slot, and the process is gone by start + timeout. A run whose checks end early gives its cleanup the
whole --cleanup-timeout, still capped by exit_at.
"""

from __future__ import annotations

import os
import time

from rules.beside_checks import MIN_WAIT_S  # the least any wait gets once the budget is spent (the judge's too)

from platform_runtime.children import KILL_GRACE_S, Deadline

EXIT_RESERVE_S = 1.0
CLEANUP_MIN_S = 3.0
CLEANUP_SHARE = 0.05
CLEANUP_GRACE_S = 1.0  # a killed cleanup (rmtree on a hung mount) is abandoned after this, not awaited


def process_age() -> float:
    """Seconds since this process started (its interpreter's start and imports count against --timeout): from
    /proc/self/stat's start time against the boot-time clock it is measured on. 0.0 where that is unknown."""
    try:
        with open("/proc/self/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    return age if 0.0 <= age < 3600.0 else 0.0


class Budget:
    """What a run of --timeout seconds may spend on each part; instants are on the monotonic clock."""

    def __init__(self, timeout_s: float, cleanup_timeout_s: float, age_s: float | None = None) -> None:
        now = time.monotonic()
        self.timeout_s = timeout_s
        self.started = now - (process_age() if age_s is None else age_s)
        self.exit_at = self.started + max(timeout_s - EXIT_RESERVE_S, timeout_s / 2)
        usable = self.exit_at - self.started
        self.cleanup_slot_s = min(cleanup_timeout_s, max(CLEANUP_MIN_S, CLEANUP_SHARE * timeout_s)) + CLEANUP_GRACE_S
        # A tiny --timeout: the checks keep at least half of it, the teardown shrinks to fit.
        reserve = min(self.cleanup_slot_s + KILL_GRACE_S, usable / 2)
        self.checks_at = self.exit_at - reserve
        self.checks = Deadline.until(self.checks_at, timeout_s)

    def exit_remaining(self) -> float:
        return max(0.0, self.exit_at - time.monotonic())

    def kill_grace(self) -> float:
        """How long a child killed now may take to go before it is abandoned: KILL_GRACE_S, less once the
        checks' deadline is past (the cleanup slot is not the kills')."""
        left = self.exit_at - self.cleanup_slot_s - time.monotonic()
        return max(MIN_WAIT_S, min(KILL_GRACE_S, left))

    def cleanup_deadline(self, wanted_s: float) -> tuple[float, bool]:
        """The cleanup's deadline (its own, or the short one of a hung file system) capped by what is left
        before exit_at, less its kill grace; and whether the budget, not the cleanup's own deadline, set it."""
        left = max(MIN_WAIT_S, self.exit_remaining() - CLEANUP_GRACE_S)
        return (left, True) if left < wanted_s else (wanted_s, False)
