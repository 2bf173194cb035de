#!/usr/bin/env python3
"""Install named packages at the versions pinned in requirements/, unless already installed.

    python scripts/steps/pip_pins.py NAME [NAME ...]

The pins live only in requirements/ (runtime.txt and dev.txt); this keeps the actions from repeating
them. Exit 0 ready, 1 pip failed, 2 a name has no pin.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import fail  # noqa: E402
from prepare_python import installed_version, parse_requirement, requirement_lines, satisfied  # noqa: E402

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"


def pins(folder: Path) -> dict[str, str]:
    found = {}
    for line in (pin for name in ("runtime.txt", "dev.txt") for pin in requirement_lines(folder / name)):
        found[parse_requirement(line)[0]] = line
    return found


def main(argv: list[str] | None = None) -> int:
    names = [name.lower() for name in (sys.argv[1:] if argv is None else argv)]
    if not names:
        return fail("name the tools to install")
    known = pins(REQUIREMENTS)
    unknown = [name for name in names if name not in known]
    if unknown:
        return fail(f"no pin in requirements/ for {', '.join(unknown)}")
    todo = [known[name] for name in names if not satisfied(known[name], installed_version(name))]
    if not todo:
        print(f"already installed: {', '.join(known[name] for name in names)}")
        return 0
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *todo]
    print("running:", " ".join(command[1:]), flush=True)
    return 0 if subprocess.run(command).returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
