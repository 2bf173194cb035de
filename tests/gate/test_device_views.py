"""A fake torch cannot claim a device: torch's files are checked against its RECORD, the parent sees which
libraries the device worker really mapped, and a CUDA claim needs the worker's device UUID on the kernel
driver's list. The parsers run on recorded outputs (tests/gate/fixtures/, written from the documented formats:
no GPU here, so CUDA is never reported verified by these tests)."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

import pytest
from platform_runtime import nvidia_driver, procmaps, torch_record
from rules import trust

from tests.conftest import ROOT
from tests.gate.test_gate_isolation import FORGED_CUDA_REPORT, bare_venv, fake_torch, run_gate_with

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CUDA_VERSION_PY = "__version__ = '2.8.0+cu128'\ncuda = '12.8'\nhip = None\n"


# --- the parsers, on recorded formats ------------------------------------------------------------------------

def test_proc_information_gives_the_gpu_uuid_as_torch_prints_it():
    h100 = (FIXTURES / "nvidia" / "information-h100.txt").read_text()
    t4 = (FIXTURES / "nvidia" / "information-t4.txt").read_text()
    assert nvidia_driver.parse_information(h100) == "6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab"
    assert nvidia_driver.parse_information(t4) == "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
    assert nvidia_driver.parse_information("Model: \t\t NVIDIA H100\n") is None


def test_nvidia_smi_list_gives_every_gpu_and_mig_uuid():
    two = (FIXTURES / "nvidia" / "smi-L-two-gpus.txt").read_text()
    mig = (FIXTURES / "nvidia" / "smi-L-mig.txt").read_text()
    assert nvidia_driver.parse_smi_list(two) == ["6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab",
                                                 "11111111-2222-3333-4444-555555555555"]
    assert nvidia_driver.parse_smi_list(mig)[1:] == ["4a5b6c7d-8e9f-5a0b-9c1d-2e3f4a5b6c7d",
                                                     "0f1e2d3c-4b5a-5968-8776-5a4b3c2d1e0f"]


def driver_tree(tmp_path: Path, *fixtures: str) -> Path:
    root = tmp_path / "gpus"
    for index, name in enumerate(fixtures):
        (root / f"0000:{index:02x}:00.0").mkdir(parents=True)
        (root / f"0000:{index:02x}:00.0" / "information").write_text((FIXTURES / "nvidia" / name).read_text())
    return root


def test_a_reported_uuid_holds_only_when_the_driver_lists_it(tmp_path):
    root = driver_tree(tmp_path, "information-h100.txt", "information-t4.txt")
    listed = nvidia_driver.uuid_check("6F9C2F5E-1d3b-2c4a-9e8f-0123456789ab", root, smi=lambda: [])
    files = listed.pop("proc_files")  # what the files read are (tests/gate/test_driver_files.py judges them)
    assert listed.pop("smi_file")["found"] is (nvidia_driver.trusted_smi() is not None)
    assert listed == {"listed": True, "source": "proc-driver-nvidia", "driver_gpus": 2, "reported_uuid_valid": True}
    assert len(files) == 1 and files[0]["fstype"] not in (None, "proc")  # the fixtures lie on this disk, not procfs
    assert nvidia_driver.uuid_problem(listed) is None
    other = nvidia_driver.uuid_check("11111111-2222-3333-4444-555555555555", root, smi=lambda: [])
    assert other["listed"] is False and "not on the kernel driver's list" in nvidia_driver.uuid_problem(other)
    mig = nvidia_driver.uuid_check("MIG-4a5b6c7d-8e9f-5a0b-9c1d-2e3f4a5b6c7d", root, smi=lambda: nvidia_driver.
                                   parse_smi_list((FIXTURES / "nvidia" / "smi-L-mig.txt").read_text()))
    assert mig["listed"] is True and mig["source"] == "proc-driver-nvidia+nvidia-smi-L"
    none = nvidia_driver.uuid_check("6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab", tmp_path / "absent", smi=lambda: [])
    assert none["driver_gpus"] == 0 and "lists no GPU" in nvidia_driver.uuid_problem(none)
    forged = nvidia_driver.uuid_check("Forged GPU", root, smi=lambda: [])
    assert "no valid device UUID" in nvidia_driver.uuid_problem(forged)


def test_maps_name_each_mapped_file_once_with_its_inode():
    mappings = procmaps.parse_maps((FIXTURES / "proc" / "maps-device-worker.txt").read_text())
    by_path = {m.path: m for m in mappings}
    assert by_path["/srv/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"].inode == 2097233
    assert "/srv/my venv/extra lib/libspace.so" in by_path  # a path with spaces
    assert by_path["/srv/venv/lib/python3.11/site-packages/torch/lib/libshm.so"].deleted is True
    assert not any(m.path.startswith("[") for m in mappings) and len(mappings) == len(by_path) == 7


def test_is_mapped_needs_the_very_file_not_one_of_the_same_name(tmp_path):
    real = tmp_path / "lib" / "libtorch_cuda.so"
    real.parent.mkdir()
    real.write_bytes(b"\x7fELF")
    inode = real.stat().st_ino
    line = f"7f0000000000-7f0000001000 r-xp 00000000 08:01 {inode}  {real}\n"
    assert procmaps.is_mapped(procmaps.parse_maps(line), real)
    assert not procmaps.is_mapped(procmaps.parse_maps(line.replace(str(inode), str(inode + 1))), real)
    assert not procmaps.is_mapped(procmaps.parse_maps(line.rstrip() + " (deleted)\n"), real)


# --- RECORD ---------------------------------------------------------------------------------------------------

def record_line(site: Path, relative: str) -> str:
    data = (site / relative).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relative},sha256={digest},{len(data)}"


def installed_torch(site: Path, files: dict[str, bytes]) -> str:
    """A torch with a RECORD that lists exactly its files (as an installer writes it)."""
    for relative, data in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(data)
    dist = "torch-2.8.0+cu128.dist-info"
    (site / dist).mkdir(parents=True, exist_ok=True)
    rows = [record_line(site, relative) for relative in files] + [f"{dist}/RECORD,,",
                                                                    "torch/__pycache__/__init__.cpython-311.pyc,,"]
    (site / dist / "RECORD").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return dist


FILES = {"torch/__init__.py": b"x = 1\n", "torch/version.py": CUDA_VERSION_PY.encode(),
         "torch/lib/libtorch_cuda.so": b"\x7fELF" + bytes(64)}


def test_a_torch_whose_files_match_its_record_verifies(tmp_path):
    dist = installed_torch(tmp_path, FILES)
    (tmp_path / "torch" / "__pycache__").mkdir()
    (tmp_path / "torch" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"listed without a hash")
    report = torch_record.verify(tmp_path, dist)
    assert report["verified"] is True and report["files"] == 3 and report["problems"] == []
    assert report["bytes"] == sum(len(v) for v in FILES.values())


def test_bytecode_this_interpreter_wrote_for_a_listed_module_is_counted_not_refused(tmp_path):
    """uv lists no .pyc in RECORD (with --compile-bytecode too), and the first import without -B writes one beside
    each module: counted, its bytes unchecked (docs/gate.md#threat-model), never taken for a planted file."""
    import sys

    dist = installed_torch(tmp_path, FILES)
    (tmp_path / "torch" / "__pycache__").mkdir()
    tag = sys.implementation.cache_tag
    (tmp_path / "torch" / "__pycache__" / f"version.{tag}.pyc").write_bytes(b"written on import")
    (tmp_path / "torch" / "__pycache__" / f"version.{tag}.opt-1.pyc").write_bytes(b"written with -O")
    report = torch_record.verify(tmp_path, dist)
    assert report["verified"] is True and report["bytecode_unlisted"] == 2, report["problems"]
    assert torch_record.own_bytecode_source(f"torch/__pycache__/version.{tag}.pyc") == "torch/version.py"
    assert torch_record.own_bytecode_source("torch/__pycache__/version.cpython-299.pyc") is None
    assert torch_record.own_bytecode_source(f"torch/version.{tag}.pyc") is None


@pytest.mark.parametrize("edit, words", [
    (lambda site: (site / "torch" / "__init__.py").write_bytes(b"x = 2\n"), "1 file(s) differ from torch's RECORD: "
                                                                             "torch/__init__.py"),
    (lambda site: (site / "torch" / "lib" / "libtorch_cuda.so").unlink(), "are missing: torch/lib/libtorch_cuda.so"),
    (lambda site: (site / "torch" / "_planted.py").write_text("import os\n"), "not in its RECORD: torch/_planted.py"),
    (lambda site: (site / "torch" / "__pycache__").mkdir() or (site / "torch" / "__pycache__" / "_planted.cpython-311"
                                                                ".pyc").write_bytes(b"forged"), "not in its RECORD"),
    (lambda site: (site / "torch" / "__pycache__").mkdir() or (site / "torch" / "__pycache__" / "version.cpython-299"
                                                                ".pyc").write_bytes(b"forged"), "not in its RECORD"),
])
def test_a_torch_edited_after_install_does_not_verify(tmp_path, edit, words):
    """Bytecode of a module RECORD does not list, or of another interpreter, is refused like any planted file."""
    dist = installed_torch(tmp_path, FILES)
    edit(tmp_path)
    report = torch_record.verify(tmp_path, dist)
    assert report["verified"] is False and words in report["problems"][0], report["problems"]


def test_a_torch_without_a_record_or_with_one_that_lists_no_torch_file_does_not_verify(tmp_path):
    assert "no readable dist-info RECORD" in torch_record.verify(tmp_path, None)["problems"][0]
    dist = installed_torch(tmp_path, {"other/__init__.py": b""})
    assert "lists no file of the torch package" in torch_record.verify(tmp_path, dist)["problems"][0]


# --- the judgement (rules.trust), from recorded views ----------------------------------------------------------

GOOD_VIEWS = {"record": {"verified": True, "files": 3, "bytes": 10, "duration_s": 0.1, "problems": []},
              "mapped": {"observed": "linux-proc-maps",
                         "torch_lib": ["libc10_cuda.so", "libtorch_cpu.so", "libtorch_cuda.so"]},
              "driver": {"listed": True, "source": "proc-driver-nvidia", "driver_gpus": 1, "reported_uuid_valid": True,
                         "problem": None},
              # what a native CUDA process holds (tests/gate/test_driver_access.py judges this view on its own)
              "driver_access": {"devices_open": ["nvidia-uvm", "nvidia0", "nvidiactl"],
                                "cuda_library": {"name": "libcuda.so.1", "from": "system", "deleted": False}}}


# The worker's own report of its device (a UUID in torch's form), which the driver's list was searched for.
PROBE = {"uuid": "6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab"}


def test_views_that_agree_back_a_cuda_claim():
    assert trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": GOOD_VIEWS}) == []


@pytest.mark.parametrize("path, value, words", [
    (("record", "verified"), False, "device.views.record.verified is recorded False, its measurements say True"),
    (("mapped", "torch_lib"), ["libtorch_cpu.so"], "did not map libtorch_cuda.so"),
    (("mapped", "torch_lib"), ["libtorch_cpu.so", "libtorch_cuda.so"], "did not map libc10_cuda.so"),
    (("mapped", "observed"), "unreadable", "could not be read before it exited"),
    (("driver", "listed"), False, "not on the kernel driver's list"),
    (("driver", "source"), None, "device.views.driver.source is None"),
    (("driver", "driver_gpus"), 0, "device.views.driver.driver_gpus is 0"),
    (("driver", "reported_uuid_valid"), False, "device.views.driver.reported_uuid_valid is False"),
    (("driver", "problem"), "no GPU", "device.views.driver.problem is 'no GPU' beside listed true"),
])
def test_each_view_that_disagrees_refuses_the_claim(path, value, words):
    views = json.loads(json.dumps(GOOD_VIEWS))
    views[path[0]][path[1]] = value
    problems = trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": views})
    assert any(words in p for p in problems), problems


@pytest.mark.parametrize("facts, words", [
    ({"problems": ["1 file(s) differ from torch's RECORD: torch/__init__.py"]}, "differ from torch's RECORD"),
    ({"files": 0, "bytes": 0}, "hashed 0 file(s) of 0 bytes"),
    ({"bytecode_unlisted": 4}, "bytecode_unlisted is 4"),
    ({"bytecode_unlisted": -1}, "bytecode_unlisted is -1"),
    ({"problems": None}, "device.views.record.problems is None"),
], ids=["problems", "nothing-hashed", "more-bytecode-than-files", "negative-bytecode", "no-problems-list"])
def test_a_record_recorded_verified_is_recomputed_from_its_measurements(facts, words):
    views = json.loads(json.dumps(GOOD_VIEWS))
    views["record"].update(facts)  # `verified` left True
    problems = trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": views})
    assert any(words in p for p in problems), problems
    assert "device.views.record.verified is recorded True, its measurements say False" in problems


def test_listed_needs_the_workers_own_uuid_to_be_one():
    """The adversary's `{"listed": true}` alone, and a full driver view beside a worker that reported no UUID."""
    assert any("device.views.driver.listed is recorded True" in p for p in trust.device_view_problems(
        {"type": "cuda", "cuda": PROBE, "views": {**GOOD_VIEWS, "driver": {"listed": True}}}))
    problems = trust.device_view_problems({"type": "cuda", "cuda": {"uuid": None}, "views": GOOD_VIEWS})
    assert any("device.cuda.uuid is not a UUID" in p for p in problems), problems


def test_a_result_with_no_views_at_all_is_refused():
    assert trust.device_view_problems({"type": "cpu"})  # record not verified, maps not read


# --- the fake torch, run by the gate --------------------------------------------------------------------------

def test_the_three_file_torch_with_a_cuda_version_and_a_one_byte_library_cannot_claim_cuda(tmp_path):
    python, purelib = bare_venv(tmp_path / "venv")
    fake_torch(purelib, CUDA_VERSION_PY, ("libtorch_cuda.so",))  # version.py, lib/libtorch_cuda.so, __init__
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--require", "cuda", env={})
    reason = run.result["checks"]["device_compute"]["reason"]
    assert run.returncode == 1 and run.result["checks"]["device_compute"]["ok"] is False
    assert "no readable dist-info RECORD" in reason
    assert "did not map libtorch_cpu.so, libtorch_cuda.so" in reason or "could not be read" in reason
    assert "UUID" in reason
    assert next(v for v in run.result["requirements"] if v["name"] == "cuda")["ok"] is False


HOLDING_FAKE = """import json, sys
sys.stdout.write(json.dumps({report!r}) + "\\n")
sys.stdout.flush()
sys.stdin.read()  # waits like the real worker, so the gate reads its maps
import os
os._exit(0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/maps")
def test_a_fake_torch_with_its_own_record_is_caught_by_what_the_worker_mapped(tmp_path):
    python, purelib = bare_venv(tmp_path / "venv")
    report = {**FORGED_CUDA_REPORT, "cuda": {**FORGED_CUDA_REPORT["cuda"],
                                             "uuid": "6f9c2f5e-1d3b-2c4a-9e8f-0123456789ab"}}
    dist = installed_torch(purelib, {**FILES, "torch/__init__.py": HOLDING_FAKE.format(report=report).encode()})
    assert torch_record.verify(purelib, dist)["verified"] is True  # its RECORD is its own, and consistent
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--require", "cuda", env={})
    views = run.result["device"]["views"]
    assert views["record"]["verified"] is True and views["mapped"] == {"observed": "linux-proc-maps", "torch_lib": []}
    reason = run.result["checks"]["device_compute"]["reason"]
    assert "did not map libtorch_cpu.so, libtorch_cuda.so" in reason and "kernel driver lists no GPU" in reason
    assert run.returncode == 1 and next(v for v in run.result["requirements"] if v["name"] == "cuda")["ok"] is False


def test_the_real_torch_is_verified_and_seen_mapped(gate):
    run = gate("--device", "cpu")
    views = run.result["device"]["views"]
    assert views["record"]["verified"] is True and views["record"]["files"] > 1000
    if sys.platform.startswith("linux"):
        assert views["mapped"]["observed"] == "linux-proc-maps" and "libtorch_cpu.so" in views["mapped"]["torch_lib"]
    assert "driver" not in views and run.result["device"]["build_cross_check"] == []


def test_a_record_check_process_that_ends_without_a_report_fails_the_view(monkeypatch):
    """The RECORD check runs in a process of its own: one that dies or prints nothing is never a verified torch."""
    from platform_runtime import children, device_views

    monkeypatch.setattr(children, "worker_command", lambda *args: [sys.executable, "-c", "import sys; sys.exit(3)"])
    views = device_views.DeviceViews(None, None)
    views.start_record_check()
    report = views.record_check(timeout=60)
    assert report["verified"] is False and report["problems"] == [
        "the RECORD check's process ended with code 3 without a report"]


