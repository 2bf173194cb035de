"""Benchmark: the gate with --training-stack against a bare torch process doing the same compile, autocast and
loader work, in the same run, alternating, and the ratio of their medians. Goal: at most 1.2x. Each round also
times the gate without --training-stack (what the three checks add beside it). The first compile (the first
compiled step, inductor's cold compile of the model's forward and backward into an empty cache) is reported
apart, the gate's and the bare process's, since it is most of either's time. CPU seconds (every process of
each run, descendants included) are printed beside the wall times: on a shared host the wall ratio depends on
how the scheduler weighs the gate's worker sessions against the bare process (see docs/performance.md).

The bare process is what a user's script does, written with torch alone (none of the gate's code): the gate's
model and data trained 12 steps eagerly and 12 under torch.compile(fullgraph=True) from the same weights, the
outputs compared; 12 steps under bfloat16 autocast; a DataLoader with 3 workers over 24 samples of 1 MiB, each
hashed. It compiles into an empty cache with the gate's settings (TORCHINDUCTOR_COMPILE_THREADS=1,
torch.set_num_threads(1)), so both do the same compile.

With --against DIR each round also runs the gate of another checkout with --training-stack (say `git archive
efbf635 | tar -x -C DIR`), in alternating order with this one, so a change is measured against what it changes
under the same load.

    .venv/bin/python benchmarks/bench_training_stack.py [--rounds 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.2
BARE = r'''
import ctypes, hashlib, json, os, struct, sys, time

os.environ["TORCHINDUCTOR_CACHE_DIR"] = sys.argv[1]
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
import torch
from torch.utils.data import DataLoader, get_worker_info

torch.set_num_threads(1)
rows = [[((i * 3 + j * 5) % 7 - 3) / 3.0 for j in range(4)] for i in range(32)]
x = torch.tensor(rows)
y = torch.tensor([[0.5 * r[0] - 0.25 * r[1] + 0.75 * r[2] * r[3] + 0.1] for r in rows])


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def train(module, forward, autocast=False):
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    outputs, seconds = [], []
    for _ in range(12):
        started = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = forward(x)
            loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        seconds.append(time.perf_counter() - started)
        outputs.append(out.detach().float().reshape(-1).tolist())
    return outputs, seconds, float(loss)


def sample(i):
    return struct.pack("<1024f", *[float((i * 1031 + j * 7) % 65521) for j in range(1024)]) * 256


class Samples:
    def __len__(self):
        return 24

    def __getitem__(self, i):
        return torch.tensor(i), torch.frombuffer(bytearray(sample(i)), dtype=torch.float32)


if __name__ == "__main__":
    eager = model()
    eager_out, _, _ = train(eager, eager)
    compiled = model()
    compiled_out, seconds, _ = train(compiled, torch.compile(compiled, fullgraph=True))
    assert all(abs(c - e) <= 1e-4 * (1 + abs(e)) for s, t in zip(eager_out, compiled_out) for e, c in zip(s, t))
    autocast_model = model()
    _, _, last = train(autocast_model, autocast_model, autocast=True)
    assert last == last
    seen = {}
    for indices, data in DataLoader(Samples(), batch_size=2, num_workers=3):
        for k in range(len(indices)):
            row = data[k].contiguous()
            seen[int(indices[k])] = hashlib.sha256(ctypes.string_at(row.data_ptr(), row.numel() * 4)).hexdigest()
    assert all(seen[i] == hashlib.sha256(sample(i)).hexdigest() for i in range(24)) and len(seen) == 24
    print(json.dumps({"first_step_s": seconds[0]}))
'''


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the process and every descendant it reaped: the gate's workers,
    the loader's workers, the compiler) and stdout."""
    cpu = cpu_of_children()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[2]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds, cpu_of_children() - cpu, done.stdout


def listed(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also time the gate of the checkout in DIR with --training-stack, in the same rounds")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "scripts" / "platform_runtime_check.py").is_file():
        parser.error("--against: no scripts/platform_runtime_check.py in that folder")
    other_times: list[float] = []
    bare_times, stack_times, gate_times, loads = [], [], [], []
    bare_cpu, stack_cpu, gate_cpu = [], [], []
    bare_first, gate_first, durations = [], [], {"compile": [], "autocast": [], "dataloader": []}
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        (folder / "bare.py").write_text(BARE, encoding="utf-8")
        output = folder / "result.json"
        gate = [sys.executable, "-B", str(ROOT / "scripts" / "platform_runtime_check.py"), "--device", "cpu",
                "--output", str(output)]
        other = None if args.against is None else [
            sys.executable, "-B", str(args.against.resolve() / "scripts" / "platform_runtime_check.py"), "--device",
            "cpu", "--output", str(folder / "other.json"), "--training-stack"]
        for index in range(args.rounds):
            loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
            if other is not None and index % 2 == 0:
                other_times.append(timed(other, folder)[0])
            cache = folder / f"inductor-{index}"  # empty: the same cold compile the gate's fresh cache makes
            seconds, cpu, stdout = timed([sys.executable, "-B", str(folder / "bare.py"), str(cache)], folder)
            bare_times.append(seconds)
            bare_cpu.append(cpu)
            bare_first.append(json.loads(stdout.strip().splitlines()[-1])["first_step_s"])
            seconds, cpu, _ = timed([*gate, "--training-stack"], folder)
            stack_times.append(seconds)
            stack_cpu.append(cpu)
            result = json.loads(output.read_text(encoding="utf-8"))
            if not result["ok"]:
                raise SystemExit(f"the gate failed: {result['failures'][:3]}")
            gate_first.append(result["checks"]["compile"]["first_step_s"])
            for name in durations:
                durations[name].append(result["checks"][name]["duration_s"])
            if other is not None and index % 2 == 1:
                other_times.append(timed(other, folder)[0])
            seconds, cpu, _ = timed(gate, folder)
            gate_times.append(seconds)
            gate_cpu.append(cpu)
            print(f"round {index + 1}: bare {bare_times[-1]:.2f} s, gate --training-stack {stack_times[-1]:.2f} s "
                  f"({stack_times[-1] / bare_times[-1]:.2f}x), gate alone {gate_times[-1]:.2f} s, load {loads[-1]:.1f}",
                  flush=True)
    bare, stack, plain = (statistics.median(t) for t in (bare_times, stack_times, gate_times))
    ratio = stack / bare
    print(f"bare torch process (compile, autocast, loader): median {bare:.2f} s  [{listed(bare_times)}]")
    print(f"gate --training-stack:                           median {stack:.2f} s  [{listed(stack_times)}]")
    print(f"ratio {ratio:.2f}x (goal <= {GOAL}x): {'met' if ratio <= GOAL else 'NOT met'}")
    if other_times:
        other_median = statistics.median(other_times)
        print(f"gate --training-stack of {args.against}: median {other_median:.2f} s  [{listed(other_times)}]  ratio "
              f"{other_median / bare:.2f}x; this gate / that one: {stack / other_median:.2f}x (per round: "
              + ", ".join(f"{g / o:.2f}x" for g, o in zip(stack_times, other_times)) + ")")
    print(f"gate without --training-stack: median {plain:.2f} s; the three checks add {stack - plain:+.2f} s")
    print(f"first compile (the first compiled step): gate median {statistics.median(gate_first):.2f} s "
          f"[{listed(gate_first)}], bare median {statistics.median(bare_first):.2f} s [{listed(bare_first)}]")
    print("the checks' own durations, median: " + ", ".join(
        f"{name} {statistics.median(values):.2f} s" for name, values in durations.items()))
    bare_c, stack_c, plain_c = (statistics.median(t) for t in (bare_cpu, stack_cpu, gate_cpu))
    print(f"CPU seconds (every process of the run), median: bare {bare_c:.2f} [{listed(bare_cpu)}], gate "
          f"--training-stack {stack_c:.2f} [{listed(stack_cpu)}] ({stack_c / bare_c:.2f}x), gate alone {plain_c:.2f}; "
          f"the three checks {stack_c - plain_c:.2f} s of CPU for the bare process's {bare_c:.2f} s "
          f"({(stack_c - plain_c) / bare_c:.2f}x)")
    print(f"load average (1 min) at each round: {listed(loads)}; cpus {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
