"""A local evidence index is the builder's shape and its facts are the folder's and the source root's: an index
built over a copy of committed results (or the committed index itself), one field of the INDEX edited, is not
authentic, naming the field; a result's provenance is a fact of the source root's history, never free text; the
untouched index verifies. Each index is built and verified in this process (`build_local_index`, `verify`)."""

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

from tests.conftest import ROOT
from tests.evidence_index.forged_evidence import (
    CUDA_COMMIT,
    CUDA_GATE,
    EVIDENCE,
    EXT4,
    RUN_LOCAL_GATE,
    assert_not_passing,
    assert_refused,
    checkout_of,
    committed,
    copied,
    edit_json,
    encoded,
    everything,
    indexed_alone,
    reindexed,
    row,
)

NAME = Path(EXT4).name
HEAD = committed(EXT4)["source"]["git"]["head"]


def full(commit: str) -> str:
    return subprocess.run(["git", "-C", str(checkout_of(commit)), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, dict]:
    """(folder, root, statement): the committed file-system results indexed against the checkout that made them."""
    tmp_path = tmp_path_factory.mktemp("facts")
    folder, root = copied(tmp_path, "local/filesystems"), checkout_of(HEAD)
    return folder, root, json.loads(json.dumps(build_local_index(folder, source_root=root)))


def verified_edit(built: tuple[Path, Path, dict], edit: Any) -> Any:
    folder, root, statement = built
    statement = copy.deepcopy(statement)
    edit(statement["predicate"])
    return verify(statement, {"artifacts": folder, "logs": None}, source_root=root)


@pytest.mark.parametrize(("edit", "named"), [
    row("a host of another system", lambda p: p["host"].update(system="Windows"), "predicate.host.release is '"),
    row("a host machine no Linux names", lambda p: p["host"].update(machine="AMD64"),
        "predicate.host.machine is 'AMD64', not a machine name Linux"),
    row("a dirty source root beside an empty diff", lambda p: p["source_root"]["git"].update(dirty=True),
        "predicate.source_root.git.dirty is True, but diff_sha256"),
    row("a source root head of another commit", lambda p: p["source_root"]["git"].update(head=full(CUDA_COMMIT)),
        "predicate.source_root.files.scripts/"),
    row("a source root head that is no commit id", lambda p: p["source_root"]["git"].update(head="HEAD"),
        "predicate.source_root.git.head is 'HEAD'"),
    row("the indexer's files emptied", lambda p: p["indexer"].update(files={}),
        "predicate.indexer.files lacks scripts/build_evidence_index.py"),
    row("an indexer of Python 2", lambda p: p["indexer"].update(python="2.7.18"),
        "predicate.indexer.python is '2.7.18'"),
    row("a resolved source that is no source", lambda p: p["source_root"].update(resolved={"x": "y"}),
        "predicate.source_root.resolved.x: 'x' is no source"),
    row("a skipped file that is not in the folder", lambda p: p.update(skipped=[
        {"name": "platform-runtime-nfs.json", "why": "an evidence-index, not a result"}]),
        "predicate.skipped[0]: platform-runtime-nfs.json is not a file of the folder"),
    row("a bound result recorded as skipped", lambda p: p.update(skipped=[
        {"name": "platform-runtime-cpu-tmpfs.json", "why": "an evidence-index, not a result"}]),
        "predicate.skipped[0]: platform-runtime-cpu-tmpfs.json is bound"),
])
def test_an_edited_index_fact_is_not_authentic(built, edit: Any, named: str) -> None:
    assert_refused(verified_edit(built, edit), named)


def test_a_skipped_file_that_is_no_index_is_not_authentic(built) -> None:
    folder = built[0]
    (folder / "notes.json").write_text('{"schema": "kernodeck.platform-runtime.result/v1"}\n')
    try:
        report = verified_edit(built, lambda p: p.update(skipped=[{"name": "notes.json",
                                                                   "why": "an evidence-index, not a result"}]))
    finally:
        (folder / "notes.json").unlink()
    assert_refused(report, "predicate.skipped[0]: notes.json is a gate document")


def test_the_untouched_index_verifies(built) -> None:
    report = verified_edit(built, lambda p: None)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


# --- the committed index: the builder's shape, its subjects and the source it names ------------------------------

def in_place(tmp_path: Path, relative: str, edit: Any) -> Any:
    """The committed folder copied with its index, the index edited, verified in place (the verdict file beside
    it read too)."""
    folder = tmp_path / Path(relative).name
    import shutil

    shutil.copytree(EVIDENCE / relative, folder)
    index = folder / "evidence-index.json"
    statement = json.loads(index.read_text())
    untouched = copy.deepcopy(statement)
    edit(statement)
    if statement != untouched:
        index.write_text(json.dumps(statement, indent=2))
    return verify(statement, {"artifacts": folder, "logs": None}, index_path=index)


@pytest.mark.parametrize(("edit", "named"), [
    row("a field added to the predicate", lambda i: i["predicate"].update(reviewed_by="kernodeck security team"),
        "'reviewed_by' was unexpected"),
    row("a subject bound twice", lambda i: i["subject"].append(dict(i["subject"][0])), "bound more than once"),
    row("a second digest beside a subject's SHA-256", lambda i: i["subject"][0]["digest"].update(md5="0" * 32),
        "does not match its schema at subject/0/digest"),
])
def test_an_index_out_of_the_builders_shape_is_not_authentic(tmp_path, edit: Any, named: str) -> None:
    assert_refused(in_place(tmp_path, "local/run-local", edit), named)


def test_the_committed_index_has_the_builders_shape(tmp_path) -> None:
    report = in_place(tmp_path, "local/run-local", lambda i: None)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


def test_an_index_whose_source_digest_is_not_that_of_its_source_files_is_not_authentic() -> None:
    folder = EVIDENCE / "local" / "training-run"
    statement = committed("local/training-run/evidence-index.json")
    recorded = statement["predicate"]["source_root"]["files_sha256"]
    statement["predicate"]["source_root"]["files_sha256"] = "0" * 64
    report = verify(statement, {"artifacts": folder, "logs": None})
    assert report.outcome == "not-authentic"
    assert any(p.startswith("predicate.source_root.files_sha256 is '000") and recorded in p
               for p in report.problems), report.problems


def test_a_byte_of_a_bound_checkpoint_changed_is_not_authentic(tmp_path) -> None:
    folder = copied(tmp_path, "local/training-run")
    statement = json.loads(json.dumps(build_local_index(folder, source_root=checkout_of(HEAD))))
    names = {s["name"] for s in statement["subject"]}
    assert {"artifacts/training-run/checkpoint.pt", "artifacts/training-run/checkpoint.pt.sha256",
            "artifacts/training-run/config.json", "artifacts/training-run/metrics.jsonl",
            "artifacts/training-run/summary.json", "artifacts/training-run-check.json"} <= names
    checkpoint = folder / "training-run" / "checkpoint.pt"
    data = bytearray(checkpoint.read_bytes())
    data[len(data) // 2] ^= 1
    checkpoint.write_bytes(bytes(data))
    assert_refused(verify(statement, {"artifacts": folder, "logs": None}),
                   "subject artifacts/training-run/checkpoint.pt: mismatch")


# --- what a local index judges of a result that its kind's rules do not --------------------------------------------

GITHUB_RUN = {"actions": True, "repository": "kernodeck/platform-runtime", "run_id": "33304800747",
              "run_attempt": "1", "job": "linux", "runner_os": "Linux", "runner_arch": "X64",
              "sha": "b71dd6f2a4ca76d1ebdc17014d9d0bfe573445ea",
              "workflow_ref": "kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/heads/main",
              "image_os": "ubuntu24", "image_version": "20261124.1"}


def _allowed(vector: bool) -> Any:
    def edit(document: dict) -> None:
        document["arguments"].update(require_filesystem="ext4", allow_injection_vectors=True)
        document["requirements"].append({"name": "filesystem=ext4", "ok": True,
                                         "reason": "the work dir's file system is ext4"})
        document["isolation"]["allowed"] = True
        if vector:
            document["isolation"].update(present=["PYTHONPATH"], findings=[
                "PYTHONPATH is set and the gate's own process was started without -I or -E"])
    return edit


@pytest.mark.parametrize(("start", "edit", "named"), [
    row("a result made locally claiming a GitHub Actions run", EXT4, lambda d: d.update(github=GITHUB_RUN),
        "github claims GitHub Actions run '33304800747'"),
    row("a run allowed with an injection vector, its requirement held", RUN_LOCAL_GATE, _allowed(True),
        "requirement 'filesystem=ext4' is UNPROVEN: injection vector(s) PYTHONPATH"),
])
def test_a_local_index_never_passes_what_it_cannot_bind(tmp_path, start: str, edit: Any, named: str) -> None:
    document = committed(start)
    edit(document)
    report = indexed_alone(tmp_path, document, start)
    assert report.outcome == "fail", everything(report)  # authentic, and no proof
    assert_not_passing(report, named)


def test_a_committed_result_that_started_after_its_index_was_built_is_not_authentic(tmp_path) -> None:
    document = committed(EXT4)
    document["started_at"] = "2036-12-01T15:09:00+00:00"
    assert_refused(indexed_alone(tmp_path, document, EXT4), "started_at is '2036-12-01T15:09:00+00:00'",
                   "after the index's built_at")


def test_the_same_run_allowed_with_no_vector_present_passes(tmp_path) -> None:
    document = committed(RUN_LOCAL_GATE)
    _allowed(False)(document)
    report = indexed_alone(tmp_path, document, RUN_LOCAL_GATE)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


def test_a_box_of_a_file_system_the_table_does_not_know_passes_and_its_index_says_what_is_unconfirmed(tmp_path) -> None:
    """Type and magic both new (two facts, as that box's kernel would give them): authentic and passing, listed
    as unconfirmed."""
    document = committed(RUN_LOCAL_GATE)
    document["filesystem"].update(type="lustre", statfs_f_type=0x0BD00BD0)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "platform-runtime-cpu.json").write_bytes(encoded(document))
    root = checkout_of(document["source"]["git"]["head"])
    statement = json.loads(json.dumps(build_local_index(folder, source_root=root)))
    report = verify(statement, {"artifacts": folder, "logs": None})
    assert (report.outcome, report.problems) == ("pass", []), everything(report)
    records = statement["predicate"]["results"]
    assert any("taken as recorded" in line for r in records for line in r.get("unconfirmed", [])), records


def test_the_h200_result_is_compared_with_the_sources_that_ran_it(tmp_path) -> None:
    """Against the sources that ran it (CUDA_COMMIT) it passes; against this checkout, whose gate hashes another
    list and writes another version, it is refused for that and only that."""
    document = committed(CUDA_GATE)
    report = indexed_alone(tmp_path / "own", document, CUDA_GATE)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)
    folder = tmp_path / "here"
    folder.mkdir()
    (folder / "platform-runtime-cuda.json").write_bytes(encoded(document))
    report = reindexed(folder, source_root=ROOT)
    assert report.outcome == "not-authentic", everything(report)
    assert all("source.files names 19 path(s), the gate at the source root hashes" in p
               or "the gate at the source root writes version 2" in p or p.startswith("predicate.")
               for p in report.problems), report.problems


# --- a result's commit: a fact of the source root's history -------------------------------------------------------

def git(root: Path, *args: str, date: str | None = None) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                          env=env).stdout.strip()


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
    return report.outcome, everything(report)


BEFORE_THE_RUN = "2026-12-01T15:00:00+00:00"  # before the committed result started (the local runs of 2026-12-01)


def test_the_committed_result_is_confirmed_by_this_checkouts_history(tmp_path) -> None:
    document = committed(EXT4)
    assert document["source"]["git"]["dirty"] is False  # the premise: a clean run at a commit of this repository
    outcome, said = judged(tmp_path, document)
    assert [line for line in said if "source.git" in line] == [], said  # its sources may differ since
    facts = build(tmp_path / "again", document, ROOT)[1]["predicate"]["source_root"]["commits"]
    assert facts[HEAD]["found"] is True and facts[HEAD]["files"] == document["source"]["files"]


def test_relabelled_to_a_commit_of_the_same_bytes_made_before_the_run_it_passes(tmp_path) -> None:
    """The control for the forgeries below: a checkout whose commit holds the same bytes confirms the result."""
    root = tmp_path / "checkout"
    head = replica(root, committed(EXT4), BEFORE_THE_RUN)
    outcome, said = judged(tmp_path, relabelled(committed(EXT4), head), root)
    assert outcome == "pass", said


def test_a_commit_made_after_the_run_is_refused(tmp_path) -> None:
    document = committed(EXT4)
    root = tmp_path / "checkout"
    if datetime.now(timezone.utc) - datetime.fromisoformat(document["started_at"]) < timedelta(seconds=2 * 300 + 120):
        for key in ("started_at", "finished_at"):  # a freshly re-recorded result: its clocks an hour back
            document[key] = (datetime.fromisoformat(document[key]) - timedelta(hours=1)).isoformat()
    started = datetime.fromisoformat(document["started_at"])
    after = started + (datetime.now(timezone.utc) - started) / 2  # after the run and its skew, before now
    head = replica(root, document, after.isoformat(timespec="seconds"))
    outcome, said = judged(tmp_path, relabelled(document, head), root)
    assert outcome == "fail" and any(f"source.git.head {head[:12]} was committed at" in line for line in said), said


def test_a_commit_whose_sources_are_other_bytes_is_refused(tmp_path) -> None:
    document = committed(EXT4)
    root = tmp_path / "checkout"
    head = replica(root, document, BEFORE_THE_RUN, change="scripts/core/outcomes.py")
    (root / "scripts/core/outcomes.py").write_bytes(  # the checkout's bytes agree: only the commit's differ
        subprocess.run(["git", "-C", str(ROOT), "show", f"{HEAD}:scripts/core/outcomes.py"], capture_output=True,
                       check=True).stdout)
    outcome, said = judged(tmp_path, relabelled(document, head), root)
    assert outcome == "fail" and any("1 of source.files differ from that commit's bytes: scripts/core/outcomes.py"
                                     in line for line in said), said


def test_a_commit_the_source_root_does_not_hold_is_unconfirmed_and_refused(tmp_path) -> None:
    root = tmp_path / "checkout"
    replica(root, committed(EXT4), BEFORE_THE_RUN)
    outcome, said = judged(tmp_path, relabelled(committed(EXT4), "0123456789abcdef0123456789abcdef01234567"), root)
    assert outcome == "fail" and any("is not a commit of the source root" in line for line in said), said


def test_an_index_without_recorded_commits_is_judged_against_the_source_roots_history(tmp_path) -> None:
    """An index built before the commits were recorded (or with them deleted) is judged by --source-root."""
    root = tmp_path / "checkout"
    replica(root, committed(EXT4), BEFORE_THE_RUN)
    folder, statement = build(tmp_path, relabelled(committed(EXT4), "0123456789abcdef0123456789abcdef01234567"), root)
    del statement["predicate"]["source_root"]["commits"]
    statement["predicate"]["results"][0].update(ok=True, reasons=[])
    statement["predicate"]["verdict"] = {"pass": True, "reasons": []}
    assert verify(statement, {"artifacts": folder, "logs": None}).outcome == "pass"  # taken as recorded
    report = verify(statement, {"artifacts": folder, "logs": None}, source_root=root)
    assert report.outcome == "not-authentic" and any("source.git.head" in p for p in report.problems), report.problems


def test_recorded_commit_facts_the_history_contradicts_fail_against_the_source_root(tmp_path) -> None:
    folder, statement = build(tmp_path, committed(EXT4), ROOT)
    statement["predicate"]["source_root"]["commits"][HEAD]["committed_at"] = "2020-01-01T00:00:00+00:00"
    report = verify(statement, {"artifacts": folder, "logs": None}, source_root=ROOT)
    assert any("source_root.commits differ" in r for r in report.verdict["reasons"]), report.as_dict()


# --- a result naming no commit: its bytes existed when it started ---------------------------------------------------

NO_GIT = {"head": None, "error": "git is not installed", "dirty": None, "diff_sha256": None}
LATER = "scripts/core/fs_magic.py"  # one gate source, changed after the run ("today's later sources")


def later_checkout(tmp_path: Path) -> Path:
    """A clone at the commit the result ran, plus one commit made now that changes one gate source by a comment."""
    root = tmp_path / "later"
    for args in (["clone", "-q", "--shared", "--no-checkout", str(ROOT), str(root)],
                 ["-C", str(root), "checkout", "-q", "--detach", HEAD]):
        subprocess.run(["git", *args], check=True, capture_output=True)
    with open(root / LATER, "a", encoding="utf-8") as stream:
        stream.write("# a later comment\n")
    git(root, "add", LATER)
    git(root, "commit", "-q", "-m", "later")
    return root


def alone(tmp_path: Path, change: Any = None) -> Path:
    """The committed ext4 result alone in a folder (no other gate to compare its checkout with), edited."""
    folder = tmp_path / "alone"
    folder.mkdir(parents=True)
    (folder / NAME).write_bytes((EVIDENCE / EXT4).read_bytes())
    if change:
        edit_json(folder / NAME, change)
    return folder


def rehashed_from(root: Path) -> Any:
    from evidence_index.checkout_hashes import hash_sources

    def change(document: dict) -> None:
        document["source"].update(git=dict(NO_GIT), files=hash_sources(root, list(document["source"]["files"])))
    return change


def local(folder: Path, root: Path) -> Any:
    return reindexed(folder, source_root=root, verify_root=root)


def test_a_result_naming_no_commit_whose_bytes_existed_before_it_started_passes(tmp_path) -> None:
    """The result relabelled "git is not installed" (the action's tarball, the VM) keeps its bytes, which a commit
    made before the run holds."""
    report = local(alone(tmp_path, lambda d: d["source"].update(git=dict(NO_GIT))), checkout_of(HEAD))
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


def test_a_result_naming_no_commit_rehashed_from_a_later_tree_is_refused(tmp_path) -> None:
    root = later_checkout(tmp_path)
    report = local(alone(tmp_path, rehashed_from(root)), root)
    assert report.outcome == "fail", everything(report)
    assert any("source.git names no commit and source.files are the bytes of" in r and f"source.files.{LATER}" in r
               for r in report.verdict["reasons"]), everything(report)


def test_a_dev_trees_uncommitted_bytes_run_after_they_were_written_pass_and_a_later_edit_is_refused(tmp_path) -> None:
    """A root with uncommitted bytes of the gate sources: a run of them after they were written passes; the same
    bytes written after the run started (a forger's edit of today's tree) are refused."""
    root = later_checkout(tmp_path)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--soft", "HEAD~1"], check=True)  # uncommitted now
    started = datetime.fromisoformat(committed(EXT4)["started_at"])
    os.utime(root / LATER, (started.timestamp() - 60, started.timestamp() - 60))
    report = local(alone(tmp_path / "before", rehashed_from(root)), root)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)
    os.utime(root / LATER, None)  # written now, after the run started
    report = local(alone(tmp_path / "after", rehashed_from(root)), root)
    assert report.outcome == "fail" and any("are the bytes of working tree" in r and f"source.files.{LATER}" in r
                                            for r in report.verdict["reasons"]), everything(report)


def test_an_index_whose_recorded_history_is_emptied_is_judged_by_the_roots(tmp_path) -> None:
    """The history deleted from the index (and the result's judgement flipped with it): --source-root reads it."""
    root = later_checkout(tmp_path)
    folder = alone(tmp_path, rehashed_from(root))
    statement = json.loads(json.dumps(build_local_index(folder, source_root=root)))
    history = statement["predicate"]["source_root"]["history"]
    assert history["read"] is True and len(history["sources"]) == 1
    statement["predicate"]["source_root"]["history"] = {"read": False, "why": "not a git checkout", "sources": {}}
    statement["predicate"]["results"][0].update(ok=True, reasons=[])
    statement["predicate"]["verdict"] = {"pass": True, "reasons": []}
    assert_refused(verify(statement, {"artifacts": folder, "logs": None}, source_root=root),
                   ".ok: recorded True, the bytes say False")
