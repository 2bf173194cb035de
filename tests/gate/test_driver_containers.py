"""GPUs inside containers: what the NVIDIA container toolkit, WSL2 and ROCm's `docker --device` lay out passes the
driver-view rules (core.driver_facts, core.driver_views), and layouts that differ from theirs fail.

Each layout is made here for real, in a private mount namespace (`unshare -m`, root), step by step as its maker's
source makes it, and a process inside it holds the devices and maps the libraries a CUDA or ROCm worker does; the
gate's own collection code (platform_runtime.driver_access, driver_files, nvidia_driver: stat of /proc/<pid>/fd,
/proc/<pid>/maps, fdinfo mnt_id, mountinfo, fstatfs) records it, and the rules judge that record:

- the legacy hook (libnvidia-container `src/nvc_mount.c`, `nvc_driver_mount`): an image's overlay root; `mount_procfs`
  lays a tmpfs (mode 0555) over /proc/driver/nvidia and copies `params` (ModifyDeviceFiles 1 rewritten to 0),
  `version` and `registry` into it; `mount_files` binds `nvidia-smi` into /usr/bin and each driver library file by
  file into the image's library folder (`ro,nodev,nosuid`), `symlink_libraries` adds `libcuda.so`; `mount_device`
  binds each /dev/nvidia* node (`ro,nosuid,noexec`); `mount_procfs_gpu` binds the host procfs' own
  /proc/driver/nvidia/gpus/<bus id> folder back at its place (`ro,nodev,nosuid,noexec`);
- CDI (nvidia-container-toolkit `nvidia-ctk cdi generate`: `internal/edits/device.go` gives each node's numbers as
  deviceNodes, which runc makes with mknod; `internal/edits/mount.go` binds each file at its own path, `ro,nosuid,
  nodev,bind`; the `disable-device-node-modification` hook binds a rewritten `params` from a tmpfs over
  /proc/driver/nvidia/params and mounts nothing over the GPUs' folders);
- WSL2 (microsoft/WSL `test/windows/UnitTests.cpp` `GpuMounts`: /usr/lib/wsl/lib an overlay of
  /gpu_lib_packaged:/gpu_lib_inbox, /usr/lib/wsl/drivers 9p; the GPU is /dev/dxg), bare, and in a container
  (`device_mount_dxcore`: the driver store's files and /usr/lib/wsl/lib's bound file by file; "skipping procfs mount
  on WSL");
- ROCm (`docker run --device /dev/kfd --device /dev/dri/renderD128`: runc `libcontainer/rootfs_linux.go`
  `createDeviceNode` makes each node with mknod in the container's /dev tmpfs, or binds the host's node where it
  runs in a user namespace).

No GPU here, so what only a driver makes is stood in for by real files of this machine: the host's /dev/zero,
/dev/full, /dev/urandom and /dev/fuse for the driver's nodes (bound or made with their numbers, as the runtime
does), this system's libz for the driver's libcuda.so, /usr/bin/true for nvidia-smi, a tmpfs shaped like the host
procfs' /driver/nvidia folder, and torch's own libtorch_cpu.so and libc10.so (the image's files) for the CUDA
libraries. Each test first asserts what the layout itself makes (mount kinds, mount points and roots, that a bound
or mknod'ed node carries its source's numbers), then judges the record as made: refused, by the stand-ins' facts
only; then with those facts replaced by the driver's own (its nodes' majors, procfs' magic where the toolkit binds
procfs): accepted. Not verified on a GPU: no device machine was lent to this work.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from core import driver_facts, driver_views, trust
from platform_runtime import driver_files

from tests.conftest import ROOT
from tests.gate.test_device_views import GOOD_VIEWS, PROBE
from tests.gate.test_driver_files import LIB_DIR, needs_namespace

NVIDIA = ROOT / "tests" / "gate" / "fixtures" / "nvidia"
UUID = PROBE["uuid"]  # information-h100.txt's GPU, at bus 0000:18:00.0
BUS = "0000:18:00.0"
DRIVER = "580.159.04"
TMPFS_MAGIC, PROC_MAGIC = 0x01021994, 0x9FA0
WSL_STORE = "/usr/lib/wsl/drivers/nv_dispi.inf_amd64_0123456789abcdef"
TORCH_LIB = Path(importlib.util.find_spec("torch").submodule_search_locations[0]) / "lib" \
    if importlib.util.find_spec("torch") else None
needs_torch = pytest.mark.skipif(TORCH_LIB is None or not (TORCH_LIB / "libtorch_cpu.so").is_file(),
                                 reason="torch's libraries stand in for the image's CUDA libraries")
needs_fuse = pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="/dev/fuse stands in for WSL's /dev/dxg")
LIBZ = os.path.realpath(f"{LIB_DIR}/libz.so.1")
TRUE = os.path.realpath("/usr/bin/true")

# An image run by runc: its overlay root (layers and upper layer on one host file system, as Docker's overlay2
# keeps them; the upper on a tmpfs here so any host file system serves as the lower), its own procfs, and a /dev
# tmpfs holding runc's default nodes. $H holds the host's files the toolkit reads that this machine lacks.
PRELUDE = """set -eu
T={tmp}; R=$T/root; H=$T/host
mkdir -p $R $T/layers $H
mount -t tmpfs tmpfs $T/layers
mkdir $T/layers/upper $T/layers/work
mount -t overlay overlay -o lowerdir=/,upperdir=$T/layers/upper,workdir=$T/layers/work $R
mount -t proc proc $R/proc
mount -t tmpfs -o mode=755,nosuid tmpfs $R/dev
mknod -m 666 $R/dev/null c 1 3; mknod -m 666 $R/dev/zero c 1 5; mknod -m 666 $R/dev/full c 1 7
mknod -m 666 $R/dev/random c 1 8; mknod -m 666 $R/dev/urandom c 1 9; mknod -m 666 $R/dev/tty c 5 0
mount -t tmpfs tmpfs $H
bind() {{ touch "$2"; mount --bind "$1" "$2"; mount -o "remount,bind,$3" "$2"; }}
"""
# The host procfs' /driver/nvidia folder, standing in for the driver's (a tmpfs at $H/proc, so a bind of its
# gpus/<bus id> folder has mountinfo root /driver/nvidia/gpus/<bus id>, as a bind of procfs' folder has); and the
# container procfs' own /proc/driver/nvidia folder, which the NVIDIA driver makes in every procfs and this
# machine's lacks: a tmpfs at /proc/driver holds one to mount on.
HOST_DRIVER = f"""mkdir -p $H/proc && mount -t tmpfs tmpfs $H/proc
mkdir -p $H/proc/driver/nvidia/gpus/{BUS}
cp {NVIDIA}/information-h100.txt $H/proc/driver/nvidia/gpus/{BUS}/information
cp {NVIDIA}/params.txt $H/proc/driver/nvidia/params
cp {NVIDIA}/version.txt $H/proc/driver/nvidia/version
cp {NVIDIA}/registry.txt $H/proc/driver/nvidia/registry
mount -t tmpfs tmpfs $R/proc/driver && mkdir $R/proc/driver/nvidia
"""
LIBS = f"$R{LIB_DIR}"
# libnvidia-container's nvc_driver_mount, in its order.
LEGACY = HOST_DRIVER + f"""mount -t tmpfs -o mode=0555 tmpfs $R/proc/driver/nvidia
for f in params version registry; do cp $H/proc/driver/nvidia/$f $R/proc/driver/nvidia/$f; done
sed -i 's/^ModifyDeviceFiles: 1$/ModifyDeviceFiles: 0/' $R/proc/driver/nvidia/params
mount -o remount,bind,nodev,nosuid,noexec $R/proc/driver/nvidia
bind {TRUE} $R/usr/bin/nvidia-smi ro,nodev,nosuid
bind {LIBZ} {LIBS}/libcuda.so.{DRIVER} ro,nodev,nosuid
ln -s libcuda.so.{DRIVER} {LIBS}/libcuda.so.1 && ln -s libcuda.so.1 {LIBS}/libcuda.so
bind /dev/zero $R/dev/nvidia0 ro,nosuid,noexec
bind /dev/full $R/dev/nvidiactl ro,nosuid,noexec
bind /dev/urandom $R/dev/nvidia-uvm ro,nosuid,noexec
mkdir -p $R/proc/driver/nvidia/gpus/{BUS}
mount --bind $H/proc/driver/nvidia/gpus/{BUS} $R/proc/driver/nvidia/gpus/{BUS}
mount -o remount,bind,ro,nodev,nosuid,noexec $R/proc/driver/nvidia/gpus/{BUS}
"""
# A CDI spec applied by runc: nodes made with the host nodes' numbers, files bound at their own paths, and the
# hook's rewritten params bound from a tmpfs; the GPU's folder stays the container procfs' own.
CDI = HOST_DRIVER + f"""cp -r $H/proc/driver/nvidia/. $R/proc/driver/nvidia/
mknod -m 666 $R/dev/nvidia0 c 1 5 && mknod -m 666 $R/dev/nvidiactl c 1 7 && mknod -m 666 $R/dev/nvidia-uvm c 1 9
bind {LIBZ} {LIBS}/libcuda.so.{DRIVER} ro,nosuid,nodev
ln -s libcuda.so.{DRIVER} {LIBS}/libcuda.so.1
bind {TRUE} $R/usr/bin/nvidia-smi ro,nosuid,nodev
S=$R/run/nvidia-ctk-hook/0f9e && mkdir -p $S && mount -t tmpfs tmpfs $S
sed 's/^ModifyDeviceFiles: 1$/ModifyDeviceFiles: 0/' $H/proc/driver/nvidia/params > $S/nvct-params
bind $S/nvct-params $R/proc/driver/nvidia/params ro,nodev
"""
# WSL2 itself: the driver store's libraries on their own mounts, /dev/dxg a misc device (fuse's numbers here).
WSL = f"""G=$H/gpu_lib && mkdir -p $H/gpu_lib_packaged $H/gpu_lib_inbox $G/upper $G/work $R/usr/lib/wsl/lib \\
  $R/usr/lib/wsl/drivers
cp {LIBZ} $H/gpu_lib_inbox/libcuda.so.1 && cp {TRUE} $H/gpu_lib_packaged/nvidia-smi
mount -t overlay none -o lowerdir=$H/gpu_lib_packaged:$H/gpu_lib_inbox,upperdir=$G/upper,workdir=$G/work \\
  $R/usr/lib/wsl/lib
mount -t tmpfs -o nosuid,nodev drivers $R/usr/lib/wsl/drivers
mkdir -p $R{WSL_STORE} && cp {LIBZ} $R{WSL_STORE}/libcuda.so.1.1 && mount -o remount,ro $R/usr/lib/wsl/drivers
mknod -m 666 $R/dev/dxg c 10 229
"""
# The toolkit on WSL2: /dev/dxg and the driver store's files bound file by file; no procfs mount.
WSL_CONTAINER = f"""mkdir -p $H/lib $H/store
cp {LIBZ} $H/lib/libcuda.so.1 && cp {LIBZ} $H/store/libcuda.so.1.1 && cp {TRUE} $H/lib/nvidia-smi
mkdir -p $R{WSL_STORE}
bind $H/store/libcuda.so.1.1 $R{WSL_STORE}/libcuda.so.1.1 ro,nodev,nosuid
bind $H/lib/libcuda.so.1 {LIBS}/libcuda.so.1 ro,nodev,nosuid
bind $H/lib/nvidia-smi $R/usr/bin/nvidia-smi ro,nodev,nosuid
bind /dev/fuse $R/dev/dxg ro,nosuid,noexec
"""
# docker --device /dev/kfd --device /dev/dri/renderD128: mknod with the host nodes' numbers (runc as root), or a
# bind of the host's node (runc in a user namespace).
ROCM = {"mknod": "mkdir -p $R/dev/dri && mknod -m 666 $R/dev/kfd c 1 5 && mknod -m 666 $R/dev/dri/renderD128 c 1 7\n",
        "bind": "mkdir -p $R/dev/dri && bind /dev/zero $R/dev/kfd rw && bind /dev/full $R/dev/dri/renderD128 rw\n"}
PIVOT = """cd $R && mkdir -p .old && pivot_root . .old && umount -l /.old
exec "$@"
"""

# Inside the container: hold the devices, map the libraries as the loader maps their text (PROT_EXEC), then record
# them with the gate's own code.
HOLDER = """import json, mmap, os, sys
sys.path.insert(0, sys.argv[1])
config = json.loads(sys.argv[2])
from platform_runtime import device_resolve, driver_access, driver_files, nvidia_driver, procmaps
held = [os.open(path, os.O_RDWR) for path in config["open"]]
maps = []
for path in config["map"].values():
    fd = os.open(path, os.O_RDONLY)
    maps.append(mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC))
    os.close(fd)
pid = os.getpid()
text = procmaps.read_maps(pid)
mappings = procmaps.parse_maps(text)
seen = {"device_nodes": driver_files.device_nodes(pid, driver_access.DRIVER_DEVICE), "maps_text": text,
        "machine": driver_files.interpreter_machine(pid)}
access = driver_access.summarize(driver_access.open_targets(pid), mappings, config["kind"], seen, None)
by_path = {m.path: m for m in mappings}
torch = {name: by_path[os.path.realpath(path)] for name, path in config["map"].items() if name.startswith("libtorch")
         or name.startswith("libc10")}
access["libraries"].update(driver_files.libraries(text, torch, seen["machine"]))
check = nvidia_driver.uuid_check("GPU-" + config["uuid"], smi=lambda: [])
print(json.dumps({"access": access, "driver": {**check, "problem": nvidia_driver.uuid_problem(check)},
                  "kernel_driver": device_resolve.cuda_versions(None)["kernel_driver"],
                  "params": open("/proc/driver/nvidia/params").read() if os.path.exists("/proc/driver/nvidia/params")
                  else None}))
"""
CUDA_HELD = ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"]


def torch_map(kind: str) -> dict[str, str]:
    if kind == "rocm":
        return {"libtorch_hip.so": str(TORCH_LIB / "libtorch_cpu.so")}
    return {"libtorch_cuda.so": str(TORCH_LIB / "libtorch_cpu.so"), "libc10_cuda.so": str(TORCH_LIB / "libc10.so")}


def in_container(tmp_path: Path, layout: str, kind: str, held: list[str], libraries: dict[str, str]) -> dict:
    """The record the gate's collection code makes of a process in `layout`, holding `held` and mapping
    `libraries` (and the torch stand-ins for `kind`)."""
    (tmp_path / "holder.py").write_text(HOLDER)
    config = {"kind": kind, "open": held, "map": {**libraries, **torch_map(kind)}, "uuid": UUID}
    script = PRELUDE.format(tmp=tmp_path) + layout + PIVOT
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", sys.executable,
                           "-I", str(tmp_path / "holder.py"), str(ROOT / "scripts"), json.dumps(config)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def host_fstype(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return driver_files.file_mount(fd).fstype
    finally:
        os.close(fd)


def nodes(access: dict) -> dict:
    return {n["name"]: (n["char"], n["major"], n["minor"]) for n in access["device_nodes"]}


def with_driver(access: dict, numbers: dict[str, tuple[int, int]], registered: dict) -> dict:
    """The record with what only the driver makes put back: its nodes' numbers and the kernel's registered ones."""
    access = copy.deepcopy(access)
    for node in access["device_nodes"]:
        if node["name"] in numbers:
            node["major"], node["minor"] = numbers[node["name"]]
    access["registered"] = {**access["registered"], **registered}
    return access


def cuda_problems(access: dict, driver: dict) -> list[str]:
    views = {**copy.deepcopy(GOOD_VIEWS), "driver_access": access, "driver": driver}
    return trust.device_view_problems({"type": "cuda", "cuda": PROBE, "views": views})


def refused_for_stand_ins_only(problems: list[str], proc_words: str) -> None:
    """Refused as made here, and only for what a driver would make: the nodes' numbers (1:N here, bound or made
    as the runtime makes the driver's), the kernel's registered numbers, and the stand-in procfs folder's tmpfs."""
    stand_ins = ("the device worker held is char 1:", "the kernel registers no nvidia-uvm driver",
                 "names no genuine cuda driver device", proc_words)
    assert all(any(words in p for p in problems) for words in stand_ins), problems
    assert all(any(words in p for words in stand_ins) for p in problems), problems


NVIDIA_NUMBERS = {"nvidia0": (195, 0), "nvidiactl": (195, 255), "nvidia-uvm": (234, 0)}


def assert_image_libraries(access: dict, kind: str) -> None:
    for name in torch_map(kind):  # the image's own files, on its overlay root
        facts = access["libraries"][name]
        assert (facts["mount"], facts["mount_fstype"], facts["same_file"], facts["executable"], facts["elf_type"]) \
            == ("root", "overlay", True, True, 3), (name, facts)


def assert_bound_libcuda(access: dict, name: str) -> None:
    libcuda = access["libraries"]["libcuda"]
    assert access["cuda_library"] == {"name": name, "from": "system", "deleted": False}
    assert libcuda == {"mapped": True, "executable": True, "same_file": True, "elf_type": 3,
                       "machine": libcuda["expected_machine"], "expected_machine": libcuda["expected_machine"],
                       "size": os.path.getsize(LIBZ), "mount": "file", "mount_fstype": host_fstype(LIBZ)}


@needs_namespace
@needs_torch
def test_the_container_toolkits_legacy_layout_passes_the_driver_rules(tmp_path):
    seen = in_container(tmp_path, LEGACY, "cuda", CUDA_HELD, {"libcuda": f"{LIB_DIR}/libcuda.so.1"})
    access, driver = seen["access"], seen["driver"]
    # what the toolkit made, as the gate's collection recorded it
    assert access["devices_open"] == ["nvidia-uvm", "nvidia0", "nvidiactl"]
    assert nodes(access) == {"nvidia-uvm": (True, 1, 9), "nvidia0": (True, 1, 5), "nvidiactl": (True, 1, 7)}
    assert_bound_libcuda(access, f"libcuda.so.{DRIVER}")
    assert_image_libraries(access, "cuda")
    assert driver["smi_file"] == {"found": True, "elf": True, "mount": "file"}
    assert driver["listed"] is True and driver["source"] == "proc-driver-nvidia" and driver["driver_gpus"] == 1
    # the list is read through the bind of the GPU's own folder, not from the tmpfs holding params and version
    gpu_folder = f"/driver/nvidia/gpus/{BUS}"
    assert driver["proc_files"] == [{"f_type": TMPFS_MAGIC, "fstype": "tmpfs", "mount_point": "/proc" + gpu_folder,
                                     "mount_root": gpu_folder}]
    assert "ModifyDeviceFiles: 0" in seen["params"]
    # the worker's kernel_driver (core.gpu_agreement requires it of a Linux CUDA result) from the toolkit's copy
    assert seen["kernel_driver"] == DRIVER
    # as made here, only the stand-ins are refused: the nodes' numbers and the stand-in procfs folder's tmpfs
    refused_for_stand_ins_only(cuda_problems(access, driver), f"a 'tmpfs' mount at '/proc{gpu_folder}'")
    # with the driver's own nodes, and procfs as the folder's file system (mount_procfs_gpu binds the host's procfs)
    real = with_driver(access, NVIDIA_NUMBERS, {"nvidia-uvm": 234})
    procfs = {**driver, "proc_files": [{**f, "f_type": PROC_MAGIC, "fstype": "proc"} for f in driver["proc_files"]]}
    assert cuda_problems(real, procfs) == []


@needs_namespace
@needs_torch
def test_a_cdi_layout_passes_the_driver_rules(tmp_path):
    seen = in_container(tmp_path, CDI, "cuda", CUDA_HELD, {"libcuda": f"{LIB_DIR}/libcuda.so.1"})
    access, driver = seen["access"], seen["driver"]
    assert nodes(access) == {"nvidia-uvm": (True, 1, 9), "nvidia0": (True, 1, 5), "nvidiactl": (True, 1, 7)}
    assert_bound_libcuda(access, f"libcuda.so.{DRIVER}")
    assert_image_libraries(access, "cuda")
    assert driver["smi_file"] == {"found": True, "elf": True, "mount": "file"} and driver["listed"] is True
    # the hook's params bind leaves the GPU's folder where procfs has it: the mount holding the list is the one at
    # /proc/driver (this machine's stand-in for procfs' own folder), not the params bind
    assert driver["proc_files"] == [{"f_type": TMPFS_MAGIC, "fstype": "tmpfs", "mount_point": "/proc/driver",
                                     "mount_root": "/"}]
    assert "ModifyDeviceFiles: 0" in seen["params"]
    refused_for_stand_ins_only(cuda_problems(access, driver), "a 'tmpfs' mount at '/proc/driver'")
    # with the driver's nodes, the list read from the container's own procfs at /proc
    real = with_driver(access, NVIDIA_NUMBERS, {"nvidia-uvm": 234})
    procfs = {**driver, "proc_files": [{"f_type": PROC_MAGIC, "fstype": "proc", "mount_point": "/proc",
                                        "mount_root": "/"}]}
    assert cuda_problems(real, procfs) == []


WSL_LIBRARIES = {"libcuda": f"{WSL_STORE}/libcuda.so.1.1", "stub": "/usr/lib/wsl/lib/libcuda.so.1"}


@needs_namespace
@needs_torch
@needs_fuse
def test_wsl2s_driver_store_and_dxg_pass_the_driver_rules(tmp_path):
    seen = in_container(tmp_path, WSL, "cuda", ["/dev/dxg"], WSL_LIBRARIES)
    access, driver = seen["access"], seen["driver"]
    assert access["devices_open"] == ["dxg"] and nodes(access) == {"dxg": (True, 10, 229)}
    # the driver store's libcuda.so.1.1 (loaded by WSL's forwarding libcuda.so.1), on WSL's own mount
    assert access["cuda_library"] == {"name": "libcuda.so.1.1", "from": "system", "deleted": False}
    assert (access["libraries"]["libcuda"]["mount"], access["libraries"]["libcuda"]["same_file"]) == ("wsl", True)
    assert driver["smi_file"] == {"found": True, "elf": True, "mount": "wsl"}  # /usr/lib/wsl/lib/nvidia-smi
    assert driver["proc_files"] == [] and driver["listed"] is False  # no /proc/driver/nvidia under WSL
    problems = driver_views.driver_access_problems("cuda", {**GOOD_VIEWS, "driver_access": access})
    assert problems == ["/dev/dxg the device worker held is char 10:229, not the driver's 10:*",  # none registered
                        "device.views.driver_access.device_nodes names no genuine cuda driver device the worker held "
                        "(dxg)"], problems
    real = with_driver(access, {"dxg": (10, 63)}, {"dxg_misc_minor": 63})
    assert driver_views.driver_access_problems("cuda", {**GOOD_VIEWS, "driver_access": real}) == []
    listed = {**driver, "listed": True, "source": "nvidia-smi-L", "driver_gpus": 1, "problem": None}
    assert driver_facts.proc_file_problems(listed) == []  # the list from WSL's own nvidia-smi


@needs_namespace
@needs_torch
@needs_fuse
def test_the_toolkits_layout_on_wsl2_passes_the_driver_rules(tmp_path):
    libraries = {"libcuda": f"{WSL_STORE}/libcuda.so.1.1", "stub": f"{LIB_DIR}/libcuda.so.1"}
    seen = in_container(tmp_path, WSL_CONTAINER, "cuda", ["/dev/dxg"], libraries)
    access, driver = seen["access"], seen["driver"]
    assert nodes(access) == {"dxg": (True, 10, 229)}
    assert access["libraries"]["libcuda"]["mount"] == "file" and access["cuda_library"]["from"] == "system"
    assert driver["smi_file"] == {"found": True, "elf": True, "mount": "file"} and driver["proc_files"] == []
    real = with_driver(access, {"dxg": (10, 63)}, {"dxg_misc_minor": 63})
    assert driver_views.driver_access_problems("cuda", {**GOOD_VIEWS, "driver_access": real}) == []


@needs_namespace
@needs_torch
@pytest.mark.parametrize("made_by", ["mknod", "bind"])
def test_rocms_docker_devices_pass_the_driver_rules(tmp_path, made_by):
    seen = in_container(tmp_path, ROCM[made_by], "rocm", ["/dev/kfd", "/dev/dri/renderD128"], {})
    access = seen["access"]
    assert access["devices_open"] == ["dri/renderD128", "kfd"]
    assert nodes(access) == {"dri/renderD128": (True, 1, 7), "kfd": (True, 1, 5)}  # the host nodes' numbers
    assert_image_libraries(access, "rocm")
    views = {**GOOD_VIEWS, "mapped": {"observed": "linux-proc-maps",
                                      "torch_lib": ["libtorch_cpu.so", "libtorch_hip.so"]}}
    problems = driver_views.driver_access_problems("rocm", {**views, "driver_access": access})
    assert any("kernel registers no kfd driver" in p for p in problems), problems
    assert any("kfd_gpu_nodes is 0" in p for p in problems), problems  # no amdgpu topology in this sysfs
    # with the kfd major /proc/devices registers on a ROCm host and a GPU node in its KFD topology
    real = {**with_driver(access, {"kfd": (511, 0)}, {"kfd": 511}), "kfd_gpu_nodes": 1}
    assert driver_views.driver_access_problems("rocm", {**views, "driver_access": real}) == []


# ---- layouts that differ from what the toolkit makes ----------------------------------------------------------

# In one container: the toolkit's tmpfs over /proc/driver/nvidia holding a GPU's folder of its own (no bind), the
# host's folder of one GPU bound at another's place, and a volume over /usr/local/nvidia holding libcuda.so.1
# (nvidia-docker 1.0's volume, which the toolkit replaced).
DIFFERING = HOST_DRIVER + f"""mount -t tmpfs -o mode=0555 tmpfs $R/proc/driver/nvidia
mkdir -p $R/proc/driver/nvidia/gpus/0000:01:00.0 $R/proc/driver/nvidia/gpus/0000:3b:00.0
cp {NVIDIA}/information-t4.txt $R/proc/driver/nvidia/gpus/0000:01:00.0/information
mount --bind $H/proc/driver/nvidia/gpus/{BUS} $R/proc/driver/nvidia/gpus/0000:3b:00.0
mkdir -p $R/usr/local/nvidia && mount -t tmpfs nvidia_driver_{DRIVER} $R/usr/local/nvidia
mkdir $R/usr/local/nvidia/lib64 && cp {LIBZ} $R/usr/local/nvidia/lib64/libcuda.so.1
bind /dev/zero $R/dev/nvidia0 ro,nosuid,noexec
"""


@pytest.fixture(scope="module")
def differing(tmp_path_factory) -> dict:
    if not (TORCH_LIB and (TORCH_LIB / "libtorch_cpu.so").is_file()):
        pytest.skip("torch's libraries stand in for the image's CUDA libraries")
    return in_container(tmp_path_factory.mktemp("differing"), DIFFERING, "cuda", ["/dev/nvidia0"],
                        {"libcuda": "/usr/local/nvidia/lib64/libcuda.so.1"})


def _procfs(facts: dict) -> dict:
    return {**facts, "f_type": PROC_MAGIC, "fstype": "proc"}


@needs_namespace
def test_a_gpu_folder_written_into_the_tmpfs_over_the_drivers_folder_is_refused(differing):
    (own,) = [f for f in differing["driver"]["proc_files"] if f["mount_point"] == "/proc/driver/nvidia"]
    assert own == {"f_type": TMPFS_MAGIC, "fstype": "tmpfs", "mount_point": "/proc/driver/nvidia", "mount_root": "/"}
    for facts in (own, _procfs(own)):  # refused by where it lies, whatever its file system
        problems = driver_facts.proc_file_problems({"source": "proc-driver-nvidia", "proc_files": [facts]})
        assert any("not the kernel's procfs at /proc" in p for p in problems), problems


@needs_namespace
def test_one_gpus_procfs_folder_bound_at_another_gpus_place_is_refused(differing):
    (moved,) = [f for f in differing["driver"]["proc_files"] if f["mount_point"].endswith("0000:3b:00.0")]
    assert moved["mount_root"] == f"/driver/nvidia/gpus/{BUS}"
    problems = driver_facts.proc_file_problems({"source": "proc-driver-nvidia", "proc_files": [_procfs(moved)]})
    assert any("not the kernel's procfs at /proc" in p for p in problems), problems


@needs_namespace
def test_a_driver_library_volume_over_a_folder_is_refused(differing):
    access = differing["access"]
    libcuda = access["libraries"]["libcuda"]
    assert (libcuda["mount"], libcuda["mount_fstype"], libcuda["same_file"]) == ("folder", "tmpfs", True)
    real = with_driver(access, NVIDIA_NUMBERS, {"nvidia-uvm": 234})
    problems = driver_facts.library_problems("cuda", real)
    assert problems == ["device.views.driver_access.libraries['libcuda']: mapped from a 'tmpfs' mount over a folder "
                        "of the system (mount 'folder'; the driver's comes from the root file system, a bind of the "
                        "file itself or WSL's driver store): a mount namespace laid it there"], problems
