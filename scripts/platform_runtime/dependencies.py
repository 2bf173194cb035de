"""The distributions besides torch whose code the device worker runs, checked as torch's own files are
(platform_runtime.dist_record): a file of typing_extensions, sympy or numpy edited in place runs inside the
worker, where it can rewrite the worker's report, yet its RECORD still lists it, so site_owners (which names
only files no distribution lists) accepts it.

Two sets, from two sources. Before the worker reports (in torch_record's process, beside its torch import):
every installed distribution in torch's Requires-Dist closure (torch's extras too: it imports them when they are
installed; other extras and environment markers are not evaluated, so a requirement installed is a requirement
checked), each RECORD hashed, its package folders searched for unlisted files, and the bytecode of each of its
top-level modules (what `import name` runs first) compared with the source compiled (platform_runtime.bytecode).
After the report (platform_runtime.loaded_files): every file the worker, or the gate's parent, loaded from a
site directory must belong to a distribution checked so. Stdlib only.
"""

from __future__ import annotations

import email.parser
import re
import time
from pathlib import Path

from platform_runtime import bytecode, dist_record

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """PEP 503's normalized form: what a requirement and a dist-info folder's name are compared by."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(site_dirs: list[Path]) -> dict[str, list[tuple[Path, str]]]:
    """{normalized name: [(site dir, dist-info folder), ...]} for every dist-info in the site dirs, in their order
    (a name found twice is checked twice: which copy a worker imports depends on the path)."""
    found: dict[str, list[tuple[Path, str]]] = {}
    for site in site_dirs:
        try:
            names = sorted(entry.name for entry in site.iterdir() if entry.name.endswith(".dist-info"))
        except OSError:
            continue
        for folder in names:
            found.setdefault(normalize(folder[:-len(".dist-info")].split("-", 1)[0]), []).append((site, folder))
    return found


def requirements(site: Path, dist_info: str, with_extras: bool) -> list[str]:
    """The normalized names a distribution's METADATA requires; with_extras: its optional ones too."""
    try:
        text = (site / dist_info / "METADATA").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    names = []
    for line in email.parser.HeaderParser().parsestr(text).get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        match = _NAME.match(requirement)
        if match and (with_extras or "extra" not in marker):
            names.append(normalize(match.group(1)))
    return names


def required_closure(site_dirs: list[Path], torch_site: Path | None, torch_dist_info: str | None
                     ) -> tuple[list[tuple[str, Path, str]], list[str]]:
    """([(name, site dir, dist-info)] of every installed distribution torch requires, directly or not, torch
    excluded; [the required names not installed as a dist-info]), sorted by name."""
    index = installed(site_dirs)
    if torch_site is None or not torch_dist_info:
        return [], []
    wanted = requirements(torch_site, torch_dist_info, with_extras=True)
    seen: set[str] = {"torch"}
    found: list[tuple[str, Path, str]] = []
    absent: list[str] = []
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        copies = index.get(name, [])
        if not copies:
            absent.append(name)
        for site, dist_info in copies:
            found.append((name, site, dist_info))
            wanted += requirements(site, dist_info, with_extras=False)
    return sorted(found, key=lambda item: (item[0], str(item[1]))), sorted(absent)


def entry_sources(rows: list[tuple[str, str | None, int | None]]) -> list[str]:
    """The sources `import name` runs first for each top-level name a RECORD installs: `name.py`, `name/__init__.py`."""
    return sorted(path for path, expected, _ in rows if expected and path.endswith(".py") and (
        "/" not in path or (path.count("/") == 1 and path.endswith("/__init__.py"))))


def forged_bytecode(site: Path, name: str, sources: list[str]) -> list[str]:
    """One problem naming each cached .pyc of `sources` whose code is not the source compiled (bytecode.py)."""
    bad = [f"{Path(source).parent.as_posix().strip('.') + '/' if '/' in source else ''}{cached}"
           for source in sources for cached in bytecode.mismatched(site / source)]
    return [dist_record.named(bad, f"of {name} are bytecode that is not its source compiled")] if bad else []


def verify_one(name: str, site: Path, dist_info: str) -> dict:
    """dist_record's report for one distribution, with the bytecode of its top-level modules compared too;
    `dist_info` and `site` (transient: the parent matches loaded files by them, never records the path)."""
    report = dist_record.verify_distribution(site, dist_info, name)
    rows = dist_record.read_record(site, dist_info) or []
    report["problems"] += forged_bytecode(site, name, entry_sources(rows))
    report["verified"] = not report["problems"]
    report.update(name=name, dist_info=dist_info, site=str(site), bytecode_compared=len(entry_sources(rows)))
    return report


def verify_required(site_dirs: list[Path], torch_site: Path | None, torch_dist_info: str | None) -> dict:
    """{"distributions": [verify_one's report, ...], "without_record": [names], "absent": [names], "duration_s"}:
    every distribution in torch's Requires-Dist closure, checked before the device worker reports. One whose
    dist-info holds no RECORD (Debian's packages ship METADATA alone; dpkg owns their files) is named, not
    checked: its files are owned by a system package database (or by nothing: site_owners' vector then)."""
    started = time.monotonic()
    closure, absent = required_closure(site_dirs, torch_site, torch_dist_info)
    with_record = [item for item in closure if dist_record.read_record(item[1], item[2]) is not None]
    reports = [verify_one(name, site, dist_info) for name, site, dist_info in with_record]
    without = sorted({item[0] for item in closure if item not in with_record})
    return {"distributions": reports, "without_record": without, "absent": absent,
            "duration_s": round(time.monotonic() - started, 3)}
