"""Index of local result files (the README's main job): no GitHub, each result bound to its SHA-256
and to the SHA-256 of the sources it names, as they are in this checkout."""

from __future__ import annotations

import platform as host_platform
from pathlib import Path
from typing import Any

from core.provenance import git_state

from .common import InputError, is_safe_relative
from .results import REPO_ROOT, kind_of, read_result
from .sources import digest_of_files, hash_sources, indexer_files
from .statement import make_statement, now_utc
from .verdict import decide_local


def build_local_index(results_dir: Path, output: Path | None = None, source_root: Path | None = None,
                      names: list[str] | None = None) -> dict[str, Any]:
    """Index `names` (paths relative to results_dir; a missing one fails), or every top-level *.json."""
    if not results_dir.is_dir():
        raise InputError(f"--results {results_dir} is not a folder")
    root = source_root or REPO_ROOT
    if not root.is_dir():
        raise InputError(f"--source-root {root} is not a folder")
    for name in names or []:
        if not is_safe_relative(name):
            raise InputError(f"--result {name!r} is not a relative path inside --results")
    skip = output.resolve() if output is not None else None
    subjects: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    if names:
        candidates = [(name, results_dir / name, True) for name in dict.fromkeys(names)]
    else:
        candidates = [(p.name, p, False) for p in sorted(results_dir.glob("*.json"))]
    for name, path, named in candidates:
        if skip is not None and path.resolve() == skip:
            continue  # the index being (re)written
        if path.is_symlink() or (named and not path.resolve().is_relative_to(results_dir.resolve())):
            results.append({"name": name, "subject": None, "sha256": None, "kind": "other", "ok": None,
                            "schema_valid": None, "error": "is a symbolic link or lies outside --results: refused"})
            continue
        if not path.is_file():
            if named:
                results.append({"name": name, "subject": None, "sha256": None, "kind": kind_of(name, None),
                                "ok": None, "schema_valid": None, "error": "missing: the step wrote no result"})
            continue
        result = read_result(path, name)
        if result.get("kind") in ("evidence-index", "evidence-verdict") and not named:
            skipped.append({"name": name, "why": f"an {result['kind']}, not a result"})
            continue
        result["subject"] = f"artifacts/{name}"
        if result.get("sha256"):
            subjects[result["subject"]] = result["sha256"]
        results.append(result)
    claimed = {p for r in results for p in (r.get("source_files") or {})}
    resolved: dict[str, str] = {}
    files = hash_sources(root, claimed, resolved)
    predicate: dict[str, Any] = {
        "kind": "local",
        "built_at": now_utc(),
        "indexer": {"files": indexer_files(REPO_ROOT), "python": host_platform.python_version()},
        # What ran where, without host names, user names or paths.
        "host": {"system": host_platform.system(), "release": host_platform.release(),
                 "machine": host_platform.machine()},
        "source_root": {"given": True, "git": git_state(root), "files": files,
                        "files_sha256": digest_of_files(files), "resolved": resolved},
        "results": results,
        "skipped": skipped,
    }
    predicate["verdict"] = decide_local(predicate)
    return make_statement(subjects, predicate)
