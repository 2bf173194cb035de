"""Benchmark: installing the runtime pins into a fresh venv, three ways, alternating in one run:
pip (prepare_python's pip path, what every job ran before uv), uv with an empty cache, uv with its cache
kept. Medians and the ratios against pip. Goals: empty cache <= 0.25x pip, kept cache <= 0.05x pip.

    .venv/bin/python benchmarks/bench_install.py [--rounds 3] [--work outputs/bench-install]

Every install is `scripts/steps/prepare_python.py` as the actions run it (venv, hash-checked lock, files
read back against RECORD, in threads: scripts/steps/record_check.py), from one file:// index of a local
wheelhouse: the wheels come from that folder, filled once (torch from pip's find-links folder, the rest
downloaded by pip from the configured index and checked against requirements/lock/linux-cpu.txt), so all
three read the same bytes and no network is timed.
uv itself is installed once (its own time is printed) and kept, as the actions keep it with the cache.
Linux x86_64 only (the lock it reads is linux-cpu).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import installer  # noqa: E402
import runtime_lock  # noqa: E402

GOALS = {"uv, empty cache": 0.25, "uv, kept cache": 0.05}
PREPARE = ROOT / "scripts" / "steps" / "prepare_python.py"
# The interpreter this venv was made from: it has no torch, so prepare_python really installs.
BASE = Path(getattr(sys, "_base_executable", sys.executable))


def fill_wheelhouse(wheels: Path, lock: Path) -> str:
    """The lock's wheels for this interpreter, in one folder; returns where they came from, in words."""
    wheels.mkdir(parents=True, exist_ok=True)
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    torch = [w for folder in found for w in Path(folder).glob("torch-*+cpu-*.whl")]
    for wheel in torch:
        if not (wheels / wheel.name).exists():
            shutil.copyfile(wheel, wheels / wheel.name)
    subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                    "--only-binary", ":all:", "--require-hashes", "-r", str(lock), "-d", str(wheels)], check=True)
    # What `uv venv --seed` puts in a venv (pip, and on 3.11 setuptools, wheel, packaging): on a runner it
    # comes from PyPI into the kept cache; here from the same folder, or uv's venv falls back to python -m venv.
    subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                    "--only-binary", ":all:", "pip", "setuptools", "wheel", "packaging", "-d", str(wheels)], check=True)
    _simple_index(wheels)
    count = len(list(wheels.glob("*.whl")))
    return (f"a local wheelhouse of {count} wheels: torch from pip's find-links folder "
            f"({', '.join(w.name for w in torch) or 'none there'}), the rest downloaded by pip from its "
            f"configured index, all hash-checked against {lock.relative_to(ROOT)}")


def _simple_index(wheels: Path) -> None:
    """wheels/simple/<name>/index.html (PEP 503, with SHA-256 fragments): one file:// index of the folder."""
    import hashlib
    import re

    by_name: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        by_name.setdefault(re.sub(r"[-_.]+", "-", wheel.name.split("-", 1)[0]).lower(), []).append(wheel)
    for name, files in by_name.items():
        folder = wheels / "simple" / name
        folder.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../{w.name.replace("+", "%2B")}#sha256='
                        f'{hashlib.sha256(w.read_bytes()).hexdigest()}">{w.name}</a>\n' for w in files)
        (folder / "index.html").write_text(f"<html><body>\n{links}</body></html>\n", encoding="utf-8")


def install(venv: Path, cache_root: Path, choice: str, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the install's processes) of one prepare_python run into a fresh venv."""
    shutil.rmtree(venv, ignore_errors=True)
    index = env["PIP_INDEX_URL"]
    command = [str(BASE), str(PREPARE), "--venv", str(venv), "--installer", choice, "--cache-dir", str(cache_root),
               "--index-url", index]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit(f"bench_install: {choice} install failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    shutil.rmtree(venv, ignore_errors=True)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "bench-install")
    args = parser.parse_args()
    if runtime_lock.lock_platform("cpu") != "linux-cpu":
        print("bench_install: runs on Linux x86_64 with Python 3.11+ (it reads the linux-cpu lock)")
        return 2
    has_torch = subprocess.run([str(BASE), "-c", "import importlib.util as u; print(bool(u.find_spec('torch')))"],
                               capture_output=True, text=True).stdout.strip()
    if has_torch != "False":
        print(f"bench_install: {BASE} must have no torch (it is the interpreter prepare_python runs with)")
        return 2
    work = args.work.resolve()
    start_load = os.getloadavg()
    wheels = work / "wheels"
    source = fill_wheelhouse(wheels, runtime_lock.LOCK_DIR / "linux-cpu.txt")
    # The base interpreter has no torch (else prepare_python installs nothing); no index, one folder.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    # Both installers read one file:// index of that folder (torch's --index-url and the default index).
    index = (wheels / "simple").as_uri()
    env.update({"PIP_INDEX_URL": index, "UV_DEFAULT_INDEX": index, "PIP_CONFIG_FILE": os.devnull,
                "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    kept = work / "kept"
    started = time.perf_counter()
    uv, why = installer.ensure_uv(kept, str(BASE))
    if uv is None:
        print(f"bench_install: {why}")
        return 1
    print(f"uv itself: {why}, {time.perf_counter() - started:.1f} s (once; kept beside the cache)")
    install(work / "venv", kept, "uv", env)  # warms the kept cache
    times: dict[str, list[tuple[float, float]]] = {"pip": [], "uv, empty cache": [], "uv, kept cache": []}
    for number in range(args.rounds):
        order = list(times) if number % 2 == 0 else list(reversed(times))
        for name in order:
            if name == "pip":
                times[name].append(install(work / "venv", work / "pip-root", "pip", env))
            elif name == "uv, empty cache":
                empty = work / "empty"
                shutil.rmtree(empty, ignore_errors=True)
                empty.mkdir(parents=True)
                tool = f"uv-tool-{installer.uv_version()}"
                (empty / tool).symlink_to(kept / tool)
                times[name].append(install(work / "venv", empty, "uv", env))
            else:
                times[name].append(install(work / "venv", kept, "uv", env))
    print(f"wheels: {source}")
    print(f"python {sys.version.split()[0]}, pins: requirements/runtime.txt via requirements/lock/linux-cpu.txt")
    ok = True
    # Wall time is the goal; CPU time (user + system of every process of the install) is printed beside it
    # because on a shared machine the wall clock also measures everyone else's load.
    for label, column in (("wall", 0), ("cpu", 1)):
        medians = {name: statistics.median(v[column] for v in values) for name, values in times.items()}
        for name, values in times.items():
            ratio = medians[name] / medians["pip"]
            goal = GOALS.get(name)
            verdict = "" if goal is None else f" (goal <= {goal:.2f}x) -> {'OK' if ratio <= goal else 'OVER'}"
            if column == 0:
                ok = ok and (goal is None or ratio <= goal)
            print(f"{label} {name:16s} median {medians[name]:6.2f} s  ratio {ratio:5.3f}x{verdict}  "
                  f"[{', '.join(f'{v[column]:.2f}' for v in values)}]")
    # A shared machine: the wall-clock ratios are only as good as the load beside them.
    for moment, load in (("start", start_load), ("end", os.getloadavg())):
        print(f"load average at the {moment}: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
