#!/usr/bin/env python3
"""Run the platform runtime gate for a composite action and report it (outputs, summary, annotations).

    python scripts/steps/run_gate.py --output FILE [--device cpu] [--require-list "cuda nfs"]
        [--require-device cpu] [--work-dir DIR] [--keep-workspace true|false] [--timeout S]
        [--collectives N|auto] [--training-stack true|false] [--lock FILE] [--title TEXT]

Inputs arrive as plain arguments from `env:` in the YAML (never `${{ }}` in `run:`). The gate's
own exit code and JSON decide; this exits 1 when the result is not ok, 2 on bad arguments.
`--lock` holds an exclusive lock on FILE for the whole gate run, so GPU jobs sharing a box
run one at a time (Linux/macOS; fcntl.flock, the same lock the flock(1) command takes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: the shared core

from action_io import fail, split_list  # noqa: E402
from platform_runtime.claims import REQUIRABLE as REQUIREMENTS  # noqa: E402
from result_report import judge, publish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "scripts" / "platform_runtime_check.py"


@contextlib.contextmanager
def held_lock(path: str | None) -> Iterator[None]:
    if not path:
        yield
        return
    import fcntl  # POSIX only; a lock file on Windows is a usage error below

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        print(f"waiting for lock {path}", flush=True)
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        print("lock acquired", flush=True)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def gate_command(args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-B", str(GATE), "--device", args.device, "--output", str(args.output)]
    for requirement in split_list(args.require_list):
        command += ["--require", requirement]
    if args.require_device:
        command += ["--require-device", args.require_device]
    if args.require_filesystem:
        command += ["--require-filesystem", args.require_filesystem]
    if args.work_dir:
        command += ["--work-dir", args.work_dir]
    if args.keep_workspace == "true":
        command.append("--keep-workspace")
    if args.timeout:
        command += ["--timeout", args.timeout]
    if args.collectives:  # N or auto: the gate itself refuses anything else (exit 2, with its message)
        command += ["--collectives", args.collectives]
    if args.training_stack == "true":
        command.append("--training-stack")
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, required=True, help="where the gate writes its JSON result")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--require-list", default="", help="requirements separated by spaces, commas or lines")
    parser.add_argument("--require-device", default="")
    parser.add_argument("--require-filesystem", default="")
    parser.add_argument("--work-dir", default="")
    parser.add_argument("--keep-workspace", default="false", choices=("true", "false"))
    parser.add_argument("--timeout", default="")
    parser.add_argument("--collectives", default="", help="the gate's --collectives (N or auto); empty: not run")
    parser.add_argument("--training-stack", default="false", choices=("true", "false", ""),
                        help="'true' adds the gate's --training-stack (compile, autocast, dataloader); empty: false")
    parser.add_argument("--lock", default="", help="hold an exclusive lock on this file while the gate runs")
    parser.add_argument("--title", default="platform runtime gate")
    args = parser.parse_args(argv)
    unknown = [item for item in split_list(args.require_list) if item not in REQUIREMENTS]
    if unknown:
        return fail(f"unknown requirement(s) {', '.join(unknown)}; choose from {', '.join(REQUIREMENTS)}")
    if args.lock and os.name == "nt":
        return fail("--lock needs flock (Linux or macOS)")
    if args.output.exists():
        return fail(f"{args.output} already exists; the gate result must be new")
    command = gate_command(args)
    print("running:", " ".join(command[1:]), flush=True)
    # From the step's own working directory (the job's workspace), so a gate without --work-dir
    # tests the file system the job works on, not wherever the action was checked out.
    with held_lock(args.lock):
        code = subprocess.run(command).returncode
    verdict = judge(args.output, args.title, code)
    publish(verdict)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
