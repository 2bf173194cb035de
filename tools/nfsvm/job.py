"""Host side of one VM run: which paths to share, the job description, booting, collecting out/."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nfsvm import interpreter, vm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
PHASES = ("action", "two_clients", "server_restart", "busy_unmount")  # what a plain run runs
# Named with --phases only: busy_rename (the gate's replace check ten times on one client, counting the
# busy renames retried) and rename_race (the raw replace pattern without the retry, under conditions that
# differ one at a time: where ETXTBSY comes from) are experiments; server_gone leaves the VM's NFS server
# stopped and a mount hung, and adds about two minutes. They run after the others, server_gone last,
# whatever the order given.
OPTIONAL_PHASES = ("busy_rename", "rename_race", "server_gone")
ALL_PHASES = PHASES + OPTIONAL_PHASES
# The systemd VM (`--init systemd`) runs the action's steps by default, always after the install phase
# (nfs-kernel-server from its .debs under systemd: tools/nfsvm/postinst.py).
SYSTEMD_PHASES = ("action",)
INSTALL_PHASE = "install"
# Each gate the guest runs (the action's, the server-restart phase's) has this share of the VM's wall-clock limit as
# its --timeout, and never less than GATE_TIMEOUT_MIN_S: the guest's gate imports torch under TCG (about 20 s on an
# idle host, many times that on a loaded one), and a fixed deadline turned a loaded host's slower run into a red one
# (device_compute killed at its deadline with no answer). The gate's own checks take their shares of its --timeout
# (scripts/platform_runtime/gate.py), so a VM given more time gives it to every deadline inside.
GATE_SHARE_OF_LIMIT = 0.3
GATE_TIMEOUT_MIN_S = 420.0


def gate_timeout_for(limit_s: float) -> float:
    """The --timeout of each gate the guest runs, from the VM's own wall-clock limit."""
    return round(max(GATE_TIMEOUT_MIN_S, limit_s * GATE_SHARE_OF_LIMIT), 1)


def python_prefixes(python: Path) -> dict[str, str]:
    """The venv's prefix and its base interpreter's, as that interpreter reports them (not resolved)."""
    prefix, base = subprocess.run([str(python), "-I", "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
                                  capture_output=True, text=True, check=True).stdout.splitlines()
    return {"venv": prefix, "python": base}


def shared_paths(repo: Path, python: Path) -> list[Path]:
    """The repository, the venv it points at and that venv's base Python, each shared at its own path."""
    base = python_prefixes(python).values()
    candidates = [repo, Path(os.path.realpath(repo / ".venv")), *(Path(os.path.realpath(p)) for p in base)]
    chosen: list[Path] = []
    for path in sorted(set(candidates), key=lambda p: len(p.parts)):
        if not any(path == c or c in path.parents for c in chosen):
            chosen.append(path)
    return chosen


def host_python(python: Path) -> dict:
    """The venv's minor version, release and its site-packages (real path), with the bytecode written there
    after the install: the guest may run them with its own interpreter (tools/nfsvm/interpreter.py)."""
    code = ("import platform, sys, sysconfig; p = sysconfig.get_paths(); print('%d.%d' % sys.version_info[:2]); "
            "print(platform.python_version()); "
            "print(sysconfig.get_config_var('SOABI')); print(p['purelib']); print(p['platlib'])")
    version, release, soabi, purelib, platlib = subprocess.run(
        [str(python), "-I", "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    site = os.path.realpath(purelib)
    return {"version": version, "release": release, "soabi": soabi, "site_packages": site,
            "one_site_dir": site == os.path.realpath(platlib),
            "written_bytecode": interpreter.written_bytecode(Path(site))}


def make_job(repo: Path, phases: list[str], gate_timeout: float, init: str = "busybox") -> tuple[dict, list[dict]]:
    """The job the guest runs. Timeouts are generous: under TCG the gate imports torch in ~20 s idle."""
    python = repo / ".venv" / "bin" / "python"
    shares = [{"tag": f"share{i}", "path": str(path)} for i, path in enumerate(shared_paths(repo, python))]
    order = {name: index + 1 for index, name in enumerate(OPTIONAL_PHASES)}
    phases = sorted(phases, key=lambda name: order.get(name, 0))  # stable: the given order otherwise
    job = {"init": init, "repo": str(repo), "python": str(python), "host_python": host_python(python),
           "phases": phases,
           "shares": shares,
           "gate_timeout": gate_timeout, "fault_gate_timeout": gate_timeout}
    return job, shares


def run(image: Path, cache: Path, phases: list[str], limit_s: float, gate_timeout: float | None = None,
        repo: Path = ROOT, init: str = "busybox") -> tuple[dict, Path]:
    """Boot one VM for the phases; returns the boot facts and the folder holding what the guest wrote. The guest's
    gates run with `gate_timeout`, by default their share of `limit_s` (gate_timeout_for)."""
    gate_timeout = gate_timeout_for(limit_s) if gate_timeout is None else gate_timeout
    runs = cache / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    job_dir = Path(tempfile.mkdtemp(prefix="run-", dir=runs)) / "job"
    job, shares = make_job(repo, phases, gate_timeout, init)
    vm.prepare_job(job_dir, job)
    facts = vm.boot(image, job_dir, shares, limit_s, init)
    return facts, job_dir


def collect(job_dir: Path, destination: Path) -> None:
    """Move the guest's out/ (and the console log) to destination, replacing an earlier run's files."""
    if destination.exists():
        shutil.rmtree(destination)
    source = job_dir / "out"
    if source.exists():
        shutil.copytree(source, destination)
    else:
        destination.mkdir(parents=True)
    shutil.copy2(job_dir / "console.log", destination / "vm-console.log")
    shutil.rmtree(job_dir.parent, ignore_errors=True)
