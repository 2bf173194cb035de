"""The result's own Git provenance (`source.git`: head, dirty, diff_sha256) judged, never taken as free text
(free text would let any run claim any commit). Two rules, both pure:

- `git_state_problems`, on the result alone: what common.provenance.git_state writes. A head is 40 lowercase hex
  digits, with dirty a bool and the diff's SHA-256 beside it; a clean tree's `git diff HEAD` is empty, so
  dirty false goes with the SHA-256 of no bytes, and dirty true with the SHA-256 of some bytes. No head goes
  with the error that says why (no git, not a checkout) and nothing else.
- `commit_problems`, given what the source root's history holds for that head (the evidence index reads it:
  `git show <head>:<path>` hashed, for every path the result names). A head that is not a commit of the
  source root is unconfirmed and refused; for a clean run (dirty false) the commit's bytes of every source
  the result names are the bytes it hashed (`source.files`). A dirty run's bytes differ from its commit by
  a diff only its SHA-256 names: only that its commit exists is confirmed. Either way the commit was made
  before the run started (its committer date at most CLOCK_SKEW_S after the result's `started_at`).
- `history_problems`, for a result naming no commit: its source hashes are its provenance, and the bytes they
  name existed when it started, in some state of the source root's history made before the run.

Stdlib only."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any

HEAD = re.compile(r"[0-9a-f]{40}")
SHA256 = re.compile(r"[0-9a-f]{64}")
EMPTY_DIFF_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_LISTED = 5
# A run starts after its commit was made: a commit dated later than this after the result's started_at was made
# after the run (the allowance is for the committer's clock and the runner's disagreeing).
CLOCK_SKEW_S = 300


def git_state_problems(result: dict[str, Any]) -> list[str]:
    """`source.git` against itself (a result-level rule of the gate; a result that records none: [])."""
    source = result.get("source") if isinstance(result.get("source"), dict) else {}
    if "git" not in source:
        return []
    git = source["git"]
    p = "source.git"
    if not isinstance(git, dict):
        return [f"{p} is {str(git)[:80]!r}, an object"]
    head, dirty, diff, error = git.get("head"), git.get("dirty"), git.get("diff_sha256"), git.get("error")
    if head is None:
        if not (isinstance(error, str) and error) or dirty is not None or diff is not None:
            return [f"{p} has no head, with error {error!r}, dirty {dirty!r}, diff_sha256 {diff!r}: a result "
                    "without a commit says why (its error) and records no tree state"]
        return []
    problems = []
    if not (isinstance(head, str) and HEAD.fullmatch(head)):
        problems.append(f"{p}.head is {str(head)[:80]!r}: a commit is 40 lowercase hex digits")
    if error is not None:
        problems.append(f"{p}.error is {str(error)[:80]!r} beside a head: git answered")
    if not isinstance(dirty, bool):
        problems.append(f"{p}.dirty is {dirty!r}, a bool")
    if not (isinstance(diff, str) and SHA256.fullmatch(diff)):
        problems.append(f"{p}.diff_sha256 is {str(diff)[:80]!r}, a SHA-256")
    elif dirty is False and diff != EMPTY_DIFF_SHA256:
        problems.append(f"{p}.dirty is False, but diff_sha256 is {diff[:12]}..., not the SHA-256 of an empty diff: "
                        "a clean tree has no diff")
    elif dirty is True and diff == EMPTY_DIFF_SHA256:  # "dirty" beside a diff of no bytes
        problems.append(f"{p}.dirty is True, but diff_sha256 is {diff[:12]}..., the SHA-256 of an empty diff: "
                        "a dirty tree's diff holds its changes")
    return problems


def instant(text: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return moment if moment is not None and moment.tzinfo is not None else None


def commit_problems(git: Any, files: Any, commit: dict[str, Any] | None, started_at: Any = None) -> list[str]:
    """The result's head and sources against the source root's history. `commit` is what the index read for
    this head: {"found": bool, "committed_at": ISO 8601, "files": {path: SHA-256 of `git show <head>:<path>`,
    None where absent}}; None when no source root was read (nothing is compared)."""
    if commit is None or not isinstance(git, dict):
        return []
    head = git.get("head")
    if head is None:
        return []  # no commit claimed (git_state_problems wants its error): the source hashes are the provenance
    if not isinstance(head, str) or not HEAD.fullmatch(head) or commit.get("found") is not True:
        return [f"source.git.head {str(head)[:80]!r} is not a commit of the source root: the commit the result "
                "names is unconfirmed"]
    problems = []
    committed, started = instant(commit.get("committed_at")), instant(started_at)
    if committed is not None and started is not None and (committed - started).total_seconds() > CLOCK_SKEW_S:
        problems.append(f"source.git.head {head[:12]} was committed at {commit.get('committed_at')}, after the run "
                        f"started ({started_at}): the run cannot have been at that commit")
    if git.get("dirty") is not False or not isinstance(files, dict):
        return problems
    at_commit = commit.get("files") if isinstance(commit.get("files"), dict) else {}
    differing = sorted(str(path) for path, digest in files.items() if at_commit.get(path) != digest)
    if not differing:
        return problems
    listed = ", ".join(differing[:MAX_LISTED]) + (" ..." if len(differing) > MAX_LISTED else "")
    return problems + [f"source.git says a clean tree at {head[:12]}, but {len(differing)} of source.files differ "
                       f"from that commit's bytes: {listed}"]


def history_problems(files: dict[str, Any], fact: dict[str, Any] | None, started_at: Any = None) -> list[str]:
    """A result naming no commit against when its bytes existed in the source root's history (the index reads
    it: evidence_index.root_history). `fact` is {"first": the earliest state equal to `files` ({commit,
    committed_at}) or None, "before": the last state made before the run ({commit, committed_at, differing})
    or None}; None when the history was not read (nothing is compared). The bytes a run hashed existed when it
    started: a first state dated more than CLOCK_SKEW_S after `started_at`, or none, is refused, naming the
    files that differ from the last state before the run."""
    if fact is None:
        return []
    first, before = fact.get("first"), fact.get("before")
    if isinstance(first, dict):
        made, started = instant(first.get("committed_at")), instant(started_at)
        if made is None or started is None or (made - started).total_seconds() <= CLOCK_SKEW_S:
            return []
        at = f"are the bytes of {str(first.get('commit'))[:12]} ({first.get('committed_at')}), made after the run " \
             f"started ({started_at})"
    else:
        at = "are the bytes of no state of the source root's history"
    if isinstance(before, dict) and before.get("differing"):
        differing = [str(p) for p in before["differing"]]
        listed = ", ".join(f"source.files.{p}" for p in differing[:MAX_LISTED]) + (
            " ..." if len(differing) > MAX_LISTED else "")
        why = f"{len(differing)} differ from {str(before.get('commit'))[:12]} ({before.get('committed_at')}), the " \
              f"last state before it: {listed}"
    else:
        why = "no state of the source root's history was made before it"
    return [f"source.git names no commit and source.files {at}; {why}: a run hashes bytes that existed when it "
            "started"]
