"""A GPU claim rests on what the driver's files ARE, not what they are named (r5 findings F6, F7;
platform_runtime/driver_files.py records, core/driver_facts.py judges): each driver device the worker held is a
character device with the driver's major (195 for /dev/nvidiactl and /dev/nvidia<N>, /proc/devices' for
nvidia-uvm and kfd, misc 10 and /proc/misc's minor for WSL's dxg); each backend library it mapped is an ELF
shared object of its interpreter's machine, mapped executable, of a real library's size, and the driver's
libcuda.so is not on a mount laid over a system folder; the /proc/driver/nvidia files the driver's list is read
from are procfs mounted at /proc.

No GPU here: a real CUDA box's facts are written from the documented formats (the driver's fixed major, the
/proc/devices layout, library sizes of every CUDA wheel and driver), never reported verified. The forgeries are
real: in a private mount namespace (`unshare -m`, root) a regular file at /dev/nvidiactl on a tmpfs over /dev,
another driver's node named /dev/nvidia0, a dummy libcuda.so.1 on an overlay over the system library folder and
a tmpfs over /proc/driver, held and mapped by a real process and seen by the gate's own parent-side code, and the
gate itself run there with a fake torch claiming CUDA."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from core import driver_facts, driver_views, result_format, trust
from platform_runtime import driver_files

from tests.conftest import ROOT, validate
from tests.gate.test_device_views import FILES, GOOD_VIEWS, PROBE, installed_torch
from tests.gate.test_gate_isolation import FORGED_CUDA_REPORT, bare_venv

UUID = "5f2c1e9a-7b3d-4c8e-9a10-2b3c4d5e6f70"
X86_64 = 62  # EM_X86_64
# /proc/devices of a machine with the NVIDIA driver loaded (its layout: proc(5); nvidia-uvm's major is dynamic)
PROC_DEVICES = "Character devices:\n  1 mem\n  4 tty\n195 nvidia-frontend\n195 nvidia\n234 nvidia-uvm\n" \
               "235 nvidia-caps\n\nBlock devices:\n  8 sd\n234 not-a-char\n"
REAL_LIBRARY = {"mapped": True, "executable": True, "same_file": True, "elf_type": 3, "machine": X86_64,
                "expected_machine": X86_64, "mount": "root", "mount_fstype": "ext4"}
REAL_ACCESS = {
    "devices_open": ["nvidia-uvm", "nvidia0", "nvidiactl"],
    "cuda_library": {"name": "libcuda.so.1", "from": "system", "deleted": False},
    "device_nodes": [{"name": "nvidia-uvm", "char": True, "major": 234, "minor": 0},
                     {"name": "nvidia0", "char": True, "major": 195, "minor": 0},
                     {"name": "nvidiactl", "char": True, "major": 195, "minor": 255}],
    "registered": {"nvidia-uvm": 234, "kfd": None, "dxg_misc_minor": None},
    "libraries": {"libtorch_cuda.so": {**REAL_LIBRARY, "size": 1_100_000_000},
                  "libc10_cuda.so": {**REAL_LIBRARY, "size": 900_000},
                  "libcuda": {**REAL_LIBRARY, "size": 70_000_000}},
}
REAL_DRIVER = {**GOOD_VIEWS["driver"], "proc_files": [{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc",
                                                        "mount_root": "/"}],
               "smi_file": {"found": True, "elf": True, "mount": "root"}}


def cuda_views(access: dict = REAL_ACCESS, driver: dict = REAL_DRIVER) -> dict:
    return {**copy.deepcopy(GOOD_VIEWS), "driver_access": copy.deepcopy(access), "driver": copy.deepcopy(driver)}


def test_the_kernels_driver_numbers_are_read_from_proc_devices_and_proc_misc():
    assert driver_files.parse_devices(PROC_DEVICES) == {"mem": 1, "tty": 4, "nvidia-frontend": 195, "nvidia": 195,
                                                       "nvidia-uvm": 234, "nvidia-caps": 235}
    assert driver_files.parse_misc(" 63 dxg\n229 fuse\n") == {"dxg": 63, "fuse": 229}
    here = driver_files.registered()  # this machine: no GPU driver loaded
    assert here == {"nvidia-uvm": None, "kfd": None, "dxg_misc_minor": None}


def test_what_a_real_cuda_box_records_backs_the_claim():
    assert driver_views.driver_access_problems("cuda", cuda_views()) == []
    assert trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": cuda_views()}) == []
    wsl = {**REAL_ACCESS, "devices_open": ["dxg"], "device_nodes": [{"name": "dxg", "char": True, "major": 10,
                                                                      "minor": 63}],
           "registered": {"nvidia-uvm": None, "kfd": None, "dxg_misc_minor": 63}}
    wsl["libraries"] = {**REAL_ACCESS["libraries"], "libcuda": {**REAL_LIBRARY, "size": 160_000, "mount": "wsl"}}
    assert driver_views.driver_access_problems("cuda", cuda_views(wsl)) == []
    toolkit = copy.deepcopy(REAL_ACCESS)  # the NVIDIA container toolkit bind-mounts the host's libcuda file
    toolkit["libraries"]["libcuda"]["mount"] = "file"
    assert driver_views.driver_access_problems("cuda", cuda_views(toolkit)) == []


def _edit(path: tuple, value) -> dict:
    access = copy.deepcopy(REAL_ACCESS)
    target = access
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return access


@pytest.mark.parametrize("path, value, words", [
    (("device_nodes", 2, "char"), False, "/dev/nvidiactl the device worker held is not a character device"),
    (("device_nodes", 1, "major"), 1, "/dev/nvidia0 the device worker held is char 1:0, not the driver's 195:*"),
    (("device_nodes", 0, "major"), 195, "/dev/nvidia-uvm the device worker held is char 195:0, not the driver's 234"),
    (("registered", "nvidia-uvm"), None, "the kernel registers no nvidia-uvm driver"),
    (("device_nodes",), None, "what the worker's driver devices are was not read"),
    (("device_nodes",), [], "names no genuine cuda driver device the worker held (none)"),
    (("registered",), None, "the kernel's driver numbers were not read"),
    (("libraries", "libtorch_cuda.so", "size"), 15_000, "15000 bytes, below the 67108864 of any real libtorch_cuda"),
    (("libraries", "libc10_cuda.so", "mapped"), False, "the device worker did not map libc10_cuda.so"),
    (("libraries", "libc10_cuda.so", "executable"), False, "never mapped libc10_cuda.so executable"),
    (("libraries", "libtorch_cuda.so", "elf_type"), None, "not an ELF shared object"),
    (("libraries", "libtorch_cuda.so", "elf_type"), 2, "not an ELF shared object (e_type 2)"),
    (("libraries", "libtorch_cuda.so", "machine"), 183, "ELF machine 183 is not the worker's interpreter's 62"),
    (("libraries", "libtorch_cuda.so", "same_file"), False, "is not the one the worker mapped"),
    (("libraries", "libcuda", "mount"), "folder", "a mount namespace laid it there"),
    (("libraries", "libcuda"), None, "the library's file was not read"),
    (("libraries",), None, "the mapped libraries' files were not read"),
])
def test_each_driver_file_that_is_not_the_drivers_refuses_a_cuda_claim(path, value, words):
    views = cuda_views(_edit(path, value))
    problems = trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": views})
    assert any(words in p for p in problems), problems


def test_a_dxg_node_must_be_wsls_misc_minor_not_another_misc_device():
    fuse = {**REAL_ACCESS, "devices_open": ["dxg"], "device_nodes": [{"name": "dxg", "char": True, "major": 10,
                                                                       "minor": 229}],
            "registered": {"nvidia-uvm": None, "kfd": None, "dxg_misc_minor": 63}}
    problems = driver_views.driver_access_problems("cuda", cuda_views(fuse))
    assert any("/dev/dxg the device worker held is char 10:229, not the driver's 10:63" in p for p in problems)


def test_a_rocm_claim_needs_kfd_with_the_registered_major_and_a_real_libtorch_hip():
    rocm_views = {**GOOD_VIEWS, "mapped": {"observed": "linux-proc-maps",
                                           "torch_lib": ["libtorch_cpu.so", "libtorch_hip.so"]}}
    access = {"devices_open": ["kfd"], "kfd_gpu_nodes": 1, "registered": {"nvidia-uvm": None, "kfd": 238},
              "device_nodes": [{"name": "kfd", "char": True, "major": 238, "minor": 0}],
              "libraries": {"libtorch_hip.so": {**REAL_LIBRARY, "size": 900_000_000}}}
    assert driver_views.driver_access_problems("rocm", {**rocm_views, "driver_access": access}) == []
    fake = {**access, "registered": {"kfd": None}, "libraries": {"libtorch_hip.so": {**REAL_LIBRARY, "size": 0}}}
    problems = driver_views.driver_access_problems("rocm", {**rocm_views, "driver_access": fake})
    assert any("the kernel registers no kfd driver" in p for p in problems)
    assert any("0 bytes, below the" in p for p in problems)


@pytest.mark.parametrize("files, words", [
    ([{"f_type": 0x01021994, "fstype": "tmpfs", "mount_point": "/proc/driver"}], "a 'tmpfs' mount at '/proc/driver'"),
    ([{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver"}], "mount at '/proc/driver'"),
    ([{"f_type": 0xEF53, "fstype": "ext4", "mount_point": "/proc/driver/nvidia/gpus/0000:01:00.0/information"}],
     "f_type '0xef53'"),
    ([{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver", "mount_root": "/"}],
     "mount at '/proc/driver'"),  # a second procfs mounted over /proc/driver
    ([{"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver/nvidia/gpus/0000:01:00.0/information",
       "mount_root": "/4242/cmdline"}], "'proc' mount at"),  # a process's own cmdline bound over the file
    ([], "proc_files records no file read"),
    (None, "what the driver's files are was not read"),
])
def test_the_drivers_list_read_from_anything_but_procfs_at_proc_refuses_a_cuda_claim(files, words):
    driver = {**REAL_DRIVER, "proc_files": files}
    problems = trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": cuda_views(driver=driver)})
    assert any(words in p for p in problems), problems


def test_the_container_toolkits_bind_of_the_drivers_own_procfs_folder_is_the_kernels_list():
    # libnvidia-container lays a tmpfs over /proc/driver/nvidia and binds each visible GPU's folder of the host's
    # procfs back at its own place: procfs, its root that very folder
    toolkit = {"f_type": 0x9FA0, "fstype": "proc", "mount_point": "/proc/driver/nvidia/gpus/0000:18:00.0",
               "mount_root": "/driver/nvidia/gpus/0000:18:00.0"}
    assert driver_facts.proc_file_problems({**REAL_DRIVER, "proc_files": [toolkit]}) == []
    elsewhere = {**toolkit, "mount_point": "/proc/driver/nvidia/gpus/0000:01:00.0"}  # another GPU's, moved
    assert driver_facts.proc_file_problems({**REAL_DRIVER, "proc_files": [elsewhere]})


@pytest.mark.parametrize("smi, held", [
    ({"found": True, "elf": True, "mount": "root"}, True), ({"found": True, "elf": True, "mount": "file"}, True),
    ({"found": True, "elf": False, "mount": "root"}, False),  # a script where the driver installs nvidia-smi
    ({"found": True, "elf": True, "mount": "folder"}, False),  # laid over /usr/bin in a mount namespace
    ({"found": False, "elf": None, "mount": None}, False), (None, False)])
def test_a_list_from_nvidia_smi_needs_the_drivers_own_program(smi, held):
    driver = {**REAL_DRIVER, "source": "nvidia-smi-L", "proc_files": [], "smi_file": smi}
    assert (driver_facts.proc_file_problems(driver) == []) is held
    # a list from /proc alone does not depend on nvidia-smi
    assert driver_facts.proc_file_problems({**REAL_DRIVER, "smi_file": smi}) == []


def test_results_whose_gate_writes_the_driver_facts_must_hold_them_and_older_ones_need_not():
    def result(views: dict, sources: tuple[str, ...]) -> dict:
        return {"source": {"files": dict.fromkeys(sources, "0" * 64)}, "device": {"views": views},
                "filesystem": {"method": "linux-mountinfo-mnt-id"}}
    new = ("scripts/platform_runtime/driver_files.py",)
    cut = cuda_views()
    del cut["driver_access"]["device_nodes"], cut["driver"]["proc_files"], cut["driver"]["smi_file"]
    missing = result_format.missing_views(result(cut, new))
    assert any("device.views.driver_access.device_nodes is missing" in m for m in missing), missing
    assert any("device.views.driver.proc_files is missing" in m for m in missing), missing
    assert any("device.views.driver.smi_file is missing" in m for m in missing), missing
    assert result_format.missing_views(result(cut, ())) == []  # a gate before these facts: judged by the others
    assert result_format.missing_views(result(cuda_views(), new)) == []
    cpu = {k: v for k, v in GOOD_VIEWS.items() if k not in ("driver_access", "driver")}
    assert result_format.missing_views(result(cpu, new)) == []  # a CPU claim records neither object
    # and the judge, given a legacy record without them, judges it by its other views
    legacy = {k: v for k, v in REAL_ACCESS.items() if k not in ("device_nodes", "registered", "libraries")}
    assert driver_views.driver_access_problems("cuda", cuda_views(legacy, GOOD_VIEWS["driver"])) == []


# ---- real forgeries, in a private mount namespace -------------------------------------------------------------

NAMESPACE = shutil.which("unshare") is not None and hasattr(os, "geteuid") and os.geteuid() == 0 and \
    sys.platform.startswith("linux") and Path("/usr/lib/x86_64-linux-gnu/libz.so.1").exists()
needs_namespace = pytest.mark.skipif(not NAMESPACE, reason="root, unshare -m and an x86_64 Debian library folder")
LIB_DIR = "/usr/lib/x86_64-linux-gnu"


def dummy_library(path: Path) -> Path:
    """A tiny real ELF shared object carrying a driver library's name (what a forger compiles)."""
    source = path.with_suffix(".c")
    source.write_text("int forged_symbol;\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(source)], check=True, timeout=60)
    return path


def in_namespace(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    """`command` run in a private mount namespace whose /dev is a tmpfs holding a regular file nvidiactl and
    /dev/null's node named nvidia0, whose system library folder has a dummy libcuda.so.1 on an overlay, and whose
    /proc/driver is a tmpfs listing a GPU by UUID: all gone when it exits."""
    dummy = dummy_library(tmp_path / "libcuda.so.1")
    for name in ("lib.u", "lib.w"):
        (tmp_path / name).mkdir()
    script = f"""set -eu
mount -t tmpfs tmpfs /dev
mknod /dev/null c 1 3; mknod /dev/zero c 1 5; mknod /dev/urandom c 1 9; mknod /dev/random c 1 8
mkdir /dev/shm; ln -s /proc/self/fd /dev/fd
: > /dev/nvidiactl
mknod /dev/nvidia0 c 1 3
mknod /dev/nvidia1 c 195 1
mount -t overlay overlay -o lowerdir={LIB_DIR},upperdir={tmp_path}/lib.u,workdir={tmp_path}/lib.w {LIB_DIR}
cp {dummy} {LIB_DIR}/libcuda.so.1
mount -t tmpfs tmpfs /proc/driver
mkdir -p /proc/driver/nvidia/gpus/0000:01:00.0
printf 'Model: \\t\\t NVIDIA H200\\nGPU UUID: \\t GPU-{UUID}\\n' > /proc/driver/nvidia/gpus/0000:01:00.0/information
{command}
"""
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300)


HOLDER = """import ctypes, errno, json, os, sys
sys.path.insert(0, sys.argv[1])
from platform_runtime import driver_access, driver_files, nvidia_driver, procmaps
held = [os.open("/dev/nvidiactl", os.O_RDWR), os.open("/dev/nvidia0", os.O_RDWR)]
try:
    os.open("/dev/nvidia1", os.O_RDWR)
    opened_195 = True
except OSError as exc:
    opened_195 = errno.errorcode[exc.errno]
lib = ctypes.CDLL("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
pid = os.getpid()
text = procmaps.read_maps(pid)
seen = {"device_nodes": driver_files.device_nodes(pid, driver_access.DRIVER_DEVICE), "maps_text": text,
        "machine": driver_files.interpreter_machine(pid)}
access = driver_access.summarize(driver_access.open_targets(pid), procmaps.parse_maps(text), "cuda", seen, None)
check = nvidia_driver.uuid_check("GPU-" + sys.argv[2])
print(json.dumps({"access": access, "driver": {**check, "problem": nvidia_driver.uuid_problem(check)},
                  "opened_195": opened_195}))
"""


@needs_namespace
def test_a_namespaces_fake_driver_files_are_seen_for_what_they_are(tmp_path):
    (tmp_path / "holder.py").write_text(HOLDER)
    done = in_namespace(tmp_path, f"{sys.executable} -I {tmp_path / 'holder.py'} {ROOT / 'scripts'} {UUID}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    access, driver = seen["access"], seen["driver"]
    assert seen["opened_195"] == "ENXIO"  # a node with the driver's major opens only where the driver is loaded
    # by name the old views were satisfied (r5 F6) ...
    assert access["devices_open"] == ["nvidia0", "nvidiactl"] and access["cuda_library"]["from"] == "system"
    assert driver["listed"] is True and driver["source"] == "proc-driver-nvidia"
    # ... what the files are says otherwise
    assert {n["name"]: (n["char"], n["major"]) for n in access["device_nodes"]} == {"nvidiactl": (False, 0),
                                                                                     "nvidia0": (True, 1)}
    libcuda = access["libraries"]["libcuda"]
    assert libcuda["mapped"] and libcuda["executable"] and libcuda["elf_type"] == 3
    assert libcuda["mount"] == "folder" and libcuda["mount_fstype"] == "overlay" and libcuda["size"] < 65536
    assert driver["proc_files"] == [{"f_type": 0x01021994, "fstype": "tmpfs", "mount_point": "/proc/driver",
                                     "mount_root": "/"}]
    views = {**GOOD_VIEWS, "driver_access": access, "driver": driver}
    problems = trust.device_view_problems({"type": "cuda", "cuda": {"uuid": UUID}, "views": views})
    for words in ("/dev/nvidiactl the device worker held is not a character device",
                  "/dev/nvidia0 the device worker held is char 1:3, not the driver's 195:*",
                  "names no genuine cuda driver device", "a mount namespace laid it there",
                  "below the 65536 of any real libcuda", "the device worker did not map libtorch_cuda.so",
                  "a 'tmpfs' mount at '/proc/driver'"):
        assert any(words in p for p in problems), (words, problems)


FAKE_TORCH = """import ctypes, json, os, sys
here = os.path.dirname(__file__)
held = [os.open("/dev/nvidiactl", os.O_RDWR), os.open("/dev/nvidia0", os.O_RDWR)]
libraries = [ctypes.CDLL("/usr/lib/x86_64-linux-gnu/libcuda.so.1")]
for name in ("libtorch_cpu.so", "libtorch_cuda.so", "libc10_cuda.so"):
    try:
        libraries.append(ctypes.CDLL(os.path.join(here, "lib", name)))
    except OSError:
        pass  # the empty one cannot be mapped
sys.stdout.write(json.dumps({report!r}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
os._exit(0)
"""


@needs_namespace
def test_the_gate_in_a_namespace_with_a_fake_cuda_torch_refuses_require_cuda(tmp_path):
    python, purelib = bare_venv(tmp_path / "venv")
    elf = dummy_library(tmp_path / "tiny.so").read_bytes()
    report = {**FORGED_CUDA_REPORT, "cuda": {**FORGED_CUDA_REPORT["cuda"], "uuid": UUID}}
    installed_torch(purelib, {**FILES, "torch/lib/libtorch_cuda.so": elf, "torch/lib/libtorch_cpu.so": elf,
                              "torch/lib/libc10_cuda.so": b"",  # empty, listed in its own RECORD
                              "torch/__init__.py": FAKE_TORCH.format(report=report).encode()})
    output = tmp_path / "result.json"
    gate = f"{python} -B {ROOT / 'scripts' / 'platform_runtime_check.py'} --require cuda --output {output}"
    done = in_namespace(tmp_path, f"cd {tmp_path}; rc=0; {gate} > /dev/null || rc=$?; echo gate-exit $rc")
    assert "gate-exit 1" in done.stdout, (done.stdout, done.stderr)
    result = json.loads(output.read_text())
    validate(result, "platform-runtime-result.schema.json")
    seen = result["device"]["views"]
    assert seen["driver"]["listed"] is True and seen["record"]["verified"] is True  # by name and RECORD, it held
    reason = result["checks"]["device_compute"]["reason"]
    for words in ("/dev/nvidiactl the device worker held is not a character device",
                  "below the 67108864 of any real libtorch_cuda.so", "the device worker did not map libc10_cuda.so",
                  "a mount namespace laid it there", "a 'tmpfs' mount at '/proc/driver'"):
        assert words in reason or any(words in p for p in result["device"]["build_cross_check"]), (words, reason)
    assert result["ok"] is False and result["exit_code"] == 1
    assert next(r for r in result["requirements"] if r["name"] == "cuda")["ok"] is False
    assert result_format.missing_views(result) == []
    assert driver_facts.library_problems("cuda", seen["driver_access"])


PATH_HOLDER = """import errno, json, os, sys
sys.path.insert(0, sys.argv[1])
from platform_runtime import driver_access, driver_files
by_name = [os.open("/dev/nvidia0", os.O_PATH), os.open("/dev/nvidiactl", os.O_PATH)]
opened = os.open("/dev/nvidia1", os.O_RDWR)
try:
    os.open("/dev/nvidia0", os.O_RDWR)
    refused = None
except OSError as exc:
    refused = errno.errorcode[exc.errno]
pid = os.getpid()
print(json.dumps({"devices_open": driver_access.driver_devices(driver_access.open_targets(pid)), "refused": refused,
                  "device_nodes": driver_files.device_nodes(pid, driver_access.DRIVER_DEVICE)}))
"""


@needs_namespace
def test_a_driver_node_held_by_name_only_is_not_a_device_held_open(tmp_path):
    # open(2) with O_PATH never calls the driver, so a node with the driver's major made with mknod where no driver
    # is loaded can be held that way, and stat of the descriptor reads 195:0 like the driver's own node
    (tmp_path / "holder.py").write_text(PATH_HOLDER)
    script = """set -eu
mount -t tmpfs tmpfs /dev
mknod /dev/null c 1 3; mknod /dev/nvidia0 c 195 0; mknod /dev/nvidiactl c 195 255; mknod /dev/nvidia1 c 1 5
exec "$0" -I "$1" "$2"
"""
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, sys.executable,
                           str(tmp_path / "holder.py"), str(ROOT / "scripts")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["refused"] == "ENXIO"  # no driver behind major 195 here
    # only the device really opened is held (another driver's node: the rules refuse it by its numbers)
    assert seen["devices_open"] == ["nvidia1"]
    assert seen["device_nodes"] == [{"name": "nvidia1", "char": True, "major": 1, "minor": 5}]
    access = {**REAL_ACCESS, "devices_open": seen["devices_open"], "device_nodes": seen["device_nodes"]}
    problems = driver_views.driver_access_problems("cuda", cuda_views(access))
    assert any("names no genuine cuda driver device the worker held (nvidia1)" in p for p in problems), problems


@needs_namespace
def test_a_procfs_file_bound_over_the_drivers_information_is_not_the_drivers_list():
    # a real procfs file (f_type 0x9fa0, type proc) bound where the driver's information file would be
    script = """set -eu
mount -t tmpfs tmpfs /proc/driver
mkdir -p /proc/driver/nvidia/gpus/0000:01:00.0
: > /proc/driver/nvidia/gpus/0000:01:00.0/information
mount --bind /proc/version /proc/driver/nvidia/gpus/0000:01:00.0/information
exec "$0" -I -c 'import json, sys; sys.path.insert(0, sys.argv[1]); from platform_runtime import nvidia_driver
print(json.dumps(nvidia_driver.proc_files()))' "$1"
"""
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, sys.executable,
                           str(ROOT / "scripts")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)
    assert files == [{"f_type": 0x9FA0, "fstype": "proc", "mount_root": "/version",
                      "mount_point": "/proc/driver/nvidia/gpus/0000:01:00.0/information"}]
    problems = driver_facts.proc_file_problems({**REAL_DRIVER, "proc_files": files})
    assert any("not the kernel's procfs at /proc" in p for p in problems), problems


@needs_namespace
def test_an_nvidia_smi_laid_over_usr_bin_in_a_namespace_is_seen_for_what_it_is(tmp_path):
    for name in ("bin.u", "bin.w"):
        (tmp_path / name).mkdir()
    script = f"""set -eu
mount -t overlay overlay -o lowerdir=/usr/bin,upperdir={tmp_path}/bin.u,workdir={tmp_path}/bin.w /usr/bin
printf '#!/bin/sh\\necho "GPU 0: Forged (UUID: GPU-{UUID})"\\n' > /usr/bin/nvidia-smi
chmod 755 /usr/bin/nvidia-smi
exec "$0" -I -c 'import json, sys; sys.path.insert(0, sys.argv[1]); from platform_runtime import nvidia_driver
print(json.dumps(nvidia_driver.uuid_check("GPU-" + sys.argv[2], nvidia_driver.PROC_GPUS)))' "$1" "$2"
"""
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, sys.executable,
                           str(ROOT / "scripts"), UUID], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    driver = json.loads(done.stdout)
    assert driver["listed"] is True and driver["source"] == "nvidia-smi-L"  # by its word, it listed the UUID
    assert driver["smi_file"] == {"found": True, "elf": False, "mount": "folder"}
    problems = driver_facts.proc_file_problems(driver)
    assert any("not an ELF program on the root file system" in p for p in problems), problems


def test_a_torch_whose_record_lists_an_empty_or_tiny_libtorch_cuda_cannot_claim_cuda(tmp_path):
    from core.torch_build_rules import build_supports
    from platform_runtime import torch_build, torch_record
    for content, words in ((b"", "is 0 bytes of format None"), (dummy_library(tmp_path / "tiny.so").read_bytes(),
                                                                 "of format 'elf': not a real libtorch_cuda.so")):
        site = tmp_path / f"site{len(content)}"
        dist = installed_torch(site, {**FILES, "torch/lib/libtorch_cuda.so": content})
        assert torch_record.verify(site, dist)["verified"] is True  # its RECORD is its own, and consistent
        build = torch_build.read_build(site)
        assert build["backend_files"]["libtorch_cuda.so"]["bytes"] == len(content)
        why = build_supports(build, "cuda")
        assert why is not None and words in why, why
    real = {"cuda": "13.0", "backend_libraries": ["libtorch_cuda.so"],
            "backend_files": {"libtorch_cuda.so": {"bytes": 1_100_000_000, "format": "elf"}}}
    assert build_supports(real, "cuda") is None
    older = {"cuda": "13.0", "backend_libraries": ["libtorch_cuda.so"]}  # the H200 run at 7f0a071 records no files
    assert build_supports(older, "cuda") is None


def test_the_committed_h200_result_keeps_its_verdicts_under_these_rules():
    from core.torch_build_rules import recorded_cross_check
    result = json.loads((ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json").read_text())
    assert result["ok"] is True and "backend_files" not in result["device"]["torch_build"]
    assert recorded_cross_check(result["device"], "Linux") == []
    assert result_format.missing_fields(result) == []
