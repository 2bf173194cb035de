"""Index of local result files (the README's main job): no GitHub, each result bound to its SHA-256
and to the SHA-256 of the sources it names, as they are in this checkout."""

from __future__ import annotations

import platform as host_platform
from pathlib import Path
from typing import Any

from .common import InputError
from .results import REPO_ROOT, read_result
from .sources import digest_of_files, git_state, hash_sources, indexer_files
from .statement import make_statement, now_utc
from .verdict import decide_local


def build_local_index(results_dir: Path, output: Path | None = None,
                      source_root: Path | None = None) -> dict[str, Any]:
    if not results_dir.is_dir():
        raise InputError(f"--results {results_dir} is not a folder")
    root = source_root or REPO_ROOT
    if not root.is_dir():
        raise InputError(f"--source-root {root} is not a folder")
    skip = output.resolve() if output is not None else None
    subjects: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for path in sorted(results_dir.glob("*.json")):
        if skip is not None and path.resolve() == skip:
            continue  # the index being (re)written
        if path.is_symlink():
            results.append({"name": path.name, "subject": None, "sha256": None, "kind": "other", "ok": None,
                            "schema_valid": None, "error": "is a symbolic link: refused"})
            continue
        if not path.is_file():
            continue
        result = read_result(path, path.name)
        if result.get("kind") == "evidence-index":
            skipped.append({"name": path.name, "why": "an evidence index, not a result"})
            continue
        result["subject"] = f"artifacts/{path.name}"
        if result.get("sha256"):
            subjects[result["subject"]] = result["sha256"]
        results.append(result)
    claimed = {p for r in results for p in (r.get("source_files") or {})}
    files = hash_sources(root, claimed)
    predicate: dict[str, Any] = {
        "kind": "local",
        "built_at": now_utc(),
        "indexer": {"files": indexer_files(REPO_ROOT), "python": host_platform.python_version()},
        # What ran where, without host names, user names or paths.
        "host": {"system": host_platform.system(), "release": host_platform.release(),
                 "machine": host_platform.machine()},
        "source_root": {"given": True, "git": git_state(root), "files": files,
                        "files_sha256": digest_of_files(files)},
        "results": results,
        "skipped": skipped,
    }
    predicate["verdict"] = decide_local(predicate)
    return make_statement(subjects, predicate)
