"""The gate refuses code of any distribution the device worker runs that is not the bytes its RECORD lists, not
only torch's: typing_extensions, which torch imports, installed in the gate's own site-packages with its RECORD
and then edited in place (or given a forged .pyc) breaks every tensor product and rewrites the worker's report
to say the product is right. site_owners accepts it (its RECORD lists it) and torch's RECORD check hashes only
torch, so before issue 28 the gate passed; now it fails naming the distribution and the file."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.gate import injection_kit as kit
from tests.gate.test_gate_injection import venv_with_real_torch
from tests.gate.test_gate_isolation import run_gate_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the worker's maps are read from /proc")
GATE = ROOT / "scripts" / "platform_runtime_check.py"


def venv_with_own_typing_extensions(folder: Path) -> Path:
    """A venv finding the real torch through a .pth line, with typing_extensions installed in its own
    site-packages (copied with its dist-info and RECORD), where the worker imports it from: its purelib."""
    import typing_extensions

    python, purelib = venv_with_real_torch(folder)
    source = Path(typing_extensions.__file__)
    shutil.copy2(source, purelib / source.name)
    info = next(source.parent.glob("typing_extensions-*.dist-info"))
    shutil.copytree(info, purelib / info.name)
    return python


def run_cpu_gate(tmp_path: Path, python: Path):
    return run_gate_with(tmp_path, python, GATE, "--device", "cpu", "--require-device", "cpu", env={})


def assert_refused(run, words: str) -> None:
    assert run.returncode == 1 and run.result["ok"] is False, run.stdout
    view = run.result["device"]["views"]["distributions"]
    assert view["verified"] is False and any(words in p for p in view["problems"]), view["problems"]
    assert any(words in f for f in run.result["failures"]), run.result["failures"]
    assert run.result["checks"]["device_compute"]["matmul"]["forged_wrong_product"] is True  # the forgery ran


def test_a_dependency_edited_in_place_to_forge_the_workers_report_fails_naming_it_and_its_file(tmp_path):
    python = venv_with_own_typing_extensions(tmp_path / "venv")
    module = next((tmp_path / "venv").glob("lib/python*/site-packages/typing_extensions.py"))
    module.write_text(kit.WORKER_REPORT_FORGERY + module.read_text(encoding="utf-8"), encoding="utf-8")
    run = run_cpu_gate(tmp_path, python)
    assert_refused(run, "differ from typing-extensions's RECORD: typing_extensions.py")
    assert "unlisted module" not in run.result["isolation"]["present"]  # not the vector that would have seen it


def test_a_forged_bytecode_file_of_a_dependency_fails_naming_it_though_its_source_is_intact(tmp_path):
    python = venv_with_own_typing_extensions(tmp_path / "venv")
    module = next((tmp_path / "venv").glob("lib/python*/site-packages/typing_extensions.py"))
    kit.forged_bytecode(module, kit.WORKER_REPORT_FORGERY)
    run = run_cpu_gate(tmp_path, python)
    assert_refused(run, "of typing-extensions are bytecode that is not its source compiled: __pycache__/"
                        f"typing_extensions.{sys.implementation.cache_tag}.pyc")


def test_the_same_venv_untouched_passes_with_the_dependencies_checked(tmp_path):
    run = run_cpu_gate(tmp_path, venv_with_own_typing_extensions(tmp_path / "venv"))
    assert run.returncode == 0 and run.result["ok"] is True, run.result["failures"]
    view = run.result["device"]["views"]["distributions"]
    assert view["verified"] is True and view["problems"] == []
    assert {"typing-extensions", "sympy", "jinja2"} <= set(view["distributions"]) and view["loaded_files"] > 0
