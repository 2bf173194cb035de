#!/usr/bin/env python3
"""Find or make the Python the actions run: one that has the pinned torch and runtime packages.

    python scripts/steps/prepare_python.py --venv DIR [--torch SPEC] [--index-url URL] [--device cpu]
    python scripts/steps/prepare_python.py --print-cpu-index   (the one place the CPU wheel index is named)

If the interpreter running this already has every package of requirements/runtime.txt at its
pinned version (with `--torch` replacing the torch pin), nothing is installed and that interpreter
is used: a self-hosted box's own torch, or the project's venv under act. Otherwise a venv is made
at DIR and the packages go there (never into a system Python: PEP 668 forbids it on ubuntu).
The check reads package metadata only; it never imports torch.

Without `--index-url`, a Linux CPU job (`--device cpu`) takes torch from PyTorch's CPU wheel index,
so it does not download a CUDA build; other cases use the default index (PyPI).
Outputs: `python` (the interpreter to use, with forward slashes so Git Bash on Windows runs it),
`installed` (true/false), `torch-version`.
Exit 0 ready; 1 the install failed; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import fail, set_outputs  # noqa: E402

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, help="where to make a venv if one is needed (required)")
    parser.add_argument("--print-cpu-index", action="store_true", help="print PyTorch's CPU wheel index and exit")
    parser.add_argument("--torch", default="", help="torch requirement, e.g. torch==X.Y.Z (default: the pin)")
    parser.add_argument("--index-url", default="", help="index for torch (default: CPU index for Linux cpu)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runtime", type=Path, default=RUNTIME, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.print_cpu_index:
        print(CPU_INDEX)
        return 0
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
        set_outputs({"python": Path(sys.executable).as_posix(), "installed": "false",
                     "torch-version": installed_version("torch")})
        return 0
    print(f"not installed here: {', '.join(todo)}; installing into a venv", flush=True)
    python = venv_python(args.venv)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(args.venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    torch_pins = [pin for pin in pins if parse_requirement(pin)[0] == "torch"]
    others = [pin for pin in pins if pin not in torch_pins]
    index = choose_index(args.index_url, args.device)
    steps = []
    if torch_pins:  # torch alone from its index; the rest from the default index
        steps.append(pip + (["--index-url", index] if index else []) + torch_pins)
    if others:
        steps.append(pip + others)
    for command in steps:
        print("running:", " ".join(command[1:]), flush=True)
        if subprocess.run(command).returncode != 0:
            print(f"::error title=install::pip failed: {' '.join(command[4:])}", flush=True)
            return 1
    version = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                             capture_output=True, text=True).stdout.strip()
    set_outputs({"python": python.as_posix(), "installed": "true", "torch-version": version})
    return 0


if __name__ == "__main__":
    sys.exit(main())
