"""The executable headers the gate records (`platform.binaries.interpreter` and `.torch_c`, read by
platform_runtime.binary_arch) agree with themselves, with each other and with the interpreter that ran
(reviewer r2, B1, B3, B5). core.machine_views compares the architectures they show with `platform.machine`;
these are the details a one-field edit could change beside them:

- a record is either a read header (`format`, `header`, `bits`, `error` null) or a failure (`error`, and the
  other three null): binary_arch.parse and _unknown write nothing else;
- `bits` is what the header itself says: ELF's EI_CLASS (32 or 64; EM_386 and EM_ARM are ELFCLASS32 by their
  ABIs), a thin Mach-O's magic (64 exactly when the cputype carries CPU_ARCH_ABI64), null for PE and fat files;
- the interpreter and torch's `_C` are both ELF on Linux, and a process maps only shared objects of its own
  e_machine and class (the dynamic loader refuses any other): the two headers and classes are equal;
- `_C`'s file name carries the interpreter's tag (PEP 3149 EXT_SUFFIX `cpython-311`, Windows `cp311`): on
  CPython it names `platform.python`'s major.minor (which core.record_rules holds to the wheel's cpXY tag).
Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

from core.facts import get

BINARIES = ("interpreter", "torch_c")
ELF_32_ONLY = {3: "EM_386", 40: "EM_ARM"}
CPU_ARCH_ABI64 = 0x01000000
NULL_BITS = ("pe", "mach-o-fat")
# The interpreter tag in an extension's name: _C.cpython-311-x86_64-linux-gnu.so, _C.cpython-313t-...,
# _C.cpython-311-darwin.so, _C.cp311-win_amd64.pyd.
EXT_TAG = re.compile(r"\.(?:cpython-|cp)(?P<major>\d)(?P<minor>\d+)[a-z]*[-.]")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    if bits not in (32, 64) or not _int(bits):
        return [f"{field}.bits is {bits!r}: a {form} header is 32 or 64 bits"]
    if form == "elf" and header in ELF_32_ONLY and bits != 32:
        return [f"{field}.bits is {bits!r}, but its header {header} ({ELF_32_ONLY[header]}) is ELFCLASS32 only"]
    if form == "mach-o" and _int(header) and (bits == 64) != bool(header & CPU_ARCH_ABI64):
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


def problems(result: dict[str, Any]) -> list[str]:
    binaries = get(result, "platform.binaries")
    if not isinstance(binaries, dict):
        return []  # core.result_format names a current result without them
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
