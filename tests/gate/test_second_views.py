"""The second views the gate records beside `platform.machine` and `filesystem.type`, read from real bytes on this
machine: the ELF header of the interpreter and of torch's `_C`, the kernel's statfs magic on ext4, tmpfs and
loop-mounted xfs and btrfs (tests/gate/test_gate_on_mounts.py's mounts). The PE parser is tested on real Windows
launchers that setuptools ships; the Mach-O parser on headers built from <mach-o/loader.h> and <mach-o/fat.h>:
neither is verified on its own OS."""

from __future__ import annotations

import platform
import struct
import sys
from pathlib import Path

import pytest
from platform_runtime import binary_arch, filesystem
from platform_runtime.isolation import locate_torch
from rules import fs_magic, machine_arch

from tests.gate.test_gate_on_mounts import mounted  # noqa: F401 - the fixture

SETUPTOOLS = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / \
    "setuptools"
linux = pytest.mark.skipif(sys.platform != "linux", reason="reads ELF headers and statfs(2) of this Linux machine")


FORMATS = {"linux": "elf", "win32": "pe", "darwin": ("mach-o", "mach-o-fat")}


def test_the_interpreter_and_torch_c_headers_show_this_machine():
    """On every OS the platform tests run on (scripts/steps/run_platform_tests.py): its real files."""
    recorded = binary_arch.record(locate_torch().site_dir)
    if sys.platform in FORMATS:
        assert recorded["interpreter"]["format"] in FORMATS[sys.platform], recorded
        assert recorded["torch_c"]["format"] in FORMATS[sys.platform], recorded
    assert recorded["torch_c"]["name"].startswith("_C.") and "/" not in recorded["torch_c"]["name"]
    result = {"platform": {"system": platform.system(), "machine": platform.machine(), "binaries": recorded}}
    shown = machine_arch.views(result)
    assert {"platform.binaries.interpreter", "platform.binaries.torch_c"} <= set(shown), shown
    assert machine_arch.problems(result) == []
    other = "aarch64" if machine_arch.canonical(platform.machine()) == "x86_64" else "x86_64"
    result["platform"]["machine"] = other
    assert len(machine_arch.problems(result)) == len(shown)  # each view names the machine and what it shows


@pytest.mark.parametrize("name, machine", [("cli-64.exe", 0x8664), ("cli-arm64.exe", 0xAA64), ("cli-32.exe", 0x14C)])
def test_real_windows_launchers_give_their_pe_machine(name, machine):
    path = SETUPTOOLS / name
    if not path.is_file():
        pytest.skip(f"setuptools ships no {name} here")
    parsed = binary_arch.read(path)
    assert (parsed["format"], parsed["header"]) == ("pe", machine)


def _macho(cputype: int, magic: bytes = b"\xcf\xfa\xed\xfe") -> bytes:
    order = ">" if magic[0] == 0xFE else "<"
    return magic + struct.pack(order + "Ii", cputype, 0) + bytes(20)  # mach_header_64: magic, cputype, cpusubtype...


def _fat(*cputypes: int) -> bytes:
    arches = b"".join(struct.pack(">iiIII", t, 0, 4096 * (i + 1), 4096, 12) for i, t in enumerate(cputypes))
    return b"\xca\xfe\xba\xbe" + struct.pack(">I", len(cputypes)) + arches


@pytest.mark.parametrize("head, expected", [
    (_macho(0x0100000C), ("mach-o", 0x0100000C, 64)),  # arm64, little-endian as on every Mac
    (_macho(0x01000007, b"\xfe\xed\xfa\xcf"), ("mach-o", 0x01000007, 64)),  # x86_64 written big-endian
    (_macho(7, b"\xce\xfa\xed\xfe"), ("mach-o", 7, 32)),
    (_fat(0x01000007, 0x0100000C), ("mach-o-fat", [0x01000007, 0x0100000C], None)),  # universal2
    (b"\x7fELF\x02\x02\x01" + bytes(11) + struct.pack(">H", 22), ("elf", 22, 64)),  # big-endian s390x
])
def test_headers_built_from_the_published_layouts_are_parsed(head, expected):
    parsed = binary_arch.parse(head)
    assert (parsed["format"], parsed["header"], parsed["bits"]) == expected


def test_not_an_executable_header_shows_nothing():
    parsed = binary_arch.parse(b"#!/bin/sh\n")
    assert parsed["format"] is None and parsed["error"]
    assert machine_arch.header_arches(parsed) == set()


@pytest.mark.parametrize("system, machine, view, ok", [
    ("Linux", "x86_64", {"format": "elf", "header": 62}, True),
    ("Linux", "x86_64", {"format": "elf", "header": 3}, True),  # a 32-bit interpreter on a 64-bit kernel
    ("Linux", "aarch64", {"format": "elf", "header": 40}, True),  # Raspberry Pi OS: armhf userland, arm64 kernel
    ("Linux", "aarch64", {"format": "elf", "header": 62}, False),
    ("Linux", "arm64", {"format": "elf", "header": 62}, False),
    ("Windows", "AMD64", {"format": "pe", "header": 0x8664}, True),
    ("Windows", "ARM64", {"format": "pe", "header": 0x8664}, True),  # x64 emulation on Windows on Arm
    ("Windows", "AMD64", {"format": "pe", "header": 0xAA64}, False),
    ("Darwin", "arm64", {"format": "mach-o-fat", "header": [0x01000007, 0x0100000C]}, True),
    ("Darwin", "x86_64", {"format": "mach-o", "header": 0x0100000C}, False),
    ("Linux", "sparc64", {"format": "elf", "header": 62}, False),  # a name no alias knows beside a known header
])
def test_the_machine_must_run_what_its_binaries_are(system, machine, view, ok):
    result = {"platform": {"system": system, "machine": machine, "binaries": {"interpreter": view}}}
    problems = machine_arch.problems(result)
    assert (problems == []) is ok, problems
    if not ok:
        assert f"platform.machine is {machine!r}" in problems[0] and "platform.binaries.interpreter" in problems[0]


@pytest.mark.parametrize("tags, arches", [
    (["cp311-cp311-manylinux_2_28_x86_64"], {"x86_64"}),
    (["cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64"], {"arm64"}),
    (["cp312-cp312-win_amd64"], {"x86_64"}), (["cp312-cp312-win_arm64"], {"arm64"}), (["cp39-cp39-win32"], {"x86"}),
    (["cp312-none-macosx_11_0_arm64"], {"arm64"}), (["cp312-cp312-macosx_10_9_universal2"], {"x86_64", "arm64"}),
    (["py3-none-any"], set()),
])
def test_wheel_tags_name_their_architecture(tags, arches):
    assert machine_arch.tag_arches(tags) == arches


@linux
@pytest.mark.root
@pytest.mark.parametrize("mounted", ["working-tree", "tmpfs", "ext4", "xfs", "btrfs"], indirect=True)
def test_statfs_magic_of_each_real_mount_confirms_its_mountinfo_type(mounted):  # noqa: F811
    _, point, _ = mounted
    detected = filesystem.detect_linux(Path(point))
    assert detected["statfs_f_type"] in fs_magic.MAGICS, hex(detected["statfs_f_type"] or 0)
    assert fs_magic.problems({"filesystem": detected}) == []
    other = "btrfs" if detected["type"] != "btrfs" else "xfs"
    edited = dict(detected, type=other)
    assert f"filesystem.type is {other!r}, but the kernel's statfs f_type is {detected['statfs_f_type']:#x}" in \
        fs_magic.problems({"filesystem": edited})[0]


@linux
def test_dev_shm_is_tmpfs_by_its_magic():
    detected = filesystem.detect_linux(Path("/dev/shm"))
    assert (detected["type"], detected["statfs_f_type"]) == ("tmpfs", 0x01021994)


def test_an_unknown_magic_beside_an_unknown_type_is_not_failed_but_said():
    result = {"filesystem": {"method": "linux-mountinfo-mnt-id", "type": "lustre", "statfs_f_type": 0x0BD00BD0}}
    assert fs_magic.problems(result) == []
    assert "taken as recorded" in fs_magic.unconfirmed(result)[0]


def test_an_unknown_magic_beside_a_known_type_is_refused():
    result = {"filesystem": {"method": "linux-mountinfo-mnt-id", "type": "ext4", "statfs_f_type": 0x12345678}}
    assert "whose statfs f_type is 0xef53" in fs_magic.problems(result)[0]
    assert fs_magic.unconfirmed(result) == []


def test_fuse_subtypes_share_the_fuse_magic():
    result = {"filesystem": {"method": "linux-mountinfo-mnt-id", "type": "fuse.sshfs", "statfs_f_type": 0x65735546}}
    assert fs_magic.problems(result) == []
