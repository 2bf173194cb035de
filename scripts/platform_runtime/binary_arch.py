"""The architecture field of an executable's own header, read from its first bytes (never by running it): the
second view of `platform.machine` that rules.machine_arch judges. Recorded for the interpreter that runs the
gate (`sys.executable`) and for torch's `_C` extension, as {"format", "header", "bits", "error"}:

- ELF (Linux): e_machine, the u16 at offset 18, in the byte order EI_DATA (offset 5) names; EI_CLASS (4) the
  bits (System V gABI, "ELF Header").
- PE (Windows): "MZ", e_lfanew the u32 at 0x3C, "PE\\0\\0" there, then IMAGE_FILE_HEADER.Machine, a u16
  (Microsoft, "PE Format").
- Mach-O (macOS): MH_MAGIC / MH_MAGIC_64 (either byte order), cputype the u32 after the magic; a fat file
  (FAT_MAGIC 0xcafebabe / FAT_MAGIC_64, big-endian) lists nfat_arch entries, each starting with its cputype
  (<mach-o/loader.h>, <mach-o/fat.h>).
Only the Linux parser is exercised on the file it parses here; the PE one is tested on real Windows launchers
shipped in setuptools, the Mach-O one on headers built from the published layout: neither is verified on its OS.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

HEAD_BYTES = 4096  # the headers and a fat file's arch table lie in the first page
MAX_FAT_ARCHES = 32


def parse(head: bytes) -> dict:
    """{"format", "header", "bits", "error"} for the first bytes of an executable."""
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        order = {1: "<", 2: ">"}.get(head[5])
        if order is None:
            return _unknown(f"ELF EI_DATA is {head[5]}")
        return {"format": "elf", "header": struct.unpack_from(order + "H", head, 18)[0],
                "bits": {1: 32, 2: 64}.get(head[4]), "error": None}
    if head[:2] == b"MZ" and len(head) >= 0x40:
        offset = struct.unpack_from("<I", head, 0x3C)[0]
        if head[offset:offset + 4] != b"PE\0\0" or len(head) < offset + 6:
            return _unknown("an MZ file without a PE header in its first page")
        machine = struct.unpack_from("<H", head, offset + 4)[0]
        return {"format": "pe", "header": machine, "bits": None, "error": None}
    magic = head[:4]
    if magic in (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe"):
        order = ">" if magic[0] == 0xFE else "<"
        return {"format": "mach-o", "header": struct.unpack_from(order + "I", head, 4)[0],
                "bits": 64 if magic in (b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe") else 32, "error": None}
    if magic in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf") and len(head) >= 8:
        count = struct.unpack_from(">I", head, 4)[0]
        size = 20 if magic == b"\xca\xfe\xba\xbe" else 32  # fat_arch / fat_arch_64
        if not 0 < count <= MAX_FAT_ARCHES or len(head) < 8 + count * size:
            return _unknown(f"a fat Mach-O header naming {count} architectures")
        types = [struct.unpack_from(">I", head, 8 + i * size)[0] for i in range(count)]
        return {"format": "mach-o-fat", "header": types, "bits": None, "error": None}
    return _unknown("not an ELF, PE or Mach-O header")


def _unknown(why: str) -> dict:
    return {"format": None, "header": None, "bits": None, "error": why}


def read(path: Path | None) -> dict:
    if path is None:
        return _unknown("no file to read")
    try:
        with open(path, "rb") as handle:
            return parse(handle.read(HEAD_BYTES))
    except OSError as exc:
        return _unknown(f"{type(exc).__name__}: {exc.strerror}")


def torch_extension(site_dir: Path | None) -> Path | None:
    """torch's own compiled `_C` module in the site dir the gate found it in (never imported here)."""
    folder = site_dir / "torch" if site_dir is not None else None
    if folder is None or not folder.is_dir():
        return None
    found = sorted(p for p in folder.glob("_C.*") if p.suffix in (".so", ".pyd") and p.is_file())
    return found[0] if found else None


def record(site_dir: Path | None) -> dict:
    """`platform.binaries`: the interpreter's header and torch `_C`'s (with its file name, which carries the
    architecture on Linux and Windows; a name, never a path)."""
    extension = torch_extension(site_dir)
    return {"interpreter": read(Path(sys.executable)),
            "torch_c": {**read(extension), "name": extension.name if extension else None}}
