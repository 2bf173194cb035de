"""Helpers shared by the reprise tests (no tests here): the scripts run as a user runs them, and ONE
protocol run per pytest session, because every torch process costs seconds on this machine."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPRISE = ROOT / "scripts" / "reprise"
VERDICT_KEYS = ["device", "all_checks_passed", "positive", "negative_divergence_detected", "report"]
# Asks a Python whether it can import anything from scripts/ or scripts/reprise/ (it must not, for the
# copied-alone runs): exit 0 when it cannot.
CANNOT_SEE_SCRIPTS = ("import importlib.util as u, sys; names = ('training_run_contract', 'reprise_common', "
                      "'platform_runtime', 'kernodeck_diagnostic'); "
                      "sys.exit(1 if any(u.find_spec(n) for n in names) else 0)")


def _load(name: str):
    """A module of the reprise folder, loaded by path (the tests do not put that folder on sys.path).
    Registered by name, as the folder's own `import training_run_contract` expects to find it."""
    spec = importlib.util.spec_from_file_location(name, REPRISE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def module(name: str):
    """A module of the reprise folder for a test to call (the one already loaded under that name, if any)."""
    return sys.modules.get(name) or _load(name)


_load("strict_json")  # imported by name by the modules below, as from their own folder
_load("training_run_records")
_load("training_run_facts")  # reprise_compare imports it by name
contract = _load("training_run_contract")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def python_env(pythonpath: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def run_script(script: Path, *args: str, cwd: Path, pythonpath: Path | None = None, timeout: float = 600) -> Ran:
    # -s: no user site, so nothing but the venv's site-packages and the script's own folder is importable.
    completed = subprocess.run([sys.executable, "-B", "-s", str(script), *args], cwd=cwd,
                               env=python_env(pythonpath), capture_output=True, text=True, timeout=timeout)
    return Ran(completed.returncode, completed.stdout, completed.stderr)


def train(*args: str, cwd: Path = REPRISE, code: Path = REPRISE) -> Ran:
    return run_script(code / "train.py", *args, cwd=cwd)


def verify(output: Path, pythonpath: Path | None = None) -> Ran:
    return run_script(REPRISE / "verify_resume.py", "--output", str(output), cwd=REPRISE, pythonpath=pythonpath)


def verdict(ran: Ran) -> dict:
    """The last stdout line, which the specification fixes."""
    return json.loads(ran.stdout.strip().splitlines()[-1])


@dataclass
class Protocol:
    ran: Ran
    output: Path
    report: dict
    code: Path  # the copied-alone folder it ran from
    sees_scripts: bool  # whether that run's Python could import anything from scripts/


@functools.lru_cache(maxsize=1)
def protocol_run() -> Protocol:
    """verify_resume.py once, end to end, from a copy of the folder alone (as the exercise is distributed)
    outside the repository, into a fresh output folder; all of it removed when pytest exits."""
    base = Path(tempfile.mkdtemp(prefix="reprise-protocol-"))
    atexit.register(shutil.rmtree, base, True)
    code = copy_code(base)
    probe = subprocess.run([sys.executable, "-B", "-s", "-c", CANNOT_SEE_SCRIPTS], cwd=base, env=python_env())
    output = base / "preuve-cpu"
    ran = run_script(code / "verify_resume.py", "--output", str(output), cwd=code)
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    return Protocol(ran, output, report, code, probe.returncode != 0)


def copy_code(destination: Path) -> Path:
    """The reprise folder copied alone (its files, nothing else of the repository) into
    destination/kernodeck-reprise-v1: a private copy a test may change, and the way users get it."""
    code = destination / "kernodeck-reprise-v1"
    code.mkdir(parents=True)
    for path in REPRISE.iterdir():
        if path.is_file():
            shutil.copy2(path, code)
    return code


def copy_run(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination)
    return destination


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_sha256(checkpoint: Path) -> None:
    import hashlib

    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    checkpoint.with_name(checkpoint.name + ".sha256").write_text(f"{digest}  {checkpoint.name}\n", encoding="utf-8")
