"""Helpers shared by the reprise tests (no tests here): the scripts run as a user runs them, and ONE
protocol run per pytest session, because every torch process costs seconds on this machine."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPRISE = ROOT / "scripts" / "reprise"
VERDICT_KEYS = ["device", "all_checks_passed", "positive", "negative_divergence_detected", "report"]


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
    completed = subprocess.run([sys.executable, "-B", str(script), *args], cwd=cwd, env=python_env(pythonpath),
                               capture_output=True, text=True, timeout=timeout)
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


@functools.lru_cache(maxsize=1)
def protocol_run() -> Protocol:
    """verify_resume.py once, end to end, into a fresh folder removed when pytest exits."""
    base = Path(tempfile.mkdtemp(prefix="reprise-protocol-"))
    atexit.register(shutil.rmtree, base, True)
    output = base / "preuve-cpu"
    ran = verify(output)
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    return Protocol(ran, output, report)


def copy_code(destination: Path) -> Path:
    """A private copy of scripts/reprise (and the contract it imports) whose data.csv a test may change."""
    scripts = destination / "scripts"
    (scripts / "reprise").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "training_run_contract.py", scripts)
    for path in REPRISE.iterdir():
        if path.is_file():
            shutil.copy2(path, scripts / "reprise")
    return scripts / "reprise"


def copy_run(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination)
    return destination


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_sha256(checkpoint: Path) -> None:
    import hashlib

    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    checkpoint.with_name(checkpoint.name + ".sha256").write_text(f"{digest}  {checkpoint.name}\n", encoding="utf-8")
