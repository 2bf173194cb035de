"""`platform.machine` (the kernel's uname machine, as platform.machine() reports it) against views the gate
records beside it that a one-field edit does not change: the executable header of the interpreter that ran
(`platform.binaries.interpreter`: ELF e_machine, PE Machine, Mach-O cputype(s)), the header of torch's own `_C`
extension (`platform.binaries.torch_c`) and the architecture in its file name, and the torch wheel's platform
tags (`device.torch_build.wheel_tags`, recorded by every gate since version 1). `github.runner_arch` is not one:
it names the runner's host, which may run a container of another architecture under emulation. Each view is the set of
architectures it shows; the machine must be able to run one of them natively: an x86_64 kernel runs x86 and
x86_64 binaries, an aarch64 one arm and arm64 (a 32-bit userland on a 64-bit kernel is a real box), Windows on
ARM64 emulates x86 and x64 too. A fat Mach-O (python.org's universal2) shows every slice it carries.

Names are aliased (x86_64/AMD64/amd64/x64, aarch64/arm64/ARM64, i686/x86, armv7l/arm). A machine name no alias
knows, beside a view that shows an architecture, is refused; a view that shows none (not recorded, an unknown
header value) says nothing. Stdlib only; the header parsers are the gate's (platform_runtime.binary_arch).

binary_problems: the header records themselves, the details a one-field edit could
change beside the architectures they show:
- a record is either a read header (`format`, `header`, `bits`, `error` null) or a failure (`error`, and the
  other three null): binary_arch.parse and _unknown write nothing else;
- `bits` is what the header itself says: ELF's EI_CLASS (32 or 64; EM_386 and EM_ARM are ELFCLASS32 by their
  ABIs), a thin Mach-O's magic (64 exactly when the cputype carries CPU_ARCH_ABI64), null for PE and fat files;
- the interpreter and torch's `_C` are both ELF on Linux, and a process maps only shared objects of its own
  e_machine and class (the dynamic loader refuses any other): the two headers and classes are equal;
- `_C`'s file name carries the interpreter's tag (PEP 3149 EXT_SUFFIX `cpython-311`, Windows `cp311`): on
  CPython it names `platform.python`'s major.minor (which rules.beside_checks holds to the wheel's cpXY tag).
"""

from __future__ import annotations

import re
from typing import Any

from common.values import get, is_int

ALIASES = {
    **dict.fromkeys(("x86_64", "amd64", "x64", "em64t"), "x86_64"),
    **dict.fromkeys(("x86", "i386", "i486", "i586", "i686", "win32"), "x86"),
    **dict.fromkeys(("aarch64", "arm64", "aarch64_be"), "arm64"),
    **dict.fromkeys(("arm", "armv6l", "armv7l", "armv7", "armv8l", "armhf"), "arm"),
    **{name: name for name in ("ppc64le", "ppc64", "s390x", "riscv64", "loongarch64")},
}
# What a kernel of each architecture runs natively (compat 32-bit modes); Windows ARM64 emulates x86 and x64.
RUNS = {"x86_64": {"x86_64", "x86"}, "arm64": {"arm64", "arm"}, "x86": {"x86"}, "arm": {"arm"}}
WINDOWS_ARM64_RUNS = {"arm64", "arm", "x86_64", "x86"}

# ELF e_machine (the System V gABI's registry, elf.h): EM_386 3, EM_PPC64 21, EM_S390 22, EM_ARM 40,
# EM_X86_64 62, EM_AARCH64 183, EM_RISCV 243, EM_LOONGARCH 258. ppc64 and ppc64le share EM_PPC64 (EI_DATA
# tells them apart; both are "ppc64*" here).
ELF_MACHINES = {3: "x86", 21: "ppc64", 22: "s390x", 40: "arm", 62: "x86_64", 183: "arm64", 243: "riscv64",
                258: "loongarch64"}
# PE/COFF IMAGE_FILE_HEADER.Machine (Microsoft's PE Format: IMAGE_FILE_MACHINE_I386, _ARMNT, _AMD64, _ARM64).
PE_MACHINES = {0x014C: "x86", 0x01C4: "arm", 0x8664: "x86_64", 0xAA64: "arm64"}
# Mach-O cputype (<mach/machine.h>: CPU_TYPE_X86 7, CPU_ARCH_ABI64 0x01000000, CPU_TYPE_ARM 12).
MACHO_CPUTYPES = {7: "x86", 0x01000007: "x86_64", 12: "arm", 0x0100000C: "arm64"}
HEADER_TABLES = {"elf": ELF_MACHINES, "pe": PE_MACHINES, "mach-o": MACHO_CPUTYPES, "mach-o-fat": MACHO_CPUTYPES}

# A wheel platform tag's architecture (PEP 425, PEP 600 manylinux_x_y_arch, PEP 656 musllinux, macosx_x_y_arch).
_LINUX_TAG = re.compile(r"(?:many|musl)?linux(?:_\d+_\d+|1|2010|2014)?_(?P<arch>\w+)")
_MAC_TAG = re.compile(r"macosx_\d+_\d+_(?P<arch>\w+)")
MAC_FAT = {"universal2": {"x86_64", "arm64"}, "intel": {"x86_64", "x86"}, "universal": {"x86_64", "x86"}}
# An extension's own name (PEP 3149 EXT_SUFFIX): _C.cpython-311-x86_64-linux-gnu.so, _C.cp311-win_amd64.pyd.
_EXT_LINUX = re.compile(r"\.cpython-\d+[a-z]*-(?P<arch>[a-z0-9_]+?)-linux-(?:gnu|musl)\w*\.so$")
_EXT_WINDOWS = re.compile(r"\.cp\d+-(?P<arch>win_amd64|win_arm64|win32)\.pyd$")


def canonical(name: Any) -> str | None:
    return ALIASES.get(str(name).lower()) if isinstance(name, str) else None


def tag_arches(tags: Any) -> set[str]:
    """The architectures a list of wheel tags names (empty: none, e.g. py3-none-any)."""
    found: set[str] = set()
    for tag in tags if isinstance(tags, list) else []:
        for platform_tag in str(tag).split("-")[-1].split("."):
            match = _LINUX_TAG.fullmatch(platform_tag) or _MAC_TAG.fullmatch(platform_tag)
            arch = match.group("arch") if match else platform_tag if platform_tag.startswith("win") else None
            if arch in MAC_FAT and platform_tag.startswith("macosx"):
                found |= MAC_FAT[arch]
            elif canonical(arch.removeprefix("win_") if arch else None):
                found.add(canonical(arch.removeprefix("win_")))  # type: ignore[arg-type]
    return found


def header_arches(binary: Any) -> set[str]:
    """The architectures an executable header shows, as the gate recorded it: {"format", "header"} where header
    is the ELF e_machine, the PE Machine, or the Mach-O cputype (a list of them for a fat file)."""
    if not isinstance(binary, dict):
        return set()
    table = HEADER_TABLES.get(str(binary.get("format")))
    header = binary.get("header")
    values = header if isinstance(header, list) else [header]
    return {table[v] for v in values if table and is_int(v) and v in table}


def name_arches(name: Any) -> set[str]:
    """The architecture an extension's file name carries (none on macOS: `_C.cpython-311-darwin.so`)."""
    match = (_EXT_LINUX.search(name) or _EXT_WINDOWS.search(name)) if isinstance(name, str) else None
    arch = canonical(match.group("arch").removeprefix("win_")) if match else None
    return {arch} if arch else set()


def views(result: dict[str, Any]) -> dict[str, set[str]]:
    """{field: architectures it shows}, for each view that shows one."""
    found = {
        "platform.binaries.interpreter": header_arches(get(result, "platform.binaries.interpreter")),
        "platform.binaries.torch_c": header_arches(get(result, "platform.binaries.torch_c")),
        "platform.binaries.torch_c.name": name_arches(get(result, "platform.binaries.torch_c.name")),
        "device.torch_build.wheel_tags": tag_arches(get(result, "device.torch_build.wheel_tags")),
    }
    return {path: arches for path, arches in found.items() if arches}


def runnable(arch: str, system: Any) -> set[str]:
    if arch == "arm64" and system == "Windows":
        return WINDOWS_ARM64_RUNS
    return RUNS.get(arch, {arch})


def problems(result: dict[str, Any]) -> list[str]:
    """Each view whose architectures the recorded machine cannot run, naming both values."""
    machine = get(result, "platform.machine")
    arch = canonical(machine)
    found = []
    for path, arches in views(result).items():
        shown = "/".join(sorted(arches))
        if arch is None:
            found.append(f"platform.machine is {machine!r}, no architecture's name, but {path} shows {shown}")
        elif not runnable(arch, get(result, "platform.system")) & arches:
            found.append(f"platform.machine is {machine!r} ({arch}), but {path} shows {shown}: the {arch} machine "
                         "cannot run it")
    return found

BINARIES = ("interpreter", "torch_c")
ELF_32_ONLY = {3: "EM_386", 40: "EM_ARM"}
CPU_ARCH_ABI64 = 0x01000000
NULL_BITS = ("pe", "mach-o-fat")
# The interpreter tag in an extension's name: _C.cpython-311-x86_64-linux-gnu.so, _C.cpython-313t-...,
# _C.cpython-311-darwin.so, _C.cp311-win_amd64.pyd.
EXT_TAG = re.compile(r"\.(?:cpython-|cp)(?P<major>\d)(?P<minor>\d+)[a-z]*[-.]")


def record_problems(field: str, binary: dict[str, Any]) -> list[str]:
    """One header record: read, or failed with its error, and its bits the header's own."""
    form, header, bits, error = (binary.get(k) for k in ("format", "header", "bits", "error"))
    if form is None:
        if error is None:
            return [f"{field}.format and {field}.error are both None: the gate records a header or why it has none"]
        if header is not None or bits is not None:
            return [f"{field}.error is {str(error)[:80]!r} beside header {header!r} and bits {bits!r}: a header "
                    "that could not be read has neither"]
        return []
    if error is not None:
        return [f"{field}.error is {str(error)[:80]!r} beside a read {form} header {header!r}: a header that was "
                "read records no error"]
    if form in NULL_BITS:
        return [] if bits is None else [f"{field}.bits is {bits!r}: a {form} header records no bits"]
    if bits not in (32, 64) or not is_int(bits):
        return [f"{field}.bits is {bits!r}: a {form} header is 32 or 64 bits"]
    if form == "elf" and is_int(header) and header in ELF_32_ONLY and bits != 32:
        return [f"{field}.bits is {bits!r}, but its header {header} ({ELF_32_ONLY[header]}) is ELFCLASS32 only"]
    if form == "mach-o" and is_int(header) and (bits == 64) != bool(header & CPU_ARCH_ABI64):
        return [f"{field}.bits is {bits!r}, but its cputype {header:#x} says "
                f"{64 if header & CPU_ARCH_ABI64 else 32}-bit"]
    return []


def pair_problems(interpreter: dict[str, Any], torch_c: dict[str, Any]) -> list[str]:
    """Both ELF: torch's `_C` is of the interpreter's machine and class, or the interpreter could not load it."""
    if interpreter.get("format") != "elf" or torch_c.get("format") != "elf":
        return []
    found = []
    for key in ("header", "bits"):
        if interpreter.get(key) != torch_c.get(key):
            found.append(f"platform.binaries.interpreter.{key} is {interpreter.get(key)!r}, "
                         f"platform.binaries.torch_c.{key} is {torch_c.get(key)!r}: a process loads only shared "
                         "objects of its own ELF machine and class")
    return found


def name_problems(result: dict[str, Any], torch_c: dict[str, Any]) -> list[str]:
    """`_C`'s name: present beside a read header, and its interpreter tag the Python that ran."""
    name = torch_c.get("name")
    if name is None:
        return [] if torch_c.get("format") is None else [
            "platform.binaries.torch_c.name is None beside a read header: the header was read from a named file"]
    match = EXT_TAG.search(name) if isinstance(name, str) else None
    python = get(result, "platform.python")
    if match is None or get(result, "platform.python_implementation") != "CPython" or not isinstance(python, str):
        return []
    tag = f"{match.group('major')}.{match.group('minor')}"
    if python.split(".")[:2] != tag.split("."):
        return [f"platform.binaries.torch_c.name is {name[:80]!r}, an extension for Python {tag}, but "
                f"platform.python is {python!r}"]
    return []


def binary_problems(result: dict[str, Any]) -> list[str]:
    """The binaries' records, as this module's docstring's second part says."""
    binaries = get(result, "platform.binaries")
    if not isinstance(binaries, dict):
        return []  # rules.result_format names a current result without them
    records = {key: binaries.get(key) for key in BINARIES}
    found = []
    for key, binary in records.items():
        if binary is not None and not isinstance(binary, dict):
            found.append(f"platform.binaries.{key} is {str(binary)[:60]!r}, a header record")
        elif isinstance(binary, dict):
            found += record_problems(f"platform.binaries.{key}", binary)
    interpreter, torch_c = records["interpreter"], records["torch_c"]
    if isinstance(interpreter, dict) and isinstance(torch_c, dict):
        found += pair_problems(interpreter, torch_c)
    if isinstance(torch_c, dict):
        found += name_problems(result, torch_c)
    return found
