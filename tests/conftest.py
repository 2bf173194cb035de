"""Shared fixtures: the repository, the gate run as a user runs it, and schema validation."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
SCHEMAS = ROOT / "schemas"
FAULTS = Path(__file__).resolve().parent / "gate" / "faults"
sys.path.insert(0, str(SCRIPTS))


@contextlib.contextmanager
def made_once(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on `folder`'s lock file while a one-time install into it (npm ci, uv's tool venv)
    is checked and made: the suite's workers (tools/run_tests.py) may reach the same folder at once."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def validate(document: dict, schema_name: str) -> None:
    import jsonschema

    jsonschema.Draft202012Validator(load_schema(schema_name),
                                    format_checker=jsonschema.FormatChecker()).validate(document)


class GateRun:
    def __init__(self, completed: subprocess.CompletedProcess, result: dict | None, output: Path) -> None:
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.result = result
        self.output = output


_FAULT_VENV: list[Path] = []


def fault_python() -> Path:
    """The python of a throw-away venv whose site-packages loads tests/gate/faults/sitecustomize.py.

    The gate's workers run isolated (python -I), so PYTHONPATH no longer reaches them; an interpreter's own
    site-packages does. This venv's .pth adds the faults folder and this venv's torch, so the faults enter
    every process from outside the project's code, as an installed package would. Made once per session.
    """
    if not _FAULT_VENV:
        root = Path(tempfile.mkdtemp(prefix="gate-faults-"))
        atexit.register(shutil.rmtree, root, True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True,
                       capture_output=True, timeout=120)
        python = root / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        purelib = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True, timeout=60).stdout.strip()
        Path(purelib, "gate_faults.pth").write_text(f"{FAULTS}\n{sysconfig.get_paths()['purelib']}\n",
                                                     encoding="utf-8")
        _FAULT_VENV.append(python)
    return _FAULT_VENV[0]


def run_gate(tmp_path: Path, *args: str, fault: str | None = None, cwd: Path | None = None,
             timeout: float = 300, env: dict[str, str] | None = None, python_prefix: list[str] | None = None,
             scripts: Path | None = None) -> GateRun:
    """Run scripts/platform_runtime_check.py as a user would; validate whatever result it writes.

    fault: the name of a fault (tests/gate/faults/sitecustomize.py) to inject into the gate's processes;
    "" runs the fault venv with no fault (for the audit records). env: extra environment variables.
    python_prefix: a program the interpreter is started through (a tracer, a seccomp wrapper). scripts: another
    copy of the gate's scripts/ folder to run.
    """
    output = tmp_path / f"result-{len(list(tmp_path.glob('result-*.json')))}.json"
    env = {**os.environ, **(env or {})}
    env.pop("GITHUB_ACTIONS", None)
    python = Path(sys.executable)
    if fault is not None:
        python = fault_python()
        env["PLATFORM_RUNTIME_FAULT"] = fault
    completed = subprocess.run(
        [*(python_prefix or []), str(python), "-B", str(scripts or SCRIPTS) + "/platform_runtime_check.py", *args,
         "--output", str(output)],
        cwd=cwd or tmp_path, env=env, capture_output=True, text=True, timeout=timeout)
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if result is not None:
        validate(result, "platform-runtime-result.schema.json")
    return GateRun(completed, result, output)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="also run the tests marked `full` (slower variants CI leaves out; run before re-recording "
                          "evidence: python3 dev.py test --full)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --full, the tests marked `full` are deselected, counted and named in the summary: never dropped
    silently. The tests marked `beside` (long, self-contained emulation: the NFS VM, Windows under Wine) are
    collected first, so that on tools/run_tests.py's workers (one file at a time, in collection order) they start
    at once and the rest of the suite fills the other worker around them."""
    items.sort(key=lambda item: item.get_closest_marker("beside") is None)  # stable: the order otherwise kept
    if config.getoption("--full"):
        return
    full = [item for item in items if item.get_closest_marker("full")]
    if full:
        config.hook.pytest_deselected(items=full)
        items[:] = [item for item in items if not item.get_closest_marker("full")]
    config.stash[_FULL_ONLY] = [item.nodeid for item in full]
    if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the controller prints the summary
        config.workeroutput["full_only"] = config.stash[_FULL_ONLY]


_FULL_ONLY = pytest.StashKey[list]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist's controller collects nothing itself: it takes the `full` tests a worker left out."""
    left = getattr(node, "workeroutput", {}).get("full_only")
    if left:
        node.config.stash[_FULL_ONLY] = left


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    left = config.stash.get(_FULL_ONLY, [])
    if left:
        files = sorted({nodeid.split("::")[0] for nodeid in left})
        terminalreporter.write_line(f"{len(left)} test(s) marked `full` did not run (python3 dev.py test --full runs "
                                    f"them), in {len(files)} file(s): {', '.join(files)}")


@pytest.fixture
def gate(tmp_path):
    return lambda *args, **kwargs: run_gate(tmp_path, *args, **kwargs)
