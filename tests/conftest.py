"""Shared fixtures: the repository, the gate run as a user runs it, and schema validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
SCHEMAS = ROOT / "schemas"
FAULTS = Path(__file__).resolve().parent / "support" / "faults"
sys.path.insert(0, str(SCRIPTS))


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


def run_gate(tmp_path: Path, *args: str, fault: str | None = None, cwd: Path | None = None,
             timeout: float = 300) -> GateRun:
    """Run scripts/platform_runtime_check.py as a user would; validate whatever result it writes."""
    output = tmp_path / f"result-{len(list(tmp_path.glob('result-*.json')))}.json"
    env = dict(os.environ)
    env.pop("GITHUB_ACTIONS", None)
    if fault:
        env["PYTHONPATH"] = str(FAULTS) + os.pathsep + env.get("PYTHONPATH", "")
        env["PLATFORM_RUNTIME_FAULT"] = fault
    completed = subprocess.run(
        [sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"), *args, "--output", str(output)],
        cwd=cwd or tmp_path, env=env, capture_output=True, text=True, timeout=timeout)
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if result is not None:
        validate(result, "platform-runtime-result.schema.json")
    return GateRun(completed, result, output)


@pytest.fixture
def gate(tmp_path):
    return lambda *args, **kwargs: run_gate(tmp_path, *args, **kwargs)
