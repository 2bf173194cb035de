"""The NFS job inside the VM (run by guest.py as root): each phase writes its results under out/<phase>/.

Phases: action (the composite action's own steps as the unprivileged runner user), two_clients,
server_restart (a fault during the gate), busy_unmount (teardown refuses to delete after a failed
unmount). The project's scripts run with the host's venv Python, shared at the same path.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import traceback
from pathlib import Path

from nfsvm.in_guest import (  # noqa: F401 - the phases' helpers, read here by name too
    GATE_STEP_MARGIN_S,
    PATH,
    RUNNER,
    as_runner,
    copy_out,
    core_on_path,
    fake_gate_result,
    gate_code,
    gate_command,
    gate_step_limit,
    gate_worker,
    harness,
    judge_fault,
    log,
    packaged_units,
    read_outputs,
    restart_server,
    root,
    runner_dir,
    spawn_runner,
    uptime,
    versions,
    wait_for_workspace,
)


def action_phase(job: dict, out: Path, boot_seconds: float, before_gate=lambda: None) -> dict:
    """The nfs composite action's steps, in its order, as the runner user with passwordless sudo.
    before_gate() is awaited between the harness setup and the gate (the torch warm-up)."""
    started = time.monotonic()
    temp = runner_dir("/tmp/runner-temp")
    outputs_file = temp / "github-output"
    steps = {}
    steps["result_dir"] = as_runner([job["python"], "-B", f"{job['repo']}/scripts/steps/result_dir.py",
                                     "dir=platform-runtime-nfs-", "nfs=nfs-"],
                                    env={"RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(outputs_file)})
    paths = read_outputs(outputs_file)
    results, nfs = Path(paths["dir"]), Path(paths["nfs"])
    gate_result, record = results / "platform-runtime-nfs.json", results / "nfs-harness.json"
    steps["setup"] = harness(job, "setup", "--export", f"{nfs}/export", "--mount", f"{nfs}/mount",
                             "--grace-seconds", "10")
    warm_up = before_gate()
    limit = gate_step_limit(job["gate_timeout"])
    if steps["setup"]["exit_code"] == 0:
        steps["gate"] = as_runner(gate_command(job, nfs / "mount", gate_result, job["gate_timeout"]), timeout=limit)
        steps["gate"]["limit_seconds"] = limit
    verdict_seconds = uptime()
    after_gate = packaged_units(job)  # before the teardown, which stops the harness's own server
    steps["teardown"] = harness(job, "teardown", "--export", f"{nfs}/export", "--mount", f"{nfs}/mount",
                                "--gate-result", str(gate_result), "--record", str(record), "--scenario", "action")
    copy_out(results, out / "action")
    state = nfs / "nfs-harness-setup.json"
    if state.exists():
        shutil.copy2(state, out / "action" / state.name)
    summary = {"schema": "kernodeck.nfsvm-steps/v1", "steps": steps, "warm_up": warm_up,
               "packaged_units_after_gate": after_gate,
               "kernel_uptime_at_gate_verdict_seconds": round(verdict_seconds, 1),
               "phase_seconds": round(time.monotonic() - started, 1)}
    if "gate" in steps and steps["gate"]["exit_code"] is None:
        summary["reason"] = (f"the gate was killed at its step limit of {limit} s (its --timeout "
                             f"{job['gate_timeout']} s) before it exited: no result of its own")
    (out / "action" / "steps.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def server_restart_phase(job: dict, out: Path, _boot: float) -> dict:
    base = runner_dir("/tmp/restart")
    export, mount, results = base / "export", base / "mount", runner_dir("/tmp/restart/results")
    gate_result, timeout = results / "platform-runtime-nfs.json", float(job["fault_gate_timeout"])
    report: dict = {"schema": "kernodeck.nfsvm-server-restart/v1", "ok": False}
    setup = harness(job, "setup", "--export", str(export), "--mount", str(mount), "--grace-seconds", "10")
    if setup["exit_code"] == 0:
        started = time.monotonic()
        gate = spawn_runner(gate_command(job, mount, gate_result, timeout))
        workspace = wait_for_workspace(export, 120)
        core_on_path()
        from rules.nfs_vm_faults import RESTART_DELAY_S  # the judge holds the record's restart to it

        time.sleep(RESTART_DELAY_S)
        report["restart"] = {**restart_server(export), "seconds_after_gate_start": round(time.monotonic() - started, 1),
                             "workspace_seen": workspace is not None}
        try:
            output = gate.communicate(timeout=timeout + 60)[0]
            code = gate.returncode
        except subprocess.TimeoutExpired:
            os.killpg(gate.pid, 9)
            output, code = gate.communicate()[0], None
        elapsed = time.monotonic() - started
        print(output.decode("utf-8", "replace")[-3000:], flush=True)
        document = json.loads(gate_result.read_text()) if gate_result.exists() else None
        report["gate"] = judge_fault(document, code, elapsed, timeout)
    record = results / "nfs-harness.json"
    report["teardown"] = harness(job, "teardown", "--export", str(export), "--mount", str(mount),
                                 "--gate-result", str(gate_result), "--record", str(record),
                                 "--scenario", "server-restart")  # evidence.py names it server-restart-nfs-harness.json
    report["ok"] = bool(report.get("gate", {}).get("pass")) and report["teardown"]["exit_code"] == 0
    copy_out(results, out / "server_restart")
    (out / "server_restart" / "server-restart.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


def busy_unmount_phase(job: dict, out: Path, _boot: float) -> dict:
    """Teardown refuses to delete after a failed unmount, on a real mount: a process inside the share keeps it
    busy, so teardown must fail, record it and leave the export untouched; once the process is gone a second
    teardown cleans up."""
    base = runner_dir("/tmp/busy")
    export, mount, name = base / "export", base / "mount", "platform-runtime-busy00000001"
    report: dict = {"schema": "kernodeck.nfsvm-busy-unmount/v1", "ok": False}
    setup = harness(job, "setup", "--export", str(export), "--mount", str(mount), "--grace-seconds", "10")
    if setup["exit_code"] == 0:
        as_runner(["mkdir", "-p", f"{mount}/{name}/sub"])
        as_runner(["cp", "/etc/hostname", f"{mount}/{name}/sub/kept"])
        holder = spawn_runner(["sleep", "600"], cwd=f"{mount}/{name}")
        gate_like = fake_gate_result(base, name)
        first = harness(job, "teardown", "--export", str(export), "--mount", str(mount), "--gate-result",
                        str(gate_like), "--record", str(base / "teardown-busy.json"),
                        "--scenario", "busy-unmount")
        busy_record = json.loads((base / "teardown-busy.json").read_text())
        kept = (export / name / "sub" / "kept").exists()
        os.killpg(holder.pid, 9)
        holder.communicate()
        second = harness(job, "teardown", "--export", str(export), "--mount", str(mount), "--gate-result",
                         str(gate_like), "--record", str(base / "teardown-free.json"),
                         "--scenario", "busy-unmount")
        free_record = json.loads((base / "teardown-free.json").read_text())
        report.update({"busy": {"exit_code": first["exit_code"], "unmounted": busy_record["unmounted"],
                                "export_side_delete": busy_record["export_side_delete"], "export_kept": kept,
                                "problems": busy_record["problems"]},
                       "free": {"exit_code": second["exit_code"], "ok": free_record["ok"],
                                "workspace_absent": not (export / name).exists()}})
        report["ok"] = (first["exit_code"] == 1 and busy_record["unmounted"] is False and kept
                        and busy_record["export_side_delete"] is None and second["exit_code"] == 0
                        and free_record["ok"] is True and not (export / name).exists())
    (out / "busy_unmount").mkdir(parents=True, exist_ok=True)
    (out / "busy_unmount" / "busy-unmount.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


PHASES = {"action": action_phase, "server_restart": server_restart_phase, "busy_unmount": busy_unmount_phase}


def phase_function(name: str):
    """The phase's function; the optional ones live in modules of their own that build on this one."""
    if name == "two_clients":
        from nfsvm import two_clients_phase

        return two_clients_phase.two_clients_phase
    if name == "server_gone":
        from nfsvm import server_gone

        return server_gone.server_gone_phase
    if name == "busy_rename":
        from nfsvm import busy_rename

        return busy_rename.busy_rename_phase
    if name == "rename_race":
        from nfsvm import rename_race_phase

        return rename_race_phase.rename_race_phase
    if name == "install":  # the systemd VM only: nfs-kernel-server from its .debs, postinst under systemd
        from nfsvm import postinst

        return postinst.install_phase
    return PHASES[name]


class WarmUp:
    """Import torch once, in the background, while the harness sets the NFS server up. The venv comes over
    9p, which under TCG is far slower than a runner's disk: a cold first import inside the gate competes
    with its file-system checks for the two vCPUs (without a warm-up, one append writer hit the gate's 90 s
    per-process limit in 3 of 3 runs). The gate starts only once this ended, and its time stays inside
    boot-to-verdict; overlapping it with the harness setup is what it saves."""

    def __init__(self, job: dict, out: Path) -> None:
        self.out, self.started = out, time.monotonic()
        self.process = spawn_runner([job["python"], "-B", "-c", "import torch"], output=subprocess.DEVNULL)
        self.done: dict | None = None

    def wait(self, limit: float = 300) -> dict:
        if self.done is None:
            try:
                self.process.wait(timeout=max(1.0, limit - (time.monotonic() - self.started)))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, 9)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=10)
            self.done = {"exit_code": self.process.returncode, "what": "import torch once (page cache)",
                         "seconds": round(time.monotonic() - self.started, 1), "ended_at_uptime": round(uptime(), 1)}
            log(f"warm-up: import torch -> {self.done['exit_code']} in {self.done['seconds']} s")
            (self.out / "warm-up.json").write_text(json.dumps(self.done, sort_keys=True) + "\n")
        return self.done


# Where each phase's verdict lies (tools/nfsvm/run_checks.py reads the same names).
RESULT_FILES = {"action": "action/steps.json", "two_clients": "two_clients/two-clients.json",
                "server_restart": "server_restart/server-restart.json",
                "busy_unmount": "busy_unmount/busy-unmount.json", "server_gone": "server_gone/server-gone.json",
                "busy_rename": "busy_rename/busy-rename.json", "rename_race": "rename_race/rename-race.json",
                "install": "install/install.json"}


def write_missing_result(out: Path, phase: str, reason: str) -> None:
    """A phase that died before writing its result still leaves one: ok false and the reason."""
    path = out / RESULT_FILES[phase]
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"ok": False, "phase": phase, "reason": reason}, indent=2, sort_keys=True) + "\n")


def run_all(job: dict, out: str, boot_seconds: float) -> None:
    out_dir = Path(out)
    facts = {"schema": "kernodeck.nfsvm-versions/v1", **versions(), "python": job.get("interpreter")}
    (out_dir / "versions.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
    warm = WarmUp(job, out_dir)
    for name in job["phases"]:
        log(f"phase {name} starts")
        started = time.monotonic()
        try:
            if name == "action":  # the action's own steps overlap the warm-up until its gate
                action_phase(job, out_dir, boot_seconds, before_gate=warm.wait)
            elif name == "install":  # overlaps the warm-up too; the package's versions are known after it
                phase_function(name)(job, out_dir, boot_seconds)
                facts.update(versions())
                (out_dir / "versions.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
            else:
                if name not in ("busy_rename", "rename_race"):  # they import no torch
                    warm.wait()
                phase_function(name)(job, out_dir, boot_seconds)
        except Exception as error:  # one broken phase must not hide the others' results
            log(f"phase {name} raised {type(error).__name__}: {error}")
            (out_dir / f"{name}-error.txt").write_text(traceback.format_exc())
            write_missing_result(out_dir, name, f"the phase raised {type(error).__name__}: {error}")
        log(f"phase {name} done in {time.monotonic() - started:.1f} s")
        boot_seconds = 0.0

