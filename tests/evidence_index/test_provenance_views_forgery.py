"""A result's provenance judged by second views (adversarial review r2, G1-G3): the committed file-system results,
each edited in one fact, re-indexed (`build_evidence_index.py local`) and verified against a checkout. The
untouched copies stay authentic; each forgery is refused naming its field."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from rules import git_provenance
from rules.one_run import run_problems

from tests.evidence_index.checkouts import checkout_of
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, copy, edit_json

EXT4 = "platform-runtime-cpu-ext4-root.json"
NO_GIT = {"head": None, "error": "git is not installed", "dirty": None, "diff_sha256": None}


def index_and_verify(folder: Path, root: Path) -> tuple[int, dict]:
    """`local` then `verify --source-root`, both against `root`: the exit code and the JSON report."""
    index, report = folder.parent / "index.json", folder.parent / "report.json"
    index_cli("local", "--results", str(folder), "--output", str(index),
                    "--source-root", str(root))
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--source-root", str(root), "--json", str(report))
    return verified.returncode, json.loads(report.read_text())


def made_at(folder: Path) -> Path:
    """The checkout of the commit the folder's results were made at (every one of them names it)."""
    return checkout_of(json.loads((folder / EXT4).read_text())["source"]["git"]["head"])


def said(report: dict) -> list[str]:
    return report["problems"] + list((report["verdict"] or {}).get("reasons") or [])


# --- one folder, one checkout (rules.one_run) ---------------------------------------------------------------

def test_the_untouched_filesystems_folder_is_one_checkout(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    code, report = index_and_verify(folder, made_at(folder))
    assert (code, report["outcome"]) == (0, "pass"), said(report)


def test_one_result_saying_git_is_not_installed_beside_results_naming_a_head_is_refused(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    root = made_at(folder)
    edit_json(folder / EXT4, lambda d: d["source"].update(git=NO_GIT))
    code, report = index_and_verify(folder, root)
    assert (code, report["outcome"]) == (3, "not-authentic"), said(report)
    assert any(f"{EXT4}: source.git.head is 'none (git is not installed)', but" in p and "source.git.head '" in p
               for p in report["problems"]), report["problems"]


def test_two_gates_of_one_folder_naming_two_commits_disagree():
    gate = {"schema": "kernodeck.platform-runtime.result/v1"}
    heads = ["a" * 40, "a" * 40, "b" * 40]
    found = run_problems([(f"r{i}.json", "gate", dict(gate, source={"git": {"head": h}})) for i, h in
                          enumerate(heads)])
    assert found[:2] == [[], []] and "r2.json: source.git.head is 'bbbb" in found[2][0], found


# --- the tree state against itself (rules.git_provenance) ----------------------------------------------------

def test_dirty_beside_the_sha256_of_an_empty_diff_is_refused(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    root = made_at(folder)
    edit_json(folder / EXT4, lambda d: d["source"]["git"].update(dirty=True))
    code, report = index_and_verify(folder, root)
    assert (code, report["outcome"]) == (3, "not-authentic"), said(report)
    assert any("source.git.dirty is True, but diff_sha256 is e3b0c44298fc..., the SHA-256 of an empty diff" in p
               for p in report["problems"]), report["problems"]


def test_the_gate_calls_a_tree_dirty_exactly_when_its_diff_holds_bytes(tmp_path):
    """An untracked file is no source: the tree stays clean, its diff empty (so dirty and the diff never disagree)."""
    from common.provenance import git_state

    root = tmp_path / "tree"
    root.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e.invalid", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    (root / "untracked.txt").write_text("x\n")
    state = git_state(root)
    assert state["dirty"] is False and state["diff_sha256"] == git_provenance.EMPTY_DIFF_SHA256, state


# --- a result naming no commit: its bytes existed when it started (evidence_index.root_history) -----------------

COMMITTED = EVIDENCE / "local" / "filesystems" / EXT4
# One gate source the committed result names, changed after the run ("today's later sources").
LATER = "scripts/core/fs_magic.py"


def committed_head() -> str:
    return json.loads(COMMITTED.read_text())["source"]["git"]["head"]


def later_checkout(tmp_path: Path, head: str) -> Path:
    """A clone at the commit the result ran, plus one commit made now that changes one gate source by a comment."""
    root = tmp_path / "later"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e.invalid"}
    from tests.conftest import ROOT

    for args in (["clone", "-q", "--shared", "--no-checkout", str(ROOT), str(root)],
                 ["-C", str(root), "checkout", "-q", "--detach", head]):
        subprocess.run(["git", *args], check=True, capture_output=True, env=env)
    with open(root / LATER, "a", encoding="utf-8") as stream:
        stream.write("# a later comment\n")
    for args in (["add", LATER], ["commit", "-q", "-m", "later"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    return root


def alone(tmp_path: Path, change=None) -> Path:
    """The committed ext4 result alone in a folder (no other gate to compare its checkout with), edited."""
    folder = tmp_path / "alone"
    folder.mkdir(parents=True)
    (folder / EXT4).write_bytes(COMMITTED.read_bytes())
    if change:
        edit_json(folder / EXT4, change)
    return folder


def rehashed_from(root: Path):
    from evidence_index.checkout_hashes import hash_sources

    def change(document: dict) -> None:
        document["source"].update(git=dict(NO_GIT), files=hash_sources(root, list(document["source"]["files"])))
    return change


def test_a_result_naming_no_commit_whose_bytes_existed_before_it_started_passes(tmp_path):
    """The control: the result relabelled "git is not installed" (the action's tarball, the VM) keeps its bytes,
    which a commit made before the run holds."""
    folder = alone(tmp_path, lambda d: d["source"].update(git=dict(NO_GIT)))
    head = committed_head()
    code, report = index_and_verify(folder, checkout_of(head))
    assert (code, report["outcome"]) == (0, "pass"), said(report)


def test_a_result_naming_no_commit_rehashed_from_a_later_tree_is_refused(tmp_path):
    head = committed_head()
    root = later_checkout(tmp_path, head)
    code, report = index_and_verify(alone(tmp_path, rehashed_from(root)), root)
    assert (code, report["outcome"]) == (1, "fail"), said(report)
    assert any("source.git names no commit and source.files are the bytes of" in r and f"source.files.{LATER}" in r
               for r in report["verdict"]["reasons"]), said(report)


def test_a_result_of_a_dev_trees_uncommitted_bytes_passes_and_a_later_edit_of_them_is_refused(tmp_path):
    """A root with uncommitted bytes of the gate sources: a run of them after they were written passes; the same
    bytes written after the run started (a forger's edit of today's tree) are refused."""
    import os
    from datetime import datetime

    head = committed_head()
    root = later_checkout(tmp_path, head)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--soft", "HEAD~1"], check=True)  # uncommitted now
    started = datetime.fromisoformat(json.loads(COMMITTED.read_text())["started_at"])
    os.utime(root / LATER, (started.timestamp() - 60, started.timestamp() - 60))
    code, report = index_and_verify(alone(tmp_path / "before", rehashed_from(root)), root)
    assert (code, report["outcome"]) == (0, "pass"), said(report)
    os.utime(root / LATER, None)  # written now, after the run started
    code, report = index_and_verify(alone(tmp_path / "after", rehashed_from(root)), root)
    assert (code, report["outcome"]) == (1, "fail") and any(
        "are the bytes of working tree" in r and f"source.files.{LATER}" in r for r in report["verdict"]["reasons"]), \
        said(report)


def test_an_index_whose_recorded_history_is_emptied_is_judged_by_the_roots(tmp_path):
    """The history deleted from the index (and the result's judgement flipped with it): --source-root reads it."""
    head = committed_head()
    root = later_checkout(tmp_path, head)
    folder = alone(tmp_path, rehashed_from(root))
    index = tmp_path / "index.json"
    index_cli("local", "--results", str(folder), "--output", str(index),
                    "--source-root", str(root))
    statement = json.loads(index.read_text())
    history = statement["predicate"]["source_root"]["history"]
    assert history["read"] is True and len(history["sources"]) == 1
    statement["predicate"]["source_root"]["history"] = {"read": False, "why": "not a git checkout", "sources": {}}
    statement["predicate"]["results"][0].update(ok=True, reasons=[])
    statement["predicate"]["verdict"] = {"pass": True, "reasons": []}
    index.write_text(json.dumps(statement))
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--source-root", str(root))
    assert verified.returncode == 3 and ".ok: recorded True, the bytes say False" in verified.stdout, verified.stdout
