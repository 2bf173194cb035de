"""The diagnostic's parsers against real outputs recorded on an NVIDIA H200 (tests/diagnostic/fakes/recorded/h200):
the nvidia-smi query line, the torch build's versions, arch list, capability and device name, and the report
that machine produced. What a stand-in cannot prove: that real bytes pass the allow-lists unchanged."""

from __future__ import annotations

import importlib.util
import json
import stat
from pathlib import Path

import pytest

from tests.diagnostic.fakes.harness import SCRIPT, fake_env, fake_venv, run, validate

RECORDED = Path(__file__).resolve().parent.parent / "diagnostic" / "fakes" / "recorded" / "h200"
FACTS = json.loads((RECORDED / "torch-facts.json").read_text(encoding="utf-8"))

_spec = importlib.util.spec_from_file_location("kernodeck_diagnostic", SCRIPT)
diag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diag)


def test_the_recorded_nvidia_smi_query_parses_to_its_driver_and_memory() -> None:
    raw = (RECORDED / "nvidia-smi-query.txt").read_bytes()
    assert diag.parse_host_output(raw) == [{"driver_version": "580.159.04", "memory_total_mib": 143771}]


def test_the_recorded_torch_build_passes_the_allow_lists_unchanged() -> None:
    assert diag.allowed(FACTS["torch"], diag.TORCH_VERSION_RE) == "2.11.0+cu130"
    assert diag.allowed(FACTS["cuda"], diag.CUDA_VERSION_RE) == "13.0"
    assert diag.declared_backend(FACTS["hip"], FACTS["cuda"]) == "cuda"
    assert [diag.allowed(a, diag.ARCH_RE, 16) for a in FACTS["arch_list"]] == FACTS["arch_list"]
    assert diag.gpu_model(FACTS["name"]) == "NVIDIA H200"


def test_the_recorded_capability_is_native_in_the_recorded_arch_list() -> None:
    major, minor = FACTS["cap"]
    capability = diag.allowed(f"sm_{major}{minor}", diag.ARCH_RE, 16)
    assert capability == "sm_90" and diag.arch_support(capability, FACTS["arch_list"]) == "native"
    # The same wheel on a Blackwell card (sm_120, listed) and on a Volta (sm_70, not listed, no PTX).
    assert diag.arch_support("sm_120", FACTS["arch_list"]) == "native"
    assert diag.arch_support("sm_70", FACTS["arch_list"]) == "missing"


def test_the_report_the_h200_produced_validates_and_says_what_ran() -> None:
    report = json.loads((RECORDED / "diagnostic-gpu-1.0.0.json").read_text(encoding="utf-8"))
    validate(report)
    assert (report["code"], report["execution"]["gpu_model"], report["pytorch"]["version"]) == \
        ("GPU_CHECK_PASSED", FACTS["name"], FACTS["torch"])
    assert report["execution"]["total_memory_bytes"] == FACTS["total_memory"]
    assert report["host_check"]["gpus"] == diag.parse_host_output((RECORDED / "nvidia-smi-query.txt").read_bytes())


@pytest.mark.skipif(not Path("/bin/sh").exists(), reason="the replaying nvidia-smi is a POSIX shell script")
def test_host_check_end_to_end_on_the_recorded_bytes(tmp_path: Path, tmp_path_factory) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\ncat '{RECORDED / 'nvidia-smi-query.txt'}'\n", encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    env = fake_env("cuda_pass", PATH=f"{tmp_path}:/usr/bin:/bin")
    result = run(fake_venv(tmp_path_factory), ["--host-check"], env=env)
    assert result.report["host_check"] == {"status": "ok", "gpus": [
        {"driver_version": "580.159.04", "memory_total_mib": 143771}]}
