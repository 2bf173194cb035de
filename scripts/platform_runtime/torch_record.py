"""Every file torch's dist-info RECORD lists, hashed and sized against it, and every file in the torch
package that RECORD does not list: a torch edited after install (a patched __init__.py, a swapped library,
a .pyc forged with its source's mtime and size) is not the build it names.

A RECORD is written by whoever installs the files, so a fake torch can write its own; what this adds is that
the files on disk are exactly the ones it lists, so the other views (the backend libraries the device worker
really mapped, the kernel driver's list of GPUs) judge the build the RECORD names. It runs in a process of its
own, collected by a thread of the gate's parent, while the device worker imports torch, and then checks the
distributions torch requires the same way (platform_runtime.dependencies); benchmarks/bench_gate.py measures
it alone. The RECORD rules themselves are platform_runtime.dist_record's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from platform_runtime import dependencies, interpreter_state, isolation
from platform_runtime.dist_record import MAX_NAMED, own_bytecode_source, parse_record, verify_distribution  # noqa: F401 - its API

DEPENDENCIES_KEY = "dependencies"  # the closure's report, beside torch's own in the worker's output


def verify(site_dir: Path | None, dist_info: str | None) -> dict:
    """{"verified", "files", "bytes", "duration_s", "problems", "bytecode_unlisted"}: verified only when RECORD
    exists, lists the torch package, and every listed file has its size and hash, and nothing unlisted lies in
    torch/."""
    return verify_distribution(site_dir, dist_info, "torch", folders=["torch"])


def main(argv: list[str]) -> int:
    """`platform_runtime_worker.py torch_record SITE_DIR DIST_INFO`: the check in a process of its own, at the
    file-system workers' low scheduling weight, so hashing 700 MB yields the CPU to the device worker. Its
    report carries, under DEPENDENCIES_KEY, the same check of every distribution torch requires."""
    site_dir, dist_info = (argv + ["", ""])[:2]
    site = Path(site_dir) if site_dir else None
    report = verify(site, dist_info or None)
    report[DEPENDENCIES_KEY] = dependencies.verify_required(isolation.torch_search_dirs(), site, dist_info or None)
    report[interpreter_state.STARTUP_KEY] = interpreter_state.worker_facts()
    sys.stdout.write(json.dumps(report, sort_keys=True))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
