"""Index of local result files (the README's main job): no GitHub, each result bound to its SHA-256
and to the SHA-256 of the sources it names, as they are in this checkout.

Whole runs are bound: without --result, every file under the folder (a training run's config, metrics,
log, checkpoint and its .sha256, summary); with --result, each named file and, for one inside a
sub-folder (a reprise verification), every file of that sub-folder. Which of them are results, and
whether each passes, is decided by the index's judge (index_judge.py) from the bytes, as `verify` decides it.
"""

from __future__ import annotations

import platform as host_platform
from pathlib import Path
from typing import Any

from common.provenance import git_state
from rules.kinds import kind_of

from . import PREDICATE_VERSION
from .checkout_hashes import digest_of_files, hash_sources, indexer_files
from .common import InputError, hash_stream, is_safe_relative
from .index_judge import Observed, judge_local
from .results import MAX_RESULT_BYTES, REPO_ROOT, SIDECAR_SUFFIX, keep_max, parse_json, unreadable
from .root_commits import claims_in, commit_facts
from .root_history import headless_in, history_facts
from .root_sets import root_facts
from .statement import make_statement, now_utc

NOT_RESULTS = ("evidence-index", "evidence-verdict")  # an index (or its verdict) of an earlier run


def _check_inputs(results_dir: Path, root: Path, names: list[str] | None) -> None:
    if not results_dir.is_dir():
        raise InputError(f"--results {results_dir} is not a folder")
    if not root.is_dir():
        raise InputError(f"--source-root {root} is not a folder")
    for name in names or []:
        if not is_safe_relative(name):
            raise InputError(f"--result {name!r} is not a relative path inside --results")


def _candidates(results_dir: Path, names: list[str] | None) -> list[tuple[str, bool]]:
    """(relative path, named) for every file to bind: see the module's docstring."""
    if not names:
        return [(p.relative_to(results_dir).as_posix(), False) for p in sorted(results_dir.rglob("*"))
                if p.is_file() or p.is_symlink()]
    chosen: dict[str, bool] = {}
    for name in dict.fromkeys(names):
        chosen[name] = True
        folder = results_dir / name.rsplit("/", 1)[0] if "/" in name else None
        if folder is not None and folder.is_dir() and not folder.is_symlink():
            for path in sorted(folder.rglob("*")):
                chosen.setdefault(path.relative_to(results_dir).as_posix(), False)
    return list(chosen.items())  # in the order named: the verdict lists missing results in that order


def _bind(results_dir: Path, name: str, named: bool, observed: Observed, subjects: dict[str, str],
          unbound: list[dict[str, Any]], skipped: list[dict[str, str]]) -> None:
    """Hash one file into the subjects (keeping a JSON's bytes for the judge), or record why it is not bound."""
    path = results_dir / name
    if path.is_symlink() or not path.resolve().is_relative_to(results_dir.resolve()):
        unbound.append(unreadable(name, "is a symbolic link or lies outside --results: refused"))
        return
    if not path.is_file():
        if named:
            unbound.append(unreadable(name, "missing: the step wrote no result"))
        return
    try:
        with open(path, "rb") as stream:
            sha256, size, data = hash_stream(stream, keep_max(name))
    except OSError as error:
        unbound.append(unreadable(name, f"unreadable: {error.strerror or type(error).__name__}"))
        return
    kind = kind_of(parse_json(data)) if name.endswith(".json") and size <= MAX_RESULT_BYTES else None
    if kind in NOT_RESULTS and not named:
        skipped.append({"name": name, "why": f"an {kind}, not a result"})
        return
    subjects[f"artifacts/{name}"] = sha256
    observed.digests[f"artifacts/{name}"] = sha256
    if name.endswith(".json"):
        observed.json[f"artifacts/{name}"] = (data, sha256, size)
    elif name.endswith(SIDECAR_SUFFIX) and data is not None:
        observed.sidecars[f"artifacts/{name}"] = data


def build_local_index(results_dir: Path, output: Path | None = None, source_root: Path | None = None,
                      names: list[str] | None = None, taken_as_recorded: list[str] | None = None) -> dict[str, Any]:
    """Index `names` (paths relative to results_dir; a missing one fails), or every file under results_dir.
    `taken_as_recorded`, when given, receives what the judge could only take as recorded here (no torch)."""
    root = source_root or REPO_ROOT
    _check_inputs(results_dir, root, names)
    sets = root_facts(root)  # before anything is read: a root without readable lists is the user's mistake
    skip = output.resolve() if output is not None else None
    subjects: dict[str, str] = {}
    observed = Observed(root=results_dir)
    unbound: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for name, named in _candidates(results_dir, names):
        if skip is not None and (results_dir / name).resolve() == skip:
            continue  # the index being (re)written
        _bind(results_dir, name, named, observed, subjects, unbound, skipped)
    judged = judge_local({"results": unbound}, observed)  # only to learn which sources the results name
    claimed = {p for r in judged["results"] for p in (r.get("source_files") or {})}
    resolved: dict[str, str] = {}
    files = hash_sources(root, claimed, resolved)
    predicate: dict[str, Any] = {
        "kind": "local",
        "version": PREDICATE_VERSION,
        "built_at": now_utc(),
        "indexer": {"files": indexer_files(REPO_ROOT), "python": host_platform.python_version()},
        # What ran where, without host names, user names or paths.
        "host": {"system": host_platform.system(), "release": host_platform.release(),
                 "machine": host_platform.machine()},
        "source_root": {"given": True, "git": git_state(root), "files": files,
                        "files_sha256": digest_of_files(files), "resolved": resolved, "sets": sets,
                        # What the root's history holds for each commit a gate result names (root_commits).
                        "commits": commit_facts(root, claims_in(data for data, _, _ in observed.json.values())),
                        # When the bytes of each result naming no commit existed there (root_history).
                        "history": history_facts(root, headless_in(data for data, _, _ in observed.json.values()))},
        "results": unbound,
        "skipped": skipped,
    }
    statement = make_statement(subjects, judge_local(predicate, observed))
    if taken_as_recorded is not None:
        taken_as_recorded.extend(dict.fromkeys(observed.taken_as_recorded))
    return statement
