"""What the source root's Git history holds for the commit each gate result names (`source.git.head`): whether
it is a commit there, when it was committed, and the SHA-256 of `git show <head>:<path>` for every source the
result names. rules.git_provenance judges a result against these facts; the index records them as
`source_root.commits` and `verify --source-root` reads them again.

Git runs as the gate runs it (common.provenance.git_command: no GIT_* variable, no system or global config, the
code-running keys pinned off), and only plumbing that runs nothing the repository configures: rev-parse,
show -s, cat-file --batch (which applies no filter or textconv)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from common.provenance import GIT_TIMEOUT_S, git_command, git_environment
from rules.git_provenance import HEAD
from rules.kinds import kind_of

from .common import index_rule, is_safe_relative
from .results import gate_documents, parse_json


def claims_of(documents: Iterable[Any]) -> dict[str, set[str]]:
    """{head: the source paths its gate results name} for every gate result naming a well-formed head."""
    claims: dict[str, set[str]] = {}
    for document in documents:
        if kind_of(document) != "gate" or not isinstance(document.get("source"), dict):
            continue
        git, files = document["source"].get("git"), document["source"].get("files")
        head = git.get("head") if isinstance(git, dict) else None
        if isinstance(head, str) and HEAD.fullmatch(head):
            paths = claims.setdefault(head, set())
            paths.update(str(path) for path in files) if isinstance(files, dict) else None
    return claims


def claims_in(json_bytes: Iterable[bytes | None]) -> dict[str, set[str]]:
    return claims_of(parse_json(data) for data in json_bytes if data is not None)


def _git(root: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(git_command(root, *args), input=stdin, capture_output=True, env=git_environment(),
                          timeout=GIT_TIMEOUT_S * 4)


def _blobs(root: Path, head: str, paths: list[str]) -> dict[str, str | None]:
    """SHA-256 of each path's blob at `head` (None: absent there, or not a plain relative path)."""
    asked = [p for p in paths if is_safe_relative(p) and "\n" not in p]
    hashes: dict[str, str | None] = {p: None for p in paths}
    if not asked:
        return hashes
    done = _git(root, "cat-file", "--batch", stdin="".join(f"{head}:{p}\n" for p in asked).encode("utf-8"))
    out, at = done.stdout, 0
    for path in asked:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split(b" ")
        at = end + 1
        if len(header) != 3:  # "<name> missing" (or ambiguous): no such file at that commit
            continue
        size = int(header[2])
        if header[1] == b"blob":
            hashes[path] = hashlib.sha256(out[at:at + size]).hexdigest()
        at += size + 1
    return hashes


def commit_facts(root: Path, claims: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """{head: {"found", "committed_at", "files"}} for every claimed head (see the module's docstring)."""
    facts: dict[str, dict[str, Any]] = {}
    for head in sorted(claims):
        try:
            found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{head}^{{commit}}")
            if found.returncode != 0 or found.stdout.decode().strip() != head:
                facts[head] = {"found": False, "committed_at": None, "files": {}}
                continue
            shown = _git(root, "show", "-s", "--no-show-signature", "--format=%cI", head)
            facts[head] = {"found": True, "committed_at": shown.stdout.decode().strip() or None,
                           "files": _blobs(root, head, sorted(claims[head]))}
        except (OSError, subprocess.TimeoutExpired):  # no git, or it did not answer: nothing is confirmed
            facts[head] = {"found": False, "committed_at": None, "files": {}}
    return facts


def bind_to_commits(records: list[dict[str, Any]], json_bytes: dict[str, tuple[bytes | None, str, int]],
                    commits: Any) -> None:
    """Each gate result's `source.git` judged against the source root's history (rules.git_provenance), from its
    bytes; a problem fails the result. `commits` is None for an index that read no history (before it was
    recorded): nothing is compared then."""
    if not isinstance(commits, dict):
        return
    for record, document in gate_documents(records, json_bytes):
        source = document.get("source") if isinstance(document.get("source"), dict) else {}
        git = source.get("git")
        head = git.get("head") if isinstance(git, dict) else None
        commit = commits.get(head) if isinstance(head, str) else None
        if isinstance(head, str) and not isinstance(commit, dict):
            commit = {"found": False}  # a head the index did not read is not confirmed
        problems = index_rule("git.commit")(git, source.get("files"), commit, document.get("started_at"))
        if problems:
            record["ok"] = False
            record["reasons"] = list(record.get("reasons") or []) + problems
