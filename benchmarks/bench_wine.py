"""Benchmark: the gate under Wine (Windows' CPython 3.12, the Wine lock) against the gate natively (this venv),
alternating in one run; and `python3 dev.py wine`'s set-up, from nothing and from its cache.

    .venv/bin/python benchmarks/bench_wine.py [--rounds 2] [--from-nothing] [--work outputs/bench-wine]

Each round runs `platform_runtime_check.py --device cpu --require-device cpu` natively, then the same command
with the Windows Python under Wine (tools/wine/, built or found in the user cache first), and prints both wall
times (the gate's own duration_s beside), the 1-minute load average before each, and the ratio of medians Wine /
native. --from-nothing also times a build in an empty cache folder (downloads, Wine prefix, layout, the Windows
pip's install), then the same build found in that cache, and removes the folder. The Wine package itself (apt) is
not timed. Linux x86_64 with Wine installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from wine import build, jobs, session  # noqa: E402


def load() -> float:
    return os.getloadavg()[0]


def native_gate(out: Path) -> tuple[float, dict]:
    out.mkdir(parents=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "platform_runtime_check.py"), "--device", "cpu",
                           "--require-device", "cpu", "--work-dir", str(out), "--output", str(out / "gate.json")],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_wine: the native gate failed (exit {done.returncode}): {done.stderr[-600:]}")
    return seconds, json.loads((out / "gate.json").read_text(encoding="utf-8"))


def wine_gate(built: build.Built, wine: session.Session, out: Path) -> tuple[float, dict]:
    out.mkdir(parents=True)
    job = jobs.gate(out)
    done = wine.run([str(built.python), *job.arguments], job.cwd, job.timeout_s)
    if done.returncode != 0:
        raise SystemExit(f"bench_wine: the gate under Wine failed (exit {done.returncode}): {done.output[-600:]}")
    return done.seconds, json.loads(job.output.read_text(encoding="utf-8"))


def from_nothing() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-wine-cache-"))
    try:
        for label in ("from nothing", "from the cache"):
            before, started = load(), time.monotonic()
            built = build.build(root, echo=False)
            steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in built.seconds.items())
            print(f"set-up {label}: {time.monotonic() - started:.1f} s ({steps}; load {before:.1f})", flush=True)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        print(f"cache size: {size / 2**30:.2f} GiB", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--from-nothing", action="store_true", help="also time a build in an empty cache")
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "bench-wine")
    args = parser.parse_args(argv)
    if shutil.which("wine") is None:
        print(f"bench_wine: Wine is not installed ({build.APT_INSTALL})", file=sys.stderr)
        return 2
    if args.from_nothing:
        from_nothing()
    built = build.build(echo=False)
    print(f"Windows CPython under {built.wine} ({'cache' if built.from_cache else 'built now'}); native: "
          f"{sys.version.split()[0]} at {sys.executable}", flush=True)
    shutil.rmtree(args.work, ignore_errors=True)
    native_times, wine_times = [], []
    with session.Session(built.prefix, built.home) as wine:
        for index in range(args.rounds):
            before = load()
            seconds, result = native_gate(args.work / f"native-{index}")
            native_times.append(seconds)
            print(f"round {index + 1}: native {seconds:6.1f} s (duration_s {result['duration_s']}, load {before:.1f})",
                  flush=True)
            before = load()
            seconds, result = wine_gate(built, wine, args.work / f"wine-{index}")
            wine_times.append(seconds)
            print(f"round {index + 1}: Wine   {seconds:6.1f} s (duration_s {result['duration_s']}, load {before:.1f}, "
                  f"{result['platform']['wine']})", flush=True)
    native, under_wine = statistics.median(native_times), statistics.median(wine_times)
    print(f"median: native {native:.1f} s, Wine {under_wine:.1f} s: Wine / native {under_wine / native:.2f}x",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
