"""Which of the gate's workers yield the CPU, for how long, and the yielding itself.

Each worker starts its own session, and with Linux's autogroup scheduling every session is weighed as a whole:
fourteen file-system workers would each get the device worker's share while it imports torch. The gate's time is
its critical path's: the device worker, and with --training-stack the compile check (torch, torch._dynamo and
inductor's first compile in one thread, most of the run). A worker that checks correctness, not speed, lowers its
session's weight (nice 10), so the critical path keeps a core while it uses what is left.

The file-system workers spend milliseconds of CPU each and yield to their end. The autocast and data-loader
checks spend seconds importing torch (autocast torch._dynamo too, through torch.optim) exactly while compile
imports it, so they yield while they import, then take their full weight back where their own timed work begins
(`full_share`): the data loader's wait has a deadline of its own to keep, and its worker processes are forked
from a process with one thread. On a machine loaded by other sessions a weight of nice 10 could starve an import
past the check's deadline, so a timer takes the full weight back anyway once a quarter of the deadline passed.
"""

from __future__ import annotations

import errno
import threading
import time

# worker module -> the checks among its first arguments that yield; None: every run of that worker yields.
YIELDING: dict[str, tuple[str, ...] | None] = {
    "fs_worker": None,
    "torch_record": None,
    "training_worker": ("autocast", "dataloader"),  # compile is the training stack's critical path
}
NICE = "10"  # 19 starves a worker on a loaded machine (docs/performance.md)
FULL = "0"
RESTORE_FRACTION = 0.25  # of what a training check's deadline leaves when it starts
AUTOGROUP = "/proc/self/autogroup"
# An unprivileged write of any autogroup's weight within 100 ms of another one on the machine is refused (EAGAIN).
RETRIES = 10
RETRY_S = 0.11


def yields(worker: str, args: list[str]) -> bool:
    """Whether a worker started with these arguments lowers its weight. Not the collective ranks: they share
    their launcher's session, whose weight is the gate's."""
    if worker not in YIELDING:
        return False
    checks = YIELDING[worker]
    return checks is None or (bool(args) and args[0] in checks)


def restore_after(worker: str, args: list[str], now: float) -> float | None:
    """Seconds from `now` after which a yielding worker takes its full weight back: a training check (CHECK
    FOLDER DEVICE DEADLINE_AT ...) after RESTORE_FRACTION of what its deadline leaves; None: it yields to its end."""
    if worker != "training_worker" or len(args) < 4:
        return None
    try:
        deadline_at = float(args[3])
    except ValueError:
        return None
    return max(0.0, (deadline_at - now) * RESTORE_FRACTION)


def _write(value: str, autogroup: str, retries: int) -> bool:
    for attempt in range(retries + 1):
        try:
            with open(autogroup, "w") as handle:
                handle.write(value)
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN or attempt >= retries:
                return False
        time.sleep(RETRY_S)
    return False  # retries below 0: nothing was tried


class _State:
    yielded = False  # this process lowered its weight and has not taken it back
    timer: threading.Timer | None = None


def on_start(worker: str, args: list[str], autogroup: str = AUTOGROUP, now: float | None = None) -> bool:
    """What a worker started through the entry point does about its weight; whether it yielded. A training check
    imports torch for seconds, so a refused write is retried for up to a second (on a host without CAP_SYS_ADMIN
    the kernel takes one autogroup write per 100 ms machine-wide, and the gate starts its workers together) and a
    timer takes the weight back; a file-system worker yields at once or not at all."""
    if not yields(worker, args):
        return False
    restore = restore_after(worker, args, time.time() if now is None else now)
    if not yield_cpu(autogroup, retries=0 if restore is None else RETRIES):
        return False
    if restore is not None:
        restore_later(restore, autogroup)
    return True


def yield_cpu(autogroup: str = AUTOGROUP, retries: int = 0) -> bool:
    """Lower this session's autogroup weight; whether it was lowered. Elsewhere (no autogroup file, or not
    permitted) nothing changes."""
    _State.yielded = _write(NICE, autogroup, retries)
    return _State.yielded


def _restore(autogroup: str) -> None:
    if _write(FULL, autogroup, RETRIES):
        _State.yielded = False


def restore_later(seconds: float, autogroup: str = AUTOGROUP) -> None:
    """Take the full weight back after `seconds`, from a daemon thread (a weight of 0 needs no privilege)."""
    timer = threading.Timer(seconds, _restore, (autogroup,))
    timer.daemon = True
    _State.timer = timer
    timer.start()


def full_share(autogroup: str = AUTOGROUP) -> None:
    """Where a yielding check's own timed work begins: the timer stopped and its thread gone (what forks next
    forks a process of one thread), and the full weight taken back. Nothing where this process did not yield."""
    timer, _State.timer = _State.timer, None
    if timer is not None:
        timer.cancel()
        timer.join()
    if _State.yielded:
        _State.yielded = False
        _write(FULL, autogroup, RETRIES)
