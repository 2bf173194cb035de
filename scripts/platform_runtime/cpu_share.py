"""Which of the gate's workers yield the CPU, and the yielding itself.

Each worker starts its own session, and with Linux's autogroup scheduling every session is weighed as a whole:
fourteen file-system workers would each get the device worker's share while it imports torch. The gate's time is
its critical path's: the device worker, and with --training-stack the compile check (torch, torch._dynamo and
inductor's first compile in one thread, most of the run). Every other worker checks correctness, not speed, and
lowers its session's weight (nice 10), so the critical path keeps a core while they use what is left.
"""

from __future__ import annotations

# worker module -> the checks among its first arguments that yield; None: every run of that worker yields.
YIELDING: dict[str, tuple[str, ...] | None] = {
    "fs_worker": None,
    "torch_record": None,
    "training_worker": ("autocast", "dataloader"),  # compile keeps its share: the training stack's critical path
}
NICE = "10"  # 19 starves a worker on a loaded machine (docs/performance.md)
AUTOGROUP = "/proc/self/autogroup"


def yields(worker: str, args: list[str]) -> bool:
    """Whether a worker started with these arguments lowers its weight. Not the collective ranks: they share
    their launcher's session, whose weight is the gate's."""
    if worker not in YIELDING:
        return False
    checks = YIELDING[worker]
    return checks is None or (bool(args) and args[0] in checks)


def yield_cpu(autogroup: str = AUTOGROUP) -> bool:
    """Lower this session's autogroup weight; whether it was lowered. Elsewhere (no autogroup file, or not
    permitted) nothing changes."""
    try:
        with open(autogroup, "w") as handle:
            handle.write(NICE)
    except OSError:
        return False
    return True
