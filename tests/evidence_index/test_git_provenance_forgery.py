"""The result's Git provenance is a fact of the source root's history, not free text (adversarial review r1,
finding F5; rules.git_provenance, evidence_index.root_commits). The committed ext4 gate result ran on a clean
tree at a commit of this repository: relabelled to a commit made after the run, to one whose sources are other
bytes, to no commit at all, or with its tree state contradicting itself, it is refused naming source.git; the
untouched result is confirmed by the history of this checkout."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from evidence_index.local import build_local_index
from evidence_index.verify import verify
from rules import git_provenance
from rules.registry import judge

from tests.conftest import ROOT

EXT4 = ROOT / "evidence" / "local" / "filesystems" / "platform-runtime-cpu-ext4-root.json"
NAME = "platform-runtime-cpu-ext4-root.json"


def git(root: Path, *args: str, date: str | None = None) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                          env=env).stdout.strip()


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    document = json.loads(EXT4.read_text(encoding="utf-8"))
    assert document["source"]["git"]["dirty"] is False  # the premise: a clean run at a commit of this repository
    return document


def replica(root: Path, document: dict[str, Any], date: str, change: str | None = None) -> str:
    """A checkout holding, in one commit made at `date`, the bytes of every source the result names as they are
    at its recorded commit in this repository (`change`: one of them edited); that commit's id."""
    head = document["source"]["git"]["head"]
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    for name in document["source"]["files"]:
        data = subprocess.run(["git", "-C", str(ROOT), "show", f"{head}:{name}"], capture_output=True,
                              check=True).stdout
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data + (b"# edited\n" if name == change else b""))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the sources", date=date)
    return git(root, "rev-parse", "HEAD")


def relabelled(document: dict[str, Any], head: str) -> dict[str, Any]:
    document = copy.deepcopy(document)
    document["source"]["git"]["head"] = head
    return document


def build(tmp_path: Path, document: dict[str, Any], root: Path) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    (folder / NAME).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder, json.loads(json.dumps(build_local_index(folder, source_root=root)))


def judged(tmp_path: Path, document: dict[str, Any], root: Path = ROOT) -> tuple[str, list[str]]:
    """Built and verified against `root` (--source-root): the outcome and everything it said."""
    folder, statement = build(tmp_path, document, root)
    report = verify(statement, {"artifacts": folder, "logs": None}, source_root=root)
    return report.outcome, report.problems + list((report.verdict or {}).get("reasons") or [])


def about_git(said: list[str]) -> list[str]:
    return [line for line in said if "source.git" in line]


BEFORE_THE_RUN = "2026-12-01T15:00:00+00:00"  # before the committed result started (the local runs of 2026-12-01)


def test_the_committed_result_is_confirmed_by_this_checkouts_history(tmp_path, committed):
    outcome, said = judged(tmp_path, committed)
    assert about_git(said) == [], said  # its sources may differ from this checkout's since: not git's concern
    facts = build(tmp_path / "again", committed, ROOT)[1]["predicate"]["source_root"]["commits"]
    head = committed["source"]["git"]["head"]
    assert facts[head]["found"] is True and facts[head]["files"] == committed["source"]["files"]


def test_relabelled_to_a_commit_of_the_same_bytes_made_before_the_run_it_passes(tmp_path, committed):
    """The control for the forgeries below: a checkout whose commit holds the same bytes confirms the result."""
    root = tmp_path / "checkout"
    head = replica(root, committed, BEFORE_THE_RUN)
    outcome, said = judged(tmp_path, relabelled(committed, head), root)
    assert outcome == "pass", said


def _run_an_hour_earlier(document: dict[str, Any]) -> dict[str, Any]:
    """The result with both its clocks an hour back (its duration unchanged): a freshly re-recorded result is
    minutes old, too young for a commit both after its run's skew allowance and before now."""
    document = copy.deepcopy(document)
    for key in ("started_at", "finished_at"):
        document[key] = (datetime.fromisoformat(document[key]) - timedelta(hours=1)).isoformat()
    return document


def test_a_commit_made_after_the_run_is_refused(tmp_path, committed):
    root = tmp_path / "checkout"
    if datetime.now(timezone.utc) - datetime.fromisoformat(committed["started_at"]) < timedelta(
            seconds=2 * git_provenance.CLOCK_SKEW_S + 120):
        committed = _run_an_hour_earlier(committed)
    started = datetime.fromisoformat(committed["started_at"])
    # After the run began and its skew allowance, and before now (the index is built now: a commit after that is
    # refused otherwise).
    after = started + (datetime.now(timezone.utc) - started) / 2
    head = replica(root, committed, after.isoformat(timespec="seconds"))
    outcome, said = judged(tmp_path, relabelled(committed, head), root)
    assert outcome == "fail" and any(f"source.git.head {head[:12]} was committed at" in line for line in said), said


def test_a_commit_whose_sources_are_other_bytes_is_refused(tmp_path, committed):
    root = tmp_path / "checkout"
    head = replica(root, committed, BEFORE_THE_RUN, change="scripts/core/outcomes.py")
    recorded = f"{committed['source']['git']['head']}:scripts/core/outcomes.py"
    (root / "scripts/core/outcomes.py").write_bytes(  # the checkout's bytes agree: only the commit's differ
        subprocess.run(["git", "-C", str(ROOT), "show", recorded], capture_output=True, check=True).stdout)
    outcome, said = judged(tmp_path, relabelled(committed, head), root)
    assert outcome == "fail" and any("1 of source.files differ from that commit's bytes: scripts/core/outcomes.py"
                                     in line for line in said), said


def test_a_commit_this_checkout_does_not_hold_is_unconfirmed_and_refused(tmp_path, committed):
    root = tmp_path / "checkout"
    replica(root, committed, BEFORE_THE_RUN)
    outcome, said = judged(tmp_path, relabelled(committed, "0123456789abcdef0123456789abcdef01234567"), root)
    assert outcome == "fail" and any("is not a commit of the source root" in line for line in said), said


@pytest.mark.parametrize("edit, named", [
    ({"head": None}, "source.git has no head, with error None"),
    ({"head": "HEAD"}, "source.git.head is 'HEAD'"),
    ({"diff_sha256": "0" * 64}, "source.git.dirty is False, but diff_sha256 is 000000000000"),
    ({"dirty": "no"}, "source.git.dirty is 'no', a bool"),
    ({"error": "not a git checkout"}, "source.git.error is 'not a git checkout' beside a head"),
])
def test_a_tree_state_that_contradicts_itself_is_not_authentic(tmp_path, committed, edit, named):
    document = copy.deepcopy(committed)
    document["source"]["git"].update(edit)
    outcome, said = judged(tmp_path, document)
    assert outcome == "not-authentic" and any(named in line for line in said), said


def test_an_index_without_recorded_commits_is_judged_against_the_source_roots_history(tmp_path, committed):
    """An index built before the commits were recorded (or with them deleted) is judged by --source-root."""
    root = tmp_path / "checkout"
    replica(root, committed, BEFORE_THE_RUN)
    folder, statement = build(tmp_path, relabelled(committed, "0123456789abcdef0123456789abcdef01234567"), root)
    del statement["predicate"]["source_root"]["commits"]
    statement["predicate"]["results"][0].update(ok=True, reasons=[])
    statement["predicate"]["verdict"] = {"pass": True, "reasons": []}
    assert verify(statement, {"artifacts": folder, "logs": None}).outcome == "pass"  # taken as recorded
    report = verify(statement, {"artifacts": folder, "logs": None}, source_root=root)
    assert report.outcome == "not-authentic" and any("source.git.head" in p for p in report.problems), report.problems


def test_recorded_commit_facts_the_history_contradicts_fail_against_the_source_root(tmp_path, committed):
    folder, statement = build(tmp_path, committed, ROOT)
    head = committed["source"]["git"]["head"]
    statement["predicate"]["source_root"]["commits"][head]["committed_at"] = "2020-01-01T00:00:00+00:00"
    report = verify(statement, {"artifacts": folder, "logs": None}, source_root=ROOT)
    assert any("source_root.commits differ" in r for r in report.verdict["reasons"]), report.as_dict()


def test_a_dirty_run_confirms_only_that_its_commit_exists():
    """A dirty tree's bytes differ from its commit by a diff only its SHA-256 names: the limit docs/verdicts.md
    states. Its commit must still be one of the source root's, made before the run."""
    git_state = {"head": "a" * 40, "dirty": True, "diff_sha256": "b" * 64, "error": None}
    found = {"found": True, "committed_at": "2026-12-01T15:00:00+00:00", "files": {"x.py": "c" * 64}}
    assert git_provenance.commit_problems(git_state, {"x.py": "d" * 64}, found, "2026-12-01T15:09:00+00:00") == []
    assert git_provenance.commit_problems(git_state, {}, {"found": False}, None)
    assert git_provenance.commit_problems(git_state, {}, dict(found, committed_at="2026-12-01T16:00:00+00:00"),
                                          "2026-12-01T15:09:00+00:00")


def test_a_result_made_outside_a_checkout_names_no_commit_and_says_why():
    nfs = json.loads((ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json").read_text(encoding="utf-8"))
    assert nfs["source"]["git"] == {"head": None, "dirty": None, "diff_sha256": None, "error": "git is not installed"}
    assert git_provenance.git_state_problems(nfs) == [] and judge(nfs).ok
    assert git_provenance.commit_problems(nfs["source"]["git"], nfs["source"]["files"], {"found": False}) == []
