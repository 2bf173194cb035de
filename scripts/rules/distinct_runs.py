"""Each result of one folder is its own run, and its file's name does not say another file system than it ran on.

Two results of a folder with the same bytes, or two gate results with the same workspace (the gate names each
run's workspace with fresh random bytes: rules.gate_parameters' `platform-runtime-<12 hex>`), are one run counted
twice: the copy of a passing run standing where a failed one was. A result whose file name names a file-system
type (`platform-runtime-cpu-btrfs-loop.json`) and passed must have run on that type; the name is what a reader of
the folder sees first. The judge's, not the gate's (not among GATE_SOURCES). Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from common.values import get

# A name's word -> the file-system types it stands for (mountinfo's names; NFS as the gate records it).
FS_WORDS: dict[str, frozenset[str]] = {
    **{name: frozenset({name}) for name in ("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "ntfs", "refs",
                                            "apfs", "vfat", "exfat", "overlay", "fuseblk")},
    "nfs": frozenset({"nfs", "nfs4"}), "nfs4": frozenset({"nfs4"}),
}


def name_problem(name: str, kind: str, document: Any) -> str | None:
    """Why a gate result's file name says another file system than its own facts (None when it does not)."""
    # Only a pass is held to its name: the nfs job writes platform-runtime-nfs.json even when its mount failed,
    # and that honest failure (--require nfs not held) must stay authentic.
    if kind != "gate" or not isinstance(document, dict) or document.get("ok") is not True:
        return None
    stem = name.rsplit("/", 1)[-1].removesuffix(".json")
    named = [word for word in re.split(r"[-_.]", stem.lower()) if word in FS_WORDS]
    actual = get(document, "filesystem.type")
    for word in named:
        if actual not in FS_WORDS[word]:
            return f"{name} names the file system {word!r}, its filesystem.type is {actual!r}"
    return None


def copy_problems(results: Sequence[tuple[str, str, str, Any]]) -> list[list[str]]:
    """For each (name, kind, sha256, document): why it is a copy of another result of the same folder."""
    found: list[list[str]] = [[] for _ in results]
    by_bytes: dict[str, list[int]] = {}
    by_workspace: dict[str, list[int]] = {}
    for index, (_name, kind, sha256, document) in enumerate(results):
        by_bytes.setdefault(sha256, []).append(index)
        workspace = get(document, "workspace_cleanup.workspace") if kind == "gate" else None
        if isinstance(workspace, str) and workspace:
            by_workspace.setdefault(workspace, []).append(index)
    for what, groups in (("the same bytes as", by_bytes), ("the same workspace as", by_workspace)):
        for members in groups.values():
            for index in members if len(members) > 1 else []:
                others = ", ".join(results[i][0] for i in members if i != index)
                found[index].append(f"{results[index][0]} has {what} {others}: one run counted twice")
    return found
