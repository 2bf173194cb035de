"""The NFS job inside the VM (run by guest.py as root): each phase writes its results under out/<phase>/.

Phases: action (the composite action's own steps as the unprivileged runner user), two_clients,
server_restart (a fault during the gate), busy_unmount (teardown refuses to delete after a failed
unmount). The project's scripts run with the host's venv Python, shared at the same path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

RUNNER = "runner"
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


def log(message: str) -> None:
    print(f"guest[{time.monotonic():8.1f}]: {message}", flush=True)


def as_runner(command: list[str], env: dict | None = None, timeout: float = 600, cwd: str = "/tmp") -> dict:
    """Run command as the runner user with a clean environment; returns exit code, seconds, output tail."""
    environment = ["HOME=/home/runner", f"PATH={PATH}", "LANG=C.UTF-8"]
    environment += [f"{key}={value}" for key, value in (env or {}).items()]
    full = ["runuser", "-u", RUNNER, "--", "env", "-i", *environment, *command]
    started = time.monotonic()
    try:
        done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        code, output = None, f"{expired.stdout or ''}{expired.stderr or ''}\n(killed after {timeout} s)"
        output = output if isinstance(output, str) else str(output)
    seconds = round(time.monotonic() - started, 2)
    log(f"{' '.join(command[:3])} ... -> {code} in {seconds} s")
    print(output[-4000:], flush=True)
    return {"exit_code": code, "seconds": seconds}


def runner_dir(path: str) -> Path:
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.chown(folder, RUNNER, RUNNER)
    folder.chmod(0o700)
    return folder


def read_outputs(path: Path) -> dict:
    """Step outputs in the heredoc form actions write to $GITHUB_OUTPUT."""
    values, lines = {}, path.read_text().splitlines()
    index = 0
    while index < len(lines):
        name, _, delimiter = lines[index].partition("<<")
        end = lines.index(delimiter, index + 1)
        values[name] = "\n".join(lines[index + 1:end])
        index = end + 1
    return values


def versions() -> dict:
    query = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "nfs-kernel-server", "nfs-common",
                            "python3"], capture_output=True, text=True).stdout
    with open("/proc/version") as handle:
        proc_version = handle.read().strip()
    return {"kernel_release": os.uname().release, "proc_version": proc_version,
            "packages": dict(line.split(" ", 1) for line in query.splitlines() if line)}


def uptime() -> float:
    """Seconds since the kernel started: boot-to-verdict without comparing host and guest clocks."""
    with open("/proc/uptime") as handle:
        return float(handle.read().split()[0])


def copy_out(source: Path, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for item in sorted(source.iterdir()):
        if item.is_file():
            shutil.copy2(item, destination / item.name)


def gate_command(job: dict, mount: Path, output: Path, timeout: float) -> list[str]:
    """The gate exactly as the nfs action runs it: --require nfs and --keep-workspace on the mount."""
    return [job["python"], "-B", f"{job['repo']}/scripts/platform_runtime_check.py", "--device", "cpu",
            "--require", "nfs", "--keep-workspace", "--work-dir", str(mount), "--output", str(output),
            "--timeout", str(timeout)]


def harness(job: dict, *args: str, timeout: float = 300) -> dict:
    return as_runner([job["python"], "-B", f"{job['repo']}/scripts/actions/nfs_harness.py", *args], timeout=timeout)


def action_phase(job: dict, out: Path, boot_seconds: float) -> dict:
    """The nfs composite action's steps, in its order, as the runner user with passwordless sudo."""
    started = time.monotonic()
    temp = runner_dir("/tmp/runner-temp")
    outputs_file = temp / "github-output"
    steps = {}
    steps["result_dir"] = as_runner([job["python"], "-B", f"{job['repo']}/scripts/actions/result_dir.py",
                                     "dir=platform-runtime-nfs-", "nfs=nfs-"],
                                    env={"RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(outputs_file)})
    paths = read_outputs(outputs_file)
    results, nfs = Path(paths["dir"]), Path(paths["nfs"])
    gate_result, record = results / "platform-runtime-nfs.json", results / "nfs-harness.json"
    steps["setup"] = harness(job, "setup", "--export", f"{nfs}/export", "--mount", f"{nfs}/mount",
                             "--grace-seconds", "10")
    if steps["setup"]["exit_code"] == 0:
        steps["gate"] = as_runner(gate_command(job, nfs / "mount", gate_result, job["gate_timeout"]),
                                  timeout=job["gate_timeout"] + 60)
    verdict_seconds = uptime()
    steps["teardown"] = harness(job, "teardown", "--export", f"{nfs}/export", "--mount", f"{nfs}/mount",
                                "--gate-result", str(gate_result), "--record", str(record))
    copy_out(results, out / "action")
    state = nfs / "nfs-harness-setup.json"
    if state.exists():
        shutil.copy2(state, out / "action" / state.name)
    summary = {"steps": steps, "kernel_uptime_at_gate_verdict_seconds": round(verdict_seconds, 1),
               "phase_seconds": round(time.monotonic() - started, 1)}
    (out / "action" / "steps.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


PHASES = {"action": action_phase}


def run_all(job: dict, out: str, boot_seconds: float) -> None:
    out_dir = Path(out)
    (out_dir / "versions.json").write_text(json.dumps(versions(), indent=2, sort_keys=True) + "\n")
    for name in job["phases"]:
        log(f"phase {name} starts")
        started = time.monotonic()
        try:
            PHASES[name](job, out_dir, boot_seconds)
        except Exception as error:  # one broken phase must not hide the others' results
            log(f"phase {name} raised {type(error).__name__}: {error}")
            (out_dir / f"{name}-error.txt").write_text(f"{type(error).__name__}: {error}\n")
        log(f"phase {name} done in {time.monotonic() - started:.1f} s")
        boot_seconds = 0.0
