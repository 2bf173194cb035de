"""Runs scripts/kernodeck_diagnostic.py as a user would and validates every report it prints.

Three kinds of Python run it: the project's venv (real torch, CPU), a throwaway `--without-pip` venv with
nothing installed (no torch at all), and a second throwaway venv with the stand-in torch of `site/`
installed in its site-packages (hardware and failure cases this machine cannot produce). The stand-in is
installed, not put on PYTHONPATH: the diagnostic's child runs isolated and ignores PYTHONPATH, but finds
what its interpreter's own site-packages hold, as it finds a real torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "kernodeck_diagnostic.py"
FAKE_SITE = Path(__file__).resolve().parent / "site"
SCHEMA = json.loads((ROOT / "schemas" / "kernodeck-diagnostic-report.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# The oldest Python the script promises; the bare venv is built from it when this machine has it.
PY310 = Path("/root/.pyenv/versions/3.10.13/bin/python3")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict:
        return json.loads(self.stdout)


def make_bare_venv(where: Path) -> Path:
    """A venv with an empty site-packages: the Python of a user who has no torch."""
    base = str(PY310) if PY310.exists() else sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                           capture_output=True, text=True, check=True, env=clean_env())
    assert probe.stdout.strip() == "True", "the bare venv must not see any torch"
    return python


def make_fake_venv(where: Path) -> Path:
    """A bare venv with the stand-in torch installed in its site-packages."""
    python = make_bare_venv(where)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    shutil.copytree(FAKE_SITE / "torch", Path(purelib) / "torch")
    return python


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KERNODECK_FAKE", "VIRTUAL_ENV"))}
    env.update(extra)
    return env


def fake_env(scenario: str, **extra: str) -> dict[str, str]:
    """The environment that picks the stand-in's scenario (run it with fake_venv's Python)."""
    return clean_env(KERNODECK_FAKE_TORCH=scenario, **extra)


def validate(report: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.path))
    assert not errors, "schema: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def run(python: Path | str, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
        script: Path = SCRIPT, timeout: float = 90) -> Run:
    """One real run; its stdout must be exactly one report that validates against the schema."""
    completed = subprocess.run([str(python), str(script), *args], capture_output=True, text=True, timeout=timeout,
                               env=clean_env() if env is None else env, cwd=cwd or ROOT)
    result = Run(completed.returncode, completed.stdout, completed.stderr)
    report = result.report
    validate(report)
    assert report["exit_code"] == completed.returncode, "the report's exit_code is the process's"
    assert "Traceback" not in completed.stderr
    return result


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purpose.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False



_BARE: dict[str, Path] = {}


def bare_venv(factory: pytest.TempPathFactory) -> Path:
    """One bare venv per test session, shared by the diagnostic's test modules."""
    if "python" not in _BARE:
        _BARE["python"] = make_bare_venv(factory.mktemp("bare") / "venv")
    return _BARE["python"]


def fake_venv(factory: pytest.TempPathFactory) -> Path:
    """One venv with the stand-in torch installed, per test session."""
    if "fake" not in _BARE:
        _BARE["fake"] = make_fake_venv(factory.mktemp("fake") / "venv")
    return _BARE["fake"]
