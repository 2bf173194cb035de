"""When the bytes a gate result ran came to exist, read from the source root's history, for a result that names
no commit (`source.git.head` null: git missing, not a checkout, the action's tarball, the NFS VM's copy).

Such a result's only provenance is its source hashes; alone they are self-declared: a result edited to say "git
is not installed" and re-hashed from a later tree looks like a run of that tree.
Its second view is time: the bytes it hashed must have existed when it started. The root's first-parent history
of the paths the result names is walked (`git log --raw` and `git cat-file --batch`: each version's SHA-256),
and the index records, per (sources, started_at), the earliest state of those paths equal to the result's bytes
and the last state made before the run with the paths that differ from it. A root whose working tree holds
uncommitted bytes of those paths adds one more state, dated by the newest modification time of its changed
files (a dev tree's run is of those bytes; a forger's later edit is later). rules.git_provenance judges.

A root that is not a git checkout (or whose git does not answer) has no history: `read` false with why, and the
rule is not applied (the sources are then compared with the root's files only)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from common.provenance import GIT_TIMEOUT_S, git_command, git_environment
from rules.git_provenance import CLOCK_SKEW_S, instant
from rules.kinds import kind_of

from .checkout_hashes import digest_of_files
from .common import index_rule, is_safe_relative
from .results import gate_documents, parse_json

WORKING_TREE = "working tree"
ZERO = "0" * 40


def key_of(files: Any, started_at: Any) -> str:
    return f"{digest_of_files(files)}@{started_at}"


def headless(documents: Iterable[Any]) -> list[tuple[dict[str, Any], Any]]:
    """(source.files, started_at) of every gate result naming no commit."""
    found = []
    for document in documents:
        if kind_of(document) != "gate" or not isinstance(document.get("source"), dict):
            continue
        git, files = document["source"].get("git"), document["source"].get("files")
        if isinstance(git, dict) and git.get("head") is None and isinstance(files, dict) and files:
            found.append((files, document.get("started_at")))
    return found


def headless_in(json_bytes: Iterable[bytes | None]) -> list[tuple[dict[str, Any], Any]]:
    return headless(parse_json(data) for data in json_bytes if data is not None)


def _git(root: Path, *args: str, stdin: bytes = b"") -> bytes:
    done = subprocess.run(git_command(root, *args), input=stdin, capture_output=True, env=git_environment(),
                          timeout=GIT_TIMEOUT_S * 8)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, args[0])
    return done.stdout


def _states(root: Path, paths: list[str]) -> list[tuple[str, str, dict[str, str | None]]]:
    """(commit, committed_at, {path: SHA-256 or None}) after each first-parent commit of HEAD touching `paths`,
    oldest first."""
    log = _git(root, "log", "--first-parent", "--diff-merges=first-parent", "--reverse", "--no-renames", "--raw",
               "--no-abbrev", "--format=%x01%H %cI", "HEAD", "--", *paths).decode("utf-8", "replace")
    commits: list[tuple[str, str, list[tuple[str, str]]]] = []
    for line in log.splitlines():
        if line.startswith("\x01"):
            commit, _, when = line[1:].partition(" ")
            commits.append((commit, when, []))
        elif line.startswith(":") and commits and "\t" in line:
            meta, path = line.split("\t", 1)
            fields = meta.split()
            if len(fields) >= 5:
                commits[-1][2].append((path, fields[3]))
    blobs = sorted({blob for _, _, changes in commits for _, blob in changes if blob != ZERO})
    digests = _blob_digests(root, blobs)
    state: dict[str, str | None] = {p: None for p in paths}
    states = []
    for commit, when, changes in commits:
        for path, blob in changes:
            if path in state:
                state[path] = None if blob == ZERO else digests.get(blob)
        states.append((commit, when, dict(state)))
    return states


def _blob_digests(root: Path, blobs: list[str]) -> dict[str, str]:
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode()) if blobs else b""
    digests, at = {}, 0
    for blob in blobs:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split(b" ")
        at = end + 1
        if len(header) != 3:
            continue
        size = int(header[2])
        digests[blob] = hashlib.sha256(out[at:at + size]).hexdigest()
        at += size + 1
    return digests


def _working_tree(root: Path, paths: list[str], head: dict[str, str | None], dated: str | None
                  ) -> tuple[str, str, dict[str, str | None]] | None:
    """The root's own bytes of `paths` as a state, when they differ from HEAD's, dated by the newest modification
    time of the changed files (and never before the HEAD state's commit)."""
    state: dict[str, str | None] = {}
    newest = instant(dated)
    for path in paths:
        file = root / path
        try:
            state[path] = hashlib.sha256(file.read_bytes()).hexdigest() if is_safe_relative(path) and \
                file.is_file() and not file.is_symlink() else None
            changed = state[path] != head.get(path)
            if changed and file.exists():
                mtime = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc)
                newest = mtime if newest is None or mtime > newest else newest
        except OSError:
            state[path] = None
    if state == {p: head.get(p) for p in paths} or newest is None:
        return None
    return (WORKING_TREE, newest.isoformat(timespec="seconds"), state)


def history_facts(root: Path, claims: list[tuple[dict[str, Any], Any]]) -> dict[str, Any]:
    """{"read", "why", "sources": {key_of(files, started_at): {"first", "before"}}}: `first` the earliest state
    equal to the files ({commit, committed_at}) or None; `before` the last state dated at most CLOCK_SKEW_S after
    started_at, with the paths that differ from it ({commit, committed_at, differing}) or None."""
    facts: dict[str, Any] = {"read": False, "why": None, "sources": {}}
    if not claims:
        return dict(facts, read=None)
    paths = sorted({str(p) for files, _ in claims for p in files})
    try:
        states = _states(root, paths)
    except FileNotFoundError:
        return dict(facts, why="git is not installed")
    except subprocess.TimeoutExpired:
        return dict(facts, why="git did not answer in time")
    except (OSError, subprocess.CalledProcessError):
        return dict(facts, why="not a git checkout with history")
    tree = _working_tree(root, paths, states[-1][2] if states else {}, states[-1][1] if states else None)
    states += [tree] if tree else []
    facts["read"] = True
    for files, started_at in claims:
        start = instant(started_at)
        first = before = None
        for commit, when, state in states:
            at = instant(when)
            differing = sorted(str(p) for p in files if state.get(str(p)) != files[p])
            if first is None and not differing:
                first = {"commit": commit, "committed_at": when}
            if start is not None and at is not None and (at - start).total_seconds() <= CLOCK_SKEW_S:
                before = {"commit": commit, "committed_at": when, "differing": differing}
        facts["sources"][key_of(files, started_at)] = {"first": first, "before": before}
    return facts


def bind_to_history(records: list[dict[str, Any]], json_bytes: dict[str, tuple[bytes | None, str, int]],
                    history: Any) -> None:
    """Each gate result naming no commit judged against when its bytes existed (rules.git_provenance); a
    problem fails the result. `history` None (an index that read none): nothing is compared."""
    if not isinstance(history, dict) or history.get("read") is not True:
        return
    for record, document in gate_documents(records, json_bytes):
        source = document.get("source") if isinstance(document.get("source"), dict) else {}
        git, files = source.get("git"), source.get("files")
        if not isinstance(git, dict) or git.get("head") is not None or not isinstance(files, dict) or not files:
            continue
        fact = (history.get("sources") or {}).get(key_of(files, document.get("started_at")))
        problems = index_rule("git.history")(files, fact, document.get("started_at"))
        if problems:
            record["ok"] = False
            record["reasons"] = list(record.get("reasons") or []) + problems
