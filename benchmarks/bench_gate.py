"""Benchmark: the whole gate against a baseline process that only imports torch and runs the same 12 SGD steps, in
the same run, alternating, and the ratio of their medians. Goal: at most 1.15x. With --collectives N each round
also runs the gate with `--collectives N` (gloo on the CPU) and prints what the check adds beside the gate
without it, and its ranks' time per op (no goal: it is a cost to know, not a budget). Each round also times the
torch RECORD check alone (every file of torch's dist-info RECORD hashed and sized, in a fresh process, as the
gate's parent runs it in a thread beside the device worker), and the distributions torch requires hashed after
it, and prints it against the baseline: what it would add if it did not hide behind torch's import, and the
gate's own record of it. With --against DIR each round also runs the gate of another checkout (say `git archive
main | tar -x -C DIR`), in alternating order with this one, so a change is measured against what it changes under
the same load.

    .venv/bin/python benchmarks/bench_gate.py [--rounds 5] [--collectives 2] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.15
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


def timed(command: list[str], cwd: Path, check: bool = True) -> float:
    """Wall seconds of one run; check=False for the collective runs, whose failure is printed, not raised."""
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


RECORD_CHECK = """
import json, sys
sys.path.insert(0, {scripts!r})
import time
from platform_runtime import dependencies, isolation, torch_build, torch_record
site_dir = isolation.locate_torch().site_dir
dist_info = (torch_build.read_build(site_dir) or {{}}).get("dist_info")
report = torch_record.verify(site_dir, dist_info)
started = time.monotonic()
required = dependencies.verify_required(isolation.torch_search_dirs(), site_dir, dist_info)["distributions"]
print(json.dumps({{**{{k: report[k] for k in ("verified", "files", "bytes", "duration_s")}},
                  "required_s": time.monotonic() - started, "required": len(required),
                  "required_bytes": sum(r["bytes"] for r in required)}}))
"""


def record_check(cwd: Path) -> tuple[float, dict]:
    """Wall seconds of the RECORD check alone (interpreter start included) and what it reported."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-I", "-B", "-c", RECORD_CHECK.format(scripts=str(ROOT / "scripts"))],
                          cwd=cwd, check=True, capture_output=True, text=True)
    return time.perf_counter() - started, json.loads(done.stdout.strip().splitlines()[-1])


def listed(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def collective_costs(results: list[dict], gate_median: float, with_median: float, times: list[float]) -> None:
    checks = [r["checks"]["collectives"] for r in results]
    failed = [c["reason"] for c in checks if not c["ok"]]
    print(f"gate --collectives {checks[0].get('world_size')} ({checks[0].get('backend')}): median "
          f"{with_median:.2f} s  [{listed(times)}]  adds {with_median - gate_median:+.2f} s "
          f"({with_median / gate_median:.2f}x the gate without it)")
    print(f"  the check's own duration (launcher, torch imports, every rank): median "
          f"{statistics.median(c['duration_s'] for c in checks):.2f} s")
    ops = checks[0]["ranks"][0]["ops"] if checks[0]["ranks"] else {}
    per_op = {op: statistics.median(max(rank["ops"].get(op, {}).get("s", 0.0) for rank in c["ranks"]) for c in checks)
              for op in ops}
    print("  slowest rank per op, median ms: " + ", ".join(f"{op} {1000 * s:.1f}" for op, s in per_op.items()))
    if failed:
        print(f"  {len(failed)} run(s) of the check FAILED: {failed[0][:200]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--collectives", type=int, metavar="N", help="also time the gate with --collectives N")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also time the gate of the checkout in DIR (its scripts/), in the same rounds")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "scripts" / "platform_runtime_check.py").is_file():
        parser.error("--against: no scripts/platform_runtime_check.py in that folder")
    gate_times, baseline_times, with_times, with_results, other_times = [], [], [], [], []
    record_times, record_reports, in_gate, loads, after_report = [], [], [], [], []
    with tempfile.TemporaryDirectory() as work:
        gate = [sys.executable, "-B", str(ROOT / "scripts" / "platform_runtime_check.py"), "--device", "cpu",
                "--output", str(Path(work) / "result.json")]
        baseline = [sys.executable, "-B", "-c", BASELINE]
        other = None if args.against is None else [sys.executable, "-B", str(
            args.against.resolve() / "scripts" / "platform_runtime_check.py"), "--device", "cpu", "--output",
            str(Path(work) / "other.json")]
        for index in range(args.rounds):
            loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
            baseline_times.append(timed(baseline, Path(work)))
            if other is not None and index % 2 == 0:
                other_times.append(timed(other, Path(work)))
            gate_times.append(timed(gate, Path(work)))
            if other is not None and index % 2 == 1:
                other_times.append(timed(other, Path(work)))
            views = json.loads((Path(work) / "result.json").read_text(encoding="utf-8"))["device"].get("views") or {}
            in_gate.append((views.get("record") or {}).get("duration_s"))
            after_report.append((views.get("distributions") or {}).get("after_report_s"))
            seconds, report = record_check(Path(work))
            record_times.append(seconds)
            record_reports.append(report)
            if args.collectives:
                with_times.append(timed([*gate, "--collectives", str(args.collectives)], Path(work), check=False))
                with_results.append(json.loads((Path(work) / "result.json").read_text(encoding="utf-8")))
    gate_median, baseline_median = statistics.median(gate_times), statistics.median(baseline_times)
    ratio = gate_median / baseline_median
    print(f"baseline (import torch + 12 SGD steps): median {baseline_median:.2f} s  "
          f"[{', '.join(f'{t:.2f}' for t in baseline_times)}]")
    print(f"gate (every check, CPU, this file system): median {gate_median:.2f} s  "
          f"[{', '.join(f'{t:.2f}' for t in gate_times)}]")
    print("per round, gate/baseline (1-min load average before it): "
          + ", ".join(f"{g / b:.2f}x ({load:.1f})" for g, b, load in zip(gate_times, baseline_times, loads)))
    print(f"ratio gate/baseline: {ratio:.2f}x (goal <= {GOAL:.2f}x) -> {'OK' if ratio <= GOAL else 'OVER'}")
    if other_times:
        other_median = statistics.median(other_times)
        print(f"gate of {args.against}: median {other_median:.2f} s  [{listed(other_times)}]  ratio "
              f"{other_median / baseline_median:.2f}x; this gate / that one: {gate_median / other_median:.2f}x "
              "(per round: " + ", ".join(f"{g / o:.2f}x" for g, o in zip(gate_times, other_times)) + ")")
    record_median = statistics.median(record_times)
    print(f"torch RECORD check alone ({record_reports[0]['files']} files, {record_reports[0]['bytes'] / 1e6:.0f} MB, "
          f"verified {all(r['verified'] for r in record_reports)}): median {record_median:.2f} s  "
          f"[{listed(record_times)}] = {record_median / baseline_median:.2f}x the baseline if it were serial; in the "
          f"gate, beside the device worker: median {statistics.median(t for t in in_gate if t is not None):.2f} s")
    required = [r["required_s"] for r in record_reports]
    print(f"the {record_reports[0]['required']} distributions torch requires, hashed after it in the same process "
          f"({record_reports[0]['required_bytes'] / 1e6:.0f} MB): median {statistics.median(required):.2f} s "
          f"[{listed(required)}]; in the gate, the loaded-files check ended after the worker's report by: median "
          f"{statistics.median(t for t in after_report if t is not None):.2f} s (its wait for the RECORD check "
          "included)" if all(t is not None for t in after_report) else "")
    if args.collectives:
        collective_costs(with_results, gate_median, statistics.median(with_times), with_times)
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
