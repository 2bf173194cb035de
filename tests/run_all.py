"""The whole test suite: linters first (fast, and a red lint needs no torch), then pytest.

Run through `python3 dev.py test`, which provides the venv; extra arguments go to pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# (name, command) pairs; each must exit 0. The workflow linters join this list with the workflows.
LINTERS: list[tuple[str, list[str]]] = [
    ("ruff", [str(BIN / "ruff"), "check", "--quiet", "."]),
]


def main(pytest_args: list[str]) -> int:
    for name, command in LINTERS:
        print(f"== lint: {name}", flush=True)
        if subprocess.run(command, cwd=ROOT).returncode != 0:
            print(f"lint failed: {name}", flush=True)
            return 1
    print("== pytest", flush=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env).returncode
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
