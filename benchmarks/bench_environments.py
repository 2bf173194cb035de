"""Benchmark: the real gate in every environment teams build with their own tooling, and how long each takes.
Goal: every one accepted (an honest machine passes), and the gate in each no slower than 1.5x the gate in the
project's own venv, run in the same session as the baseline.

    .venv/bin/python benchmarks/bench_environments.py [--work outputs/bench-environments] [--only NAME ...]

The environments are tests/gate/real_environments.py's MATRIX (Debian's python3 -m venv with and without
--system-site-packages, a plain CPython venv, virtualenv, uv, a conda-style prefix; the team's editable package,
pytest and coverage in the Debian one), built from registry packages: PyPI through this machine's pip
configuration (find-links and file indexes, mapped for uv), Debian's apt. torch is installed in each by uv from
the kept cache dev.py uses. Each gate runs with `--device cpu --require-filesystem <the work dir's type>`.
Prints `N of M accepted`, then per environment its build time, the gate's wall time and its ratio to the
baseline; a refusal names its environment and the gate's first summary line. Exit 0 only when all are accepted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from tests.gate import real_environments as envs  # noqa: E402

GOAL = 1.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "bench-environments")
    parser.add_argument("--only", nargs="*", choices=sorted(envs.MATRIX), help="these environments only")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="also run another checkout's gate in each environment (a commit before a change)")
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    start_load = os.getloadavg()
    matrix = envs.Matrix(work)
    project = envs.Environment("project venv (baseline)", Path(sys.executable), 0.0)
    names = args.only or list(envs.MATRIX)
    runs: dict[str, envs.Run | str] = {}
    other: dict[str, envs.Run] = {}
    baseline: list[float] = []
    for name in names:
        # The baseline beside each environment, alternating, so a shared machine's load moves both sides.
        baseline.append(envs.run_gate(project, work / "work" / f"baseline-{name}",
                                      work / f"baseline-{name}.json").seconds)
        try:
            runs[name] = matrix.run(name)
            if args.against is not None:
                other[name] = matrix.run(name, gate=args.against.resolve() / "scripts" / "platform_runtime_check.py")
        except envs.Unavailable as exc:
            runs[name] = f"not built here: {exc}"
    base = sorted(baseline)[len(baseline) // 2]
    accepted = [name for name, run in runs.items() if isinstance(run, envs.Run) and run.accepted]
    print(f"{len(accepted)} of {len(runs)} accepted")
    print(f"baseline: the gate in the project's own venv ({sys.executable}), median {base:.1f} s "
          f"[{', '.join(f'{s:.1f}' for s in baseline)}]")
    ok = len(accepted) == len(runs)
    for name, run in runs.items():
        if isinstance(run, str):
            print(f"  {name:26s} {run}")
            continue
        ratio = run.seconds / base
        ok = ok and ratio <= GOAL
        verdict = "accepted" if run.accepted else f"REFUSED: {run.refusal()}"
        print(f"  {name:26s} built {run.environment.built_s:6.1f} s  gate {run.seconds:6.1f} s  {ratio:4.2f}x "
              f"(goal <= {GOAL}x)  {verdict}")
        for note in run.environment.notes:
            print(f"  {'':26s} note: {note}")
        if name in other:
            then = other[name]
            print(f"  {'':26s} --against: gate {then.seconds:6.1f} s  "
                  f"{'accepted' if then.accepted else 'REFUSED: ' + then.refusal()}")
    if other:
        print(f"--against {args.against}: {sum(r.accepted for r in other.values())} of {len(other)} accepted")
    for moment, load in (("start", start_load), ("end", os.getloadavg())):
        print(f"load average at the {moment}: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")
    print(f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
