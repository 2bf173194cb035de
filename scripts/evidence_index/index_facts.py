"""A local index's own facts that its judge does not derive (an edit of them would
otherwise change nothing the judge reads), held to what verify can
read again: the folder, the source root's history, and the facts beside each other in the index.

- `skipped`: each file it names is in the results folder, is not a subject, and is of the kind it says (an
  earlier index or verdict); one that is not there was not skipped by the builder.
- `source_root.git`: its tree state is one common.provenance.git_state writes (rules.git_provenance); with
  --source-root, a head that is a commit of that checkout's history was made before the index was built, and
  a clean build's recorded `source_root.files` are that commit's bytes (its head edited, they are another's).
- `source_root.resolved`: each name it pairs is one `source_root.files` records, and each tracked file it names
  ends with that name (checkout_hashes.hash_sources pairs `train.py` with `scripts/reprise/train.py`).
- `indexer`: its files name the CLI and the rules every indexer hashes, each with a SHA-256; its Python is a
  CPython 3 version the project runs on (>= 3.10). Which indexer and Python built the index cannot be read again
  (another machine, another day): an edit to another possible value is not refuted.
- `host`: what platform.system/release/machine return on one machine agree with each other (a Windows host has
  no Linux kernel release and names its x86-64 machine AMD64). Which machine it was cannot be read again.

Each problem names the field; verify counts it as not authentic (exit 3)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from rules import registry
from rules.git_provenance import CLOCK_SKEW_S, HEAD, instant
from rules.kinds import kind_of

from .checkout_hashes import CORE_FILES, EARLIER_INDEXER_FILES, INDEXER_FILES
from .common import is_safe_relative
from .results import MAX_RESULT_BYTES, parse_json
from .root_commits import commit_facts

PYTHON = re.compile(r"3\.(\d+)\.\d+(?:(?:a|b|rc)\d+)?\+?")
MIN_MINOR = 10  # pyproject.toml: requires-python >= 3.10
# platform.release() as each system's platform.system() writes it; platform.machine() values of each.
RELEASES = {"Linux": re.compile(r"\d+\.\d+[\w.+~-]*"), "Darwin": re.compile(r"\d+\.\d+(?:\.\d+)?"),
            "Windows": re.compile(r"(?:\d+|\d+Server|post\d+Server|Vista|XP|7|8|8\.1|10|11)")}
MACHINES = {"Linux": {"x86_64", "aarch64", "arm64", "armv7l", "armv6l", "i686", "i386", "ppc64le", "ppc64",
                      "s390x", "riscv64", "loongarch64", "mips64"},
            "Darwin": {"arm64", "x86_64"}, "Windows": {"AMD64", "ARM64", "x86", "IA64", "EM64T"}}


def index_fact_problems(predicate: dict[str, Any], subjects: set[str], artifacts: Path | None,
                        source_root: Path | None) -> list[str]:
    """Every fact of a local predicate above that its folder, the root or the index itself contradicts."""
    if predicate.get("kind") != "local":
        return []
    root = predicate.get("source_root") if isinstance(predicate.get("source_root"), dict) else {}
    return (_skipped(predicate.get("skipped"), subjects, artifacts) + _git(root, predicate.get("built_at"), source_root)
            + _resolved(root) + _indexer(predicate.get("indexer")) + _host(predicate.get("host")))


def _skipped(skipped: Any, subjects: set[str], artifacts: Path | None) -> list[str]:
    if artifacts is None or not isinstance(skipped, list):
        return []
    problems = []
    for i, entry in enumerate(skipped):
        where = f"predicate.skipped[{i}]"
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not is_safe_relative(name):
            problems.append(f"{where}: {str(entry)[:120]} names no file of the folder")
            continue
        path = artifacts / name
        if f"artifacts/{name}" in subjects or not path.is_file() or path.is_symlink():
            problems.append(f"{where}: {name} is not a file of the folder the index left unbound" if
                            f"artifacts/{name}" not in subjects else f"{where}: {name} is bound, not skipped")
            continue
        try:
            kind = kind_of(parse_json(path.read_bytes())) if path.stat().st_size <= MAX_RESULT_BYTES else None
        except OSError:
            kind = None
        if entry.get("why") != f"an {kind}, not a result" or kind not in ("evidence-index", "evidence-verdict"):
            problems.append(f"{where}: {name} is {f'a {kind} document' if kind else 'no index or verdict'}, but the "
                            f"index says {str(entry.get('why'))[:80]!r}: only an earlier index or verdict is skipped")
    return problems


def _git(root: dict[str, Any], built_at: Any, source_root: Path | None) -> list[str]:
    git = root.get("git")
    if not isinstance(git, dict):
        return []
    problems = [p.replace("source.git", "predicate.source_root.git", 1)
                for p in registry.rule("gate", "source_git")({"source": {"git": git}})]
    head, files = git.get("head"), root.get("files")
    if problems or source_root is None or not (isinstance(head, str) and HEAD.fullmatch(head)) \
            or not isinstance(files, dict):
        return problems
    resolved = root.get("resolved") if isinstance(root.get("resolved"), dict) else {}
    paths = {str(name): str(resolved.get(name, name)).split(", ")[0] for name in files}
    commit = commit_facts(source_root, {head: set(paths.values())})[head]
    if not commit["found"]:
        return []  # a build root the verifying checkout does not hold (a shallow clone): not compared
    made, built = instant(commit.get("committed_at")), _built(built_at)
    if made is not None and built is not None and (made - built).total_seconds() > CLOCK_SKEW_S:
        problems.append(f"predicate.source_root.git.head {head[:12]} was committed at {commit['committed_at']}, "
                        f"after the index was built ({built_at})")
    if git.get("dirty") is False:
        differing = sorted(name for name, repo in paths.items() if commit["files"].get(repo) != files[name])
        problems += [f"predicate.source_root.files.{name}: recorded {str(files[name])[:12]}, but the clean tree at "
                     f"predicate.source_root.git.head {head[:12]} holds {str(commit['files'].get(paths[name]))[:12]}"
                     for name in differing[:5]]
    return problems


def _built(built_at: Any) -> datetime | None:
    return instant(built_at.replace("Z", "+00:00")) if isinstance(built_at, str) else None


def _resolved(root: dict[str, Any]) -> list[str]:
    resolved, files = root.get("resolved"), root.get("files")
    if not isinstance(resolved, dict):
        return []
    files = files if isinstance(files, dict) else {}
    problems = []
    for name, tracked in resolved.items():
        where = f"predicate.source_root.resolved.{name}"
        if name not in files:
            problems.append(f"{where}: {name!r} is no source that source_root.files records")
        elif not isinstance(tracked, str) or not all(
                is_safe_relative(t) and t.endswith("/" + name) for t in tracked.split(", ")):
            problems.append(f"{where} is {str(tracked)[:80]!r}: a tracked file whose name ends with /{name}")
    return problems


def _indexer(indexer: Any) -> list[str]:
    if not isinstance(indexer, dict):
        return []
    problems = []
    files = indexer.get("files") if isinstance(indexer.get("files"), dict) else {}
    missing = [p for p in INDEXER_FILES + CORE_FILES if not isinstance(files.get(p), str)]
    if missing and all(isinstance(files.get(p), str) for p in EARLIER_INDEXER_FILES):
        missing = []  # an indexer of the layout before the rules package (the committed indexes)
    if missing:
        problems.append(f"predicate.indexer.files lacks {', '.join(missing[:4])}"
                        f"{' ...' if len(missing) > 4 else ''}: every indexer hashes its CLI and the rules it reuses")
    odd = [p for p in files if not (isinstance(p, str) and p.startswith("scripts/") and p.endswith(".py"))]
    if odd:
        problems.append(f"predicate.indexer.files names {str(odd[0])[:80]!r}: the indexer's files are scripts/*.py")
    python = indexer.get("python")
    version = PYTHON.fullmatch(python) if isinstance(python, str) else None
    if version is None or int(version.group(1)) < MIN_MINOR:
        problems.append(f"predicate.indexer.python is {str(python)[:40]!r}: a CPython 3.{MIN_MINOR}+ version "
                        "(the project's requires-python)")
    return problems


def _host(host: Any) -> list[str]:
    if not isinstance(host, dict):
        return []
    system, release, machine = host.get("system"), host.get("release"), host.get("machine")
    problems = []
    if system in RELEASES and not (isinstance(release, str) and RELEASES[system].fullmatch(release)):
        problems.append(f"predicate.host.release is {str(release)[:60]!r}, not a release {system} reports")
    if system in MACHINES and machine not in MACHINES[system]:
        problems.append(f"predicate.host.machine is {str(machine)[:40]!r}, not a machine name {system} reports")
    return problems
