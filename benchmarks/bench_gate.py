"""Benchmark: the whole gate against a baseline process that only imports torch and runs the same 12 SGD
steps, in the same run, alternating, and the ratio of their medians. Goal: at most 1.3x.

    .venv/bin/python benchmarks/bench_gate.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.3
BASELINE = """
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for _ in range(12):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
assert torch.isfinite(loss)
"""


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    gate_times, baseline_times = [], []
    with tempfile.TemporaryDirectory() as work:
        gate = [sys.executable, "-B", str(ROOT / "scripts" / "platform_runtime_check.py"), "--device", "cpu",
                "--output", str(Path(work) / "result.json")]
        baseline = [sys.executable, "-B", "-c", BASELINE]
        for _ in range(args.rounds):
            baseline_times.append(timed(baseline, Path(work)))
            gate_times.append(timed(gate, Path(work)))
    gate_median, baseline_median = statistics.median(gate_times), statistics.median(baseline_times)
    ratio = gate_median / baseline_median
    print(f"baseline (import torch + 12 SGD steps): median {baseline_median:.2f} s  "
          f"[{', '.join(f'{t:.2f}' for t in baseline_times)}]")
    print(f"gate (every check, CPU, this file system): median {gate_median:.2f} s  "
          f"[{', '.join(f'{t:.2f}' for t in gate_times)}]")
    print(f"ratio gate/baseline: {ratio:.2f}x (goal <= {GOAL:.2f}x) -> {'OK' if ratio <= GOAL else 'OVER'}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
