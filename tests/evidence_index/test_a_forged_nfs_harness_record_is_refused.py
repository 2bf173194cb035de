"""An NFS harness record is judged by its facts and by the gate result it served: the committed NFS action's
harness record and gate result (evidence/nfs), one fact of one of them edited, the pair indexed as the nfs action
indexes it and verified in this process (against the checkout that ran the VM), is refused as not authentic,
naming the field. Its derived flags (the export deleted the workspace, the mount is gone, the server stopped) are
recomputed from its facts; the harness and the gate describe one mount, one workspace and one scenario, the one
its file name says (the server-restart VM scenario's pair cannot stand as the action's run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    EVIDENCE,
    NFS_COMMIT,
    SYSTEMD_COMMIT,
    Edit,
    FolderEdit,
    assert_authentic,
    assert_not_passing,
    assert_refused,
    checkout_of,
    edit_json,
    in_file,
    reindexed,
    row,
)

ACTION = ("nfs-harness.json", "platform-runtime-nfs.json")
SCENARIO = ("server-restart-nfs-harness.json", "server-restart-gate.json")


def pair(tmp_path: Path, names: dict[str, str], folder: str = "nfs") -> Path:
    """{name in the copy: committed file of evidence/FOLDER}."""
    copy = tmp_path / folder
    copy.mkdir()
    for name, source in names.items():
        (copy / name).write_bytes((EVIDENCE / folder / source).read_bytes())
    return copy


def verified(folder: Path, names: tuple[str, ...], made_at: str = NFS_COMMIT) -> Any:
    root = checkout_of(made_at)
    return reindexed(folder, source_root=root, names=names, verify_root=root)


def _as_v3(document: dict) -> None:
    fs = document["filesystem"]
    fs.update(type="nfs", nfs_version="3")
    fs["mount_options"] = ["vers=3" if o.startswith("vers=") else o for o in fs["mount_options"]]


def _as_v41(document: dict) -> None:  # still nfs4, another minor version
    fs = document["filesystem"]
    fs.update(nfs_version="4.1")
    fs["mount_options"] = ["vers=4.1" if o.startswith("vers=") else o for o in fs["mount_options"]]


def harness(says: str, change: Edit, words: str) -> Any:
    return row(says, in_file("nfs-harness.json", change), words)


HARNESS = [
    harness("an export that still holds the workspace after its delete",
            lambda d: d["export_side_delete"].update(absent_after=False),
            "export_side_delete.verified is recorded True, its facts say False"),
    harness("silly renames left on the export", lambda d: d["export_side_delete"].update(
        nfs_leftovers=[".nfs000000000001"]), "export_side_delete.verified is recorded True, its facts say False"),
    harness("the export's delete of another workspace than the gate's",
            lambda d: d["export_side_delete"].update(workspace="platform-runtime-000000000000"),
            "export_side_delete.workspace is 'platform-runtime-000000000000', the gate's workspace_cleanup.workspace"),
    harness("a mount still listed after the unmount", lambda d: d["unmount"].update(
        still_mounted_as=["127.0.0.1:/", "nfs4"]), "unmount.unmounted is recorded True, its facts say False"),
    harness("a server still running after its stop", lambda d: d["server"].update(nfsd_threads_after="4"),
            "server.stopped is recorded True, its facts say False"),
    harness("an unmount whose umount failed twice", lambda d: d["unmount"].update(umount_exit_codes=[32, 32]),
            "unmount.unmounted is recorded True, its facts say False"),
    harness("an unmount whose last umount failed", lambda d: d["unmount"].update(umount_exit_codes=[0, 32]),
            "unmount.unmounted is recorded True, its facts say False"),
    harness("an unmount whose umount exit is text", lambda d: d["unmount"].update(umount_exit_codes=["0"]),
            "unmount.unmounted is recorded True, its facts say False"),
    harness("an unmount with no umount after a setup that mounted",
            lambda d: d["unmount"].update(umount_exit_codes=[]),
            "unmount.unmounted is recorded True, its facts say False"),
    harness("a server that does not enable the gate's NFS version",
            lambda d: d["setup"].update(nfsd_versions="-3 +4 +4.1 -4.2"), "setup.nfsd_versions is '-3 +4 +4.1 -4.2'"),
    row("the gate result edited into an NFSv3 mount its harness did not make",
        in_file("platform-runtime-nfs.json", _as_v3),
        "setup.mount.fstype is 'nfs4' (the NFS harness's record), the gate's filesystem.type is 'nfs'"),
    row("the gate result edited into an NFS 4.1 mount its harness did not make",
        in_file("platform-runtime-nfs.json", _as_v41),
        "nfs_version is '4.2' (the NFS harness's record), the gate's filesystem.nfs_version is '4.1'"),
]


@pytest.mark.parametrize(("edit", "words"), HARNESS)
def test_a_harness_record_its_facts_or_its_gate_refute_is_not_authentic(tmp_path, edit: FolderEdit,
                                                                        words: str) -> None:
    folder = pair(tmp_path, {name: name for name in ACTION})
    edit(folder)
    assert_refused(verified(folder, ACTION), words)


# --- the scenario a record names is the one its file name says -------------------------------------------------

SCENARIOS = [
    row("the server-restart pair renamed as the action's run", dict(zip(ACTION, SCENARIO)), {}, ACTION,
        "nfs-harness.json: scenario is 'server-restart', but its file name nfs-harness.json is the 'action' run's"),
    row("the server-restart pair renamed as the action's, its scenario rewritten to match the names it sits under",
        dict(zip(ACTION, SCENARIO)), {"nfs-harness.json": "server-restart"}, ACTION,
        "nfs-harness.json: scenario is 'server-restart', but its file name nfs-harness.json is the 'action' run's"),
    row("the action's pair renamed as the server-restart scenario's", dict(zip(SCENARIO, ACTION)),
        {"server-restart-nfs-harness.json": "action"}, SCENARIO,
        "server-restart-nfs-harness.json: scenario is 'action', but its file name server-restart-nfs-harness.json is "
        "the 'server-restart' run's"),
]


@pytest.mark.parametrize(("names", "scenario", "indexed", "words"), SCENARIOS)
def test_a_harness_record_under_another_scenarios_name_is_not_authentic(tmp_path, names: dict[str, str],
                                                                        scenario: dict[str, str],
                                                                        indexed: tuple[str, ...], words: str) -> None:
    folder = pair(tmp_path, names)
    for name, value in scenario.items():
        edit_json(folder / name, lambda d, value=value: d.update(scenario=value))
    assert_refused(verified(folder, indexed), words)


def test_the_server_restart_pair_swapped_into_the_whole_folder_is_not_authentic(tmp_path) -> None:
    folder = pair(tmp_path, {p.name: p.name for p in (EVIDENCE / "nfs").iterdir() if p.name != "evidence-index.json"})
    for name, source in zip(ACTION, SCENARIO):
        (folder / name).write_bytes((EVIDENCE / "nfs" / source).read_bytes())
    assert_refused(verified(folder, ()), "nfs-harness.json: scenario is 'server-restart', but its file name")


def test_a_record_with_its_scenario_removed_is_refused(tmp_path) -> None:
    folder = pair(tmp_path, {name: name for name in ACTION})
    edit_json(folder / "nfs-harness.json", lambda d: d.pop("scenario"))
    assert_not_passing(verified(folder, ACTION), "scenario")


# --- the controls -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("names", "scenario", "indexed"), [
    row("the action's pair", {name: name for name in ACTION}, {}, ACTION),
    row("the action's pair naming the action", {name: name for name in ACTION}, {"nfs-harness.json": "action"},
        ACTION),
    row("the server-restart pair under its own names", {name: name for name in SCENARIO},
        {"server-restart-nfs-harness.json": "server-restart"}, SCENARIO),
])
def test_a_committed_pair_under_its_own_names_stays_authentic(tmp_path, names: dict[str, str],
                                                              scenario: dict[str, str],
                                                              indexed: tuple[str, ...]) -> None:
    folder = pair(tmp_path, names)
    for name, value in scenario.items():
        edit_json(folder / name, lambda d, value=value: d.update(scenario=value))
    report = verified(folder, indexed)
    assert (report.outcome, report.problems) == ("pass", []), report.verdict


def test_the_committed_records_name_their_scenario() -> None:
    from tests.evidence_index.forged_evidence import committed

    assert committed("nfs/nfs-harness.json")["scenario"] == "action"
    assert committed("nfs/server-restart-nfs-harness.json")["scenario"] == "server-restart"


def test_the_systemd_vms_pair_stays_authentic(tmp_path) -> None:
    folder = pair(tmp_path, {name: name for name in ACTION}, folder="nfs-systemd")
    assert_authentic(verified(folder, ACTION, made_at=SYSTEMD_COMMIT))


@pytest.mark.parametrize("codes", [row("one umount that exited 0", [0]), row("a busy umount retried until it "
                                                                             "unmounted", [32, 0])])
def test_an_unmount_whose_last_umount_exited_0_is_an_unmount(codes: list[Any]) -> None:
    """As the harness's teardown retries a busy umount (nfs_teardown.unmount)."""
    from tests.evidence_index.forged_evidence import assert_passes, committed, judged

    record = committed("nfs/nfs-harness.json")
    record["unmount"]["umount_exit_codes"] = codes
    assert_passes(judged(record))
