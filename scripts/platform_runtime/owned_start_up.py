"""Start-up code the platform's owner installed: the facts of each start-up file the gate found (its bytes' digests,
its owner and what the owner recorded, platform_runtime.start_up_owners), the modules it imports, and what an
editable finder maps; accepted or refused by core.start_up_rules, the rule the judge re-derives. The gate's scan
(platform_runtime.startup) calls Owned.accept for each sitecustomize, usercustomize and code-running .pth it
finds. Stdlib only.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.machinery
import os
import sys
from collections.abc import Callable
from pathlib import Path

from core import start_up_rules

from platform_runtime import bytecode, start_up_owners


class Owned:
    """The accepted and refused start-up files of one scan, each file judged once (by the path it resolves to)."""

    def __init__(self, owners: start_up_owners.Owners | None = None) -> None:
        self.owners = owners if owners is not None else start_up_owners.Owners()
        self.accepted: list[dict] = []
        self.refused: list[dict] = []
        self.files: dict[str, dict] = {}  # resolved path -> its accepted entry

    def accept(self, found: Path, kind: str, where: str, more: Callable[[dict], None] | None = None) -> dict | None:
        """The accepted entry for `found`, or None after recording it refused. `more` adds facts of an owned file
        before the rule judges it (the modules it imports, what a finder maps)."""
        resolved = os.path.realpath(found)
        if resolved in self.files:
            return self.files[resolved]
        entry = owned_entry(found, kind, where, self.owners)
        if more is not None and entry["owner"] is not None:
            more(entry)
        problems = start_up_rules.entry_problems(entry)
        if problems:
            if not any(r["name"] == entry["name"] and r["where"] == where for r in self.refused):
                self.refused.append({**entry, "problems": problems[:4]})
            return None
        self.accepted.append(entry)
        self.files[resolved] = entry
        return entry

    def refuse(self, name: str, kind: str, where: str, problem: str) -> None:
        """A start-up file no owner could have installed as it is (a package, a .pyc, an extension, in a zip)."""
        self.refused.append({"name": name, "kind": kind, "where": where, "symlink": False, "sha256": None,
                             "owner": None, "problems": [problem]})

    def imported(self, module, kind: str) -> bool:
        """Whether a module this process imported at start-up is an accepted file of that kind, loaded from source
        (its cached bytecode was compared with the source when it was accepted)."""
        loader = getattr(module, "__loader__", None)
        entry = self.files.get(os.path.realpath(module.__file__))
        return entry is not None and entry["kind"] == kind and isinstance(loader, importlib.machinery.SourceFileLoader)


def find(name: str, directories: list[Path]):
    """The first spec of `name` the path finder gives in `directories` (no import), or None."""
    for directory in directories:
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, [str(directory)])
        except (ImportError, OSError, ValueError):
            continue
        if spec is not None:
            return spec
    return None


def digests(path: Path) -> tuple[str, str] | None:
    """(sha256, md5) of the file's bytes, or None when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest(), hashlib.md5(data, usedforsecurity=False).hexdigest()


def owned_entry(found: Path, kind: str, where: str, owners: start_up_owners.Owners) -> dict:
    """The facts of one start-up file: name, kind, where (by kind, never a path), whether it was found as a link
    (judged as the file it resolves to), the SHA-256 of its bytes, its owner and what the owner recorded."""
    found_digests = digests(Path(os.path.realpath(found)))
    entry: dict = {"name": found.name, "kind": kind, "where": where, "symlink": found.is_symlink(),
                   "sha256": found_digests[0] if found_digests else None, "owner": None}
    owner = owners.owner_of(found, found_digests[0]) if found_digests else None
    if owner is not None:
        entry.update(owner=owner.record(), recorded=owner.recorded())
        if start_up_rules.OWNER_DIGESTS[owner.kind] == "md5":
            entry["md5"] = found_digests[1]
    if kind != ".pth":  # what Python runs for a module: its cached bytecode when the header matches
        entry["bytecode_mismatched"] = bytecode.mismatched(found)
    return entry


def imported_names(lines: list[str]) -> list[str] | None:
    """The top-level modules the import statements of a .pth's code lines (site.py exec()s each line), or of a
    module's whole source, name; None when one does not parse."""
    names: list[str] = []
    for line in lines:
        try:
            tree = ast.parse(line)
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module.split(".")[0])
    return list(dict.fromkeys(names))


def pth_imports(entry: dict, lines: list[str], dirs: list[Path], owned: Owned, modules: dict) -> None:
    """An owned .pth: the modules its import lines name (judged by check_imports) and the variables it reads."""
    entry["reads"] = [name for name in start_up_rules.ACTIVATION_VARIABLES if any(name in line for line in lines)]
    check_imports(entry, imported_names(lines), dirs, owned, modules)


def module_imports(entry: dict, source: Path, dirs: list[Path], owned: Owned, modules: dict) -> None:
    """An owned start-up module (Debian's sitecustomize imports apport_python_hook where Ubuntu installs it)."""
    try:
        names = imported_names([source.read_text(encoding="utf-8")])
    except (OSError, UnicodeDecodeError):
        names = None
    check_imports(entry, names, dirs, owned, modules)


def check_imports(entry: dict, names: list[str] | None, dirs: list[Path], owned: Owned, modules: dict) -> None:
    """Each module an owned start-up file imports is the standard library's, or is not found on the start-up path
    (nothing runs: the import fails, as Debian's `import apport_python_hook` does where apport is not installed),
    or is a module file there that is itself owned and accepted (setuptools' editable finder, Ubuntu's apport
    hook); anything else is `imports_outside`. What those modules import in turn is their owners' code, as any
    installed package's is."""
    entry["imports"] = names if names is not None else []
    entry["imports_outside"] = [] if names is not None else ["(an import line that does not parse)"]
    for name in names or []:
        if name in sys.builtin_module_names or name in getattr(sys, "stdlib_module_names", ()):
            continue
        spec = find(name, dirs)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        loaded = getattr(modules.get(name), "__file__", None)
        if spec is None and loaded is None:
            continue
        if origin is None or origin.name != f"{name}.py" or \
                (loaded is not None and os.path.realpath(loaded) != os.path.realpath(origin)) or \
                owned.accept(origin, "module", "a site directory",
                             functools.partial(finder_maps, source=origin, modules=modules)) is None:
            entry["imports_outside"].append(name)  # another file of that name ran here, or an unowned one


def finder_maps(entry: dict, source: Path, modules: dict) -> None:
    """setuptools' editable finder (`__editable___<name>_finder.py`): the top-level names its MAPPING and
    NAMESPACES serve. It is appended to sys.meta_path, after the path finder, so it answers only for names no
    site directory or standard-library folder holds: a mapped name the standard library has on some platform
    (msvcrt, which subprocess probes) would be answered here, and one this process imported from the mapped
    folder ran the team's unhashed source in the gate."""
    if not source.name.startswith("__editable__"):
        return
    mapping: dict[str, str] = {}
    try:
        tree = ast.parse(source.read_bytes())
    except (OSError, SyntaxError, ValueError):
        entry["maps_shadowing"] = ["(a finder that does not parse)"]
        return
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in ("MAPPING", "NAMESPACES"):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict):
                mapping.update({str(k).split(".")[0]: str(v) if isinstance(v, str) else "" for k, v in value.items()})
    entry["maps"] = sorted(mapping)
    shadowing = [name for name in sorted(mapping) if name in getattr(sys, "stdlib_module_names", ())]
    for name, folder in sorted(mapping.items()):
        origin = getattr(getattr(modules.get(name), "__spec__", None), "origin", None)
        if folder and isinstance(origin, str) and os.path.realpath(origin).startswith(os.path.realpath(folder)):
            shadowing.append(name)
    entry["maps_shadowing"] = sorted(set(shadowing))
