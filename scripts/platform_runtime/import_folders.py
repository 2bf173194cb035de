"""What the gate's own import folders hold besides its sources: a module there runs in the gate and in every
worker that imports its name.

`python scripts/platform_runtime_check.py` puts `scripts/` first on the gate's sys.path, and every worker puts
it first on its own (platform_runtime_worker.py, device_worker.py; they run `python -I`, so neither the working
directory nor PYTHONPATH is there). A `json.py` dropped into `scripts/` is imported in place of the standard
library's `json` by the gate and by each worker, whatever `git status` says (.git/info/exclude hides it) and
whatever the hashed sources (sources.GATE_SOURCES) are. So every importable top-level entry of `scripts/` that
is not one of the checkout's own (SCRIPT_ENTRIES, the tracked top-level entries; tests/gate/test_import_folders
keeps it equal to `git ls-files scripts`) is a vector, named by its file name. Inside the known packages a
stray file is not importable by a bare name (Python 3 has no implicit relative imports): the hashed sources
cover what runs there.

And any other sys.path entry of the gate's own process ahead of the standard library (PYTHONPATH, a working
directory under `-c`/`-m`) holding a module named like a standard-library one shadows it: a vector too.
Stdlib only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from platform_runtime import interpreter_layout
from platform_runtime.site_owners import module_name

SCRIPTS_DIR = Path(__file__).resolve().parent.parent
# The checkout's own top-level entries of scripts/ (files and packages), as git tracks them.
SCRIPT_ENTRIES = frozenset({
    "build_evidence_index.py", "check_training_run.py", "common", "evidence_index", "kernodeck_diagnostic.py",
    "platform_runtime", "platform_runtime_check.py", "platform_runtime_worker.py", "reprise", "reprise_release.py",
    "rules", "run_local.py", "steps",
})


# Top-level packages scripts/ held in earlier versions of this checkout (git's history of scripts/, which
# tests/gate/test_import_folders holds this equal to). A `git pull` across the version that moved one leaves its
# ignored __pycache__ folders behind: nothing in them can run (Python imports bytecode from __pycache__ only beside
# its source), so such a leftover is the checkout's own past, not code put around it. One that holds anything
# else, or is a link, is named like any other entry.
FORMER_ENTRIES = frozenset({"actions", "core"})
_MOST_ENTRIES = 10_000  # a leftover larger than this is not looked through, and is named


def _entries(folder: Path) -> list[tuple[str, bool]]:
    try:
        return sorted((e.name, e.is_dir()) for e in os.scandir(folder))
    except OSError:
        return []


def only_bytecode_caches(folder: Path) -> bool:
    """Whether `folder` holds nothing but __pycache__ folders of tagged bytecode (`name.cpython-311.pyc`), in it or
    in folders below it: nothing an import can run. A sourceless `name.pyc` outside __pycache__ or untagged inside
    it, a source, an extension, a link or anything unreadable is something."""
    seen = 0
    pending = [(folder, False)]
    while pending:
        current, in_cache = pending.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            return False
        seen += len(entries)
        if seen > _MOST_ENTRIES:
            return False
        for entry in entries:
            if entry.is_symlink():
                return False
            if entry.is_dir():
                if in_cache:
                    return False
                pending.append((Path(entry.path), entry.name == "__pycache__"))
            elif not (in_cache and entry.name.endswith(".pyc") and entry.name.count(".") >= 2):
                return False
    return True


def unlisted_script_entries(folder: Path = SCRIPTS_DIR, known: frozenset[str] = SCRIPT_ENTRIES,
                            former: frozenset[str] = FORMER_ENTRIES) -> list[str]:
    """The importable top-level entries of the gate's folder that the checkout does not hold, sorted; a former
    package of the checkout that only its bytecode caches are left of is not one."""
    return [name for name, is_dir in _entries(folder) if name not in known and module_name(name, is_dir)
            and not (is_dir and name in former and not (folder / name).is_symlink()
                     and only_bytecode_caches(folder / name))]


def stdlib_shadows(path: list[str] | None = None, skip: Path = SCRIPTS_DIR,
                   stdlib_dirs: list[Path] | None = None) -> list[str]:
    """File names of standard-library-named modules on sys.path entries before the first standard-library one
    (`skip`, the gate's folder, is judged whole by unlisted_script_entries)."""
    stdlib = {d.resolve() for d in (interpreter_layout.stdlib_dirs() if stdlib_dirs is None else stdlib_dirs)}
    names = set(sys.stdlib_module_names)
    found: set[str] = set()
    for entry in sys.path if path is None else path:
        folder = Path(entry or os.getcwd()).resolve()
        if folder in stdlib:
            break
        if folder == skip.resolve() or not folder.is_dir():
            continue
        found |= {name for name, is_dir in _entries(folder) if module_name(name, is_dir) in names}
    return sorted(found)
