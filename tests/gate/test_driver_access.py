"""A GPU claim needs the device worker's own access to the kernel driver, seen by the parent from outside
(platform_runtime/driver_access.py, judged by rules/gpu_driver_access.py): the driver's device held open, on CUDA the
NVIDIA driver's libcuda.so from the system's folders, on ROCm a GPU node in the kernel's KFD topology; and the
driver's list of GPUs comes from the driver's own nvidia-smi, never one found on the caller's PATH.

No GPU here: what a real CUDA box shows is written from the documented formats (the driver's device nodes,
libcuda's install folders), never reported verified by these tests. The fake torch below is the adversary's
(a self-consistent RECORD, real ELF libraries of its own mapped, an nvidia-smi on PATH printing its UUID),
set up from outside the project's code."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from platform_runtime import driver_access, nvidia_driver, procmaps
from rules import gpu_driver_access, trust

from tests.conftest import ROOT
from tests.gate.test_device_views import FILES, GOOD_VIEWS, PROBE, installed_torch
from tests.gate.test_gate_isolation import FORGED_CUDA_REPORT, bare_venv, run_gate_with

UUID = "6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab"
REAL_CUDA_ACCESS = {"devices_open": ["nvidia-uvm", "nvidia0", "nvidiactl"],
                    "cuda_library": {"name": "libcuda.so.1", "from": "system", "deleted": False}}


def test_only_the_drivers_devices_are_named_from_a_workers_open_files():
    targets = ["/dev/null", "/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", "/dev/dxg", "/dev/kfd",
               "/dev/dri/renderD128", "pipe:[123]", "/tmp/x/nvidia0", "/dev/pts/0", "socket:[9]"]
    assert driver_access.driver_devices(targets) == ["dri/renderD128", "dxg", "kfd", "nvidia-uvm", "nvidia0",
                                                     "nvidiactl"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/fd")
def test_a_processs_open_files_are_read_from_proc():
    with open(os.devnull) as held:
        targets = driver_access.open_targets(os.getpid())
        assert targets is not None and os.devnull in targets and held
    assert driver_access.open_targets(2**22 + 12345) is None  # no such process


@pytest.mark.parametrize("folder, origin", [
    ("/usr/lib/x86_64-linux-gnu", "system"), ("/usr/lib/wsl/lib", "system"), ("/usr/local/cuda/compat", "system"),
    ("/opt/fake", "other")])
def test_libcuda_is_system_only_from_the_systems_folders(folder, origin):
    mappings = [procmaps.Mapping(f"{folder}/libcuda.so.1", "fd:01", 7)]
    assert driver_access.cuda_driver_library(mappings, set(), set())["from"] == origin


def test_libcuda_dropped_into_the_python_installation_or_a_library_path_folder_is_named_so(tmp_path):
    site, elsewhere = tmp_path / "site-packages", tmp_path / "evil"
    in_site = [procmaps.Mapping(f"{site}/torch/lib/libcuda.so.1", "fd:01", 7)]
    assert driver_access.cuda_driver_library(in_site, set(), {site})["from"] == "python-installation"
    on_path = [procmaps.Mapping(f"{elsewhere}/libcuda.so", "fd:01", 8)]
    assert driver_access.cuda_driver_library(on_path, {elsewhere}, {site})["from"] == "library-path"
    assert driver_access.cuda_driver_library([procmaps.Mapping("/usr/lib/libz.so.1", "fd:01", 9)], set(), set()) is None


def test_the_kfd_topology_counts_gpu_nodes_not_the_cpu(tmp_path):
    for node, gpu_id in (("0", "0"), ("1", "45678"), ("2", "51234\n")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "gpu_id").write_text(gpu_id)
    assert driver_access.kfd_gpu_nodes(tmp_path) == 2
    assert driver_access.kfd_gpu_nodes(tmp_path / "absent") == 0


def views(access: dict | None, kind_views: dict = GOOD_VIEWS) -> dict:
    out = json.loads(json.dumps(kind_views))
    out.pop("driver_access", None)
    if access is not None:
        out["driver_access"] = access
    return out


def test_what_a_real_cuda_box_shows_backs_the_claim():
    assert gpu_driver_access.driver_access_problems("cuda", views(REAL_CUDA_ACCESS)) == []
    wsl = {"devices_open": ["dxg"], "cuda_library": {"name": "libcuda.so.1", "from": "system", "deleted": False}}
    assert gpu_driver_access.driver_access_problems("cuda", views(wsl)) == []
    assert trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": views(REAL_CUDA_ACCESS)}) == []


@pytest.mark.parametrize("access, words", [
    (None, "driver_access is missing"),
    ({**REAL_CUDA_ACCESS, "devices_open": None}, "open files were not read"),
    ({**REAL_CUDA_ACCESS, "devices_open": []}, "held no NVIDIA driver device open"),
    ({**REAL_CUDA_ACCESS, "devices_open": ["nvidia-uvm"]}, "held no NVIDIA driver device open"),
    ({**REAL_CUDA_ACCESS, "cuda_library": None}, "libcuda.so was not mapped from the system"),
    ({**REAL_CUDA_ACCESS, "cuda_library": {"name": "libcuda.so.1", "from": "python-installation", "deleted": False}},
     "libcuda.so was not mapped from the system"),
    ({**REAL_CUDA_ACCESS, "cuda_library": {"name": "libcuda.so.1", "from": "system", "deleted": True}},
     "libcuda.so was not mapped from the system"),
])
def test_each_missing_access_to_the_nvidia_driver_refuses_a_cuda_claim(access, words):
    problems = trust.device_view_problems({"type": "cuda", "views": views(access)})
    assert any(words in p for p in problems), problems


def test_a_rocm_claim_needs_dev_kfd_open_and_a_gpu_in_the_kfd_topology():
    rocm = {**GOOD_VIEWS,
            "mapped": {"observed": "linux-proc-maps", "torch_lib": ["libtorch_cpu.so", "libtorch_hip.so"]}}
    good = {"devices_open": ["dri/renderD128", "kfd"], "kfd_gpu_nodes": 1}
    assert gpu_driver_access.driver_access_problems("rocm", views(good, rocm)) == []
    assert any("/dev/kfd" in p for p in gpu_driver_access.driver_access_problems(
        "rocm", views({**good, "devices_open": []}, rocm)))
    assert any("lists no GPU" in p for p in gpu_driver_access.driver_access_problems(
        "rocm", views({**good, "kfd_gpu_nodes": 0}, rocm)))


def test_cpu_and_unobserved_claims_are_not_judged_by_driver_access():
    assert gpu_driver_access.driver_access_problems("cpu", views(None)) == []
    not_linux = {**GOOD_VIEWS, "mapped": {"observed": "not-linux", "torch_lib": []}}
    assert gpu_driver_access.driver_access_problems("cuda", views(None, not_linux)) == []


def test_an_nvidia_smi_on_the_callers_path_is_not_the_drivers(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho 'GPU 0: Forged (UUID: GPU-{UUID})'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("nvidia-smi") == str(fake)
    assert nvidia_driver.trusted_smi() in (None, *nvidia_driver.SMI_LOCATIONS["linux"])
    if nvidia_driver.trusted_smi() is None:
        assert nvidia_driver.smi_uuids() == []


HOLDING_FAKE_WITH_LIBRARIES = """import ctypes, json, os, sys
here = os.path.dirname(__file__)
for name in ("libtorch_cpu.so", "libtorch_cuda.so"):
    ctypes.CDLL(os.path.join(here, "lib", name))  # real ELF files of its own, listed in its own RECORD
sys.stdout.write(json.dumps({report!r}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
os._exit(0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not Path("/usr/lib/x86_64-linux-gnu/libz.so.1").exists(),
                    reason="/proc/<pid>/maps and a real shared object to copy")
def test_a_fake_torch_mapping_its_own_libraries_with_its_own_nvidia_smi_cannot_claim_cuda(tmp_path):
    python, purelib = bare_venv(tmp_path / "venv")
    elf = Path("/usr/lib/x86_64-linux-gnu/libz.so.1").read_bytes()
    report = {**FORGED_CUDA_REPORT, "cuda": {**FORGED_CUDA_REPORT["cuda"], "uuid": UUID}}
    installed_torch(purelib, {**FILES, "torch/lib/libtorch_cuda.so": elf, "torch/lib/libtorch_cpu.so": elf,
                              "torch/__init__.py": HOLDING_FAKE_WITH_LIBRARIES.format(report=report).encode()})
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\necho 'GPU 0: Forged (UUID: GPU-{UUID})'\n")
    smi.chmod(0o755)
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--require", "cuda",
                        env={"PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}"})
    seen = run.result["device"]["views"]
    assert seen["record"]["verified"] is True  # its RECORD is its own, and consistent
    assert seen["mapped"]["torch_lib"] == ["libtorch_cpu.so", "libtorch_cuda.so"]  # what it mapped, it mapped
    assert seen["driver"]["listed"] is False  # the nvidia-smi on PATH was not asked
    assert seen["driver_access"]["devices_open"] == [] and seen["driver_access"]["cuda_library"] is None
    reason = run.result["checks"]["device_compute"]["reason"]
    assert "held no NVIDIA driver device open" in reason and "libcuda.so was not mapped" in reason
    assert run.returncode == 1 and next(v for v in run.result["requirements"] if v["name"] == "cuda")["ok"] is False


def test_nvidia_smi_runs_without_the_callers_loader_git_or_openssl_variables(monkeypatch):
    for name, value in (("LD_PRELOAD", "/tmp/x.so"), ("LD_LIBRARY_PATH", "/tmp"), ("GIT_CONFIG_COUNT", "1"),
                        ("OPENSSL_CONF", "/tmp/openssl.cnf"), ("PYTHONPATH", "/tmp")):
        monkeypatch.setenv(name, value)
    environment = nvidia_driver.smi_environment()
    assert not {"LD_PRELOAD", "LD_LIBRARY_PATH", "GIT_CONFIG_COUNT", "OPENSSL_CONF", "PYTHONPATH"} & set(environment)
    assert environment.get("PATH") == os.environ["PATH"]
