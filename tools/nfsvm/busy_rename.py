"""VM phase busy_rename (by name only): does the gate's own concurrent_replace meet ETXTBSY on ONE client?

The Linux NFS client refuses a rename with ETXTBSY while another operation of the same client renames or
unlinks that name, or after it was silly-renamed (fs/nfs/dir.c); the gate's atomic writer now retries it
and counts each retry. This phase runs the gate's replace check (4 writers x 50 replaces, 2 readers, the
fs worker exactly as the gate starts it) ROUNDS times on one NFS mount, no torch, and records each
round's result: how many busy renames its writers retried, and whether it passed. Then, on the same mount,
benchmarks/stress_killed_writer.py (its counts are recorded, not judged here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from nfsvm import in_guest

RESULT_FILE = "busy_rename/busy-rename.json"
ROUNDS = 10
ROUND_LIMIT_S = 300.0
STRESS_KILLS = 300  # benchmarks/stress_killed_writer.py on the NFS mount, after the rounds
STRESS_LIMIT_S = 400.0


def judge(rounds: list[dict]) -> dict:
    """rules.nfs_vm_faults.busy_rename_verdict: every round passes the gate's own concurrent_replace rule by its
    measurements; the host's judge applies the same rule again to the recorded rounds."""
    in_guest.core_on_path()
    from rules import registry

    return registry.flags("nfsvm-run", "checks.busy_rename")(rounds)


def stress_on_nfs(job: dict, mount: Path, base: Path) -> dict:
    """benchmarks/stress_killed_writer.py on the NFS mount, as the runner user: torn, lost, leftover counts."""
    folder, report = mount / "platform-runtime-stress0000", base / "stress.json"
    in_guest.as_runner(["mkdir", str(folder)])
    done = in_guest.as_runner([job["python"], "-B", f"{job['repo']}/benchmarks/stress_killed_writer.py", "--kills",
                               str(STRESS_KILLS), "--no-tmpfs", "--work-dir", str(folder), "--json", str(report)],
                            timeout=STRESS_LIMIT_S)
    try:
        places = json.loads(report.read_text())
    except (OSError, ValueError):
        places = None
    return {"exit_code": done["exit_code"], "seconds": done["seconds"], "places": places}


def busy_rename_phase(job: dict, out: Path, _boot: float) -> dict:
    base = in_guest.runner_dir("/tmp/busyrename")
    export, mount = base / "export", base / "mount"
    report: dict = {"schema": "kernodeck.nfsvm-busy-rename/v1", "ok": False}
    setup = in_guest.harness(job, "setup", "--export", str(export), "--mount", str(mount), "--grace-seconds", "10")
    rounds: list[dict] = []
    if setup["exit_code"] == 0:
        for index in range(ROUNDS):
            workspace = mount / f"platform-runtime-busyrename{index:04d}"
            in_guest.as_runner(["mkdir", str(workspace)])
            command = in_guest.gate_worker(job, "replace", str(workspace), "--tolerate-missing")
            process = in_guest.spawn_runner(command)
            try:
                stdout = process.communicate(timeout=ROUND_LIMIT_S)[0]
                code = process.returncode
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, code = b"", None
            lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]
            try:
                result = json.loads(lines[-1]) if lines else None
            except ValueError:
                result = None
            rounds.append({"exit_code": code, "result": result})
            in_guest.log(f"busy_rename round {index}: exit {code}, busy retries "
                       f"{(result or {}).get('writer_busy_rename_retries')}, ok {(result or {}).get('ok')}")
            shutil.rmtree(export / workspace.name, ignore_errors=True)  # server side: the next round starts clean
        report["stress_killed_writer"] = stress_on_nfs(job, mount, base)
    gate_like = in_guest.fake_gate_result(base, "platform-runtime-busyrename0000")
    report["teardown"] = in_guest.harness(job, "teardown", "--export", str(export), "--mount", str(mount),
                                        "--gate-result", str(gate_like), "--record", str(base / "nfs-harness.json"),
                                        "--scenario", "busy-rename")
    report["rounds"] = rounds
    report["verdict"] = judge(rounds)
    report["ok"] = report["verdict"]["pass"]
    if not report["ok"]:
        verdict = report["verdict"]
        report["reason"] = f"{verdict['passed']} of {len(rounds)} rounds passed: {verdict['reasons']}"
    (out / "busy_rename").mkdir(parents=True, exist_ok=True)
    (out / RESULT_FILE).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report
