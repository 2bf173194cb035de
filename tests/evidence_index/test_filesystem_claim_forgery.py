"""A file-system claim needs its own second view, and deleting that view does not exempt the claim: the committed
gate results (evidence/local/run-local, made with the views; evidence/cuda/run, made by 7f0a071 before them)
copied, the claim edited together with the deletion of the view that would refute it, re-indexed and verified
against the checkout that made each. Each is refused as not authentic (exit 3) naming the field; the untouched
copies stay authentic. The rules: rules.fs_magic.extents_problems (ext2/ext3 carry their inode flags) and
rules.beside_checks.filesystem_probe (the type was named by the probe of platform.system, which every other OS
fact agrees with: without it an edited method skips every Linux view of the type)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rules import beside_checks, fs_magic

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json
from tests.evidence_index.test_one_run_forgery import assert_authentic, rebuild_and_verify, rebuild_and_verify_at

RUN_LOCAL = EVIDENCE / "local" / "run-local" / "platform-runtime-cpu.json"  # ext4, statfs 0xEF53, flags 0x80000
CUDA = EVIDENCE / "cuda" / "run" / "platform-runtime-cuda.json"  # ext4, recorded before statfs and the flags

Edit = Callable[[dict[str, Any]], None]


def _alone(tmp_path: Path, source: Path, edit: Edit | None = None) -> Path:
    folder = tmp_path / source.parent.name
    folder.mkdir(parents=True)
    shutil.copy2(source, folder / source.name)
    if edit is not None:
        edit_json(folder / source.name, edit)
    return folder


def _fs(drop: tuple[str, ...] = (), **facts: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document["filesystem"].update(facts)
        for key in drop:
            del document["filesystem"][key]
    return edit


def _darwin(document: dict[str, Any]) -> None:
    """The whole platform claim moved to macOS: the system, and a file system as darwin-statfs names one."""
    document["platform"]["system"] = "Darwin"
    _fs(type="apfs", method="darwin-statfs", mount_id=None, mount_options=None, statfs_f_type=None,
        inode_flags=None)(document)


# name: (the edit, what the refusal names)
NOW = {
    # ext2/ext3 share ext4's magic: the inode flags are their only view, so the claim must carry them
    "ext3-flags-deleted": (_fs(("inode_flags",), type="ext3"), "filesystem.inode_flags is missing beside "
                                                                "filesystem.type 'ext3'"),
    "ext2-flags-deleted": (_fs(("inode_flags",), type="ext2"), "filesystem.inode_flags is missing beside "
                                                                "filesystem.type 'ext2'"),
    "ext3-flags-null-magic-deleted": (_fs(("statfs_f_type",), type="ext3", inode_flags=None),
                                      "filesystem.inode_flags is None beside filesystem.type 'ext3' of a x86_64"),
    "ext2-both-views-deleted": (_fs(("inode_flags", "statfs_f_type"), type="ext2"),
                                "filesystem.inode_flags is missing beside filesystem.type 'ext2'"),
    # every Linux view of the type is read on a mountinfo result only: the method moved off it
    "xfs-named-by-darwin-statfs": (_fs(type="xfs", method="darwin-statfs"),
                                   "filesystem.method is 'darwin-statfs', but on platform.system 'Linux'"),
    "btrfs-named-by-windows": (_fs(type="btrfs", method="win32-GetVolumeInformationW"),
                               "filesystem.method is 'win32-GetVolumeInformationW', but on platform.system 'Linux'"),
    "ext3-named-by-no-probe": (_fs(("inode_flags",), type="ext3", method="statvfs"),
                               "filesystem.method is 'statvfs', but on platform.system 'Linux'"),
    "tmpfs-named-by-a-failed-probe": (_fs(type="tmpfs", method="linux-error"),
                                      "filesystem.type is 'tmpfs', but filesystem.method 'linux-error' is a probe"),
    # ... and the system moved with it: the facts left as recorded still say Linux
    "all-darwin": (_darwin, "platform.release is"),
    "drive-type-beside-mountinfo": (_fs(drive_type="fixed"), "filesystem.drive_type is 'fixed': a Windows fact"),
    # the probe derives an NFS version from an nfs type's own options, and records none beside another type
    "nfs-version-beside-ext4": (_fs(nfs_version="4.2"), "filesystem.nfs_version is '4.2' beside filesystem.type"),
}
BEFORE_THE_VIEWS = {
    "ext3": (_fs(type="ext3"), "filesystem.inode_flags is missing beside filesystem.type 'ext3'"),
    "xfs-named-by-darwin-statfs": (_fs(type="xfs", method="darwin-statfs"),
                                   "filesystem.method is 'darwin-statfs', but on platform.system 'Linux'"),
}


def test_the_untouched_results_stay_authentic(tmp_path):
    assert_authentic(*rebuild_and_verify(_alone(tmp_path / "now", RUN_LOCAL)))
    assert_authentic(*rebuild_and_verify_at(_alone(tmp_path / "cuda", CUDA), checkout_of(CUDA_COMMIT)))


@pytest.mark.parametrize("name", sorted(NOW))
def test_a_claim_made_with_its_view_deleted_is_not_authentic(tmp_path, name):
    edit, named = NOW[name]
    assert_refused(*rebuild_and_verify(_alone(tmp_path, RUN_LOCAL, edit)), named)


@pytest.mark.parametrize("name", sorted(BEFORE_THE_VIEWS))
def test_a_claim_edited_into_a_result_recorded_before_its_view_is_not_authentic(tmp_path, name):
    """evidence/cuda's ext4 is judged without the flags (its gate never recorded them); an ext3 in the same
    bytes is a claim nothing in them supports."""
    edit, named = BEFORE_THE_VIEWS[name]
    assert_refused(*rebuild_and_verify_at(_alone(tmp_path, CUDA, edit), checkout_of(CUDA_COMMIT)), named)


@pytest.mark.parametrize("machine, flags, refused", [
    ("x86_64", None, True),  # the gate asks FS_IOC_GETFLAGS there, and ext2/ext3 always answer
    ("ppc64le", None, False),  # the gate does not ask: the type is taken as recorded
    ("x86_64", 0, False),  # a real ext3 directory: no extents
    ("x86_64", 0x80000, True),
])
def test_an_ext3_claim_is_judged_by_the_flags_where_the_gate_asks_for_them(machine, flags, refused):
    result = {"platform": {"machine": machine},
              "filesystem": {"method": "linux-mountinfo-mnt-id", "type": "ext3", "inode_flags": flags}}
    assert bool(fs_magic.extents_problems(result)) is refused, fs_magic.extents_problems(result)


@pytest.mark.parametrize("system, method, fs_type", [
    ("Linux", "linux-mountinfo-st-dev", "ext4"), ("Linux", "linux-mountinfo-unmatched", None),
    ("Linux", "linux-error", None), ("Windows", "win32-GetVolumeInformationW", "ntfs"),
    ("Darwin", "darwin-statfs", "apfs"), ("Darwin", "darwin-error", None), ("FreeBSD", "unsupported-system", None),
    ("Linux", "not-probed", None),
])
def test_each_probe_the_gate_runs_names_the_type_on_its_own_system(system, method, fs_type):
    result = {"platform": {"system": system}, "filesystem": {"method": method, "type": fs_type}}
    assert beside_checks.filesystem_probe(result) == []
