"""Whether what the interpreter executes for a source file is that source: the `__pycache__` entries it would
load instead of compiling the file.

Python runs a module's cached bytecode whenever the .pyc's header matches the source's mtime and size (or
its hash), and -B only stops it WRITING one: a .pyc planted with the source's mtime and size runs in place of
the source, whose hash is then no evidence of what ran. A cached entry is accepted only if its code object
equals the source compiled here (code objects compare by value: bytecode, constants, names, line table).
"""

from __future__ import annotations

import importlib.util
import marshal
from pathlib import Path

HEADER_BYTES = 16  # magic, flags, mtime-or-hash, size-or-hash (PEP 552)
OPTIMIZATIONS = ("", 1, 2)  # the .pyc of each -O level: __init__.cpython-311.pyc, .opt-1.pyc, .opt-2.pyc


def cached_files(source: Path) -> list[tuple[Path, int]]:
    """Every `__pycache__` entry the interpreter could load for `source`, with its -O level."""
    found = []
    for level in OPTIMIZATIONS:
        try:
            cached = Path(importlib.util.cache_from_source(str(source), optimization=level))
        except (NotImplementedError, ValueError):
            continue
        if cached.is_file():
            found.append((cached, level or 0))
    return found


def mismatched(source: Path) -> list[str]:
    """Names of the cached files for `source` whose code is not `source` compiled (unreadable ones included)."""
    try:
        text = source.read_bytes()
    except OSError:
        return []
    bad = []
    for cached, level in cached_files(source):
        try:
            code = marshal.loads(cached.read_bytes()[HEADER_BYTES:])
            same = code == compile(text, str(source), "exec", dont_inherit=True, optimize=level)
        except (OSError, ValueError, EOFError, TypeError, SyntaxError):
            same = False
        if not same:
            bad.append(f"{cached.parent.name}/{cached.name}")
    return bad
