"""A real Linux CPU gate result edited to claim mps or windows, as the adversarial review did (findings 6 and
7): every fact it thought of moved to Darwin or Windows, `ok` and the requirement left true. What it left is
each an OS fact and refuses the claim on its own (the others set as that system would record them): the
compiler that built the interpreter (`platform.python_compiler`, GCC on Linux), the libraries the device worker
was seen mapping (`device.views.mapped.torch_lib`, named only on Linux), and on MPS a `+cpu` torch (macOS wheels
carry no such tag). Each is refused as not authentic (exit 3) naming the field."""

from __future__ import annotations

import copy

import pytest
from rules.gate_record import read_gate
from rules.platforms import _allowed
from rules.requirements import problems_of

from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture


def _as_mps(d: dict) -> None:  # /tmp/advw/mps_edit.py, the review's
    device, compute = d["device"], d["checks"]["device_compute"]
    d["arguments"].update(require=["mps"], require_device=None)
    d["requirements"] = [{"name": "mps", "ok": True, "reason": "matmul, training, checkpoint save and load each ran "
                                                               "on mps (mps)"}]
    d["platform"].update(system="Darwin", release="23.4.0", machine="arm64", mac_version="14.4")
    d["filesystem"].update(type="apfs", method="darwin-statfs", mount_id=None, mount_options=None)
    device.update(type="mps", resolved="mps", ran_on=["mps"],
                  mps={"built": True, "available": True, "fallback_env_set": False})
    for phase in device["phases"].values():  # bytes on the device, as torch.mps counts them
        phase.update(tensor_devices=["mps"], resident_bytes=68171776, on_device=True, allocated_bytes=4096)
    device["peak_allocated_bytes"] = compute["peak_allocated_bytes"] = 4096  # the worker's: its phases' largest
    device["views"]["mapped"]["observed"] = "not-linux"
    device["torch_build"].update(wheel_tags=["cp311-none-macosx_11_0_arm64"], backend_libraries=["libtorch_cpu.dylib"])
    compute.update(ran_on=["mps"], phases=device["phases"])
    compute["matmul"]["device"] = compute["training"]["parameter_device"] = "mps"
    compute["checkpoint"]["saved_from_device"] = ["mps"]
    d["platform"]["binaries"] = {"interpreter": {"format": "mach-o-fat", "header": [0x01000007, 0x0100000C],
                                                 "bits": None, "error": None},
                                 "torch_c": {"format": "mach-o", "header": 0x0100000C, "bits": 64, "error": None,
                                             "name": "_C.cpython-311-darwin.so"}}


def _as_windows(d: dict) -> None:  # the review's case-win1
    d["arguments"].update(require=["windows"])
    d["requirements"] = [{"name": "windows", "ok": True, "reason": "Windows, volume file system ntfs"}]
    d["platform"].update(system="Windows", release="10", machine="AMD64", windows_version="10.0.20348")
    d["filesystem"].update(type="ntfs", method="win32-GetVolumeInformationW", mount_id=None, mount_options=None,
                           drive_type="fixed")
    append = d["checks"]["jsonl_append"]
    append["method"] = append["lock_probe"]["method"] = "msvcrt-locking-lockfile"
    d["device"]["views"]["mapped"]["observed"] = "not-linux"
    d["device"]["torch_build"]["wheel_tags"] = ["cp311-cp311-win_amd64"]
    d["platform"]["binaries"] = {"interpreter": {"format": "pe", "header": 0x8664, "bits": None, "error": None},
                                 "torch_c": {"format": "pe", "header": 0x8664, "bits": None, "error": None,
                                             "name": "_C.cp311-win_amd64.pyd"}}


COMPILERS = {"mps": "Clang 15.0.0 (clang-1500.3.9.4)", "windows": "MSC v.1938 64 bit (AMD64)"}


def _fix(d: dict, leftover: str, kind: str) -> None:
    """Every leftover but `leftover` set as the claimed system records it."""
    if leftover != "compiler":
        d["platform"]["python_compiler"] = COMPILERS[kind]
    if leftover != "torch_lib":
        d["device"]["views"]["mapped"]["torch_lib"] = []  # what the gate writes where it is not Linux
    if leftover != "cpu-wheel" and kind == "mps":
        d["device"]["torch_build"].update(version="2.13.0", dist_info="torch-2.13.0.dist-info")
        d["device"]["torch"]["version"] = "2.13.0"


CASES = [
    ("mps", "compiler", "platform.python_compiler is 'GCC 12.2.0': a Linux fact, not Darwin"),
    ("mps", "torch_lib", "device.views.mapped.torch_lib is ['libc10.so'"),
    ("mps", "cpu-wheel", "the torch build is a CPU one (torch_build.version '2.13.0+cpu'"),
    ("windows", "compiler", "platform.python_compiler is 'GCC 12.2.0': a Linux fact, not Windows"),
    ("windows", "torch_lib", "device.views.mapped.torch_lib is ['libc10.so'"),
]


@pytest.mark.parametrize("kind, leftover, words", CASES, ids=[f"{k}-{left}" for k, left, _ in CASES])
def test_a_linux_result_edited_to_another_system_is_refused_by_each_fact_left(tmp_path, real, kind, leftover,  # noqa: F811
                                                                              words):
    assert real["platform"]["python_compiler"].startswith("GCC") and real["device"]["views"]["mapped"]["torch_lib"]
    document = copy.deepcopy(real)
    (_as_mps if kind == "mps" else _as_windows)(document)
    _fix(document, leftover, kind)
    assert document["ok"] is True
    problems = problems_of(read_gate(document), kind)
    assert any(words in p for p in problems), problems
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(f"requirements[{kind}].ok is recorded True, its facts say False" in p for p in report["problems"])
    assert any(words in p for p in report["problems"]), report["problems"]


@pytest.mark.parametrize("compiler, systems", [
    ("GCC 12.2.0", {"Linux"}), ("Clang 15.0.0 (clang-1500.3.9.4)", {"Darwin"}),
    ("MSC v.1938 64 bit (AMD64)", {"Windows"}), ("Clang 18.1.8 ", {"Linux", "Darwin"}),
    ("[Clang 19.1.1] 64 bit (AMD64) with MSC v.1942 64 bit (AMD64)", {"Windows"}), ("PyPy", None),
])
def test_the_compiler_names_the_systems_cpython_writes_it_on(compiler, systems):
    assert _allowed("platform.python_compiler", compiler) == systems


def test_the_untouched_linux_result_still_holds_its_own_system(real):  # noqa: F811
    from rules.platforms import os_facts, os_problems

    assert os_problems(os_facts(real), "Linux") == []
