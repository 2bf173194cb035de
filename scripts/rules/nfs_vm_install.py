"""The install phase of the systemd VM (tools/nfsvm/postinst.py): nfs-kernel-server's postinst, as apt-get install
runs it on a runner, judged by the facts the phase records (the phase calls judge_install for its own verdict).
Stdlib only."""

from __future__ import annotations

from typing import Any

from common.values import is_int

INSTALL_UNITS = ("nfs-server.service", "nfs-mountd.service", "nfsdcld.service", "nfs-idmapd.service",
                 "rpc-statd.service", "rpcbind.service", "rpcbind.socket", "proc-fs-nfsd.mount")


def judge_install(result: dict[str, Any]) -> list[str]:
    """Why the runner's state after `apt-get install nfs-kernel-server` was NOT reproduced (empty: it was).
    tools/nfsvm/postinst.py records these facts and this verdict; the host's judge makes it again."""
    problems = []
    code, killed = result.get("dpkg_exit_code"), result.get("dpkg_killed")
    if not is_int(code, 0):
        problems.append(f"dpkg -i exited {code!r}" + (f" (killed: {killed})" if killed else ""))
    elif killed is not None:  # postinst.watched: a killed dpkg has no exit code, only why it was killed
        problems.append(f"dpkg_killed is {killed!r} beside dpkg -i's exit 0: a killed dpkg has no exit code")
    version = result.get("nfs_kernel_server")
    if not (isinstance(version, str) and version):
        problems.append("nfs-kernel-server is not installed after dpkg -i")
    units = result.get("units") if isinstance(result.get("units"), dict) else {}
    problems += [f"{unit} is {units.get(unit)!r} after the postinst, not active: the runner's situation was not "
                 "reproduced" for unit in INSTALL_UNITS if units.get(unit) != "active"]
    threads = result.get("nfsd_threads")
    if not (isinstance(threads, str) and threads.isdigit() and int(threads) > 0):
        problems.append(f"/proc/fs/nfsd/threads reads {threads!r}: no nfsd started by the package")
    grace = result.get("nfsv4gracetime")
    if not (isinstance(grace, str) and grace.isdigit() and int(grace) > 0):
        problems.append(f"/proc/fs/nfsd/nfsv4gracetime reads {grace!r}: no NFSv4 grace time set")
    silence, seconds = result.get("dpkg_longest_silence_seconds"), result.get("seconds")
    if not (isinstance(silence, (int, float)) and isinstance(seconds, (int, float)) and not isinstance(silence, bool)
            and not isinstance(seconds, bool) and 0 <= silence <= seconds + 0.2):
        problems.append(f"dpkg_longest_silence_seconds is {silence!r} of the phase's {seconds!r} s: dpkg -i was not "
                        "timed")
    mountd = result.get("rpc_mountd_pids")
    if not (is_int(mountd) and mountd >= 1):
        problems.append(f"rpc_mountd_pids is {mountd!r}: the package's nfs-mountd runs no rpc.mountd")
    if result.get("pid1") != "systemd":
        problems.append(f"pid1 is {result.get('pid1')!r}: the postinst ran without systemd as PID 1")
    debs = result.get("debs")
    if not (isinstance(debs, list) and debs and all(isinstance(d, str) and d.endswith(".deb") for d in debs)):
        problems.append(f"debs is {str(debs)[:80]}: no .deb was installed")
    elif not any(d.startswith("nfs-kernel-server_") and deb_version(d) == version for d in debs):
        problems.append(f"debs holds no nfs-kernel-server .deb of the installed version {version!r}")
    return problems


def deb_version(name: str) -> str:
    """The version in a .deb's file name (package_version_arch.deb, the epoch's ':' written %3a)."""
    parts = name[:-len(".deb")].split("_")
    return parts[1].replace("%3a", ":") if len(parts) == 3 else ""


def judge_install_record(result: dict[str, Any], image: dict[str, Any] | None = None) -> tuple[list[str], list[str]]:
    """install.json by its facts (judge_install): its `ok` and `problems` are theirs, both required (an
    `ok` false under facts that pass, or problems deleted, is an edit). With the image's manifest, the .debs
    installed are the ones the image carries (its offline_debs)."""
    problems = judge_install(result)
    reasons, forged = list(problems), []
    recorded = result.get("problems")
    if not (isinstance(recorded, list) and all(isinstance(p, str) and p.strip() for p in recorded)):
        reasons.append(f"problems is {str(recorded)[:80]}, not a list of reasons")
    elif bool(recorded) != bool(problems):
        forged.append(f"problems is recorded {str(recorded)[:120]}, its facts say {str(problems)[:120]}")
    if result.get("ok") is not (not problems):
        forged.append(f"ok is recorded {result.get('ok')!r}, its facts say {not problems}"
                      + (f" ({problems[0]})" if problems else ""))
    if image is not None:
        offline = image.get("offline_debs") if isinstance(image.get("offline_debs"), dict) else {}
        carried = sorted(str(d.get("file")) for d in offline.values() if isinstance(d, dict))
        debs = result.get("debs") if isinstance(result.get("debs"), list) else []
        if result.get("debs") != carried:
            reasons.append(f"debs are not the .debs the image carries (nfsvm-image.json offline_debs): missing "
                           f"{sorted(set(carried) - set(map(str, debs)))[:3]}, not carried "
                           f"{sorted(set(map(str, debs)) - set(carried))[:3]}")
    return reasons, forged
