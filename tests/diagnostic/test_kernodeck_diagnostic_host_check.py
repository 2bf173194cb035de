"""--host-check: one nvidia-smi query, 3 s at most, strictly parsed, and never able to spoil a good
computation. A fake nvidia-smi (a shell script written here) is first on PATH: good output, garbage, a
hang, a failure; or no nvidia-smi at all."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from tests.diagnostic.fakes.harness import fake_env, fake_venv, run

QUERY = "--query-gpu=driver_version,memory.total --format=csv,noheader,nounits"


@pytest.fixture(scope="session")
def fake_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_venv(tmp_path_factory)


def fake_smi(folder: Path, body: str) -> Path:
    """An nvidia-smi that logs its arguments (one line per call) and then runs body."""
    folder.mkdir(exist_ok=True)
    tool = folder / "nvidia-smi"
    tool.write_text(f'#!/bin/sh\necho "$@" >> "{folder}/calls"\n{body}\n', encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return folder


def diagnose(python: Path, path: str, *args: str):
    result = run(python, ["--host-check", *args], env=fake_env("cuda_pass", PATH=path))
    return result, result.report


def test_good_output_gives_driver_and_memory_per_gpu_from_one_query(fake_python: Path, tmp_path: Path) -> None:
    folder = fake_smi(tmp_path / "bin", "printf '550.54.15, 81559\\n550.54.15, 81559\\n'")
    result, report = diagnose(fake_python, f"{folder}:/usr/bin:/bin")
    assert (result.returncode, report["code"]) == (0, "GPU_CHECK_PASSED")
    assert report["host_check"] == {"status": "ok", "gpus": [
        {"driver_version": "550.54.15", "memory_total_mib": 81559},
        {"driver_version": "550.54.15", "memory_total_mib": 81559}]}
    assert (folder / "calls").read_text().splitlines() == [QUERY], "exactly one query, exactly these fields"


@pytest.mark.parametrize("body", [
    "echo 'GPU-5d2c1f0e-aaaa-bbbb-cccc-000011112222, host-name'",
    "printf '550.54.15, [N/A]\\n'",
    "printf '550.54.15, 81559, 12\\n'",
    "printf ''",
])
def test_unknown_format_is_unrecognized_and_the_pass_stands(fake_python: Path, tmp_path: Path, body: str) -> None:
    result, report = diagnose(fake_python, f"{fake_smi(tmp_path / 'bin', body)}:/usr/bin:/bin")
    assert (result.returncode, report["code"]) == (0, "GPU_CHECK_PASSED")
    assert report["host_check"] == {"status": "unrecognized_output", "gpus": None}
    assert "host-name" not in result.stdout and "GPU-5d2c" not in result.stdout


def test_failing_tool_is_failed_and_the_pass_stands(fake_python: Path, tmp_path: Path) -> None:
    folder = fake_smi(tmp_path / "bin", "echo 'No devices were found'; exit 6")
    result, report = diagnose(fake_python, f"{folder}:/usr/bin:/bin")
    assert (result.returncode, report["host_check"]) == (0, {"status": "failed", "gpus": None})


def test_hanging_tool_is_cut_at_3_seconds_and_the_pass_stands(fake_python: Path, tmp_path: Path) -> None:
    # `sleep` is a grandchild holding the pipe: the whole process group must go, not just the shell.
    folder = fake_smi(tmp_path / "bin", "printf '550.54.15, 81559\\n'; sleep 30")
    started = time.monotonic()
    result, report = diagnose(fake_python, f"{folder}:/usr/bin:/bin")
    elapsed = time.monotonic() - started
    assert (result.returncode, report["host_check"]) == (0, {"status": "timeout", "gpus": None})
    assert 3 <= elapsed < 10, elapsed  # the pass itself takes well under a second


def test_missing_tool_is_tool_missing_and_the_pass_stands(fake_python: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result, report = diagnose(fake_python, str(empty))
    assert (result.returncode, report["host_check"]) == (0, {"status": "tool_missing", "gpus": None})


def test_host_check_never_turns_a_failure_into_a_pass(fake_python: Path, tmp_path: Path) -> None:
    folder = fake_smi(tmp_path / "bin", "printf '550.54.15, 81559\\n'")
    result = run(fake_python, ["--host-check"], env=fake_env("unavailable", PATH=f"{folder}:/usr/bin:/bin"))
    assert (result.returncode, result.report["code"], result.report["host_check"]["status"]) == \
        (6, "GPU_UNAVAILABLE", "ok")


def test_without_the_flag_nvidia_smi_is_not_run(fake_python: Path, tmp_path: Path) -> None:
    folder = fake_smi(tmp_path / "bin", "printf '550.54.15, 81559\\n'")
    result = run(fake_python, [], env=fake_env("cuda_pass", PATH=f"{folder}:{os.environ['PATH']}"))
    assert "host_check" not in result.report and not (folder / "calls").exists()
