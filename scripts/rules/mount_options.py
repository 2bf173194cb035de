"""Whether a Linux mount's recorded type agrees with its own options, as mountinfo shows them: some options
are shown only by one file system's driver (xfs's logbufs=, btrfs's space_cache=, ext4's data=, NFS's vers=,
tmpfs's size=), so a result whose `filesystem.type` was edited while its options stayed is refused. Options
every driver may show (rw, relatime, discard, ...) say nothing, so a mount that shows only those (a bare
`rw,relatime` ext4 loop mount) cannot be told from another type by this rule. Stdlib only.
"""

from __future__ import annotations

from typing import Any

EXT = frozenset({"ext2", "ext3", "ext4"})
MEMORY = frozenset({"tmpfs", "devtmpfs", "hugetlbfs"})
NFS = frozenset({"nfs", "nfs4"})
SMB = frozenset({"cifs", "smb3"})  # the SMB client shows vers=, sec=, rsize=, wsize=, addr= too (fs/smb/client)
# option key -> the types whose drivers show it (fs/xfs/xfs_super.c, fs/btrfs/super.c, fs/ext4/super.c,
# mm/shmem.c, fs/hugetlbfs, fs/nfs/super.c, fs/smb/client/cifsfs.c show_options).
OPTION_TYPES: dict[str, frozenset[str]] = {
    **{key: frozenset({"xfs"}) for key in ("logbufs", "logbsize", "allocsize", "largeio", "swalloc", "sunit",
                                           "swidth", "attr2", "noattr2")},
    **{key: frozenset({"xfs", "tmpfs"}) for key in ("inode64", "inode32")},  # tmpfs shows them since 5.9
    **{key: frozenset({"btrfs"}) for key in ("space_cache", "subvolid", "subvol", "ssd", "nossd", "ssd_spread",
                                             "compress-force", "autodefrag", "skip_balance",
                                             "user_subvol_rm_allowed", "clear_cache", "rescue")},
    **{key: EXT for key in ("data", "stripe", "delalloc", "nodelalloc", "journal_checksum", "journal_async_commit",
                            "dioread_nolock", "init_itable", "noinit_itable", "noauto_da_alloc", "journal_ioprio")},
    **{key: MEMORY for key in ("size", "nr_inodes", "nr_blocks", "mpol", "huge")},
    **{key: NFS | SMB for key in ("vers", "sec", "rsize", "wsize", "addr")},
    **{key: NFS for key in ("nfsvers", "proto", "clientaddr", "mountaddr", "mountvers", "mountproto", "namlen",
                            "timeo", "retrans", "acregmin", "local_lock")},
}


def option_keys(fs: dict[str, Any]) -> list[str]:
    options = fs.get("mount_options")
    return [str(option).partition("=")[0] for option in options] if isinstance(options, list) else []


def type_problems(fs: Any) -> list[str]:
    """Why the recorded mount options refute the recorded type (Linux mountinfo results only); empty otherwise."""
    if not isinstance(fs, dict) or not str(fs.get("method") or "").startswith("linux-mountinfo"):
        return []
    fs_type, keys = fs.get("type"), option_keys(fs)
    if not isinstance(fs_type, str):  # the schema refuses it; this rule must not raise on it
        return [f"filesystem.type is {fs_type!r}, not a file-system type"]
    problems = []
    for key in dict.fromkeys(keys):
        allowed = OPTION_TYPES.get(key)
        if allowed is not None and fs_type not in allowed:
            problems.append(f"filesystem.mount_options show {key} (shown only by {'/'.join(sorted(allowed))}), "
                            f"but filesystem.type is {fs_type!r}")
    if fs_type in NFS and not {"vers", "nfsvers"} & set(keys):
        problems.append(f"filesystem.type is {fs_type!r}, but its mount options name no vers= (every NFS mount "
                        "shows it)")
    return problems
