"""The judge's rule for an NFS harness record (scripts/steps/nfs_harness.py teardown): every flag it records
re-derived from the facts beside it, and a pass only when the share was unmounted, the server stopped and the
gate's retained workspace was deleted on the export side and verified gone. Answers (reasons, forged).
Which gate result it belongs to (and whether it names that gate's workspace) is a cross-file fact, checked by
the evidence index (scripts/evidence_index/crossfile.py)."""

from __future__ import annotations

from typing import Any

from common.values import is_int, obj, whole_in


def derived_flags(document: dict[str, Any]) -> dict[str, Any]:
    """{field: the value its facts give} for every flag the record derives."""
    delete, unmount, server = (obj(document, k) for k in ("export_side_delete", "unmount", "server"))
    # As scripts/steps/nfs_teardown.unmount decides it: gone from mountinfo, and not by detaching a mount whose
    # umount hung (a dead server's share is detached, never unmounted).
    # Its umount attempts were busy retries until the last one, which unmounted it: exit 0. None runs only when
    # the share was already gone before the first attempt, never after a setup that mounted it (its `mount`, read
    # from mountinfo): nothing between the two unmounts it ("unmounted" with no umount made is refused).
    codes = unmount.get("umount_exit_codes")
    mounted = bool(obj(obj(document, "setup"), "mount"))
    umounted = (isinstance(codes, list) and all(is_int(c) for c in codes)
                and (codes[-1] == 0 if codes else not mounted))
    flags: dict[str, Any] = {"unmount.unmounted": ("still_mounted_as" in unmount and unmount["still_mounted_as"] is None
                                                   and unmount.get("hung") is not True
                                                   and unmount.get("detached") is None and umounted)}
    flags["unmounted"] = flags["unmount.unmounted"]
    if server:
        flags["server.stopped"] = (whole_in(server.get("rpc_nfsd_0_exit"), 0, 0)
                                   and server.get("nfsd_threads_after") == "0" and server.get("mountd_stopped") is True)
    flags["server_stopped"] = bool(server) and flags.get("server.stopped") is True
    if delete:
        flags["export_side_delete.verified"] = delete.get("absent_after") is True and delete.get("nfs_leftovers") == []
        flags["export_side_delete.deleted"] = (delete.get("existed_on_export") is True
                                               and delete.get("absent_after") is True)
    flags["cleanup_verified"] = bool(delete) and flags.get("export_side_delete.verified") is True
    return flags


NFS_MOUNT_TYPES = ("nfs", "nfs4")


def setup_problems(setup: dict[str, Any]) -> list[str]:
    """What a setup that succeeded recorded (scripts/steps/nfs_harness.py setup: each step writes its fact, and
    `ok` only after the last): the grace time it wrote (5-90 s, the step's own bound) and read back, the
    rpc.mountd it started (a pid), nfsd's threads and versions read from /proc/fs/nfsd, and the nfs mount that
    mountinfo then showed. A setup without them did not get that far; one with an `error` failed."""
    p = "setup"
    mount = obj(setup, "mount")
    versions = setup.get("nfsd_versions")
    threads = setup.get("nfsd_threads")
    wanted = [
        (setup.get("error") is None, f"{p}.error is {str(setup.get('error'))[:120]!r}"),
        (whole_in(setup.get("grace_seconds"), 5, 90), f"{p}.grace_seconds is {setup.get('grace_seconds')!r}, the "
                                                    "setup writes 5-90"),
        (whole_in(setup.get("mountd_pid"), 2), f"{p}.mountd_pid is {setup.get('mountd_pid')!r}: no rpc.mountd started"),
        (isinstance(threads, str) and threads.isdigit() and int(threads) > 0,
         f"{p}.nfsd_threads is {threads!r}: nfsd runs no thread"),
        (isinstance(versions, str) and any(w.startswith("+4") for w in versions.split()),
         f"{p}.nfsd_versions is {versions!r}: the server enables no NFSv4"),
        (mount.get("fstype") in NFS_MOUNT_TYPES and isinstance(mount.get("source"), str) and bool(mount["source"]),
         f"{p}.mount is {setup.get('mount')!r}: no nfs mount was made"),
        (isinstance(obj(setup, "package").get("version"), str), f"{p}.package is {setup.get('package')!r}"),
    ]
    return [why for held, why in wanted if not held]


def judge_setup(setup: dict[str, Any]) -> tuple[list[str], list[str]]:
    """nfs-harness-setup.json (the setup's state file) by its facts: its `ok` is theirs."""
    reasons = setup_problems(setup)
    forged = []
    if setup.get("ok") is True and reasons:
        forged.append(f"setup.ok is recorded True, its facts say False ({reasons[0]})")
    elif setup.get("ok") is not True:
        reasons.append(f"setup.ok is {setup.get('ok')!r}")
    return reasons, forged


def _recorded(document: dict[str, Any], path: str) -> tuple[bool, Any]:
    holder: Any = document
    *parents, key = path.split(".")
    for part in parents:
        holder = holder.get(part) if isinstance(holder, dict) else None
    return (isinstance(holder, dict) and key in holder), (holder.get(key) if isinstance(holder, dict) else None)


def judge_nfs_harness(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Every flag the record derives (`unmounted`, `server_stopped`, `export_side_delete.verified` / `deleted`,
    `cleanup_verified`) made again from the facts beside it (derived_flags); a pass needs the export-side delete
    verified, `gate_workspace_status` retained and no problems. Its gate result beside it and its file name are
    the index's ("harness.gate", "harness.scenario")."""
    flags = derived_flags(document)
    forged = []
    for path, value in flags.items():
        present, recorded = _recorded(document, path)
        if present and recorded != value:
            forged.append(f"{path} is recorded {recorded!r}, its facts say {value!r}")
    delete = obj(document, "export_side_delete")
    wanted = [
        (flags["unmounted"], f"unmount.still_mounted_as is {obj(document, 'unmount').get('still_mounted_as')!r}: "
                             "the share was not unmounted"),
        (flags["server_stopped"], f"server is {document.get('server')!r}: the NFS server was not stopped"),
        (document.get("gate_workspace_status") == "retained",
         f"gate_workspace_status is {document.get('gate_workspace_status')!r}, a pass needs 'retained'"),
        (delete.get("existed_on_export") is True, f"export_side_delete.existed_on_export is "
                                                  f"{delete.get('existed_on_export')!r}: nothing was deleted"),
        (flags["cleanup_verified"], f"export_side_delete is {document.get('export_side_delete')!r}: the retained "
                                    "workspace was not verified gone from the export"),
        (delete.get("error") is None, f"export_side_delete.error is {delete.get('error')!r}"),
        (document.get("problems") == [], f"problems is {document.get('problems')!r}"),
    ]
    reasons = [why for held, why in wanted if not held]
    setup_reasons, setup_forged = judge_setup(obj(document, "setup"))
    reasons += setup_reasons
    forged += setup_forged
    if document.get("ok") is True and reasons:
        forged.append(f"ok is recorded True, its facts say False ({reasons[0]})")
    elif document.get("ok") is not True:
        reasons.append(f"ok is {document.get('ok')!r}, a pass needs True")
    return reasons, forged


def _enabled_on_server(versions: str, version: str) -> bool:
    """Whether /proc/fs/nfsd/versions (`-3 +4 +4.1 +4.2`) enables `version` (4.0 is listed as +4)."""
    enabled = {word[1:] for word in versions.split() if word.startswith("+")}
    return version in enabled or (version.endswith(".0") and version[:-2] in enabled)


def mount_problems(harness: dict[str, Any], gate: dict[str, Any]) -> list[str]:
    """The share the harness mounted is the file system the gate measured: the type mountinfo gave the harness
    (setup.mount.fstype) is the gate's filesystem.type, the version the harness mounted (nfs_version) the
    gate's, and the server the harness started enables that version (setup.nfsd_versions). Each is required: a
    record without one has nothing to compare (so deleting them must not skip the rule). The harness records
    no mount options, so there are none to compare."""
    setup, fs = obj(harness, "setup"), obj(gate, "filesystem")
    problems = []
    fstype = obj(setup, "mount").get("fstype")
    if fstype != fs.get("type"):
        problems.append(f"setup.mount.fstype is {fstype!r} (the NFS harness's record), the gate's filesystem.type is "
                        f"{fs.get('type')!r}")
    version = harness.get("nfs_version")
    if version != fs.get("nfs_version"):
        problems.append(f"nfs_version is {version!r} (the NFS harness's record), the gate's filesystem.nfs_version "
                        f"is {fs.get('nfs_version')!r}")
    versions = setup.get("nfsd_versions")
    if not isinstance(versions, str) or not _enabled_on_server(versions, str(fs.get("nfs_version"))):
        problems.append(f"setup.nfsd_versions is {versions!r} (the server the NFS harness started), which does not "
                        f"enable the gate's filesystem.nfs_version {fs.get('nfs_version')!r}")
    return problems


def harness_gate_problems(harness: dict[str, Any], gate: dict[str, Any]) -> list[str]:
    """The workspace the harness deleted on the export is the one its gate retained, with the status the gate
    recorded, on the mount the harness made (mount_problems): a cross-file fact, the evidence index and the NFS
    VM's verdict both call this."""
    cleanup, delete = obj(gate, "workspace_cleanup"), obj(harness, "export_side_delete")
    problems = mount_problems(harness, gate)
    if delete.get("workspace") != cleanup.get("workspace"):
        problems.append(f"export_side_delete.workspace is {delete.get('workspace')!r}, the gate's "
                        f"workspace_cleanup.workspace is {cleanup.get('workspace')!r}")
    if harness.get("gate_workspace_status") != cleanup.get("status"):
        problems.append(f"gate_workspace_status is {harness.get('gate_workspace_status')!r}, the gate's "
                        f"workspace_cleanup.status is {cleanup.get('status')!r}")
    return problems



HARNESS_NAME = "nfs-harness.json"
ACTION_SCENARIO = "action"


# A live VM run's folder (tools/nfsvm) keeps each phase's harness record as <phase>/nfs-harness.json: the folder
# names the scenario there (rules.nfs_vm_run.EVIDENCE_NAMES flattens them to <scenario>-nfs-harness.json).
PHASE_FOLDERS = {"action": ACTION_SCENARIO, "server_restart": "server-restart", "server_gone": "server-gone"}


def scenario_of_name(name: str) -> str | None:
    """The scenario a harness record's file name says: nfs-harness.json the action's, <scenario>-nfs-harness.json
    a VM scenario's (tools/nfsvm/evidence.py names them so), <phase>/nfs-harness.json in a live VM run's folder
    that phase's; None for a name of neither form."""
    parts = name.rsplit("/", 2)
    base = parts[-1]
    if base == HARNESS_NAME:
        return PHASE_FOLDERS.get(parts[-2], ACTION_SCENARIO) if len(parts) > 1 else ACTION_SCENARIO
    prefix = base[:-len(HARNESS_NAME)] if base.endswith("-" + HARNESS_NAME) else ""
    return prefix[:-1] or None


def scenario_problems(name: str, harness: dict[str, Any]) -> list[str]:
    """A record names its scenario (`scenario`, written from the teardown's --scenario, which it requires) and lies
    under a file name of that scenario: the server-restart scenario's record and its gate cannot stand as the
    action's run. A record without one cannot be told from another scenario's, and is refused (every committed
    record names it: evidence/nfs and evidence/nfs-systemd were recorded with it)."""
    recorded, named = harness.get("scenario"), scenario_of_name(name)
    if not isinstance(recorded, str) or not recorded:
        return [f"scenario is {recorded!r}: a harness record names the run its teardown ended (action, server-restart"
                f", ...), so its file name {name.rsplit('/', 1)[-1]} can be held to it"]
    if named is None or recorded == named:
        return []
    return [f"scenario is {recorded!r}, but its file name {name.rsplit('/', 1)[-1]} is the {named!r} run's "
            f"(nfs-harness.json is the action's, <scenario>-nfs-harness.json a scenario's)"]
