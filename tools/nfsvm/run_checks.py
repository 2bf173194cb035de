"""Judge what one VM run wrote: every promise of the NFS job as a named check that can fail."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared core, when run from tools/
from core.contract import judge as judge_document  # noqa: E402
from core.contract import parse_strict  # noqa: E402
from core.harness_judge import harness_gate_problems  # noqa: E402
from core.rename_race import judge_rename_race  # noqa: E402
from core.vm_judge import (  # noqa: E402
    judge_busy_rename,
    judge_busy_unmount,
    judge_server_gone,
    judge_server_restart,
    judge_two_clients,
)

from nfsvm.vm import POWER_DOWN, signal_name  # noqa: E402


def load(folder: Path, name: str) -> dict | None:
    try:
        value = parse_strict((folder / name).read_bytes())  # the one strict reader: no duplicate key, no NaN
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def gate_check(gate: dict | None) -> tuple[bool, str]:
    """The one judge (core.contract), which re-derives every check and the nfs requirement from the facts."""
    if gate is None:
        return False, "no gate result"
    judgement = judge_document(gate, "gate")
    fs = gate.get("filesystem") or {}
    nfs_asked = "nfs" in ((gate.get("arguments") or {}).get("require") or [])
    ok = judgement.ok and nfs_asked
    detail = (f"ok={gate.get('ok')} exit {gate.get('exit_code')}, fs {fs.get('type')} v{fs.get('nfs_version')}, "
              f"require nfs asked={nfs_asked}, judged {'pass' if judgement.ok else 'FAIL'}"
              + (f": {'; '.join(judgement.reasons[:3])}" if judgement.reasons else ""))
    return ok, detail


def harness_check(record: dict | None, setup: dict | None, gate: dict | None = None) -> tuple[bool, str]:
    """The record judged by its facts (core.harness_judge), and naming the workspace its gate retained."""
    if record is None:
        return False, "no harness record"
    judgement = judge_document(record, "nfs-harness")
    package = (setup or {}).get("package") or {}
    across = harness_gate_problems(record, gate) if isinstance(gate, dict) else ["no gate result to compare with"]
    ok = judgement.ok and not across and package.get("install") == "skipped: already installed"
    return ok, (f"ok={record.get('ok')}, unmounted {record.get('unmounted')}, server stopped "
                f"{record.get('server_stopped')}, export-side delete verified {record.get('cleanup_verified')}; "
                f"package {package.get('install')} ({package.get('version')}); problems {record.get('problems')}"
                + "".join(f"; {why}" for why in [*judgement.reasons, *across][:3]))


def judged_check(document: dict | None, found: tuple[list[str], list[str]] | None, describe) -> tuple[bool, str]:
    """A phase record judged by its facts (core.vm_judge), never by its own `ok`."""
    if document is None or found is None:
        return False, "the phase wrote no result"
    reasons, forged = found
    said = [str(document["reason"])] if document.get("reason") else []  # the phase's own words first
    return not reasons and not forged, "; ".join(said + [*(f"not authentic: {f}" for f in forged), *reasons][:3]
                                               + [describe(document)])


def server_restart_check(folder: Path) -> tuple[bool, str]:
    """The restart record, with the gate result and the teardown's harness record the phase copied beside it."""
    report = load(folder, "server-restart.json")
    found = None if report is None else judge_server_restart(report, load(folder, "platform-runtime-nfs.json"),
                                                             load(folder, "nfs-harness.json"))
    return judged_check(report, found, describe_restart)


def server_gone_check(folder: Path) -> tuple[bool, str]:
    """The record, with the gate result and the teardown's harness record the phase copied beside it."""
    report = load(folder, "server-gone.json")
    found = None if report is None else judge_server_gone(report, load(folder, "platform-runtime-nfs.json"),
                                                          load(folder, "nfs-harness.json"))
    return judged_check(report, found, describe_gone)


def busy_unmount_check(report: dict | None) -> tuple[bool, str]:
    return judged_check(report, None if report is None else judge_busy_unmount(report), describe_busy)


def busy_rename_check(report: dict | None) -> tuple[bool, str]:
    return judged_check(report, None if report is None else judge_busy_rename(report), describe_busy_rename)


def rename_race_check(report: dict | None) -> tuple[bool, str]:
    """The experiment's record: its summaries and verdict made again from the clients' counts."""
    return judged_check(report, None if report is None else judge_rename_race(report), describe_rename_race)


def describe_rename_race(doc: dict) -> str:
    verdict = doc.get("verdict") or {}
    return (f"ETXTBSY per condition {verdict.get('etxtbsy')}; local control clean {verdict.get('control_clean')}; "
            f"ETXTBSY without a silly rename started {verdict.get('etxtbsy_without_sillyrename')}; kernel "
            f"warnings {len(doc.get('kernel_warnings') or [])}")


def two_clients_check(document: dict | None) -> tuple[bool, str]:
    """Each variant's verdict re-derived from its counts (core.vm_judge), never its recorded `pass`."""
    return judged_check(document, None if document is None else judge_two_clients(document), describe_two_clients)


def error_files(out: Path) -> list[str]:
    """What the guest wrote when it or a phase raised: the file's name and the exception's last line."""
    found = []
    for path in sorted(out.glob("*-error.txt")):
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        found.append(f"{path.name}: {lines[-1] if lines else '(empty)'}")
    return found


def vm_problems(boot: dict) -> list[str]:
    """Why the VM did not run to its own power-off (empty: it did), from how qemu ended (vm.run_until_exit).
    qemu exits 0 on a host's SIGTERM/SIGINT/SIGHUP and after a panic too: exit 0 alone proves nothing."""
    problems = []
    code = boot.get("qemu_exit_code")
    if boot.get("timed_out") is not False:
        problems.append(f"killed at the wall-clock limit of {boot.get('limit_seconds')} s (timed out "
                        f"{boot.get('timed_out')})")
    if isinstance(code, int) and not isinstance(code, bool) and code < 0:
        problems.append(f"qemu was killed by {signal_name(-code)} (exit status {code})")
    elif code != 0:
        problems.append(f"qemu exited {code}")
    host = boot.get("host_signal")
    if host is not None:
        number = host.get("number") if isinstance(host, dict) else None
        named = signal_name(number) if isinstance(number, int) else repr(number)
        problems.append(f"qemu ended on the host's {named} (signal {number}, sent by {host.get('sender')}) with "
                        f"exit status {code}: the guest did not power off by itself"
                        if isinstance(host, dict) else f"qemu ended on a host signal: {host!r}")
    if boot.get("guest_powered_off") is not True:
        problems.append(f"the guest never powered itself off (no {POWER_DOWN!r} on its console)")
    return problems


def vm_check(out: Path, boot: dict) -> dict:
    """The VM ran to its own power-off, within its limit, and neither the guest nor a phase raised."""
    errors = error_files(out)
    problems = vm_problems(boot)
    detail = f"qemu exit {boot.get('qemu_exit_code')}, timed out {boot.get('timed_out')}, {boot.get('wall_seconds')} s"
    return {"name": "vm", "ok": not problems and not errors,
            "detail": detail + "".join(f"; {p}" for p in problems) + "".join(f"; {e}"[:300] for e in errors)}


def describe_two_clients(doc: dict) -> str:
    parts = []
    for kind, run in (doc.get("variants") or {}).items():
        v = run.get("verdict", {})
        if not v.get("pass"):
            parts.append(f"{kind} FAILED" + "".join(f" ({why})" for why in v.get("failed_tasks", [])[:3]))
        if kind == "replace":
            parts.append(f"replace: {v.get('reads')} reads, {v.get('partial_reads')} torn, "
                         f"{v.get('missing_reads')} missing, {v.get('distinct_versions_seen')} versions, final "
                         f"{v.get('final_version')}, tasks exited 0 {v.get('tasks_exited_0')}, "
                         f"busy renames retried {v.get('writer_busy_rename_retries')}")
        else:
            parts.append(f"{kind}: {v.get('valid_records')}/{v.get('expected_records')} records, "
                         f"{v.get('missing')} lost, {v.get('duplicated')} dup, {v.get('corrupt_lines')} torn"
                         + (f", caught={v.get('caught_by_checker')}" if kind == "unlocked" else "")
                         + f" in {run.get('seconds')} s")
    return "; ".join(parts) or str(doc.get("reason"))


def describe_restart(doc: dict) -> str:
    gate = doc.get("gate") or {}
    return (f"gate {gate.get('outcome')} (exit {gate.get('exit_code')}) in {gate.get('elapsed_seconds')} s "
            f"of {gate.get('gate_timeout')} s, restart at "
            f"+{(doc.get('restart') or {}).get('seconds_after_gate_start')} s;"
            f" teardown exit {(doc.get('teardown') or {}).get('exit_code')}")


def describe_busy(doc: dict) -> str:
    busy, free = doc.get("busy") or {}, doc.get("free") or {}
    return (f"busy: exit {busy.get('exit_code')}, unmounted {busy.get('unmounted')}, export kept "
            f"{busy.get('export_kept')}; free: exit {free.get('exit_code')}, "
            f"workspace gone {free.get('workspace_absent')}")


def describe_busy_rename(doc: dict) -> str:
    v = doc.get("verdict") or {}
    return (f"gate replace check on one client: {v.get('passed')}/{v.get('rounds')} rounds passed, busy renames "
            f"retried per round {v.get('busy_rename_retries')} (ETXTBSY met: {v.get('met_etxtbsy')})")


def describe_gone(doc: dict) -> str:
    v = doc.get("verdict") or {}
    return (f"server stopped at +{(doc.get('stop') or {}).get('seconds_after_gate_start')} s; gate exit "
            f"{v.get('gate_exit_code')} {doc.get('seconds_from_stop_to_gate_exit')} s after the stop "
            f"({v.get('gate_seconds')} s of --timeout {v.get('gate_timeout')}), abandoned named "
            f"{v.get('abandoned_named')}, D after exit {[s.get('pid') for s in v.get('stuck_after_gate') or []]}, "
            f"blocked in D at the deadline: {v.get('checks_blocked_at_deadline')}; "
            f"teardown exit {v.get('teardown_exit_code')} in {v.get('teardown_seconds')} s, detached "
            f"{v.get('teardown_detached')}, export left alone {v.get('export_left_alone')}")


def install_check(doc: dict | None) -> tuple[bool, str]:
    """Recomputed from the recorded facts (postinst.judge_install), never from the phase's own ok."""
    from nfsvm.postinst import judge_install

    if doc is None:
        return False, "the install phase wrote no result"
    problems = judge_install(doc)
    units = doc.get("units") or {}
    detail = (f"dpkg -i exit {doc.get('dpkg_exit_code')} in {doc.get('seconds')} s, nfs-kernel-server "
              f"{doc.get('nfs_kernel_server')}, PID 1 {doc.get('pid1')}; after the postinst: nfs-server "
              f"{units.get('nfs-server.service')}, nfs-mountd {units.get('nfs-mountd.service')}, nfsd threads "
              f"{doc.get('nfsd_threads')}, grace {doc.get('nfsv4gracetime')} s")
    return not problems, detail + "".join(f"; {p}" for p in problems)


def takeover_check(setup: dict | None, steps: dict | None) -> tuple[bool, str]:
    """systemd VM: the harness stopped the units the postinst started, and they stayed stopped through the
    gate (the harness's own rpc.mountd and nfsd served it), from the setup record and the guest's reading."""
    stopped = (setup or {}).get("packaged_units_after_stop")
    after_gate = (steps or {}).get("packaged_units_after_gate")
    problems = []
    for when, states in (("after the harness's stop", stopped), ("after the gate", after_gate)):
        if not isinstance(states, dict) or not states:
            problems.append(f"no unit states {when}")
        else:
            problems += [f"{unit} {state!r} {when}" for unit, state in sorted(states.items())
                         if state not in ("inactive", "failed")]
    detail = (f"packaged units after the harness's stop {stopped}, after the gate {after_gate}; harness rpc.mountd "
              f"pid {(setup or {}).get('mountd_pid')}, nfsd {(setup or {}).get('nfsd_versions')}")
    return not problems, detail + "".join(f"; {p}" for p in problems)


def judge(out: Path, boot: dict, phases: list[str]) -> list[dict]:
    checks = [vm_check(out, boot)]
    table = {
        "action": [("gate", lambda: gate_check(load(out / "action", "platform-runtime-nfs.json"))),
                   ("harness", lambda: harness_check(load(out / "action", "nfs-harness.json"),
                                                     load(out / "action", "nfs-harness-setup.json"),
                                                     load(out / "action", "platform-runtime-nfs.json")))],
        "two_clients": [("two_clients", lambda: two_clients_check(load(out / "two_clients", "two-clients.json")))],
        "server_restart": [("server_restart", lambda: server_restart_check(out / "server_restart"))],
        "busy_unmount": [("busy_unmount", lambda: busy_unmount_check(load(out / "busy_unmount", "busy-unmount.json")))],
        "server_gone": [("server_gone", lambda: server_gone_check(out / "server_gone"))],
        "busy_rename": [("busy_rename", lambda: busy_rename_check(load(out / "busy_rename", "busy-rename.json")))],
        "rename_race": [("rename_race", lambda: rename_race_check(load(out / "rename_race", "rename-race.json")))],
        "install": [("install", lambda: install_check(load(out / "install", "install.json")))],
    }
    for phase in phases:
        for name, run in table[phase]:
            ok, detail = run()
            if phase == "action" and not ok and (load(out / "action", "steps.json") or {}).get("reason"):
                detail += f"; {load(out / 'action', 'steps.json')['reason']}"
            checks.append({"name": name, "ok": ok, "detail": detail})
    if "install" in phases and "action" in phases:  # the systemd VM: what the harness did to the postinst's units
        ok, detail = takeover_check(load(out / "action", "nfs-harness-setup.json"), load(out / "action", "steps.json"))
        checks.append({"name": "takeover", "ok": ok, "detail": detail})
    return checks
