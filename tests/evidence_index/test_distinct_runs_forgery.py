"""Each result of a folder is its own run, named for the file system it ran on: the committed filesystems folder
with one result replaced by another's copy, or two results' names swapped, is not authentic (a failed btrfs run
hidden behind a copy of the ext4 one); the untouched folder passes these rules."""

from __future__ import annotations

import json
import shutil

from evidence_index.local import build_local_index
from rules.distinct_runs import copy_problems, name_problem

from tests.conftest import ROOT

FOLDER = ROOT / "evidence" / "local" / "filesystems"


def _index(tmp_path):
    folder = tmp_path / "filesystems"
    if not folder.exists():
        shutil.copytree(FOLDER, folder)
        (folder / "evidence-index.json").unlink()
    return folder


def _copies_and_names(folder) -> dict[str, list[str]]:
    statement = build_local_index(folder, folder / "evidence-index.json")
    return {r["name"]: [why for why in r.get("not_authentic") or []
                        if "counted twice" in why or "names the file" in why]
            for r in statement["predicate"]["results"]}


def test_the_committed_filesystems_results_are_five_runs_each_named_for_its_file_system(tmp_path):
    found = _copies_and_names(_index(tmp_path))
    assert len([name for name in found if name.startswith("platform-runtime-cpu-")]) == 5
    assert {name: why for name, why in found.items() if why} == {}


def test_a_result_replaced_by_another_results_copy_is_not_authentic(tmp_path):
    folder = _index(tmp_path)
    shutil.copyfile(folder / "platform-runtime-cpu-ext4-root.json", folder / "platform-runtime-cpu-btrfs-loop.json")
    found = _copies_and_names(folder)
    assert any("the same bytes as platform-runtime-cpu-ext4-root.json" in why
               for why in found["platform-runtime-cpu-btrfs-loop.json"])
    assert any("names the file system 'btrfs', its filesystem.type is 'ext4'" in why
               for why in found["platform-runtime-cpu-btrfs-loop.json"])


def test_two_results_names_swapped_are_not_authentic(tmp_path):
    folder = _index(tmp_path)
    ext4, xfs = folder / "platform-runtime-cpu-ext4-root.json", folder / "platform-runtime-cpu-xfs-loop.json"
    a, b = ext4.read_bytes(), xfs.read_bytes()
    ext4.write_bytes(b)
    xfs.write_bytes(a)
    found = _copies_and_names(folder)
    assert any("names the file system 'xfs', its filesystem.type is 'ext4'" in why for why in found[xfs.name])
    assert any("names the file system 'ext4', its filesystem.type is 'xfs'" in why for why in found[ext4.name])


def test_a_copy_reserialised_is_still_one_run_by_its_workspace():
    document = json.loads((FOLDER / "platform-runtime-cpu-ext4-root.json").read_text())
    found = copy_problems([("a.json", "gate", "1" * 64, document), ("b.json", "gate", "2" * 64, dict(document))])
    assert all(any("the same workspace as" in why for why in problems) for problems in found)


def test_a_name_without_a_file_system_word_says_nothing():
    document = json.loads((FOLDER / "platform-runtime-cpu-ext4-root.json").read_text())
    assert name_problem("platform-runtime-cpu.json", "gate", document) is None
    assert name_problem("server-restart-gate.json", "gate", {"filesystem": {"type": "nfs4"}}) is None
    assert name_problem("platform-runtime-nfs.json", "gate", {"ok": True, "filesystem": {"type": "nfs4"}}) is None


def test_an_honest_failure_under_its_jobs_name_is_not_called_a_copy_or_a_lie():
    """The nfs job names its result for the job: a run whose mount was not NFS fails honestly, under that name."""
    document = json.loads((FOLDER / "platform-runtime-cpu-ext4-root.json").read_text())
    assert name_problem("platform-runtime-nfs.json", "gate", {**document, "ok": False}) is None
    assert name_problem("platform-runtime-nfs.json", "gate", document) is not None
