"""The NFS VM run (tools/nfsvm): every check of nfs-vm-run.json made again from the records it judged.

One rule, two callers: tools/nfsvm/run_checks.py judges a live run's output folder with it, and the evidence
index judges a recorded run with it from the bound bytes (a committed folder such as evidence/nfs, where
tools/nfsvm/evidence.py flattened the names, or a whole output folder). A recorded check whose `ok` its
records contradict, a check its phases do not give, a check missing, or a run `ok` its checks contradict,
is not authentic. Records are reached through `load(path)`, the path a live run writes (action/..., two_clients/
...): the caller maps it to the bytes it has. Stdlib only.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from core.git_provenance import git_state_problems  # the gate's own rule for a source.git
from core.rename_race import judge_rename_race
from core.vm_image_judge import image_problems, run_fields_problems, run_image_problems, versions_problems
from core.vm_judge import (
    is_int,
    judge_busy_rename,
    judge_busy_unmount,
    judge_install_record,
    judge_server_gone,
    judge_server_restart,
    judge_two_clients,
)

Load = Callable[[str], "dict[str, Any] | None"]
Check = tuple[bool, str]

RUN_SCHEMA_ID = "kernodeck.nfsvm-run/v1"
# The guest kernel's last line when it powers itself off (sysrq 'o' or poweroff: kernel/reboot.c,
# kernel_power_off's pr_emerg("Power down") under pr_fmt "reboot: "). A panic (panic=1 with -no-reboot)
# or a host signal also ends qemu with exit 0, but never with this line.
POWER_DOWN = "reboot: Power down"
# A live run's path of each record -> its name in a recorded evidence folder (tools/nfsvm/evidence.py copies
# them flat, with these names). One table, read by the recorder and by the index.
EVIDENCE_NAMES = {
    "action/platform-runtime-nfs.json": "platform-runtime-nfs.json",
    "action/nfs-harness.json": "nfs-harness.json",
    "action/nfs-harness-setup.json": "nfs-harness-setup.json",
    "action/steps.json": "action-steps.json",
    "two_clients/two-clients.json": "two-clients.json",
    "server_restart/server-restart.json": "server-restart.json",
    "server_restart/platform-runtime-nfs.json": "server-restart-gate.json",
    "server_restart/nfs-harness.json": "server-restart-nfs-harness.json",
    "busy_unmount/busy-unmount.json": "busy-unmount.json",
    "server_gone/server-gone.json": "server-gone.json",
    "server_gone/platform-runtime-nfs.json": "server-gone-gate.json",
    "server_gone/nfs-harness.json": "server-gone-nfs-harness.json",
    "busy_rename/busy-rename.json": "busy-rename.json",
    "rename_race/rename-race.json": "rename-race.json",
    "install/install.json": "install.json",
    "versions.json": "versions.json",
    "nfsvm-image.json": "nfsvm-image.json",
    "nfs-vm-run.json": "nfs-vm-run.json",
}
# The run's last check is the verdict of the index the VM tool built over the action's gate result and harness
# record: a fact of that index, which a recorded folder does not hold (its own index judges the same two files
# as results). It is the one check not made again here.
INDEX_CHECK = "evidence_index"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def vm_problems(boot: dict[str, Any]) -> list[str]:
    """Why the VM did not run to its own power-off (empty: it did), from how qemu ended (vm.run_until_exit).
    qemu exits 0 on a host's SIGTERM/SIGINT/SIGHUP and after a panic too: exit 0 alone proves nothing."""
    problems = []
    code = boot.get("qemu_exit_code")
    if boot.get("timed_out") is not False:
        problems.append(f"killed at the wall-clock limit of {boot.get('limit_seconds')} s (timed out "
                        f"{boot.get('timed_out')})")
    if isinstance(code, int) and not isinstance(code, bool) and code < 0:
        problems.append(f"qemu was killed by {signal_name(-code)} (exit status {code})")
    elif not is_int(code, 0):
        problems.append(f"qemu exited {code!r}")
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


def vm_check(boot: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """The VM ran to its own power-off, within its limit, and neither the guest nor a phase raised (`errors`:
    what the guest wrote when it raised, which only a live run's folder holds)."""
    problems = vm_problems(boot)
    detail = f"qemu exit {boot.get('qemu_exit_code')}, timed out {boot.get('timed_out')}, {boot.get('wall_seconds')} s"
    return {"name": "vm", "ok": not problems and not errors,
            "detail": detail + "".join(f"; {p}" for p in problems) + "".join(f"; {e}"[:300] for e in errors)}


def negative_seconds(document: Any, path: str = "") -> list[str]:
    """Every duration or uptime a VM record holds (a key `seconds` or ending `_seconds`) is a number of 0 or
    more: a clock read after it started never gives less (r4's #10: a teardown of -6.39 s)."""
    found: list[str] = []
    if isinstance(document, dict):
        for key, value in document.items():
            where = f"{path}.{key}" if path else str(key)
            if (key == "seconds" or str(key).endswith("_seconds") or str(key).endswith("_uptime")) \
                    and isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                found.append(f"{where} is {value!r}: a duration or uptime is never negative")
            found += negative_seconds(value, where)
    elif isinstance(document, list):
        for number, value in enumerate(document):
            found += negative_seconds(value, f"{path}[{number}]")
    return found


def _exit_of(steps: dict[str, Any], name: str) -> Any:
    step = steps.get(name) if isinstance(steps.get(name), dict) else {}
    return step.get("exit_code")


def steps_problems(steps_record: dict[str, Any] | None, gate: dict[str, Any] | None,
                   record: dict[str, Any] | None) -> list[str]:
    """The nfs action's own steps (action/steps.json, tools/nfsvm/phases.action_phase) agree with what they
    wrote: the result folder made (exit 0), the harness setup exited 0, the gate step exited with the code its
    result records and within its step limit (the gate's --timeout and a margin), and the teardown exited as
    its record's verdict says (nfs_harness.py teardown: 0 when the record is ok, else 1). r4's #6: a run whose
    steps exited 1 verified."""
    if not isinstance(steps_record, dict):
        return ["no action/steps.json: the action's steps are not recorded"]
    steps = steps_record.get("steps") if isinstance(steps_record.get("steps"), dict) else {}
    problems = [f"steps.{name}.exit_code is {_exit_of(steps, name)!r}, the step exits 0"
                for name in ("result_dir", "setup") if not is_int(_exit_of(steps, name), 0)]
    step = steps.get("gate") if isinstance(steps.get("gate"), dict) else {}
    if isinstance(gate, dict) and not (is_int(step.get("exit_code")) and step["exit_code"] == gate.get("exit_code")):
        problems.append(f"steps.gate.exit_code is {step.get('exit_code')!r}, the gate result's exit_code is "
                        f"{gate.get('exit_code')!r}")
    seconds, limit = step.get("seconds"), step.get("limit_seconds")
    timeout = ((gate or {}).get("arguments") or {}).get("timeout_s") if isinstance(gate, dict) else None
    if not (_is_number(seconds) and _is_number(limit) and 0 <= seconds <= limit):
        problems.append(f"steps.gate ran {seconds!r} s of its limit_seconds {limit!r}: the step was not timed "
                        "within its limit")
    elif _is_number(timeout) and limit < timeout:
        problems.append(f"steps.gate.limit_seconds is {limit!r}, under the gate's own --timeout {timeout!r}")
    if isinstance(record, dict):
        wanted = 0 if record.get("ok") is True else 1
        if not is_int(_exit_of(steps, "teardown"), wanted):
            problems.append(f"steps.teardown.exit_code is {_exit_of(steps, 'teardown')!r}, its record's ok "
                            f"{record.get('ok')!r} exits {wanted}")
    return problems + step_clock_problems(steps_record, gate) + negative_seconds(steps_record)


# tools/nfsvm/phases.py's GATE_STEP_MARGIN_S and WarmUp (tests/evidence_index/
# test_the_judge_and_what_it_judges_share_one_definition.py holds them equal): the guest kills the gate step at
# the gate's --timeout plus this margin, and the warm-up is one
# `import torch`, waited for at most WARM_UP_LIMIT_S before it is killed.
GATE_STEP_MARGIN_S = 60.0
WARM_UP_WHAT = "import torch once (page cache)"
WARM_UP_LIMIT_S = 300.0
# Each recorded clock reading is rounded (uptimes and phase_seconds to 0.1 s, step seconds to 0.01 s).
ROUNDING_S = 0.11


def step_clock_problems(steps_record: dict[str, Any], gate: dict[str, Any] | None) -> list[str]:
    """The action's clock readings agree with the order tools/nfsvm/phases.action_phase takes them in (r6): the
    warm-up ends (`warm_up.ended_at_uptime`) before the gate step starts, the gate step ends before
    `kernel_uptime_at_gate_verdict_seconds` is read, the steps run one after another inside `phase_seconds`, the
    gate step lasts at least the gate's own `duration_s`, and its limit is exactly the gate's --timeout plus the
    margin. A warm-up whose `import torch` failed (not killed at its limit) beside a gate that passed with that
    interpreter is not the run's. Without these, each of those numbers could be edited alone."""
    steps = steps_record.get("steps") if isinstance(steps_record.get("steps"), dict) else {}
    gate_step = steps.get("gate") if isinstance(steps.get("gate"), dict) else None
    warm = steps_record.get("warm_up")
    verdict_at = steps_record.get("kernel_uptime_at_gate_verdict_seconds")
    phase = steps_record.get("phase_seconds")
    problems = []
    if not _is_number(verdict_at):
        problems.append(f"kernel_uptime_at_gate_verdict_seconds is {verdict_at!r}, not a number")
    if not _is_number(phase):
        problems.append(f"phase_seconds is {phase!r}, not a number")
    if not isinstance(warm, dict):
        return [*problems, f"warm_up is {warm!r}, not the warm-up's record"]
    if warm.get("what") != WARM_UP_WHAT:
        problems.append(f"warm_up.what is {warm.get('what')!r}, the warm-up is {WARM_UP_WHAT!r}")
    ended, took, code = warm.get("ended_at_uptime"), warm.get("seconds"), warm.get("exit_code")
    if not (_is_number(ended) and _is_number(took) and took <= ended + ROUNDING_S):
        problems.append(f"warm_up ran {took!r} s and ended at uptime {ended!r}: it started after the boot")
    if not is_int(code):
        problems.append(f"warm_up.exit_code is {code!r}, not an exit code")
    elif code > 0 and gate_step is not None and is_int(gate_step.get("exit_code"), 0):
        problems.append(f"warm_up.exit_code is {code!r} (import torch failed), the gate step with that interpreter "
                        "exited 0")
    elif code < 0 and _is_number(took) and took < WARM_UP_LIMIT_S:
        problems.append(f"warm_up.exit_code is {code!r} (killed) after {took!r} s, under its limit of "
                        f"{WARM_UP_LIMIT_S} s")
    if gate_step is None:
        return problems
    seconds = gate_step.get("seconds")
    if _is_number(seconds) and _is_number(ended) and _is_number(verdict_at) \
            and ended + seconds > verdict_at + ROUNDING_S:
        problems.append(f"steps.gate.seconds is {seconds!r} after the warm-up ended at uptime {ended!r}: past "
                        f"kernel_uptime_at_gate_verdict_seconds {verdict_at!r}, read after the gate step")
    parts = [step.get("seconds") if isinstance(step := steps.get(name), dict) else None
             for name in ("result_dir", "setup", "gate", "teardown")]
    if _is_number(phase) and all(_is_number(part) for part in parts) and sum(parts) > phase + ROUNDING_S:
        problems.append(f"steps result_dir, setup, gate and teardown ran {round(sum(parts), 2)} s one after another, "
                        f"longer than phase_seconds {phase!r}")
    if isinstance(gate, dict):
        arguments = gate.get("arguments") if isinstance(gate.get("arguments"), dict) else {}
        duration, timeout = gate.get("duration_s"), arguments.get("timeout_s")
        if _is_number(seconds) and _is_number(duration) and seconds + ROUNDING_S < duration:
            problems.append(f"steps.gate.seconds is {seconds!r}, shorter than the gate result's duration_s "
                            f"{duration!r} (the gate ran inside its step)")
        limit = gate_step.get("limit_seconds")
        if _is_number(timeout) and _is_number(limit) and limit != timeout + GATE_STEP_MARGIN_S:
            problems.append(f"steps.gate.limit_seconds is {limit!r}, the guest's limit is the gate's --timeout "
                            f"{timeout!r} + {GATE_STEP_MARGIN_S}")
    return problems


def action_steps_problems(init: Any, steps_record: dict[str, Any] | None, gate: dict[str, Any] | None) -> list[str]:
    """The action's steps record against itself, its gate and the VM's init, each problem naming the file's field
    (the harness check fails on the clock problems too, but its recorded detail is cut before them).
    `packaged_units_after_gate` is read only under systemd (tools/nfsvm/phases.packaged_units): a busybox VM
    records null, whatever the takeover check (systemd only) would say of it."""
    if not isinstance(steps_record, dict):
        return []
    problems = [f"action-steps.json: {p}" for p in step_clock_problems(steps_record, gate)]
    units = steps_record.get("packaged_units_after_gate", "absent")
    if init != "systemd" and units is not None:
        problems.append(f"action-steps.json: packaged_units_after_gate is {units!r}, a VM booted with init {init!r} "
                        "records null")
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def gate_check(gate: dict[str, Any] | None) -> Check:
    """The one judge (core.contract), which re-derives every check and the nfs requirement from the facts."""
    from core.contract import judge as judge_document

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


def harness_check(record: dict[str, Any] | None, setup: dict[str, Any] | None,
                  gate: dict[str, Any] | None = None, steps: dict[str, Any] | None = None) -> Check:
    """The record judged by its facts (core.harness_judge), naming the workspace its gate retained, with the
    action's steps that ran setup, gate and teardown agreeing with them (steps_problems)."""
    from core.contract import judge as judge_document
    from core.harness_judge import harness_gate_problems

    if record is None:
        return False, "no harness record"
    judgement = judge_document(record, "nfs-harness")
    package = (setup or {}).get("package") or {}
    across = harness_gate_problems(record, gate) if isinstance(gate, dict) else ["no gate result to compare with"]
    if setup != record.get("setup"):  # the teardown copies the setup's state file into its record: one setup
        across.append("nfs-harness-setup.json is not the harness record's setup (the state file its teardown read)")
    across += steps_problems(steps, gate, record)
    ok = judgement.ok and not across and package.get("install") == "skipped: already installed"
    return ok, (f"ok={record.get('ok')}, unmounted {record.get('unmounted')}, server stopped "
                f"{record.get('server_stopped')}, export-side delete verified {record.get('cleanup_verified')}; "
                f"package {package.get('install')} ({package.get('version')}); problems {record.get('problems')}"
                + "".join(f"; {why}" for why in [*judgement.reasons, *across][:3]))


def judged_check(document: dict[str, Any] | None, found: tuple[list[str], list[str]] | None,
                 describe: Callable[[dict[str, Any]], str]) -> Check:
    """A phase record judged by its facts (core.vm_judge), never by its own `ok`."""
    if document is None or found is None:
        return False, "the phase wrote no result"
    reasons, forged = found
    reasons = [*reasons, *negative_seconds(document)]
    said = [str(document["reason"])] if document.get("reason") else []  # the phase's own words first
    return not reasons and not forged, "; ".join(said + [*(f"not authentic: {f}" for f in forged), *reasons][:3]
                                               + [describe(document)])


def install_check(doc: dict[str, Any] | None, image: dict[str, Any] | None = None) -> Check:
    """Recomputed from the recorded facts (judge_install), never from the phase's own ok; its .debs the image's."""
    if doc is None:
        return False, "the install phase wrote no result"
    reasons, forged = judge_install_record(doc, image)
    problems = [*(f"not authentic: {f}" for f in forged), *reasons, *negative_seconds(doc)]
    units = doc.get("units") or {}
    detail = (f"dpkg -i exit {doc.get('dpkg_exit_code')} in {doc.get('seconds')} s, nfs-kernel-server "
              f"{doc.get('nfs_kernel_server')}, PID 1 {doc.get('pid1')}; after the postinst: nfs-server "
              f"{units.get('nfs-server.service')}, nfs-mountd {units.get('nfs-mountd.service')}, nfsd threads "
              f"{doc.get('nfsd_threads')}, grace {doc.get('nfsv4gracetime')} s")
    return not problems, detail + "".join(f"; {p}" for p in problems)


def takeover_check(setup: dict[str, Any] | None, steps: dict[str, Any] | None) -> Check:
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


def _fault_check(load: Load, phase: str, record: str, judge: Callable[..., tuple[list[str], list[str]]],
                 describe: Callable[[dict[str, Any]], str]) -> Check:
    """A fault phase's record, with the gate result and the teardown's harness record the phase copied beside it."""
    report = load(f"{phase}/{record}")
    found = None if report is None else judge(report, load(f"{phase}/platform-runtime-nfs.json"),
                                              load(f"{phase}/nfs-harness.json"))
    return judged_check(report, found, describe)


# --- what each check says of its records (the detail; the verdict is the ok) ---

def describe_two_clients(doc: dict[str, Any]) -> str:
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


def describe_restart(doc: dict[str, Any]) -> str:
    gate = doc.get("gate") or {}
    return (f"gate {gate.get('outcome')} (exit {gate.get('exit_code')}) in {gate.get('elapsed_seconds')} s "
            f"of {gate.get('gate_timeout')} s, restart at "
            f"+{(doc.get('restart') or {}).get('seconds_after_gate_start')} s;"
            f" teardown exit {(doc.get('teardown') or {}).get('exit_code')}")


def describe_busy(doc: dict[str, Any]) -> str:
    busy, free = doc.get("busy") or {}, doc.get("free") or {}
    return (f"busy: exit {busy.get('exit_code')}, unmounted {busy.get('unmounted')}, export kept "
            f"{busy.get('export_kept')}; free: exit {free.get('exit_code')}, "
            f"workspace gone {free.get('workspace_absent')}")


def describe_busy_rename(doc: dict[str, Any]) -> str:
    v = doc.get("verdict") or {}
    return (f"gate replace check on one client: {v.get('passed')}/{v.get('rounds')} rounds passed, busy renames "
            f"retried per round {v.get('busy_rename_retries')} (ETXTBSY met: {v.get('met_etxtbsy')})")


def describe_gone(doc: dict[str, Any]) -> str:
    v = doc.get("verdict") or {}
    return (f"server stopped at +{(doc.get('stop') or {}).get('seconds_after_gate_start')} s; gate exit "
            f"{v.get('gate_exit_code')} {doc.get('seconds_from_stop_to_gate_exit')} s after the stop "
            f"({v.get('gate_seconds')} s of --timeout {v.get('gate_timeout')}), abandoned named "
            f"{v.get('abandoned_named')}, D after exit {[s.get('pid') for s in v.get('stuck_after_gate') or []]}, "
            f"blocked in D at the deadline: {v.get('checks_blocked_at_deadline')}; "
            f"teardown exit {v.get('teardown_exit_code')} in {v.get('teardown_seconds')} s, detached "
            f"{v.get('teardown_detached')}, export left alone {v.get('export_left_alone')}")



def describe_rename_race(doc: dict[str, Any]) -> str:
    verdict = doc.get("verdict") or {}
    return (f"ETXTBSY per condition {verdict.get('etxtbsy')}; local control clean {verdict.get('control_clean')}; "
            f"ETXTBSY without a silly rename started {verdict.get('etxtbsy_without_sillyrename')}; kernel "
            f"warnings {len(doc.get('kernel_warnings') or [])}")


def phase_checks(load: Load) -> dict[str, list[tuple[str, Callable[[], Check]]]]:
    """phase -> its checks, each (name, how it is made from the records)."""
    def judged(path: str, judge: Callable[[dict[str, Any]], tuple[list[str], list[str]]],
               describe: Callable[[dict[str, Any]], str]) -> Callable[[], Check]:
        def run() -> Check:
            document = load(path)
            return judged_check(document, None if document is None else judge(document), describe)
        return run

    return {
        "action": [("gate", lambda: gate_check(load("action/platform-runtime-nfs.json"))),
                   ("harness", lambda: harness_check(load("action/nfs-harness.json"),
                                                     load("action/nfs-harness-setup.json"),
                                                     load("action/platform-runtime-nfs.json"),
                                                     load("action/steps.json")))],
        "two_clients": [("two_clients", judged("two_clients/two-clients.json", judge_two_clients,
                                               describe_two_clients))],
        "server_restart": [("server_restart", lambda: _fault_check(load, "server_restart", "server-restart.json",
                                                                   judge_server_restart, describe_restart))],
        "busy_unmount": [("busy_unmount", judged("busy_unmount/busy-unmount.json", judge_busy_unmount,
                                                 describe_busy))],
        "server_gone": [("server_gone", lambda: _fault_check(load, "server_gone", "server-gone.json",
                                                             judge_server_gone, describe_gone))],
        "busy_rename": [("busy_rename", judged("busy_rename/busy-rename.json", judge_busy_rename,
                                               describe_busy_rename))],
        "rename_race": [("rename_race", judged("rename_race/rename-race.json", judge_rename_race,
                                               describe_rename_race))],
        "install": [("install", lambda: install_check(load("install/install.json"), load("nfsvm-image.json")))],
    }


def run_checks(load: Load, boot: dict[str, Any], phases: list[str], errors: list[str] | None = None) -> list[dict]:
    """Every check of a run with these phases, made from its records (the live run's judge; the index's too)."""
    checks = [vm_check(boot, list(errors or []))]
    table = phase_checks(load)
    for phase in phases:
        for name, make in table[phase]:
            ok, detail = make()
            reason = (load("action/steps.json") or {}).get("reason") if phase == "action" and not ok else None
            checks.append({"name": name, "ok": ok, "detail": detail + (f"; {reason}" if reason else "")})
    if "install" in phases and "action" in phases:  # the systemd VM: what the harness did to the postinst's units
        ok, detail = takeover_check(load("action/nfs-harness-setup.json"), load("action/steps.json"))
        checks.append({"name": "takeover", "ok": ok, "detail": detail})
    return checks


def _phases(run: dict[str, Any]) -> list[str] | None:
    phases = run.get("phases")
    known = phase_checks(lambda _path: None)
    if isinstance(phases, list) and phases and all(isinstance(p, str) and p in known for p in phases):
        return phases
    return None


def judge_vm_run(run: dict[str, Any], load: Load | None = None) -> tuple[list[str], list[str]]:
    """(reasons, forged) for nfs-vm-run.json. With `load`, each recorded check is made again from the records
    it judged; without, only what the document alone shows (its `ok` against its checks)."""
    reasons: list[str] = []
    forged: list[str] = []
    checks = run.get("checks")
    phases = _phases(run)
    if not isinstance(checks, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                               and isinstance(c.get("ok"), bool) for c in checks):
        return ["checks is not a list of named checks with a boolean ok"], forged
    if phases is None:
        return [f"phases is {run.get('phases')!r}, not a list of the VM's phases"], forged
    recorded = {c["name"]: c["ok"] for c in checks}
    if len(recorded) != len(checks):
        forged.append("checks names a check twice")
    if load is not None:
        boot = run.get("vm") if isinstance(run.get("vm"), dict) else {}
        made = {c["name"]: c for c in run_checks(load, boot, phases)}
        wanted = [*made, INDEX_CHECK]  # tools/nfsvm/cli.judge_run appends it to every run (failing without action)
        if sorted(recorded) != sorted(wanted):
            forged.append(f"checks are {sorted(recorded)}, a run of phases {phases} makes {sorted(wanted)}")
        details = {c["name"]: c.get("detail") for c in checks}
        for name, check in made.items():
            if name in recorded and recorded[name] != check["ok"]:
                forged.append(f"checks.{name}.ok is recorded {recorded[name]!r}, its records say {check['ok']!r} "
                              f"({check['detail'][:200]})")
            elif recorded.get(name) is True and details[name] != check["detail"]:
                # A passing check's detail is its records described (describe_*, no judge's reasons, which
                # change as the judge does): text its records do not say is not the run's.
                forged.append(f"checks.{name}.detail is recorded {str(details[name])[:200]!r}, its records say "
                              f"{check['detail'][:200]!r}")
            if not check["ok"]:
                reasons.append(f"{name}: {check['detail'][:300]}")
    # The run's own words for a check that failed (its detail names the record's field), where no load made it again.
    details = {c["name"]: str(c.get("detail"))[:300] for c in checks}
    reasons += [f"{name} did not pass ({details[name]})" for name, ok in recorded.items() if not ok and name not in
                {r.split(":", 1)[0] for r in reasons}]
    reasons += run_fields_problems(run)
    if load is not None:  # the run's copies of the image and the guest's versions are theirs (r4's #13, #18)
        manifest, versions = load("nfsvm-image.json"), load("versions.json")
        forged += (image_problems(manifest) if manifest else []) + (versions_problems(versions) if versions else [])
        forged += run_image_problems(run, manifest, versions)
        forged += action_steps_problems(run.get("init"), load("action/steps.json"),
                                        load("action/platform-runtime-nfs.json")) if "action" in phases else []
    if load is not None and "action" in phases:
        forged += run_date_problems(run, load("action/platform-runtime-nfs.json"))
    forged += index_check_problems(run, checks)
    forged += git_state_problems({"source": {"git": run["git"]}}) if "git" in run else []
    if run.get("ok") is not all(recorded.values()):
        forged.append(f"ok is recorded {run.get('ok')!r}, its checks say {all(recorded.values())!r}")
    return reasons, forged


def run_date_problems(run: dict[str, Any], gate: dict[str, Any] | None) -> list[str]:
    """`date` is the UTC day tools/nfsvm/cli.py wrote the record on, after the run: the day the action's gate
    started, or a later one within the run's `wall_seconds` (r6: another date, edited alone, verified PASS)."""
    import datetime

    date, started = run.get("date"), (gate or {}).get("started_at") if isinstance(gate, dict) else None
    try:
        day = datetime.date.fromisoformat(date) if isinstance(date, str) and len(date) == 10 else None
    except ValueError:
        day = None
    if day is None:
        return [f"date is {date!r}, not the YYYY-MM-DD day the run was recorded"]
    try:
        start = datetime.datetime.fromisoformat(started).astimezone(datetime.timezone.utc)
    except (TypeError, ValueError):
        return []  # the gate result's own rules refuse its started_at
    wall = run.get("wall_seconds")
    end = start + datetime.timedelta(seconds=wall if _is_number(wall) and wall > 0 else 0)
    if not start.date() <= day <= end.date():
        return [f"date is {date!r}, but the action's gate started at {started} and the run took {wall!r} s"]
    return []


def index_check_problems(run: dict[str, Any], checks: list[dict[str, Any]]) -> list[str]:
    """The evidence_index check is the run's own `evidence_index` (tools/nfsvm/cli.judge_run): ok where its
    exit_code is 0, its detail the message."""
    index = run.get("evidence_index") if isinstance(run.get("evidence_index"), dict) else None
    check = next((c for c in checks if c.get("name") == INDEX_CHECK), None)
    if check is None:
        return []
    if index is None:  # r4's #9: with the record deleted, the check had nothing to be made from, and passed
        return [f"checks.{INDEX_CHECK} is recorded without the run's evidence_index record it is made from"]
    problems = []
    if check["ok"] is not is_int(index.get("exit_code"), 0):
        problems.append(f"checks.{INDEX_CHECK}.ok is recorded {check['ok']!r}, evidence_index.exit_code is "
                        f"{index.get('exit_code')!r}")
    if check.get("detail") != index.get("message"):
        problems.append(f"checks.{INDEX_CHECK}.detail is recorded {str(check.get('detail'))[:200]!r}, "
                        f"evidence_index.message is {str(index.get('message'))[:200]!r}")
    return problems
