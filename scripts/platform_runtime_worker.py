#!/usr/bin/env python3
"""Entry point of the gate's file-system workers: `python -I -B platform_runtime_worker.py fs_worker ROLE ...`.

Workers run isolated (`python -I`), which leaves every script's own folder off sys.path, so this entry point
puts `scripts/` there (the one place the gate's workers edit sys.path) and runs the named worker module of the
package as `__main__`. The device worker is started as its own file and does the same for itself.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

WORKERS = ("fs_worker", "collective_worker", "killed_writer", "torch_record")


def yield_cpu_to_the_device_worker() -> None:
    """Lower this worker's scheduling weight. Each worker starts its own session, and with Linux's autogroup
    scheduling every session is weighed as a whole, so fourteen file-system workers would each get the device
    worker's share while torch imports (the gate's critical path). They check correctness, not speed.
    Elsewhere (no /proc/self/autogroup, or not permitted) nothing changes."""
    try:
        with open("/proc/self/autogroup", "w") as handle:
            handle.write("10")
    except OSError:
        pass


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in WORKERS:
        sys.stderr.write(f"usage: platform_runtime_worker.py {{{','.join(WORKERS)}}} ARGS...\n")
        sys.exit(2)
    if sys.argv[1] in ("fs_worker", "torch_record"):  # not the collective ranks: they share the launcher's session
        yield_cpu_to_the_device_worker()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    runpy.run_module(f"platform_runtime.{sys.argv.pop(1)}", run_name="__main__", alter_sys=True)
