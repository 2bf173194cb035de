"""The driver-file facts (rules.gpu_driver_files, r5 F6/F7) are re-judged by the evidence index: a real CPU gate result
edited into a CUDA one whose every other view is a real CUDA box's (tests/evidence_index/test_backend_forgery.py's
edit, completed), with ONE driver fact telling what a namespace forgery shows, `ok`, the requirement and
`build_cross_check` left as a pass, is refused as not authentic (exit 3), naming the fact."""

from __future__ import annotations

import copy

import pytest

from tests.evidence_index.test_backend_forgery import _on_gpu
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture
from tests.gate.test_driver_files import REAL_ACCESS, REAL_DRIVER


def _as_real_cuda(d: dict) -> None:
    _on_gpu(d, "cuda")
    views = d["device"]["views"]
    views["mapped"]["torch_lib"].append("libc10_cuda.so")
    views["driver"] = copy.deepcopy(REAL_DRIVER)
    views["driver_access"] = copy.deepcopy(REAL_ACCESS)
    d["device"]["torch_build"]["backend_files"] = {"libtorch_cuda.so": {"bytes": 1_100_000_000, "format": "elf"}}


@pytest.mark.parametrize("edit, words", [
    (lambda v: v["driver_access"]["device_nodes"][2].update(char=False),
     "/dev/nvidiactl the device worker held is not a character device"),
    (lambda v: v["driver_access"]["libraries"]["libcuda"].update(mount="folder", mount_fstype="overlay"),
     "a mount namespace laid it there"),
    (lambda v: v["driver_access"]["libraries"]["libtorch_cuda.so"].update(size=14904),
     "14904 bytes, below the 67108864 of any real libtorch_cuda.so"),
    (lambda v: v["driver"]["proc_files"][0].update(f_type=0x01021994, fstype="tmpfs", mount_point="/proc/driver"),
     "a 'tmpfs' mount at '/proc/driver'"),
], ids=["nvidiactl-regular-file", "libcuda-overlay", "tiny-libtorch-cuda", "proc-driver-tmpfs"])
def test_one_forged_driver_fact_under_a_recorded_pass_is_not_authentic(tmp_path, real, edit, words):  # noqa: F811
    document = copy.deepcopy(real)
    _as_real_cuda(document)
    edit(document["device"]["views"])
    assert document["ok"] is True and document["device"]["build_cross_check"] == []
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(words in p for p in report["problems"]), report["problems"]


def _in_the_container_toolkits_layout(views: dict) -> None:
    # what libnvidia-container lays out (tests/gate/test_driver_containers.py makes it): libcuda and nvidia-smi
    # bound file by file, the GPU's procfs folder bound back at its place, torch on the image's overlay root
    views["driver_access"]["libraries"]["libcuda"].update(mount="file", mount_fstype="ext4")
    for name in ("libtorch_cuda.so", "libc10_cuda.so"):
        views["driver_access"]["libraries"][name]["mount_fstype"] = "overlay"
    views["driver"]["smi_file"]["mount"] = "file"
    views["driver"]["proc_files"] = [{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver/nvidia/gpus/"
                                      "0000:18:00.0", "mount_root": "/driver/nvidia/gpus/0000:18:00.0"}]


@pytest.mark.parametrize("layout", [lambda v: None, _in_the_container_toolkits_layout], ids=["bare", "container"])
def test_the_same_edit_with_every_driver_fact_genuine_names_no_driver_fact(
        tmp_path, real, layout):  # noqa: F811
    # the control: without the forged fact no driver-fact problem is named (the edit is still a CPU result's,
    # caught by other rules such as the driver list's source, which the review's edit cannot reproduce), bare or
    # in the NVIDIA container toolkit's layout
    document = copy.deepcopy(real)
    _as_real_cuda(document)
    layout(document["device"]["views"])
    verified, report = index_and_verify(tmp_path, document)
    named = ("not a character device", "mount namespace laid it there", "below the", "not the kernel's procfs")
    assert not any(w in p for p in report["problems"] for w in named), report["problems"]
