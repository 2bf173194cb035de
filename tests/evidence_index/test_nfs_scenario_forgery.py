"""The NFS VM's server-restart scenario cannot stand as the nfs action's run (the outside review's F3): its gate
result and harness record are a consistent pair of the same VM, so only the scenario the teardown records
(`scenario`, from --scenario) tells them apart, and the index holds it to the record's file name
(rules.nfs_harness.scenario_problems). The committed records name theirs (evidence/nfs was recorded with the field,
the action's `action`, the VM's `server-restart`); a record without one is refused. Each test indexes the nfs
folder the way evidence/README.md does and verifies it against the checkout that ran the VM."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rules.nfs_harness import scenario_of_name, scenario_problems

from tests.evidence_index.checkouts import checkout_of
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json

NFS = EVIDENCE / "nfs"
ACTION = ("nfs-harness.json", "platform-runtime-nfs.json")
SCENARIO = ("server-restart-nfs-harness.json", "server-restart-gate.json")


def nfs_folder(tmp_path: Path, pairs: dict[str, str], scenario: dict[str, str]) -> Path:
    """{name in the copy: committed file}, with `scenario` {harness name: value} written into those records."""
    folder = tmp_path / "nfs"
    folder.mkdir()
    for name, source in pairs.items():
        shutil.copy2(NFS / source, folder / name)
    for name, value in scenario.items():
        edit_json(folder / name, lambda d, value=value: d.update(scenario=value))
    return folder


def index_and_verify(folder: Path, names: tuple[str, str]) -> tuple[int, dict]:
    root = checkout_of(json.loads((NFS / "nfs-vm-run.json").read_text())["git"]["head"])  # the VM ran there
    index, report = folder.parent / "index.json", folder.parent / "report.json"
    results = [arg for name in names for arg in ("--result", name)]
    index_cli("local", "--results", str(folder), *results, "--output",
                    str(index), "--source-root", str(root))
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--source-root", str(root), "--json", str(report))
    return verified.returncode, json.loads(report.read_text())


def test_the_committed_records_name_their_scenario():
    assert json.loads((NFS / "nfs-harness.json").read_text())["scenario"] == "action"
    assert json.loads((NFS / "server-restart-nfs-harness.json").read_text())["scenario"] == "server-restart"


def test_the_committed_action_pair_stays_authentic(tmp_path):
    code, report = index_and_verify(nfs_folder(tmp_path, {n: n for n in ACTION}, {}), ACTION)
    assert (code, report["outcome"]) == (0, "pass"), (report["problems"], report["verdict"])


def test_the_committed_server_restart_pair_swapped_in_as_the_actions_run_is_not_authentic(tmp_path):
    """The outside review's swap-server-restart-gate-into-nfs: the committed bytes, only renamed."""
    folder = nfs_folder(tmp_path, dict(zip(ACTION, SCENARIO)), {})
    assert_refused(*index_and_verify(folder, ACTION),
                   "nfs-harness.json: scenario is 'server-restart', but its file name nfs-harness.json is the "
                   "'action' run's")


def test_the_server_restart_pair_swapped_into_the_whole_folder_is_not_authentic(tmp_path):
    folder = tmp_path / "nfs"
    shutil.copytree(NFS, folder)
    (folder / "evidence-index.json").unlink()
    for name, source in zip(ACTION, SCENARIO):
        shutil.copy2(NFS / source, folder / name)
    assert_refused(*index_and_verify(folder, ()), "nfs-harness.json: scenario is 'server-restart', but its file name")


def test_a_record_with_its_scenario_removed_is_refused(tmp_path):
    folder = nfs_folder(tmp_path, {n: n for n in ACTION}, {})
    edit_json(folder / "nfs-harness.json", lambda d: d.pop("scenario"))
    code, report = index_and_verify(folder, ACTION)
    assert code != 0 and report["outcome"] != "pass", report
    assert any("scenario" in why for why in report["problems"] + report["verdict"]["reasons"]), report


def test_the_action_pair_naming_the_action_passes(tmp_path):
    folder = nfs_folder(tmp_path, {n: n for n in ACTION}, {"nfs-harness.json": "action"})
    code, report = index_and_verify(folder, ACTION)
    assert (code, report["outcome"]) == (0, "pass"), (report["problems"], report["verdict"])


def test_the_server_restart_pair_under_its_own_names_passes(tmp_path):
    folder = nfs_folder(tmp_path, {n: n for n in SCENARIO}, {"server-restart-nfs-harness.json": "server-restart"})
    code, report = index_and_verify(folder, SCENARIO)
    assert (code, report["outcome"]) == (0, "pass"), (report["problems"], report["verdict"])


def test_the_server_restart_pair_renamed_as_the_actions_run_is_not_authentic(tmp_path):
    folder = nfs_folder(tmp_path, dict(zip(ACTION, SCENARIO)), {"nfs-harness.json": "server-restart"})
    assert_refused(*index_and_verify(folder, ACTION),
                   "nfs-harness.json: scenario is 'server-restart', but its file name nfs-harness.json is the "
                   "'action' run's")


def test_the_actions_pair_renamed_as_the_server_restart_scenario_is_not_authentic(tmp_path):
    folder = nfs_folder(tmp_path, dict(zip(SCENARIO, ACTION)), {"server-restart-nfs-harness.json": "action"})
    assert_refused(*index_and_verify(folder, SCENARIO),
                   "server-restart-nfs-harness.json: scenario is 'action', but its file name "
                   "server-restart-nfs-harness.json is the 'server-restart' run's")


def test_the_names_say_their_scenario():
    assert scenario_of_name("artifacts/x/nfs-harness.json") == "action"
    assert scenario_of_name("server-restart-nfs-harness.json") == "server-restart"
    assert scenario_of_name("other.json") is None and scenario_of_name("xnfs-harness.json") is None
    # a live VM run's folder keeps each phase's record as <phase>/nfs-harness.json
    assert scenario_of_name("run/server_restart/nfs-harness.json") == "server-restart"
    assert scenario_of_name("run/action/nfs-harness.json") == "action"
    assert scenario_problems("run/server_restart/nfs-harness.json", {"scenario": "server-restart"}) == []
    assert scenario_problems("nfs-harness.json", {}) == [
        "scenario is None: a harness record names the run its teardown ended (action, server-restart, ...), so its "
        "file name nfs-harness.json can be held to it"]
