"""Record a VM run as committed evidence: the results that matter, flat, scrubbed, with their index.

    python3 dev.py nfs --evidence-dir evidence/nfs

Copies from the run's output folder, replaces the host's and the guest's absolute paths by
placeholders (evidence is bytes: no temp paths, host or user names), then builds the evidence index
over the copies with scripts/build_evidence_index.py local.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nfsvm import interpreter, job  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the rules
from rules.nfs_vm_run import EVIDENCE_NAMES  # noqa: E402

# source (relative to the run's output folder) -> name in the evidence folder: the judge's one table, so the
# index finds each record a recorded run's checks are made from.
FILES = EVIDENCE_NAMES
# What the live run's own index binds (its check evidence_index, cli.build_index): the action's gate result and
# harness record. A recorded folder is indexed whole (record below).
INDEXED = ("platform-runtime-nfs.json", "nfs-harness.json")
GUEST_TEMP = re.compile(r"/tmp/(runner-temp|two-clients|restart|busy)[^\s\"']*")
# An absolute path in recorded text: a "/" that starts a word (not "127.0.0.1:/", "<repo>/x" or "a/b").
ABSOLUTE_PATH = re.compile(r"(?<![\w<>.:/-])/[\w.+-]+(?:/[\w.+@-]*)*")


def host_prefixes(repo: Path, python: Path) -> dict[str, list[str]]:
    """placeholder -> the host paths it stands for: the repository; the venv (its own prefix and the real path
    it links to) and the interpreter the venv was made from, where they lie outside the repository (inside,
    they read <repo>/...); and the guest's own venv (tools/nfsvm/interpreter.py)."""
    repo_real = Path(os.path.realpath(repo))

    def outside(paths: list[str]) -> list[str]:
        return sorted({p for p in paths if p and not any(Path(p).is_relative_to(r) for r in (repo, repo_real))})

    prefixes = job.python_prefixes(python)
    return {"<repo>": sorted({str(repo), str(repo_real)}),
            "<venv>": outside([prefixes["venv"], os.path.realpath(prefixes["venv"]), os.path.realpath(repo / ".venv")]),
            "<python>": outside([prefixes["python"], os.path.realpath(prefixes["python"])]),
            "<guest-venv>": [str(interpreter.VENV)]}


def scrub(text: str, repo: Path, prefixes: dict[str, list[str]] | None = None) -> str:
    """Host and guest paths as placeholders: `prefixes` (host_prefixes; by default the repository only),
    the most specific first, each only as a whole path component; then the guest's temporary folders."""
    pairs = [(path, name) for name, paths in (prefixes or {"<repo>": [str(repo)]}).items() for path in paths]
    for path, name in sorted(pairs, key=lambda pair: -len(pair[0])):
        text = re.sub(re.escape(path.rstrip("/")) + r"(?=[/\s\"']|$)", name, text)
    text = GUEST_TEMP.sub(lambda m: f"<guest-tmp:{m.group(1)}>", text)
    return re.sub(r"/root/[^\s\"']*", "<host-path>", text)


def absolute_paths(text: str) -> list[str]:
    """Every absolute path left in recorded text (evidence holds none)."""
    return sorted(set(ABSOLUTE_PATH.findall(text)))


README = """# Native NFS evidence: kernel NFSv4.2 in a Linux {kernel} VM on this machine

Made by `python3 dev.py nfs --evidence-dir evidence/nfs` on {date} at commit {head}{dirty}.
Kernel NFSv4.2 server and client of Debian's Linux {kernel} (nfs-kernel-server {nfs}) over loopback
(and a veth pair for the second client) inside a qemu TCG VM on this machine; the nfs action's own
steps ran as an unprivileged user with sudo. Verdict: {verdict}.

It is not an NFS appliance on another machine, not network latency, and not GitHub's Ubuntu kernel;
the nfs job's apt install and systemd units on a GitHub runner have not run yet.
`evidence-index.json` binds every file of this folder by SHA-256 and judges each by its kind: the gate
results and harness records by their facts, and `nfs-vm-run.json`, which lists every check of the run,
by making each of its checks again from the records beside it (the two-client, server-restart and
busy-unmount results; `nfsvm-image.json` is the image's manifest).
"""


SYSTEMD_README = """# NFS evidence with systemd as PID 1: the nfs action after nfs-kernel-server's postinst

Made by `python3 dev.py nfs --init systemd --evidence-dir evidence/nfs-systemd` on {date} at commit
{head}{dirty}. The same Debian Linux {kernel} kernel under qemu TCG, booted with systemd as PID 1 from an
image without nfs-kernel-server; `install.json`: nfs-kernel-server {nfs} and its dependencies installed
with `dpkg -i` from their .debs inside the running VM, so that the package's postinst started its units
as `apt-get install` does on an ubuntu runner (which units were active after it, nfsd's threads and grace
time). Then the nfs action's own steps ran unchanged as the unprivileged runner user (`nfs_harness.py
setup`, the gate with `--require nfs --keep-workspace`, teardown). Verdict: {verdict}.

Not a GitHub runner: Debian bookworm's systemd and nfs-utils, not Ubuntu's, and no network.
`evidence-index.json` binds every file of this folder by SHA-256 and judges each by its kind;
`nfs-vm-run.json`, which lists every check of the run, is judged by making each check again from the
records beside it; `nfsvm-image.json` is the image's manifest.
"""


def readme(run: dict) -> str:
    git = run.get("git") or {}
    template = SYSTEMD_README if run.get("init") == "systemd" else README
    return template.format(kernel=run.get("kernel_release"), nfs=run.get("nfs_kernel_server"), date=run.get("date"),
                         head=git.get("head"), dirty=" (working tree with uncommitted changes)" if git.get("dirty")
                         else "", verdict="every check passed" if run.get("ok") else
                         "FAILED: " + ", ".join(c["name"] for c in run.get("checks", []) if not c["ok"]))


def index_command(repo: Path, results: Path, names: list[str], output: Path) -> list[str]:
    """The project's index builder over `names` in `results` (the one command for a run and its record)."""
    return [sys.executable, "-B", str(repo / "scripts" / "build_evidence_index.py"), "local", "--results",
            str(results), *[part for name in names for part in ("--result", name)], "--output", str(output)]


def record(out: Path, destination: Path, repo: Path, run: dict, prefixes: dict[str, list[str]] | None = None) -> dict:
    """Copy the run's results into destination, scrubbed (`prefixes`: host_prefixes), and index them.
    `absolute_paths` lists what the scrub left (file: path): evidence with any is not fit to commit."""
    prefixes = prefixes if prefixes is not None else host_prefixes(repo, repo / ".venv" / "bin" / "python")
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    copied, left = [], []
    for source, name in FILES.items():
        if (out / source).is_file():
            text = scrub((out / source).read_text(encoding="utf-8"), repo, prefixes)
            (destination / name).write_text(text, encoding="utf-8")
            copied.append(name)
            left += [f"{name}: {path}" for path in absolute_paths(text)]
    (destination / "README.md").write_text(readme(run), encoding="utf-8")
    # The whole folder: every record, judged by its kind, and nfs-vm-run.json's checks made again from them.
    done = subprocess.run(index_command(repo, destination, [], destination / "evidence-index.json"),
                          capture_output=True, text=True, cwd=repo)
    return {"copied": copied, "index_exit_code": done.returncode, "absolute_paths": left,
            "index_message": scrub(" ".join((done.stdout + done.stderr).split())[-300:], repo, prefixes)
            .replace(str(destination), "<evidence-dir>")}
