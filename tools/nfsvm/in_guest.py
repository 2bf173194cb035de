"""The NFS job's steps inside the VM, shared by every phase (tools/nfsvm/phases.py and the phases in modules of
their own): running a command as the unprivileged runner user or as root, the gate's command and its own
worker code, the harness, the server's restart, the kernel's uptime, copying results out.
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


# The gate ends within its --timeout counted from its process start, its cleanup and result included
# (scripts/platform_runtime/gate.py, since 7d9a860); before that its cleanup and start-up came on top, and under
# host load 14-16 the guest killed it at --timeout + 60 s before it wrote a result. The margin is for the
# interpreter's exit; a gate still running past it is killed and the action's reason says so.
GATE_STEP_MARGIN_S = 60.0


def gate_step_limit(timeout: float) -> float:
    """Seconds after which the guest kills the gate step (the runner has no such limit: the job's own)."""
    return timeout + GATE_STEP_MARGIN_S


def harness(job: dict, *args: str, timeout: float = 300) -> dict:
    return as_runner([job["python"], "-B", f"{job['repo']}/scripts/steps/nfs_harness.py", *args], timeout=timeout)


def packaged_units(job: dict) -> dict | None:
    """With systemd (the package's postinst started its units): their states as the harness reads them, with
    its own unit list (scripts/steps/nfs_harness.py). After the harness stopped them, nothing may restart them
    while the gate runs on the harness's own server. None under busybox init."""
    if job.get("init") != "systemd":
        return None
    import sys

    steps = f"{job['repo']}/scripts/steps"
    if steps not in sys.path:
        sys.path.insert(0, steps)
    import nfs_harness

    return nfs_harness.unit_states(nfs_harness.PACKAGED_UNITS)


def root(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(command), capture_output=True, text=True)
    log(f"# {' '.join(command)} -> {done.returncode} {done.stderr.strip()[-200:]}")
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done


def fake_gate_result(folder: Path, workspace: str) -> Path:
    """What the harness teardown reads: the workspace the phase used, retained on the export."""
    path = folder / "gate-like.json"
    path.write_text(json.dumps({"workspace_cleanup": {"status": "retained", "workspace": workspace}}))
    return path


def gate_worker(job: dict, *args: str) -> list[str]:
    """A role of the gate's file-system worker, started exactly as the gate starts it (its entry script and
    isolation flags, from the gate's own code), with the venv's Python: never a path of our own to it."""
    gate_code(job)  # puts scripts/ on sys.path
    from platform_runtime import children

    return [job["python"], *children.WORKER_FLAGS, str(children.WORKER_ENTRY), "fs_worker", *args]


def gate_code(job: dict):
    """The gate's own JSONL checker and replace-document parser (helper code is not re-implemented)."""
    import sys

    scripts = f"{job['repo']}/scripts"
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    from platform_runtime import fs_worker, jsonl

    return jsonl, fs_worker


def spawn_runner(command: list[str], cwd: str = "/tmp", output: int = subprocess.PIPE) -> subprocess.Popen:
    environment = ["HOME=/home/runner", f"PATH={PATH}", "LANG=C.UTF-8"]
    return subprocess.Popen(["runuser", "-u", RUNNER, "--", "env", "-i", *environment, *command], cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)


def restart_server(export: Path) -> dict:
    """A server restart from outside the project's code: every nfsd thread stops, then starts again.
    The clients' state must then be reclaimed within the grace period."""
    stopped_at = uptime()
    root("rpc.nfsd", "0")
    time.sleep(1.0)
    root("rpc.nfsd", "-N", "3", "4")
    return {"stopped_at_uptime": round(stopped_at, 1), "restarted_at_uptime": round(uptime(), 1)}


def wait_for_workspace(export: Path, limit_s: float) -> str | None:
    give_up = time.monotonic() + limit_s
    while time.monotonic() < give_up:
        found = sorted(p.name for p in export.glob("platform-runtime-*"))
        if found:
            return found[0]
        time.sleep(0.2)
    return None


def core_on_path() -> None:
    """The shared repository's scripts/ importable, as gate_code makes it: the phases' verdicts are the rules'."""
    import sys

    scripts = str(Path(__file__).resolve().parents[2] / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)


def judge_fault(result: dict | None, exit_code: int | None, elapsed: float, timeout: float) -> dict:
    """The server-restart phase's verdict by the registry's rule (rules.nfs_vm_faults.fault_verdict), which the
    host's judge applies again to the recorded files."""
    core_on_path()
    from rules import registry

    return registry.flags("nfsvm-run", "checks.server_restart")(result, exit_code, elapsed, timeout)
