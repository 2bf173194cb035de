"""Whether every file a gate process loaded from a site directory is a file of a distribution whose RECORD was
checked (platform_runtime.dependencies): the device worker's modules (its sys.modules, in its report), the
libraries the parent saw mapped into it (/proc/<pid>/maps), and the parent's own modules.

A loaded file some RECORD lists belongs to that distribution: checked before the report when torch requires
it, otherwise checked here, after it (numpy, which torch imports when installed without requiring it). A
loaded source's bytecode, which Python runs in its place when the header carries the source's mtime and size,
is compared with the source compiled (bytecode.py) where its RECORD does not list that .pyc (an installer such as
uv lists none; Python, or a forger, wrote it later), torch's excepted (its bytecode beside listed sources is
counted by torch_record instead, docs/gate.md#threat-model). A loaded file
inside a folder some RECORD installs, yet not listed in it, is refused; one under a top-level name no RECORD
covers (an egg-info, Debian's or conda's package) is named in `not_checked`: its bytes are not verified.
Stdlib only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from platform_runtime import bytecode, dependencies, dist_record

UNCOMPARED_BYTECODE = ("torch",)  # distributions whose loaded modules' bytecode is not compiled to compare


class _Owners:
    """For one site dir, lazily: which dist-info's RECORD lists each relative path, and which top-level names
    some RECORD installs into."""

    def __init__(self, site: Path) -> None:
        self.files: dict[str, str] = {}
        self.tops: dict[str, str] = {}
        for entries in dependencies.installed([site]).values():
            for _, dist_info in entries:
                for path, _, _ in dist_record.read_record(site, dist_info) or []:
                    path = path.replace("\\", "/")
                    self.files.setdefault(path, dist_info)
                    self.tops.setdefault(path.split("/", 1)[0], dist_info)


def _site_of(path: str, site_dirs: list[Path]) -> tuple[Path, str] | None:
    """(the deepest site dir holding `path`, the path relative to it, with '/'), or None."""
    best = None
    for site in site_dirs:
        prefix = str(site).rstrip(os.sep) + os.sep
        if path.startswith(prefix) and (best is None or len(str(site)) > len(str(best))):
            best = site
    return (best, os.path.relpath(path, best).replace(os.sep, "/")) if best is not None else None


def _unlisted_bytecode(site: Path, relative: str, index: _Owners) -> bool:
    """Whether Python could run, for this loaded source, a cached .pyc its RECORD does not list. One the RECORD
    lists with a hash was hashed; one it lists without (pip compiles every module at install and lists its .pyc
    so) is not compiled here to compare: that cost 2.2-4.3 s after the report for the 554 modules a worker
    loads from a pip-installed sympy, mpmath and numpy, and made the gate 1.9x as long; such a .pyc rewritten
    is a limit, as torch's is (docs/gate.md#threat-model)."""
    for cached, _ in bytecode.cached_files(site / relative):
        name = os.path.relpath(cached, site).replace(os.sep, "/")
        if name not in index.files:
            return True
    return False


def _name(dist_info: str) -> str:
    return dependencies.normalize(dist_info[:-len(".dist-info")].split("-", 1)[0])


def _in_stdlib(path: str, site: Path, stdlib: list[str]) -> bool:
    """Whether `path` is the standard library's: in one of its folders, and not in a site dir inside that folder
    (Windows' `Lib\\site-packages` lies in `Lib`)."""
    return any(path.startswith(folder) and not (str(site).rstrip(os.sep) + os.sep).startswith(folder)
               for folder in stdlib)


def check(paths: list[str], site_dirs: list[Path], checked: Callable[[], list[dict]],
          stdlib_dirs: list[Path] = ()) -> dict:
    """{"loaded_files", "bytecode_compared", "late", "not_checked", "problems", "duration_s"}: `paths` (absolute,
    as loaded) judged against the distributions already checked (`checked()`, dependencies.verify_one's reports,
    asked for only once the bytecode is compared: it may still be hashing); `late` holds the reports of the
    distributions checked here because a loaded file belongs to them. A file in `stdlib_dirs` (interpreter_layout)
    is the standard library's even inside a site dir: on Windows `sys.prefix`, which holds `Lib` and `DLLs`, is one."""
    started = time.monotonic()
    resolved = [str(Path(site).resolve()) for site in site_dirs]
    sites = [Path(site) for site in dict.fromkeys(resolved)]
    stdlib = [str(Path(folder).resolve()).rstrip(os.sep) + os.sep for folder in stdlib_dirs]
    owned: dict[tuple[str, str], Path] = {}
    owners: dict[Path, _Owners] = {}
    result: dict = {"loaded_files": 0, "bytecode_compared": 0, "late": [], "not_checked": [], "problems": []}
    unlisted: list[str] = []
    uncompiled: dict[tuple[Path, str], list[str]] = {}
    real_dirs: dict[str, str] = {}  # a few hundred folders hold the ~2,000 files: resolve each folder once
    for path in sorted(set(paths)):
        folder, name = os.path.split(path)
        if folder not in real_dirs:
            real_dirs[folder] = os.path.realpath(folder)
        real = os.path.join(real_dirs[folder], name)
        found = _site_of(real, sites)
        if found is None or _in_stdlib(real, found[0], stdlib):
            continue  # the standard library, the gate's own sources (source.files), trusted as the interpreter is
        site, relative = found
        result["loaded_files"] += 1
        index = owners.get(site) or owners.setdefault(site, _Owners(site))  # built once per site dir
        dist_info = index.files.get(relative)
        if dist_info is None:
            top = relative.split("/", 1)[0]
            if top in index.tops:
                unlisted.append(f"{relative} (in {_name(index.tops[top])}'s folder)")
            elif top not in result["not_checked"]:
                result["not_checked"].append(top)
            continue
        owned[(str(site), dist_info)] = site
        # An entry module's bytecode (`name.py`, `name/__init__.py`) was compared with its distribution's check.
        if relative.endswith(".py") and _name(dist_info) not in UNCOMPARED_BYTECODE and \
                relative not in dependencies.entry_sources([(relative, "listed", None)]) and \
                _unlisted_bytecode(site, relative, index):
            uncompiled.setdefault((site, _name(dist_info)), []).append(relative)
    for (site, name), sources in uncompiled.items():
        result["bytecode_compared"] += len(sources)
        result["problems"] += dependencies.forged_bytecode(site, name, sources)
    done = {(str(Path(r["site"]).resolve()), r["dist_info"]) for r in checked()}
    result["late"] = [dependencies.verify_one(_name(dist_info), site, dist_info)
                      for (_, dist_info), site in sorted(owned.items()) if (str(site), dist_info) not in done]
    if unlisted:
        result["problems"].append(dist_record.named(unlisted, "a gate process loaded are listed in no RECORD"))
    result["problems"] += [p for report in result["late"] for p in report["problems"]]
    result["not_checked"].sort()
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result
