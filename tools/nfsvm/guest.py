"""The guest's init (PID 1, Debian's python3 -I): mount what the job needs, run it, power off.

Copied into the job share by the host and started by the initramfs (or, in the systemd image, by a
systemd unit once boot is done: then systemd and fstab have made the base mounts). It reads /nfsvm-job/job.json
(the read-only shares to mount at the host's own paths, the phases to run), picks the Python that runs
the project (tools/nfsvm/interpreter.py) and hands over to tools/nfsvm/phases.py from the shared
repository. Whatever happens -- an exception, a phase that hangs past its limit -- it ends with a sync
and `echo o > /proc/sysrq-trigger`: never a shell.
"""

import json
import os
import platform
import subprocess
import sys
import sysconfig
import time
import traceback

JOB = "/nfsvm-job"


def sh(*command, check=True):
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()}")
    return result


def prepare(job):
    if os.getpid() == 1:  # busybox variant; under systemd (a unit started us) it and fstab did these mounts
        prepare_mounts()
    os.chmod("/root", 0o755)  # the shared host paths may sit under /root (pyenv); the runner must reach them
    for share in job["shares"]:
        os.makedirs(share["path"], exist_ok=True)
        sh("mount", "-t", "9p", "-o", "trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144",
           share["tag"], share["path"])
    sh("ip", "link", "set", "lo", "up")
    sh("hostname", "nfsvm")
    with open("/etc/hosts", "w") as hosts:  # sudo resolves its own host name; there is no DNS here
        hosts.write("127.0.0.1 localhost\n127.0.1.1 nfsvm\n")


def prepare_mounts():
    sh("mount", "-t", "proc", "proc", "/proc")
    sh("mount", "-t", "sysfs", "sys", "/sys")
    # tmpfs where the server and the job write: the root is an overlay over a read-only 9p share,
    # and neither 9p nor an overlay on it can be exported over NFS.
    for path in ("/run", "/tmp", "/var/lib/nfs"):
        sh("mount", "-t", "tmpfs", "-o", "mode=1777" if path == "/tmp" else "mode=0755", "tmpfs", path)
    os.makedirs("/var/lib/nfs/rpc_pipefs", exist_ok=True)
    os.makedirs("/var/lib/nfs/v4recovery", exist_ok=True)
    os.makedirs("/dev/pts", exist_ok=True)
    sh("mount", "-t", "devpts", "devpts", "/dev/pts", check=False)


def main():
    started = time.monotonic()
    out = os.path.join(JOB, "out")
    os.makedirs(out, exist_ok=True)
    log = open(os.path.join(out, "guest.log"), "a", buffering=1)
    sys.stdout = sys.stderr = log
    try:
        with open(os.path.join(JOB, "job.json")) as handle:
            job = json.load(handle)
        prepare(job)
        print(f"guest: prepared in {time.monotonic() - started:.1f} s", flush=True)
        sys.path.insert(0, os.path.join(job["repo"], "tools"))
        from nfsvm import interpreter, phases

        image = {"version": f"{sys.version_info[0]}.{sys.version_info[1]}", "release": platform.python_version(),
                 "soabi": sysconfig.get_config_var("SOABI")}
        job["interpreter"] = interpreter.guest_python(job, image)
        job["python"] = job["interpreter"]["executable"]
        phases.run_all(job, out, boot_seconds=time.monotonic() - started)
    except BaseException:
        traceback.print_exc()
        with open(os.path.join(out, "guest-error.txt"), "w") as handle:
            handle.write(traceback.format_exc())
    finally:
        log.flush()
        os.sync()
        with open("/proc/sysrq-trigger", "w") as trigger:
            trigger.write("o")
        time.sleep(60)


main()
