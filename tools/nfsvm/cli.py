#!/usr/bin/env python3
"""The NFS job on a real kernel: `python3 dev.py nfs` runs this.

    python tools/nfsvm/cli.py [--output-dir outputs/nfs] [--phases action,two_clients,...] [--limit SECONDS]
        [--init busybox|systemd]

(--phases may also name busy_rename, the gate's replace check ten times on one client counting ETXTBSY
retries, rename_race, the raw replace pattern without the retry on one and two clients and on local tmpfs,
counting each errno (where ETXTBSY comes from), and server_gone, the NFS server stopped for good under a
running gate; never by default.)

--init systemd boots the same kernel with systemd as PID 1 in an image WITHOUT nfs-kernel-server, installs
it from its .debs in the running VM (its postinst starts nfs-server.service, as apt-get does on an ubuntu
runner), then runs the action's steps (default --phases action, output outputs/nfs-systemd).

Builds or reuses the VM image (a pinned Debian bookworm root with nfs-kernel-server and the Debian
Linux 6.1 kernel, in $KERNODECK_NFSVM_CACHE, else $XDG_CACHE_HOME or ~/.cache, /kernodeck-nfsvm),
boots it under qemu (TCG, 2 vCPUs), runs the nfs action's own steps and the two-client, server-restart
and busy-unmount tests in it, and writes what came out to the output folder with nfs-vm-run.json
(every check and its detail) and an evidence index. Exit 0 only when every check passed; 1 a check
failed; 2 the VM cannot be built or run here (the message says what to install).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parents[2] / "scripts")]

from common.provenance import git_state  # noqa: E402

from nfsvm import evidence, image, job, recipe, run_checks  # noqa: E402

ROOT = job.ROOT
INSTALL = "apt-get install --no-install-recommends qemu-system-x86 debootstrap busybox-static"


def build_index(out: Path, phases: list[str]) -> dict:
    names = [name for name in evidence.INDEXED if "action" in phases and (out / "action" / name).exists()]
    if not names:
        return {"exit_code": None, "message": "nothing to index: the action phase left no gate result"}
    done = subprocess.run(evidence.index_command(ROOT, out / "action", names, out / "evidence-index.json"),
                          capture_output=True, text=True)
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return {"exit_code": done.returncode, "message": " ".join(lines[-3:])[:300].replace(str(out), "<output-dir>")}


def summary(checks: list[dict], run: dict) -> str:
    lines = [f"NFS in a VM ({run['init']} init): {'PASS' if run['ok'] else 'FAIL'}  (kernel {run['kernel_release']}, "
             f"nfs-kernel-server {run['nfs_kernel_server']}, qemu TCG -smp 2)"]
    lines += [f"  {'ok  ' if c['ok'] else 'FAIL'} {c['name']:<15} {c['detail']}" for c in checks]
    lines.append(f"  wall time {run['wall_seconds']} s (image {run['image_seconds']} s, "
                 f"VM {run['vm']['wall_seconds']} s)")
    return "\n".join(lines)


def judge_run(out: Path, boot: dict, phases: list[str], manifest: dict, image_seconds: float) -> dict:
    """nfs-vm-run.json: every check (the phases' results, then the evidence index's verdict)."""
    checks = run_checks.judge(out, boot, phases)
    versions = run_checks.load(out, "versions.json") or {}
    run = {"schema": "kernodeck.nfsvm-run/v1", "checks": checks, "vm": boot, "phases": phases,
           "init": manifest.get("init", "busybox"),
           "kernel_release": versions.get("kernel_release"),
           "nfs_kernel_server": (versions.get("packages") or {}).get("nfs-kernel-server"),
           "image": {key: manifest[key] for key in ("recipe_sha256", "kernel_package", "kernel_package_version",
                                                    "kernel_deb_sha256", "packages_sha256", "vmlinuz_sha256")},
           "git": git_state(ROOT), "image_seconds": image_seconds, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    run["evidence_index"] = build_index(out, phases)
    # The index's own verdict over the gate result and the harness record, by SHA-256: one more check.
    checks.append({"name": "evidence_index", "ok": run["evidence_index"]["exit_code"] == 0,
                   "detail": run["evidence_index"]["message"]})
    run["ok"] = all(c["ok"] for c in checks)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", type=Path, help="default outputs/nfs (outputs/nfs-systemd with --init systemd)")
    parser.add_argument("--phases", help=f"default {','.join(job.PHASES)} ({','.join(job.SYSTEMD_PHASES)} with "
                        "--init systemd)")
    parser.add_argument("--init", choices=recipe.INITS, default="busybox",
                        help="PID 1 of the VM: busybox (the image has nfs-kernel-server) or systemd (installed in it)")
    parser.add_argument("--limit", type=float, default=2400.0, help="wall-clock limit of the VM (seconds)")
    parser.add_argument("--evidence-dir", type=Path, help="also record the run there (e.g. evidence/nfs), indexed")
    args = parser.parse_args(argv)
    systemd = args.init == "systemd"
    default_phases = job.SYSTEMD_PHASES if systemd else job.PHASES
    phases = [p for p in (args.phases or ",".join(default_phases)).split(",") if p]
    if not phases or any(p not in job.ALL_PHASES for p in phases):
        print(f"nfs: --phases takes a comma-separated subset of {','.join(job.ALL_PHASES)}", file=sys.stderr)
        return 2
    if systemd:
        phases = [job.INSTALL_PHASE, *phases]
    output_dir = args.output_dir or ROOT / "outputs" / ("nfs-systemd" if systemd else "nfs")
    started = time.monotonic()
    missing = image.missing_tools()
    if missing:
        print(f"nfs: missing {', '.join(missing)}; as root: {INSTALL}", file=sys.stderr)
        return 2
    try:
        built, manifest = image.ensure_image(init=args.init)
    except (image.ImageError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"nfs: cannot build the VM image: {error}", file=sys.stderr)
        return 2
    image_seconds = round(time.monotonic() - started, 1)
    print(f"nfs: booting {manifest['kernel_package']} ({manifest['kernel_package_version']}) for: {', '.join(phases)}",
          flush=True)
    boot, job_dir = job.run(built, recipe.cache_dir(), phases, args.limit, init=args.init)
    out = output_dir.resolve()
    job.collect(job_dir, out)
    shutil.copy2(built / "manifest.json", out / "nfsvm-image.json")
    run = judge_run(out, boot, phases, manifest, image_seconds)
    run["wall_seconds"] = round(time.monotonic() - started, 1)
    (out / "nfs-vm-run.json").write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")
    print(summary(run["checks"], run))
    if args.evidence_dir:
        recorded = evidence.record(out, args.evidence_dir.resolve(), ROOT, run)
        print(f"nfs: recorded {len(recorded['copied'])} files in {args.evidence_dir}; index exit "
              f"{recorded['index_exit_code']} {recorded['index_message']}")
        if recorded["absolute_paths"]:
            print(f"nfs: the record still holds absolute paths, not fit to commit: {recorded['absolute_paths']}",
                  file=sys.stderr)
            return 1
    return 0 if run["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
