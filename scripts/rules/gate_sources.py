"""The files whose SHA-256 binds a gate result to the bytes that made it, derived from a checkout's own files:
what the gate's processes import, never a list kept by hand.

The gate runs as `scripts/platform_runtime_check.py`, its file-system workers through
`scripts/platform_runtime_worker.py` (each a module of `platform_runtime` that entry point runs: its `WORKERS`),
and its device worker as its own file (`platform_runtime/device_worker.py`). The sources are the static import
closure of those entry points (every `import` statement, at module level or in a function: common.imports),
plus the rule modules the registry names for the gate's own kind (its "gate" rows, read from
`scripts/rules/registry.py` as a literal: a rule is imported by name when first asked for, which no import
statement shows), plus the schema of the result the gate writes. A rule no "gate" row names and no gate module
imports (the NFS VM run's, the diagnostic's, the index's) is not among them, so editing it changes no gate
result's hash.

The gate derives its own list at run time (platform_runtime.sources); the judge derives a source root's list
with the same function over that root's files, read and never run (rules.source_sets).

Stdlib only.
"""

from __future__ import annotations

from pathlib import Path

from common.imports import closure, literal_of, relative

ENTRY_SCRIPTS = ("scripts/platform_runtime_check.py", "scripts/platform_runtime_worker.py",
                 "scripts/platform_runtime/device_worker.py")
WORKERS = ("scripts/platform_runtime_worker.py", "WORKERS")  # the worker modules that entry point runs
WORKER_PACKAGE = "scripts/platform_runtime"
REGISTRY = ("scripts/rules/registry.py", "RULES")
KIND = "gate"
CONTRACT = ("schemas/platform-runtime-result.schema.json",)  # what the gate writes against
SEARCH = ("scripts",)  # the gate and every worker put scripts/ first on sys.path


def registry_modules(rows: object, kind: str = KIND) -> list[str]:
    """The modules the registry's rows of `kind` name (rule and flags), as files under scripts/."""
    modules = set()
    for row in rows if isinstance(rows, (list, tuple)) else ():
        if isinstance(row, (list, tuple)) and len(row) == 4 and row[0] == kind:
            modules |= {f"scripts/{ref.partition(':')[0].replace('.', '/')}.py" for ref in row[2:]
                        if isinstance(ref, str) and ref}
    return sorted(modules)


def gate_sources(root: Path) -> list[str]:
    """The gate's sources at `root`, sorted repository-relative paths. Raises common.imports.NotReadable when a
    file the derivation reads is absent or not Python."""
    workers = literal_of(root / WORKERS[0], WORKERS[1])
    rows = literal_of(root / REGISTRY[0], REGISTRY[1])
    entries = [root / p for p in ENTRY_SCRIPTS]
    entries += [root / WORKER_PACKAGE / "__init__.py"]  # runpy imports the package before the worker module
    entries += [root / WORKER_PACKAGE / f"{name}.py" for name in workers if isinstance(name, str)]
    entries += [root / p for p in registry_modules(rows)]
    files = closure(entries, [root / folder for folder in SEARCH], scripts=[root / p for p in ENTRY_SCRIPTS])
    return sorted(set(relative(files, root)) | set(CONTRACT))
