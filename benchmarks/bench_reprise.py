"""Benchmark: the checkpoint-resume protocol's wall time against one `train.py --steps 10` process.

Baseline, in the same run: `python -B train.py --steps 10 --output DIR` (one torch process).
Measured: `python -B verify_resume.py --output DIR` end to end (four processes, two side by side at
a time, plus the three per-RNG controls inside process 4, plus the comparisons). Also measured, for
reference: the specification's four commands one after another (what a sequential protocol costs).
Goal: protocol <= 2.5x the baseline (medians). Exit 1 when the goal is missed or a command fails.
Each measurement is repeated --repeat times, interleaved, and the median is reported; the load
average is printed because other work on the machine inflates every wall time. CPU time (user+sys
of all processes) is printed too: load does not change it, and total CPU / cores bounds the wall ratio.

    python benchmarks/bench_reprise.py [--repeat 3] [--no-sequential] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import resource
except ImportError:  # Windows: wall time only
    resource = None

ROOT = Path(__file__).resolve().parent.parent
REPRISE = ROOT / "scripts" / "reprise"
GOAL = 2.5


CPU_SECONDS: dict[str, list[float]] = {"baseline": [], "protocol": []}


def children_cpu() -> float:
    """User + system seconds of every reaped child (and theirs): load on the machine does not change it."""
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], label: str | None = None) -> float:
    cpu = children_cpu()
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, "-B", *args], cwd=REPRISE, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"bench_reprise: {' '.join(args[:1])} exited {completed.returncode}:\n"
                         f"{completed.stdout[-2000:]}{completed.stderr[-2000:]}")
    if label:
        CPU_SECONDS[label].append(children_cpu() - cpu)
    return elapsed


def sequential(work: Path) -> float:
    """The specification's four commands, one after another."""
    cut = str(work / "coupure")
    return sum(timed(args) for args in (
        ["train.py", "--steps", "10", "--output", str(work / "continu")],
        ["train.py", "--steps", "5", "--output", cut],
        ["train.py", "--steps", "5", "--resume", f"{cut}/checkpoint.pt", "--output", str(work / "reprise")],
        ["train.py", "--steps", "5", "--resume", f"{cut}/checkpoint.pt", "--omit-rng-restore",
         "--output", str(work / "reprise-incomplete")],
    ))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-sequential", action="store_true", help="skip the sequential reference")
    parser.add_argument("--work-dir", type=Path, help="where the runs go (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-reprise-", dir=args.work_dir))
    baseline, protocol, serial = [], [], []
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    try:
        for index in range(args.repeat):
            baseline_args = ["train.py", "--steps", "10", "--output", str(work / f"baseline-{index}")]
            baseline.append(timed(baseline_args, "baseline"))
            protocol.append(timed(["verify_resume.py", "--output", str(work / f"protocol-{index}")], "protocol"))
            if not args.no_sequential:
                serial.append(sequential(work / f"sequential-{index}"))
            print(f"repeat {index + 1}: baseline {baseline[-1]:.2f} s, protocol {protocol[-1]:.2f} s"
                  + (f", sequential {serial[-1]:.2f} s" if serial else ""), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(baseline)
    ratio = statistics.median(protocol) / base
    print(f"one train.py --steps 10 process (baseline): {base:.2f} s (median of {len(baseline)})")
    print(f"verify_resume.py, side by side:             {statistics.median(protocol):.2f} s  ratio {ratio:.2f}x "
          f"(goal <= {GOAL}x)")
    if len(baseline) > 1:
        print(f"quietest of each (min):                     baseline {min(baseline):.2f} s, protocol "
              f"{min(protocol):.2f} s, ratio {min(protocol) / min(baseline):.2f}x")
    if serial:
        print(f"the four commands one after another:        {statistics.median(serial):.2f} s  ratio "
              f"{statistics.median(serial) / base:.2f}x (without the per-RNG controls or the comparisons)")
    if resource is not None:
        cpu_base, cpu_protocol = statistics.median(CPU_SECONDS["baseline"]), statistics.median(CPU_SECONDS["protocol"])
        cores = os.cpu_count() or 1
        print(f"CPU time (user+sys): baseline {cpu_base:.2f} s, protocol {cpu_protocol:.2f} s, "
              f"ratio {cpu_protocol / cpu_base:.2f}x; on {cores} idle cores the protocol cannot beat "
              f"{cpu_protocol / cores / cpu_base:.2f}x")
    if load_before is not None:
        print(f"load average before / after: {load_before[0]:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("goal met" if ratio <= GOAL else "GOAL MISSED")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
