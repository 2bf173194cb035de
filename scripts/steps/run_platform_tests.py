#!/usr/bin/env python3
"""Run the project's platform tests -- the ones about this OS's processes and file system -- with pytest.

    python scripts/steps/run_platform_tests.py --junit FILE [PATTERN ...]

The default patterns pick the gate's, the file-primitive (atomic replace, JSONL), file-system
detection, requirement and training-run-check tests: the parts whose behaviour differs between
Windows, macOS and Linux. Tests marked `root` (they
mount file systems) are deselected. No matching file is a failure, not a silent pass.
PLATFORM_RUNTIME_TEST_PATTERNS (patterns separated by spaces) replaces the default list when no
pattern is given on the command line: the act tests use it to keep their run short.
Exit: pytest's code (0 all passed), 2 on bad arguments or no tests found.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import annotate, append_summary, fail, split_list  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PATTERNS = (
    "tests/gate/test_file_primitives*.py",
    "tests/gate/test_filesystem_detection*.py",
    "tests/gate/test_second_views.py",  # the interpreter's and torch _C's own headers, on each OS's real files
    "tests/gate/test_claims*.py",
    "tests/gate/test_gate.py",
    "tests/gate/test_gate_isolation.py",
    "tests/reprise/test_check_training_run*.py",
)


def select_files(patterns: list[str]) -> list[str]:
    found = {path.relative_to(ROOT).as_posix() for pattern in patterns for path in ROOT.glob(pattern)}
    return sorted(found)


def counts(junit: Path) -> dict[str, int]:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    try:
        root = ET.parse(junit).getroot()  # noqa: S314 - pytest's own output on this machine
    except (OSError, ET.ParseError):
        return totals
    for suite in root.iter("testsuite"):
        for key in totals:
            totals[key] += int(suite.get(key, 0))
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--junit", type=Path, required=True)
    parser.add_argument("patterns", nargs="*")
    args = parser.parse_args(argv)
    from_env = split_list(os.environ.get("PLATFORM_RUNTIME_TEST_PATTERNS"))
    args.patterns = args.patterns or from_env or list(DEFAULT_PATTERNS)
    files = select_files(args.patterns)
    if not files:
        annotate("error", f"no platform tests match {' '.join(args.patterns)}", title="platform tests")
        return fail("no platform tests found")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not root",
               f"--junitxml={args.junit}", *files]
    print("running:", " ".join(command[1:]), flush=True)
    code = subprocess.run(command, cwd=ROOT).returncode
    total = counts(args.junit)
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    line = (f"{passed} passed, {total['failures']} failed, {total['errors']} errors, {total['skipped']} skipped "
            f"in {len(files)} files (pytest exit {code})")
    append_summary(f"### {'PASS' if code == 0 else 'FAIL'}: platform tests\n\n{line}\n")
    if code != 0:
        annotate("error", line, title="platform tests")
    return code


if __name__ == "__main__":
    sys.exit(main())
