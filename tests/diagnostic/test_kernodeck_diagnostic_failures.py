"""Every row of the failure table, each really produced: a stand-in torch (tests/diagnostic/fakes/site) in a
bare venv breaks the one property the row is about, and the diagnostic must answer with that row's code,
exit code and stage, never with raw exception text. Also the GPU passes (CUDA, ROCm) through the stand-in,
the arch-list comparison and the driver-warning classes added beyond the specification."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.diagnostic.fakes.harness import SCRIPT, fake_env, fake_venv, pid_alive, run, validate

CANARY = "canary-host-7f1e"  # planted by the stand-in in every exception, warning, version and name it can


@pytest.fixture(scope="session")
def fake_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_venv(tmp_path_factory)


def diagnose(python: Path, scenario: str, *args: str, **env: str):
    result = run(python, list(args), env=fake_env(scenario, KERNODECK_FAKE_IDENTIFYING=CANARY, **env))
    assert CANARY not in result.stdout, "raw text from the backend reached the report"
    return result, result.report


def test_cuda_gpu_passes_with_product_gradient_and_synchronize(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "cuda_pass")
    assert (result.returncode, report["code"], report["stage"]) == (0, "GPU_CHECK_PASSED", "verify")
    assert report["pytorch"]["backend"] == "cuda"
    assert (report["pytorch"]["cuda"], report["pytorch"]["hip"]) == ("12.8", None)
    assert (report["pytorch"]["gpu_available"], report["pytorch"]["gpu_count"]) == (True, 1)
    execution = report["execution"]
    assert (execution["device"], execution["backend"]) == ("cuda:0", "cuda")
    assert execution["gpu_model"] == "NVIDIA H100 80GB HBM3" and execution["total_memory_bytes"] == 85_520_809_984
    assert (execution["capability"], execution["arch_support"]) == ("sm_90", "native")
    assert execution["checks"] == {"product": True, "gradient": True, "loss": True} and execution["loss"] == 196.0


def test_rocm_is_detected_from_hip_first_even_with_cuda_null(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "rocm_pass")
    assert (result.returncode, report["code"]) == (0, "GPU_CHECK_PASSED")
    assert (report["pytorch"]["backend"], report["pytorch"]["cuda"]) == ("rocm", None)
    assert report["pytorch"]["hip"] == "6.2.41133-dd7f95766"
    # PyTorch names a ROCm device cuda:0; execution.backend is what tells it apart.
    assert (report["execution"]["device"], report["execution"]["backend"]) == ("cuda:0", "rocm")
    assert (report["execution"]["capability"], report["execution"]["arch_support"]) == ("gfx90a", "native")


def test_rocm_target_outside_the_arch_list_is_recorded_and_left_to_the_computation(fake_python: Path) -> None:
    _, report = diagnose(fake_python, "rocm_unlisted")
    assert report["code"] == "GPU_CHECK_PASSED"
    assert (report["execution"]["capability"], report["execution"]["arch_support"]) == ("gfx942", "missing")


def test_cpu_mode_describes_the_package_but_measures_no_gpu(fake_python: Path) -> None:
    # --device-index has no effect on a CPU computation, even out of what the stand-in sees.
    result, report = diagnose(fake_python, "cuda_pass", "--device", "cpu", "--device-index", "9")
    assert (result.returncode, report["code"]) == (0, "CPU_CHECK_PASSED")
    assert report["pytorch"]["backend"] == "cuda" and report["execution"]["backend"] == "cpu"
    assert report["pytorch"]["gpu_available"] is None and report["pytorch"]["gpu_count"] is None
    assert report["pytorch"]["availability_warnings"] is None and report["pytorch"]["arch_list"] is None
    assert report["execution"]["gpu_model"] is None and report["execution"]["total_memory_bytes"] is None


def test_torch_import_failure_is_exit_4(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "import_fail")
    assert (result.returncode, report["code"], report["stage"]) == (4, "TORCH_IMPORT_FAILED", "import")
    assert report["pytorch"] is None and "libcudart" not in result.stdout


def test_package_without_cuda_or_hip_is_exit_5(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "no_backend")
    assert (result.returncode, report["code"], report["stage"]) == (5, "GPU_BACKEND_ABSENT", "detect")
    assert report["pytorch"]["backend"] == "none" and report["execution"] is None


@pytest.mark.parametrize("scenario, warnings", [
    ("unavailable", []),
    ("driver_too_old", ["driver_too_old"]),
    ("driver_missing", ["driver_not_found"]),
])
def test_unavailable_gpu_is_exit_6_and_a_too_old_driver_is_told_apart(fake_python: Path, scenario, warnings) -> None:
    result, report = diagnose(fake_python, scenario)
    assert (result.returncode, report["code"], report["stage"]) == (6, "GPU_UNAVAILABLE", "visibility")
    assert (report["pytorch"]["gpu_available"], report["pytorch"]["gpu_count"]) == (False, 0)
    assert report["pytorch"]["availability_warnings"] == warnings
    assert "11040" not in result.stdout and "too old" not in result.stdout


def test_index_beyond_the_visible_gpus_is_exit_7(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "cuda_pass", "--device-index", "1")
    assert (result.returncode, report["code"], report["stage"]) == (7, "DEVICE_INDEX_INVALID", "visibility")
    assert report["pytorch"]["gpu_count"] == 1 and report["execution"] is None


@pytest.mark.parametrize("scenario, checks", [
    ("wrong_product", {"product": False, "gradient": False, "loss": False}),
    ("wrong_gradient", {"product": True, "gradient": False, "loss": True}),
])
def test_wrong_product_or_gradient_is_exit_8(fake_python: Path, scenario, checks) -> None:
    result, report = diagnose(fake_python, scenario)
    assert (result.returncode, report["code"], report["stage"]) == (8, "CHECK_FAILED", "verify")
    assert report["status"] == "failed" and report["execution"]["checks"] == checks


@pytest.mark.parametrize("scenario, code, stage", [
    ("oom_allocate", "OUT_OF_MEMORY", "allocate"),
    ("runtime_compute", "RUNTIME_ERROR", "compute"),
    ("runtime_gradient", "RUNTIME_ERROR", "gradient"),
    ("runtime_synchronize", "RUNTIME_ERROR", "synchronize"),
])
def test_backend_errors_are_exit_9_with_their_stage_and_no_raw_text(fake_python: Path, scenario, code, stage) -> None:
    result, report = diagnose(fake_python, scenario)
    assert (result.returncode, report["code"], report["stage"]) == (9, code, stage)
    assert "illegal memory" not in result.stdout and "Tried to allocate" not in result.stdout


def test_the_computation_decides_even_when_the_arch_list_lacks_the_device(fake_python: Path) -> None:
    # The arch comparison is information: a device it calls missing still computes, and the result stands.
    result, report = diagnose(fake_python, "arch_mismatch_runs")
    assert (result.returncode, report["code"], report["stage"]) == (0, "GPU_CHECK_PASSED", "verify")
    assert (report["execution"]["capability"], report["execution"]["arch_support"]) == ("sm_120", "missing")
    assert report["execution"]["checks"] == {"product": True, "gradient": True, "loss": True}


def test_a_failed_computation_on_a_wheel_without_the_device_architecture_says_so(fake_python: Path) -> None:
    # An RTX 50xx (sm_120) meets a wheel compiled up to sm_90: its first kernel fails, and the report says why.
    result, report = diagnose(fake_python, "arch_mismatch")
    assert (result.returncode, report["code"], report["stage"]) == (9, "RUNTIME_ERROR", "compute")
    assert (report["execution"]["capability"], report["execution"]["arch_support"]) == ("sm_120", "missing")
    assert report["execution"]["gpu_model"] == "NVIDIA GeForce RTX 5070" and report["execution"]["checks"] is None
    assert "sm_120" not in report["pytorch"]["arch_list"]
    assert "architecture" in report["message"] and "no kernel image" not in report["message"]
    generic = run(fake_python, [], env=fake_env("runtime_compute")).report["message"]
    assert "architecture" not in generic, "an ordinary backend error must not blame the architecture"


def test_hanging_child_is_stopped_at_the_timeout_exit_10(fake_python: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result, report = diagnose(fake_python, "hang_visibility", "--timeout", "5",
                              KERNODECK_FAKE_TORCH_PIDFILE=str(pidfile))
    elapsed = time.monotonic() - started
    assert (result.returncode, report["code"], report["stage"]) == (10, "TIMEOUT", "visibility")
    assert 5 <= elapsed < 12, elapsed  # generous: the machine is shared
    (child,) = [int(pid) for pid in pidfile.read_text().split()]
    assert not pid_alive(child), "the timed-out child must be gone"
    # torch was imported and had described its build before the hang: that is kept, not dropped.
    assert (report["pytorch"]["version"], report["pytorch"]["backend"]) == ("2.8.0+cu128", "cuda")
    assert report["pytorch"]["gpu_available"] is None and report["execution"] is None


def test_a_hang_inside_the_torch_import_times_out_with_pytorch_null(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "hang_import", "--timeout", "5")
    assert (result.returncode, report["code"], report["stage"]) == (10, "TIMEOUT", "import")
    assert report["pytorch"] is None and report["execution"] is None


@pytest.mark.parametrize("scenario, stage", [("crash_compute", "compute"), ("silent_exit_compute", "compute")])
def test_child_that_crashes_or_says_nothing_is_exit_11(fake_python: Path, scenario, stage) -> None:
    result, report = diagnose(fake_python, scenario)
    assert (result.returncode, report["code"], report["stage"]) == (11, "WORKER_FAILED", stage)
    # What the child reported before it died stays: the build, the device reached, no checks yet.
    assert (report["pytorch"]["version"], report["pytorch"]["gpu_count"]) == ("2.8.0+cu128", 1)
    assert (report["execution"]["device"], report["execution"]["gpu_model"]) == ("cuda:0", "NVIDIA H100 80GB HBM3")
    assert report["execution"]["checks"] is None


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_hanging(python: Path, pidfile: Path) -> subprocess.Popen:
    """A diagnostic whose child hangs in is_available(); returns once the child is there."""
    env = fake_env("hang_visibility", KERNODECK_FAKE_TORCH_PIDFILE=str(pidfile))
    # SIGINT as a terminal delivers it: a suite started in the background by a shell inherits it ignored, and so
    # would the diagnostic (Python then installs no KeyboardInterrupt handler).
    process = subprocess.Popen([str(python), str(SCRIPT), "--timeout", "60"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env,
                               preexec_fn=default_sigint if os.name == "posix" else None)
    hanging = Path(f"{pidfile}.hanging")
    deadline = time.monotonic() + 30
    while not hanging.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hanging.exists(), "the stand-in never reached its hang"
    return process


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_the_child_and_exits_130(fake_python: Path, tmp_path: Path, signum: int) -> None:
    pidfile = tmp_path / "pids"
    process = start_hanging(fake_python, pidfile)
    process.send_signal(signum)
    out, err = process.communicate(timeout=15)
    report = json.loads(out)
    validate(report)
    assert (process.returncode, report["code"], report["exit_code"]) == (130, "INTERRUPTED", 130)
    assert report["requested_device"] == "unspecified" and report["stage"] == "visibility"
    assert b"Traceback" not in err
    (child,) = [int(pid) for pid in pidfile.read_text().split()]
    assert not pid_alive(child), "the interrupted child must be gone"


def test_unknown_versions_and_gpu_models_become_neutral(fake_python: Path) -> None:
    result, report = diagnose(fake_python, "identifying")
    assert report["code"] == "GPU_CHECK_PASSED"
    assert (report["pytorch"]["version"], report["pytorch"]["cuda"]) == ("unrecognized", "unrecognized")
    assert report["execution"]["gpu_model"] == "unrecognized"
    assert "GPU-" not in result.stdout  # no UUID-like text either


def test_child_does_not_outlive_a_killed_parent(fake_python: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process = start_hanging(fake_python, pidfile)
    process.kill()  # SIGKILL: no handler runs in the parent
    process.communicate(timeout=15)
    (child,) = [int(pid) for pid in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(child), "an orphaned child must end itself"
