"""A result's file-system type agrees with the options its own mount showed (rules/mount_options.py): the
committed gate results on xfs, btrfs, tmpfs and NFS edited to another type, their options left, are not
authentic; the untouched ones are. A mount showing only options every driver shows (the bare `rw,relatime`
ext4 loop mount) cannot be told apart by this rule, and the test says so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rules import mount_options

from tests.conftest import ROOT

BUILDER = ROOT / "scripts" / "build_evidence_index.py"
FILESYSTEMS = ROOT / "evidence" / "local" / "filesystems"
NFS = ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json"


def indexed(tmp_path, document: dict) -> subprocess.CompletedProcess:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "platform-runtime-cpu.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    index = tmp_path / "evidence-index.json"
    subprocess.run([sys.executable, str(BUILDER), "local", "--results", str(folder), "--output", str(index)],
                   capture_output=True, text=True, timeout=120)
    return subprocess.run([sys.executable, str(BUILDER), "verify", str(index), "--artifacts", str(folder)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("source, new_type, shown", [
    (FILESYSTEMS / "platform-runtime-cpu-xfs-loop.json", "ext4", "logbufs"),
    (FILESYSTEMS / "platform-runtime-cpu-btrfs-loop.json", "xfs", "space_cache"),
    (FILESYSTEMS / "platform-runtime-cpu-tmpfs.json", "ext4", "size"),
    (NFS, "ext4", "vers"),
    (FILESYSTEMS / "platform-runtime-cpu-ext4-root.json", "nfs4", "no vers="),
])
def test_a_result_whose_type_was_edited_under_its_own_options_is_not_authentic(tmp_path, source, new_type, shown):
    document = json.loads(source.read_text(encoding="utf-8"))
    document["filesystem"]["type"] = new_type
    done = indexed(tmp_path, document)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "filesystem.type" in done.stdout and shown in done.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in FILESYSTEMS.glob("platform-runtime-*.json")))
def test_each_committed_mount_agrees_with_its_own_options(name):
    document = json.loads((FILESYSTEMS / name).read_text(encoding="utf-8"))
    assert mount_options.type_problems(document["filesystem"]) == []
    assert mount_options.type_problems(json.loads(NFS.read_text(encoding="utf-8"))["filesystem"]) == []


def test_an_smb_share_showing_vers_and_sec_is_not_taken_for_nfs():
    smb = {"method": "linux-mountinfo-mnt-id", "type": "cifs", "mount_options": ["rw", "vers=3.1.1", "sec=ntlmssp",
                                                                                  "rsize=4194304", "addr=10.0.0.2"]}
    assert mount_options.type_problems(smb) == []


def test_a_mount_showing_only_common_options_is_not_told_apart():
    document = json.loads((FILESYSTEMS / "platform-runtime-cpu-ext4-loop.json").read_text(encoding="utf-8"))
    assert document["filesystem"]["mount_options"] == ["rw", "relatime"]
    document["filesystem"]["type"] = "xfs"
    assert mount_options.type_problems(document["filesystem"]) == []  # the limit docs/verdicts.md names
