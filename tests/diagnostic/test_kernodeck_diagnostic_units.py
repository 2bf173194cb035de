"""The diagnostic's small pure functions against recorded and realistic inputs (what we cannot produce
on this machine: CUDA arch lists, driver warnings, GPU names, nvidia-smi lines), the schema's ability to
refuse a lying report, and the local job's step."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from rules.kinds import DIAGNOSTIC_SCHEMA_ID

from tests.diagnostic.fakes.harness import ROOT, SCRIPT, VALIDATOR, validate

_spec = importlib.util.spec_from_file_location("kernodeck_diagnostic", SCRIPT)
diag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diag)

P = diag.PROTOCOL_PREFIX
GOOD = {"code": "CPU_CHECK_PASSED", "stage": "verify", "pytorch": None, "execution": None}


def protocol(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


@pytest.mark.parametrize("hip, cuda, expected", [
    ("6.2.41133-dd7f95766", None, "rocm"),
    ("6.2.41133-dd7f95766", "12.4", "rocm"),  # hip wins even when both are set
    (None, "12.8", "cuda"),
    (None, None, "none"),
    ("", "", "none"),
])
def test_backend_is_detected_hip_first(hip, cuda, expected) -> None:
    assert diag.declared_backend(hip, cuda) == expected


def test_worker_protocol_accepts_stages_then_one_result() -> None:
    raw = protocol(f"{P}stage import", f"{P}stage detect", f"{P}result {json.dumps(GOOD)}")
    parsed = diag.parse_worker_output(raw)
    assert (parsed.stage, parsed.result) == ("detect", GOOD)


FACTS = {"pytorch": {key: None for key in diag.PYTORCH_KEYS} | {"version": "2.8.0+cu128", "backend": "cuda"},
         "execution": None}


def test_facts_announced_before_a_hang_or_a_crash_are_kept_without_a_result() -> None:
    raw = protocol(f"{P}stage import", f"{P}facts {json.dumps(FACTS)}", f"{P}stage visibility")
    assert diag.parse_worker_output(raw) == ("visibility", None, FACTS)
    # A line cut short by the kill (or any garbage) ends the reading; what came before it stands.
    torn = raw + f"{P}facts {{\"pytorch\": nu".encode()
    assert diag.parse_worker_output(torn) == ("visibility", None, FACTS)
    after = protocol("garbage", f"{P}facts {json.dumps(FACTS)}", f"{P}stage verify")
    assert diag.parse_worker_output(after) == ("launch", None, {"pytorch": None, "execution": None})


@pytest.mark.parametrize("facts", [{"pytorch": {"version": "2.8"}, "execution": None}, {"execution": None}, [1]])
def test_malformed_facts_are_refused(facts) -> None:
    raw = protocol(f"{P}facts {json.dumps(facts)}", f"{P}stage detect")
    assert diag.parse_worker_output(raw) == ("launch", None, {"pytorch": None, "execution": None})


@pytest.mark.parametrize("raw", [
    protocol("hello from a library"),
    protocol(f"{P}result {json.dumps(GOOD)}", "garbage after the result"),
    protocol(f"{P}result {json.dumps(GOOD)}", f"{P}result {json.dumps(GOOD)}"),
    protocol(f"{P}result {{not json"),
    protocol(f"{P}result " + json.dumps({**GOOD, "code": "ALL_GOOD"})),
    protocol(f"{P}result " + json.dumps({**GOOD, "extra": 1})),
    protocol(f"{P}result " + json.dumps({**GOOD, "pytorch": {"version": "2.0"}})),
    protocol(f"{P}stage somewhere", f"{P}result {json.dumps(GOOD)}"),
    b"\xff\xfe" + protocol(f"{P}result {json.dumps(GOOD)}"),
    protocol(f"{P}result {json.dumps(GOOD)}") + b" " * diag.MAX_WORKER_OUTPUT,
    b"",
])
def test_worker_garbage_voids_the_result(raw: bytes) -> None:
    assert diag.parse_worker_output(raw)[1] is None


@pytest.mark.parametrize("text, expected", [
    ("550.54.15, 81559\n", [{"driver_version": "550.54.15", "memory_total_mib": 81559}]),
    ("535.183.01, 24564\n535.183.01, 24564\n", [{"driver_version": "535.183.01", "memory_total_mib": 24564}] * 2),
    ("576.52, 12227\r\n", [{"driver_version": "576.52", "memory_total_mib": 12227}]),  # Windows driver numbering
    ("550.54.15, [N/A]\n", None),
    ("550.54.15, 81559 MiB\n", None),
    ("No devices were found\n", None),
    ("550.54.15, 81559, GPU-1234\n", None),
    ("", None),
    ("550.54.15,81559\ngarbage\n", None),
])
def test_host_output_is_parsed_strictly(text: str, expected) -> None:
    assert diag.parse_host_output(text.encode()) == expected


@pytest.mark.parametrize("capability, arch_list, expected", [
    ("sm_120", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], "missing"),  # RTX 50xx, cu126 wheel
    ("sm_120", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "native"),  # cu128 wheel
    ("sm_89", ["sm_80", "sm_86", "sm_90"], "native"),  # same major, lower minor cubin runs
    ("sm_80", ["sm_86", "sm_90"], "missing"),  # a higher minor does not
    ("sm_90", ["sm_90a"], "native"),
    ("sm_100", ["sm_90a", "sm_90"], "missing"),
    ("sm_120", ["sm_80", "sm_90", "compute_90"], "ptx_only"),
    ("gfx90a", ["gfx90a", "gfx942"], "native"),
    ("gfx1031", ["gfx1030", "gfx1100"], "missing"),
    ("sm_90", [], "unknown"),
    (None, ["sm_90"], "unknown"),
    ("unrecognized", ["sm_90"], "unknown"),
])
def test_arch_support(capability, arch_list, expected) -> None:
    assert diag.arch_support(capability, arch_list) == expected


@pytest.mark.parametrize("text, expected", [
    ("CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your "
     "GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
     "driver_too_old"),
    ("CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
     "installed a driver from http://www.nvidia.com/Download/index.aspx", "driver_not_found"),
    ("CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
     "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
     "attempted on non supported HW", "forward_compatibility"),
    ("CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. "
     "changing env variable CUDA_VISIBLE_DEVICES after program start.", "initialization_error"),
    ("something else entirely", "other"),
])
def test_availability_warnings_are_classified_into_a_fixed_vocabulary(text: str, expected: str) -> None:
    assert diag.classify_warning(text) == expected
    assert expected in diag.WARNING_VOCABULARY


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA GeForce RTX 5070", "NVIDIA GeForce RTX 5070"),
    ("NVIDIA H200", "NVIDIA H200"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
    ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Radeon RX 7900 XTX", "AMD Radeon RX 7900 XTX"),
    ("NVIDIA jdoe-workstation", "unrecognized"),
    ("NVIDIA GeForce GPU-8f3a2b1c-77d2-4e1f", "unrecognized"),
    ("/dev/nvidia0", "unrecognized"),
    ("", "unrecognized"),
    (None, None),
])
def test_gpu_models_come_from_an_allow_list(name, expected) -> None:
    assert diag.gpu_model(name) == expected


@pytest.mark.parametrize("version, expected", [
    ("2.13.0+cpu", "2.13.0+cpu"), ("2.5.1+cu124", "2.5.1+cu124"), ("2.6.0+rocm6.2.4", "2.6.0+rocm6.2.4"),
    ("2.5.0a0+e000cf0ad9.nv24.10", "2.5.0a0+e000cf0ad9.nv24.10"),
    ("2.9.0.dev20250801+cu128", "2.9.0.dev20250801+cu128"),
    ("2.8.0+jdoe.local", "unrecognized"), ("2.8.0 built by jdoe", "unrecognized"), (None, None),
])
def test_torch_versions_come_from_an_allow_list(version, expected) -> None:
    assert diag.allowed(version, diag.TORCH_VERSION_RE) == expected


def _passing_report() -> dict:
    report = diag.make_report("cpu", "CPU_CHECK_PASSED", "verify", {
        "version": "2.13.0+cpu", "cuda": None, "hip": None, "backend": "none", "gpu_available": None,
        "gpu_count": None, "availability_warnings": None, "arch_list": None}, {
        "device": "cpu", "backend": "cpu", "gpu_model": None, "total_memory_bytes": None, "capability": None,
        "arch_support": None, "dtype": "float32", "shape": [2, 2],
        "checks": {"product": True, "gradient": True, "loss": True}, "loss": 196.0})
    validate(report)
    return report


@pytest.mark.parametrize("mutate", [
    lambda r: r.update(exit_code=8),  # a pass with a failing exit code
    lambda r: r.update(code="CHECK_FAILED"),  # a failing code with status passed
    lambda r: r["execution"]["checks"].update(gradient=False),  # a pass whose gradient check failed
    lambda r: r["execution"].update(loss=195.0),
    lambda r: r.update(hostname="build-01"),  # no field beyond the specification's at the top
    lambda r: r["runtime"].update(python="3.11.7 (main, /home/jdoe)"),
    lambda r: r["execution"].update(total_memory_bytes=1024),  # CPU mode measures no GPU memory
    lambda r: r.update(requested_device="gpu"),  # CPU_CHECK_PASSED for a GPU request
    lambda r: r.update(host_check=None),  # present only when requested, never as null
    lambda r: r["runtime"].update(injection_vectors=["PYTHONPATH=/home/jdoe/site"]),  # names only, never values
])
def test_schema_refuses_a_lying_report(mutate) -> None:
    report = copy.deepcopy(_passing_report())
    mutate(report)
    assert list(VALIDATOR.iter_errors(report)), "the schema accepted a report that contradicts itself"


def test_a_report_without_host_check_is_valid_and_one_with_it_carries_it() -> None:
    report = _passing_report()
    assert "host_check" not in report
    requested = diag.make_report("cpu", "CPU_CHECK_PASSED", "verify", report["pytorch"], report["execution"],
                                 {"status": "tool_missing", "gpus": None})
    validate(requested)
    assert requested["host_check"] == {"status": "tool_missing", "gpus": None}


def test_every_code_has_its_specified_exit_code() -> None:
    assert {code: exit_code for code, (exit_code, _) in diag.CODES.items()} == {
        "CPU_CHECK_PASSED": 0, "GPU_CHECK_PASSED": 0, "CLI_ARGUMENTS_INVALID": 2, "TORCH_MISSING": 3,
        "TORCH_IMPORT_FAILED": 4, "GPU_BACKEND_ABSENT": 5, "GPU_UNAVAILABLE": 6, "DEVICE_INDEX_INVALID": 7,
        "CHECK_FAILED": 8, "OUT_OF_MEMORY": 9, "RUNTIME_ERROR": 9, "TIMEOUT": 10, "WORKER_FAILED": 11,
        "OUTPUT_WRITE_FAILED": 12, "INTERRUPTED": 130}


def test_local_job_runs_the_cpu_diagnostic_over_its_own_stale_result(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import run_local
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    (step,) = [s for s in run_local.STEPS if s.result == "kernodeck-diagnostic-cpu.json"]
    assert step.command(tmp_path)[-4:] == ["--device", "cpu", "--output", str(tmp_path / step.result)]
    (tmp_path / step.result).write_text('{"status": "passed", "stale": true}', encoding="utf-8")
    ok, text, _ = run_local.run_step(step, tmp_path)  # a real run with real torch
    report = json.loads((tmp_path / step.result).read_text(encoding="utf-8"))
    validate(report)
    assert ok and report["code"] == "CPU_CHECK_PASSED" and "CPU_CHECK_PASSED" in text and "196.0" in text


def test_schema_vocabularies_are_the_scripts() -> None:
    from tests.diagnostic.fakes.harness import SCHEMA

    properties = SCHEMA["properties"]
    assert properties["stage"]["enum"] == list(diag.STAGES)
    assert set(properties["code"]["enum"]) == set(diag.CODES)
    assert properties["schema"]["const"] == diag.SCHEMA == DIAGNOSTIC_SCHEMA_ID  # its own copy, the core's value
    warnings = properties["pytorch"]["oneOf"][1]["properties"]["availability_warnings"]["oneOf"][1]["items"]["enum"]
    assert warnings == list(diag.WARNING_VOCABULARY)
    assert properties["runtime"]["properties"]["injection_vectors"]["items"]["enum"] == list(diag.INJECTION_VECTORS)
