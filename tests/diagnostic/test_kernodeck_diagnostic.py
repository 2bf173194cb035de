"""The diagnostic as a user meets it: the script alone, real torch on the CPU, a Python without torch,
the command line, --output and privacy. Failure rows reached through a stand-in torch are in
test_kernodeck_diagnostic_failures.py; the nvidia-smi host check in test_kernodeck_diagnostic_host_check.py."""

from __future__ import annotations

import ast
import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnostic.fakes.harness import SCRIPT, bare_venv, fake_env, fake_venv, make_bare_venv, run

VENV_PYTHON = Path(sys.executable)  # the project's venv: real torch 2.13 (CPU build)


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bare_venv(tmp_path_factory)


@pytest.fixture(scope="session")
def fake_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_venv(tmp_path_factory)


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The script downloaded alone into an empty folder, nothing of the repository beside it."""
    folder = tmp_path_factory.mktemp("download")
    shutil.copy2(SCRIPT, folder / "kernodeck_diagnostic.py")
    return folder


@pytest.fixture(scope="module")
def real_cpu(alone: Path):
    """One real run of the downloaded script on the CPU with real torch, report also written with --output."""
    output = alone / "out" / "diagnostic.json"
    output.parent.mkdir()
    result = run(VENV_PYTHON, ["--device", "cpu", "--output", str(output)], cwd=alone,
                 script=alone / "kernodeck_diagnostic.py")
    return result, output


def test_cpu_check_passes_with_real_torch(real_cpu) -> None:
    result, _ = real_cpu
    report = result.report
    assert result.returncode == 0
    assert (report["status"], report["code"], report["stage"]) == ("passed", "CPU_CHECK_PASSED", "verify")
    assert report["requested_device"] == "cpu"
    assert report["pytorch"]["version"] == "2.13.0+cpu"
    assert report["execution"]["checks"] == {"product": True, "gradient": True, "loss": True}
    assert report["execution"]["loss"] == 196.0
    assert (report["execution"]["dtype"], report["execution"]["shape"]) == ("float32", [2, 2])


def test_cpu_mode_leaves_gpu_fields_null_as_not_measured(real_cpu) -> None:
    report = real_cpu[0].report
    assert report["execution"]["backend"] == "cpu" and report["execution"]["device"] == "cpu"
    assert report["execution"]["gpu_model"] is None and report["execution"]["total_memory_bytes"] is None
    assert report["pytorch"]["gpu_available"] is None and report["pytorch"]["gpu_count"] is None


def test_host_check_is_absent_unless_requested(real_cpu) -> None:
    # The specification's table: host_check "appears only when requested" -- not even as null.
    result, output = real_cpu
    assert "host_check" not in result.report
    assert "host_check" not in json.loads(output.read_text(encoding="utf-8"))


def test_output_is_a_new_utf8_file_equal_to_stdout_without_its_path(real_cpu) -> None:
    result, output = real_cpu
    data = output.read_bytes()
    assert data.decode("utf-8") == result.stdout
    assert b"\r\n" not in data and data.endswith(b"}\n")
    assert str(output.parent) not in result.stdout and output.name not in result.stdout


def test_report_names_nothing_of_this_machine(real_cpu, alone: Path) -> None:
    text = real_cpu[0].stdout
    secrets = {socket.gethostname(), getpass.getuser(), os.getcwd(), str(Path.home()), str(alone), str(SCRIPT),
               sys.executable, str(VENV_PYTHON.parent.parent)}
    secrets |= {value for key, value in os.environ.items() if len(value) >= 4 and key in
                {"HOME", "USER", "LOGNAME", "HOSTNAME", "PWD", "PATH", "VIRTUAL_ENV", "TMPDIR", "SHELL"}}
    found = sorted(s for s in secrets if s and s in text)
    assert not found, f"identifying text in the report: {found}"
    assert "/" not in json.dumps(real_cpu[0].report["runtime"])


def test_default_device_is_gpu_and_never_falls_back_to_the_cpu(alone: Path) -> None:
    # Real torch here is a CPU build: the default (gpu) must fail, not quietly compute on the CPU.
    result = run(VENV_PYTHON, [], cwd=alone, script=alone / "kernodeck_diagnostic.py")
    report = result.report
    assert (result.returncode, report["code"], report["stage"]) == (5, "GPU_BACKEND_ABSENT", "detect")
    assert report["requested_device"] == "gpu" and report["pytorch"]["backend"] == "none"
    assert report["execution"] is None


def test_python_without_torch_is_torch_missing(bare_python: Path, alone: Path) -> None:
    result = run(bare_python, ["--device", "cpu"], cwd=alone, script=alone / "kernodeck_diagnostic.py")
    report = result.report
    assert (result.returncode, report["code"], report["stage"]) == (3, "TORCH_MISSING", "import")
    assert report["pytorch"] is None and report["execution"] is None


def test_a_folder_named_torch_is_not_an_installation(tmp_path: Path) -> None:
    python = make_bare_venv(tmp_path / "venv")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "torch").mkdir()  # a namespace package: importable, but no PyTorch
    result = run(python, ["--device", "cpu"])
    assert (result.returncode, result.report["code"]) == (3, "TORCH_MISSING")


def test_help_answers_without_importing_torch(fake_python: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "imports"
    completed = subprocess.run(
        [str(fake_python), str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30,
        env=fake_env("cuda_pass", KERNODECK_FAKE_TORCH_PIDFILE=str(pidfile)))
    assert completed.returncode == 0
    for option in ("--device", "--device-index", "--timeout", "--host-check", "--output"):
        assert option in completed.stdout
    assert not pidfile.exists(), "--help imported torch"


def test_parent_imports_only_the_standard_library() -> None:
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module.split(".")[0])
    assert top and top <= set(sys.stdlib_module_names) | {"__future__"}, top - set(sys.stdlib_module_names)
    # torch is imported in exactly one place: the worker function that runs in the child.
    owners = [fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
              for node in ast.walk(fn) if isinstance(node, ast.Import) and any(a.name == "torch" for a in node.names)]
    assert owners == ["_worker_main"]


def test_computation_runs_in_a_child_process_never_the_parent(fake_python: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "imports"
    process = subprocess.Popen([str(fake_python), str(SCRIPT), "--device", "cpu"], stdout=subprocess.PIPE,
                               env=fake_env("cuda_pass", KERNODECK_FAKE_TORCH_PIDFILE=str(pidfile)))
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and json.loads(out)["code"] == "CPU_CHECK_PASSED"
    pids = [int(line) for line in pidfile.read_text().split()]
    assert len(pids) == 1 and pids[0] != process.pid


@pytest.mark.parametrize("argv, canary", [
    (["--device", "tpu-canary"], "tpu-canary"),
    (["--device", "cuda"], "cuda"),
    (["--device-index", "64"], "64"),
    (["--device-index", "-1"], "-1"),
    (["--device-index", "x9canary"], "x9canary"),
    (["--timeout", "4"], None),
    (["--timeout", "121"], "121"),
    (["--timeout", "7.5"], "7.5"),
    (["--output", ""], None),
    (["--unknown-canary"], "unknown-canary"),
    (["positional-canary"], "positional-canary"),
    (["--dev", "cpu"], "--dev "),
    (["--device"], None),
])
def test_invalid_arguments_exit_2_with_a_report_and_no_echo(fake_python: Path, tmp_path: Path, argv, canary) -> None:
    result = run(fake_python, [*argv, "--output", str(tmp_path / "never.json")] if argv != ["--device"] else argv,
                 env=fake_env("cuda_pass"))
    report = result.report
    assert (result.returncode, report["code"], report["status"]) == (2, "CLI_ARGUMENTS_INVALID", "failed")
    assert report["requested_device"] == "unspecified" and report["stage"] == "arguments"
    assert result.stderr.strip(), "a clear message on stderr"
    if canary:
        assert canary not in result.stdout and canary not in result.stderr
    assert not (tmp_path / "never.json").exists()


def test_range_limits_are_accepted(fake_python: Path) -> None:
    for argv in (["--timeout", "5"], ["--timeout", "120"], ["--device-index", "0"]):
        assert run(fake_python, argv, env=fake_env("cuda_pass")).report["code"] == "GPU_CHECK_PASSED"
    # 63 is a valid value; this machine's (stand-in) PyTorch just does not see that many GPUs.
    assert run(fake_python, ["--device-index", "63"], env=fake_env("cuda_pass")).report["code"] == \
        "DEVICE_INDEX_INVALID"


def test_existing_output_is_preserved_byte_for_byte_and_fails_the_run(fake_python: Path, tmp_path: Path) -> None:
    target = tmp_path / "diagnostic.json"
    original = b"\x00 keep me \xff\r\n" * 10
    target.write_bytes(original)
    result = run(fake_python, ["--output", str(target)], env=fake_env("cuda_pass"))
    report = result.report
    assert (result.returncode, report["code"], report["status"]) == (12, "OUTPUT_WRITE_FAILED", "failed")
    assert report["stage"] == "output"
    assert report["execution"]["checks"] == {"product": True, "gradient": True, "loss": True}, \
        "the computation itself succeeded; the run fails all the same"
    assert target.read_bytes() == original
    assert str(tmp_path) not in result.stdout and "diagnostic.json" not in result.stdout


def test_output_through_a_symlink_or_into_a_missing_folder_fails(fake_python: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "target.json")  # dangling: O_EXCL must not follow it
    assert run(fake_python, ["--output", str(link)], env=fake_env("cuda_pass")).returncode == 12
    assert not (tmp_path / "target.json").exists()
    assert run(fake_python, ["--output", str(tmp_path / "missing" / "x.json")], env=fake_env("cuda_pass")).returncode \
        == 12
    assert run(fake_python, ["--output", str(tmp_path)], env=fake_env("cuda_pass")).returncode == 12


def test_without_output_no_file_is_created(fake_python: Path, tmp_path: Path) -> None:
    run(fake_python, ["--device", "cpu"], env=fake_env("cuda_pass"), cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_committed_evidence_matches_its_sha256_and_the_schema() -> None:
    import hashlib

    from tests.diagnostic.fakes.harness import ROOT, validate

    folder = ROOT / "evidence" / "diagnostic"
    lines = (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    assert "kernodeck-diagnostic-cpu.json" in names and "../../scripts/kernodeck_diagnostic.py" in names
    for line in lines:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, f"{name} is not what ran"
    cpu = json.loads((folder / "kernodeck-diagnostic-cpu.json").read_text(encoding="utf-8"))
    validate(cpu)
    assert cpu["code"] == "CPU_CHECK_PASSED" and cpu["execution"]["loss"] == 196.0
