#!/usr/bin/env python3
"""Entry point of the gate's file-system workers:
`python -I -B [-X platform_runtime_hold] platform_runtime_worker.py fs_worker ROLE ...`.

Workers run isolated (`python -I`), which leaves every script's own folder off sys.path, so this entry point
puts `scripts/` there (the one place the gate's workers edit sys.path) and runs the named worker module of the
package as `__main__`. The device worker is started as its own file and does the same for itself.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

WORKERS = ("fs_worker", "collective_worker", "killed_writer", "torch_record", "training_worker")


def hold_after_report() -> None:
    """-X platform_runtime_hold: with the report printed, wait for the gate to close stdin, so that it reads this
    live process's /proc/<pid>/status and maps from outside (platform_runtime.worker_watch)."""
    try:
        sys.stdout.flush()
        sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        pass


def run_held(module: str) -> None:
    """Run the worker; on its own end (a return, or an exit with 0 or 1: its report, or its error's, printed),
    hold. Any other exit (a usage error, prints no report) ends at once, so the gate never waits for a report
    that will not come."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as end:
        if end.code in (0, 1, None):
            hold_after_report()
        raise
    hold_after_report()


if __name__ == "__main__":
    hold = bool(sys._xoptions.get("platform_runtime_hold"))  # -X platform_runtime_hold (worker_watch.HOLD)
    if len(sys.argv) < 2 or sys.argv[1] not in WORKERS:
        sys.stderr.write(f"usage: platform_runtime_worker.py {{{','.join(WORKERS)}}} ARGS...\n")
        sys.exit(2)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from platform_runtime import cpu_share

    cpu_share.on_start(sys.argv[1], sys.argv[2:])
    module = f"platform_runtime.{sys.argv.pop(1)}"
    if hold:
        run_held(module)
    else:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
