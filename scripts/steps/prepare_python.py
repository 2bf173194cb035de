#!/usr/bin/env python3
"""Find or make the Python the actions run: one that has the pinned torch and runtime packages.

    python scripts/steps/prepare_python.py --venv DIR [--torch SPEC] [--index-url URL] [--device cpu]
        [--installer auto|uv|pip] [--cache-dir DIR] [--lock auto|none|FILE] [--cache-hit H] [--prune-for-ci]
    python scripts/steps/prepare_python.py --cache-key [--cache-dir DIR]   (outputs for actions/cache)
    python scripts/steps/prepare_python.py --print-cpu-index   (the one place the CPU wheel index is named)

If the interpreter running this already has every package of requirements/runtime.txt at its
pinned version (with `--torch` replacing the torch pin), nothing is installed and that interpreter
is used: a self-hosted box's own torch, or the project's venv under act. Otherwise a venv is made
at DIR and the packages go there (never into a system Python: PEP 668 forbids it on ubuntu), with uv
(pinned in requirements/installer.txt) and its kept cache, or pip where uv cannot run
(scripts/steps/install_venv.py). The check reads package metadata only; it never imports torch.

The install is hash-checked against this platform's lock in requirements/lock/ (docs/install.md);
a lock that does not match the pins is an error, a `--torch` other than the locked one installs
unchecked and says so. Without `--index-url`, a Linux CPU job (`--device cpu`) takes torch from
PyTorch's CPU wheel index, so it does not download a CUDA build; other cases use the default index.
Outputs: `python` (the interpreter to use, with forward slashes so Git Bash on Windows runs it),
`installed` (true/false), `installer` (uv, pip, or none), `torch-version`, `lock-sha256`.
Exit 0 ready; 1 the install failed; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import install_venv  # noqa: E402
import installer  # noqa: E402
import record_check  # noqa: E402
import runtime_lock  # noqa: E402
from action_io import append_summary, fail, set_outputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "requirements" / "runtime.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the actions and ci.yml take it from here
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([A-Za-z0-9.+!_-]+))?$")


def parse_requirement(line: str) -> tuple[str, str | None]:
    """`name` or `name==version`; anything else cannot be checked offline and is refused."""
    match = _PIN.match(line.strip())
    if not match:
        raise ValueError(f"unsupported requirement {line.strip()!r}: use name or name==version")
    return match.group(1).lower().replace("_", "-"), match.group(2)


_MARKER = re.compile(r"^python_version\s*(>=|<=|==|!=|<|>)\s*[\"']([0-9]+)\.([0-9]+)[\"']$")


def for_this_python(line: str, version: tuple[int, int] = sys.version_info[:2]) -> str | None:
    """The requirement without its `; python_version OP "X.Y"` marker, or None where it does not apply."""
    requirement, _, marker = line.partition(";")
    if not marker.strip():
        return requirement.strip()
    match = _MARKER.match(marker.strip())
    if not match:
        raise ValueError(f"unsupported marker {marker.strip()!r}: only python_version comparisons")
    wanted = (int(match.group(2)), int(match.group(3)))
    holds = {">=": version >= wanted, "<=": version <= wanted, "==": version == wanted, "!=": version != wanted,
             "<": version < wanted, ">": version > wanted}[match.group(1)]
    return requirement.strip() if holds else None


def requirement_lines(path: Path) -> list[str]:
    """The pins of a requirements file that apply to this Python, comments and -r lines left out."""
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    applicable = [for_this_python(line) for line in lines if line and not line.startswith("-")]
    return [line for line in applicable if line]


def requirements(runtime: Path, torch_spec: str) -> list[str]:
    pins = requirement_lines(runtime)
    if torch_spec:
        pins = [line for line in pins if parse_requirement(line)[0] != "torch"] + [torch_spec.strip()]
    return pins


def satisfied(requirement: str, installed: str | None) -> bool:
    """True when `installed` meets `name==version` (a local label like +cpu is ignored, per PEP 440)."""
    _, wanted = parse_requirement(requirement)
    if installed is None:
        return False
    if wanted is None:
        return True
    return installed == wanted if "+" in wanted else installed.split("+", 1)[0] == wanted


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def missing(pins: list[str]) -> list[str]:
    return [pin for pin in pins if not satisfied(pin, installed_version(parse_requirement(pin)[0]))]


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def choose_index(index_url: str, device: str) -> str:
    if index_url:
        return index_url
    return CPU_INDEX if sys.platform.startswith("linux") and device == "cpu" else ""


def installed_version_in(python: Path, name: str = "torch") -> str:
    return subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                          capture_output=True, text=True).stdout.strip()


def pins_digest(pins: list[str], lock: runtime_lock.Lock | None) -> str:
    """What the cache key and the venv marker bind: the lock's bytes, else the pins themselves."""
    return lock.sha256 if lock else hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()


def choose_lock(option: str, device: str, pins: list[str], torch_spec: str,
                runtime: Path = RUNTIME) -> tuple[runtime_lock.Lock | None, str]:
    """The lock this install verifies against, and a line for the log; ValueError when it does not match.

    auto: the lock of requirements/runtime.txt for this platform; a --torch other than the locked one
    installs without hash checks (said in the log and the summary), any other difference is an error.
    """
    if option == "none" or (option == "auto" and runtime != RUNTIME):
        return None, f"hashes: not checked (--lock {option})"
    if option == "auto":
        name = runtime_lock.lock_platform(device)
        if name is None:
            return None, (f"hashes: not checked (no lock for {sys.platform} {device} on Python "
                          f"{sys.version_info[0]}.{sys.version_info[1]}; locks: {runtime_lock.LOCK_DIR.name}/)")
        path = runtime_lock.LOCK_DIR / f"{name}.txt"
    else:
        path = Path(option)
    lock = runtime_lock.read_lock(path)
    parsed = [parse_requirement(pin) for pin in pins]
    if torch_spec and option == "auto":
        torch = [p for p in parsed if p[0] == "torch"]
        if runtime_lock.mismatches(lock, torch):
            return None, f"hashes: not checked (--torch {torch_spec} is not the locked torch)"
    problems = runtime_lock.mismatches(lock, parsed)
    if problems:
        raise ValueError(f"the lock does not match the pins: {'; '.join(problems)} "
                         "(regenerate it: python tools/lock_runtime.py, see docs/install.md)")
    return lock, f"hashes: checked against {path.name} (sha256 {lock.sha256})"


def install_steps(pins: list[str], lock: runtime_lock.Lock | None, index: str) -> list[install_venv.Step]:
    """torch alone from its index, the rest from the default one; with a lock, its whole closure, hashed."""
    names = {parse_requirement(pin)[0]: pin for pin in pins}
    if lock is None:
        torch = [pin for name, pin in names.items() if name == "torch"]
        others = [pin for name, pin in names.items() if name != "torch"]
        steps = [install_venv.Step("torch", "\n".join(torch) + "\n", index)] if torch else []
        return steps + ([install_venv.Step("the other pins", "\n".join(others) + "\n")] if others else [])
    rest = [name for name in lock.entries if name != "torch"]
    steps = [install_venv.Step("torch", lock.requirement_text(["torch"]), index)] if "torch" in lock.entries else []
    return steps + [install_venv.Step("the other pins", lock.requirement_text(rest))]


def cache_outputs(args) -> int:
    """--cache-key: the folder and key actions/cache restores and saves, before anything is installed."""
    try:
        pins = requirements(args.runtime, args.torch)
        lock, _ = choose_lock(args.lock, args.device, pins, args.torch, args.runtime)
    except (OSError, ValueError) as error:
        return fail(str(error))
    root = args.cache_dir or installer.default_root()
    key, prefix = installer.cache_key(installer.facts(), pins_digest(pins, lock))
    # Restored by actions/cache on GitHub's hosted runners only: a self-hosted box keeps the folder on disk,
    # and nothing is restored when this interpreter already has every pin (nothing will be installed).
    restore = os.environ.get("RUNNER_ENVIRONMENT") == "github-hosted" and bool(missing(pins))
    set_outputs({"restore": "true" if restore else "false", "cache-dir": root.as_posix(), "cache-paths": "\n".join(
        (root / name).as_posix() for name in installer.CACHED_NAMES),
        "cache-key": key, "cache-restore-prefix": prefix})
    return 0


def summary(outcome: install_venv.Outcome, cache_hit: str, hashes: str, torch_version: str) -> str:
    restored = {"true": "hit (restored, exact key)", "false": "partial (restored from an older key)",
                "miss": "miss (nothing restored)"}.get(cache_hit, "kept on this machine's disk (not restored)")
    rows = [("installer", outcome.installer), ("cache", restored), ("install wall time", f"{outcome.seconds:.1f} s"),
            ("torch", torch_version), ("hashes", hashes), *(("note", note) for note in outcome.notes)]
    return "### Python install\n\n| | |\n| --- | --- |\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, help="where to make a venv if one is needed (required)")
    parser.add_argument("--print-cpu-index", action="store_true", help="print PyTorch's CPU wheel index and exit")
    parser.add_argument("--torch", default="", help="torch requirement, e.g. torch==X.Y.Z (default: the pin)")
    parser.add_argument("--index-url", default="", help="index for torch (default: CPU index for Linux cpu)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--installer", choices=("auto", "uv", "pip"), default=os.environ.get(
        "PLATFORM_RUNTIME_INSTALLER") or "auto", help="auto: uv, falling back to pip where uv cannot run")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="the kept cache's folder (default: RUNNER_TOOL_CACHE/RUNNER_TEMP, else the user cache)")
    parser.add_argument("--lock", default="auto", help="auto (requirements/lock/ for this platform), none, or a file")
    parser.add_argument("--cache-key", action="store_true", help="print the cache folder and key as outputs, exit")
    parser.add_argument("--cache-hit", default="", help="actions/cache's cache-hit output (for the summary)")
    parser.add_argument("--prune-for-ci", action="store_true", help="uv cache prune --ci after installing")
    parser.add_argument("--runtime", type=Path, default=RUNTIME, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.print_cpu_index:
        print(CPU_INDEX)
        return 0
    if args.cache_key:
        return cache_outputs(args)
    if args.venv is None:
        return fail("--venv DIR is required")
    try:
        pins = requirements(args.runtime, args.torch)
        for pin in pins:
            parse_requirement(pin)
    except (OSError, ValueError) as error:
        return fail(str(error))
    todo = missing(pins)
    if not todo:
        print(f"already installed in {sys.executable}: {', '.join(pins)}", flush=True)
        set_outputs({"python": Path(sys.executable).as_posix(), "installed": "false", "installer": "none",
                     "torch-version": installed_version("torch"), "lock-sha256": ""})
        return 0
    try:
        lock, hashes = choose_lock(args.lock, args.device, pins, args.torch, args.runtime)
    except (OSError, ValueError) as error:
        print(f"::error title=install::{error}", flush=True)
        return 1
    print(f"not installed here: {', '.join(todo)}; installing into a venv; {hashes}", flush=True)
    root = args.cache_dir or installer.default_root()
    wanted = {"pins": sorted(pins), "lock": lock.path.name if lock else None,
              "lock_sha256": lock.sha256 if lock else None}
    python = install_venv.venv_python(args.venv)
    if install_venv.is_complete(args.venv, wanted) and not record_check.problems(
            installer.site_packages(python), pip_compiled=True):
        print(f"{args.venv} is complete for these pins (its marker matches, its files match RECORD): "
              "nothing installed", flush=True)
        set_outputs({"python": python.as_posix(), "installed": "false", "installer": "none",
                     "torch-version": installed_version_in(python), "lock-sha256": lock.sha256 if lock else ""})
        return 0
    try:
        outcome = install_venv.build(args.venv, install_steps(pins, lock, choose_index(args.index_url, args.device)),
                                     lock is not None, wanted, args.installer, root, installer.facts())
    except (install_venv.InstallError, OSError) as error:
        print(f"::error title=install::{error}", flush=True)
        return 1
    # A cache actions/cache is about to save (nothing or an older key was restored) is pruned first.
    if (args.prune_for_ci or args.cache_hit in ("miss", "false")) and outcome.installer == "uv":
        outcome.notes.append(install_venv.prune_for_ci(root))
    version = installed_version_in(python)
    print(f"installed with {outcome.installer} in {outcome.seconds:.1f} s; " + "; ".join(outcome.notes), flush=True)
    append_summary(summary(outcome, args.cache_hit, hashes, version))
    set_outputs({"python": python.as_posix(), "installed": "true", "installer": outcome.installer,
                 "torch-version": version, "lock-sha256": lock.sha256 if lock else ""})
    return 0


if __name__ == "__main__":
    sys.exit(main())
