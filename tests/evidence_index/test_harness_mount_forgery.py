"""The NFS harness record and its gate result describe one mount (rules.nfs_harness.mount_problems): the
committed evidence/nfs gate result edited into an NFSv3 one (type nfs, nfs_version 3, vers=3: consistent on its
own, so only its harness record can contradict it), `ok` and `nfs` left true, is refused as not authentic
(exit 3) naming the harness's field and the gate's; the untouched pair stays authentic (review finding 15)."""

from __future__ import annotations

import json

import pytest
from rules.gate_record import Filesystem, Platform
from rules.nfs_harness import harness_gate_problems
from rules.platforms import nfs_problems

from tests.evidence_index.test_crossfile_forgery import (
    EVIDENCE,
    HARNESS_FILES,
    assert_refused,
    edit_json,
    nfs_copy,
    rebuild_and_verify,
)


def _as_v3(d: dict) -> None:
    fs = d["filesystem"]
    fs.update(type="nfs", nfs_version="3")
    fs["mount_options"] = ["vers=3" if o.startswith("vers=") else o for o in fs["mount_options"]]


def _as_v41(d: dict) -> None:  # still nfs4, another minor version
    fs = d["filesystem"]
    fs.update(nfs_version="4.1")
    fs["mount_options"] = ["vers=4.1" if o.startswith("vers=") else o for o in fs["mount_options"]]


@pytest.mark.parametrize("edit, words", [
    (_as_v3, "setup.mount.fstype is 'nfs4' (the NFS harness's record), the gate's filesystem.type is 'nfs'"),
    (_as_v41, "nfs_version is '4.2' (the NFS harness's record), the gate's filesystem.nfs_version is '4.1'"),
], ids=["nfsv3", "nfsv4.1"])
def test_the_gate_result_edited_to_another_mount_than_its_harness_made_is_not_authentic(tmp_path, edit, words):
    folder = nfs_copy(tmp_path)
    edit_json(folder / "platform-runtime-nfs.json", edit)
    gate = json.loads((folder / "platform-runtime-nfs.json").read_text())
    assert gate["ok"] is True and {"name": "nfs", "ok": True} in [
        {k: r[k] for k in ("name", "ok")} for r in gate["requirements"]]
    assert nfs_problems(Platform.of(gate["platform"]), Filesystem.of(gate["filesystem"])) == []  # consistent on its own
    code, report = rebuild_and_verify(folder, *HARNESS_FILES)
    assert_refused(code, report, words)


def test_a_server_that_does_not_enable_the_gates_version_is_named():
    harness = json.loads((EVIDENCE / "nfs" / "nfs-harness.json").read_text())
    gate = json.loads((EVIDENCE / "nfs" / "platform-runtime-nfs.json").read_text())
    assert harness_gate_problems(harness, gate) == []
    harness["setup"]["nfsd_versions"] = "-3 +4 +4.1 -4.2"
    assert any("setup.nfsd_versions is '-3 +4 +4.1 -4.2'" in p and "'4.2'" in p
               for p in harness_gate_problems(harness, gate))
    harness["setup"]["nfsd_versions"] = "+3 +4 -4.1 -4.2"
    gate["filesystem"]["nfs_version"] = "4.0"
    assert not any("nfsd_versions" in p for p in harness_gate_problems(harness, gate))  # 4.0 is listed as +4


def test_the_committed_nfs_pairs_agree():
    for folder in ("nfs", "nfs-systemd"):
        harness = json.loads((EVIDENCE / folder / "nfs-harness.json").read_text())
        gate = json.loads((EVIDENCE / folder / "platform-runtime-nfs.json").read_text())
        assert harness_gate_problems(harness, gate) == [], folder
