"""VM phase server_gone: the NFS server stops for good while the gate runs on a hard mount (the scenario of
a job that hung 35 hours with no error). Run by in_guest.py inside the VM, as root; the gate and the teardown
run as the runner user, exactly as the nfs action runs them.

What must hold: the gate ends within its --timeout (plus the kill grace), writes its result outside the
mount with exit 3 or 1 and named failures, and names as abandoned each of its processes left in
uninterruptible sleep; the harness teardown then ends within a bounded time, fails, records the hung
mount (detached with umount -f or -l), and leaves the export alone. Measured: seconds from the server's
stop to the gate's exit, and the teardown's seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from nfsvm import in_guest

RESULT_FILE = "server_gone/server-gone.json"
GATE_TIMEOUT_S = 90.0  # under TCG the whole gate takes about 50 s on a live server
STOP_DELAY_S = 5.0  # after the gate made its workspace: its checks are then writing on the mount
UMOUNT_TIMEOUT_S = 10
TEARDOWN_LIMIT_S = 120.0


def uninterruptible(uid: int, proc: Path = Path("/proc")) -> list[dict]:
    """The processes of `uid` in uninterruptible sleep now: {pid, name, state}."""
    in_guest.gate_code({"repo": str(Path(__file__).resolve().parents[2])})  # puts the gate's scripts/ on sys.path
    from platform_runtime import stuck

    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            stat = stuck.parse_stat((entry / "stat").read_text(errors="replace"))
        except OSError:
            continue
        if stat and stat["state"] == stuck.UNINTERRUPTIBLE:
            found.append({"pid": stat["pid"], "name": stat["name"], "state": stat["state"]})
    return found


def named_abandoned(document: dict | None) -> set[int]:
    """Every pid the gate result names as abandoned, in any check."""
    checks = (document or {}).get("checks") or {}
    return {p.get("pid") for c in checks.values() if isinstance(c, dict)
            for p in c.get("abandoned_processes") or [] if isinstance(p, dict)}


def judge(document: dict | None, exit_code: int | None, gate_seconds: float, timeout: float,
          stuck_after: list[dict], teardown: dict, record: dict | None, export_kept: bool) -> dict:
    """The phase's verdict from what was measured, by the registry's rule (rules.nfs_vm_faults.server_gone_verdict)
    that the host's judge applies again to the recorded files."""
    in_guest.core_on_path()
    from rules import registry

    verdict = registry.flags("nfsvm-run", "checks.server_gone")
    return verdict(document, exit_code, gate_seconds, timeout, stuck_after, teardown, record, export_kept)


def wait_bounded(process: subprocess.Popen, limit_s: float) -> int | None:
    """Its exit code, or None when it did not end within limit_s (then killed, and never awaited again)."""
    try:
        return process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, 9)
        except OSError:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return None


def server_gone_phase(job: dict, out: Path, _boot: float) -> dict:
    base = in_guest.runner_dir("/tmp/gone")
    export, mount, results = base / "export", base / "mount", in_guest.runner_dir("/tmp/gone/results")
    gate_result, timeout = results / "platform-runtime-nfs.json", float(job.get("gone_gate_timeout", GATE_TIMEOUT_S))
    report: dict = {"schema": "kernodeck.nfsvm-server-gone/v1", "ok": False}
    setup = in_guest.harness(job, "setup", "--export", str(export), "--mount", str(mount), "--grace-seconds", "10")
    if setup["exit_code"] != 0:
        report["reason"] = f"harness setup exited {setup['exit_code']}"
        return write(out, report)
    started = time.monotonic()
    gate = in_guest.spawn_runner(in_guest.gate_command(job, mount, gate_result, timeout), output=subprocess.DEVNULL)
    workspace = in_guest.wait_for_workspace(export, 120)
    time.sleep(STOP_DELAY_S)
    stopped = time.monotonic()
    in_guest.root("rpc.nfsd", "0", check=False)  # for good: nothing starts it again in this phase
    report["stop"] = {"seconds_after_gate_start": round(stopped - started, 1), "workspace_seen": workspace,
                      "nfsd_threads_after": Path("/proc/fs/nfsd/threads").read_text().strip()}
    code = wait_bounded(gate, timeout + 120)
    ended = time.monotonic()
    report["seconds_from_stop_to_gate_exit"] = round(ended - stopped, 1)
    stuck_after = uninterruptible(phases_uid())
    document = load(gate_result)
    record_path = results / "nfs-harness.json"
    teardown_started = time.monotonic()
    teardown_process = in_guest.spawn_runner([job["python"], "-B", f"{job['repo']}/scripts/steps/nfs_harness.py",
                                            "teardown", "--export", str(export), "--mount", str(mount),
                                            "--gate-result", str(gate_result), "--record", str(record_path),
                                            "--umount-timeout", str(UMOUNT_TIMEOUT_S), "--scenario", "server-gone"],
                                           output=subprocess.DEVNULL)
    teardown = {"exit_code": wait_bounded(teardown_process, TEARDOWN_LIMIT_S),
                "seconds": round(time.monotonic() - teardown_started, 1), "limit_s": TEARDOWN_LIMIT_S}
    record = load(record_path)
    kept = workspace is not None and (export / workspace).exists()
    report.update(teardown=teardown, verdict=judge(document, code, ended - started, timeout, stuck_after, teardown,
                                                   record, kept))
    report["ok"] = report["verdict"]["pass"]
    if not report["ok"]:
        report["reason"] = "unmet: " + ", ".join(report["verdict"]["unmet"])
    in_guest.copy_out(results, out / "server_gone")
    return write(out, report)


def phases_uid() -> int:
    import pwd

    return pwd.getpwnam(in_guest.RUNNER).pw_uid


def load(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write(out: Path, report: dict) -> dict:
    in_guest.log(f"server_gone: {json.dumps(report.get('verdict') or report.get('reason'))[:1500]}")
    (out / "server_gone").mkdir(parents=True, exist_ok=True)
    (out / RESULT_FILE).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report
