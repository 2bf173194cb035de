"""The gate on every file system this machine can mount, and the --require nfs / windows refusals on each.

Mounting needs root (CI runs as root) and, for xfs and btrfs, their mkfs tools (.ci/run installs them);
where either is missing the test skips and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_gate

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="mounts tmpfs, ext4, xfs, btrfs and reads mountinfo")
FILE_SYSTEMS = ["working-tree", "tmpfs", "ext4", "xfs", "btrfs"]
IMAGE_SIZE = {"ext4": "64M", "xfs": "320M", "btrfs": "160M"}  # xfs refuses images under 300 MB


def _sh(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
def mounted(request, tmp_path):
    fs = request.param
    if fs == "working-tree":
        yield fs, ROOT, None
        return
    if os.geteuid() != 0:
        pytest.skip(f"mounting {fs} needs root")
    point = tmp_path / "mnt"
    point.mkdir()
    if fs == "tmpfs":
        command = ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(point)]
    else:
        mkfs = shutil.which(f"mkfs.{fs}")
        if mkfs is None:
            pytest.skip(f"mkfs.{fs} is not installed (apt-get install {'xfsprogs' if fs == 'xfs' else 'btrfs-progs'})")
        image = tmp_path / f"{fs}.img"
        _sh("truncate", "-s", IMAGE_SIZE[fs], str(image))
        made = _sh(mkfs, *(["-q", "-F"] if fs == "ext4" else ["-q", "-f"]), str(image))
        if made.returncode != 0:
            pytest.skip(f"mkfs.{fs} failed: {made.stderr.strip()[:200]}")
        command = ["mount", "-o", "loop", str(image), str(point)]
    done = _sh(*command)
    if done.returncode != 0:
        pytest.skip(f"cannot mount {fs} here: {done.stderr.strip()[:200]}")
    try:
        yield fs, point, tmp_path
    finally:
        if _sh("umount", str(point)).returncode != 0:
            _sh("umount", "-l", str(point))


@pytest.mark.root
@pytest.mark.parametrize("mounted", FILE_SYSTEMS, indirect=True)
def test_gate_passes_every_check_there_and_refuses_nfs_and_windows(mounted, tmp_path):
    fs, work_dir, _ = mounted
    nfs = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", "--work-dir", str(work_dir))
    assert nfs.returncode == 1 and nfs.result["ok"] is False
    assert all(check["ok"] for check in nfs.result["checks"].values()), nfs.result["failures"]
    detected = nfs.result["filesystem"]["type"]
    assert detected == ("ext4" if fs == "working-tree" and detected == "ext4" else fs) or fs == "working-tree"
    assert nfs.result["filesystem"]["method"] == "linux-mountinfo-mnt-id"
    assert nfs.result["failures"] == [f"requirement nfs not met: the work dir's own mount is {detected}, not nfs/nfs4"]

    windows = run_gate(tmp_path, "--device", "cpu", "--require", "windows", "--require-filesystem", detected,
                       "--work-dir", str(work_dir))
    assert windows.returncode == 1 and windows.result["ok"] is False
    verdicts = {v["name"]: v for v in windows.result["requirements"]}
    assert verdicts["windows"]["ok"] is False
    assert "platform.system is 'Linux', not Windows" in verdicts["windows"]["reason"]
    assert verdicts[f"filesystem={detected}"]["ok"] is True
    assert not any(path.name.startswith("platform-runtime-") for path in work_dir.iterdir())


@pytest.fixture
def small_mount(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting tmpfs needs root")
    mounted = []

    def mount(options: str):
        point = tmp_path / f"mnt-{len(mounted)}"
        point.mkdir()
        done = _sh("mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point))
        if done.returncode != 0:
            pytest.skip(f"cannot mount tmpfs here: {done.stderr.strip()[:200]}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        _sh("umount", str(point))


# What a check that wrote recorded about its data when it passed: the bytes it wrote came back intact.
INTACT = {
    "device_compute": lambda c: c["checkpoint"]["mismatches"] == [] and c["checkpoint"]["tensors_compared"] >= 4,
    "failing_writer": lambda c: c["old_file_intact"] is True and c["temp_files_left"] == 0,
    "concurrent_replace": lambda c: c["final_version"][1] == c["replaces_per_writer"] - 1 and c["partial_reads"] == 0,
    "jsonl_append": lambda c: c["valid_records"] == c["expected_records"],
}
WRITING_CHECKS = tuple(INTACT)


@pytest.mark.root
def test_a_full_file_system_fails_the_checks_that_write_and_names_the_error(small_mount, tmp_path):
    """Which check fills the 64 KiB first is the scheduler's choice, so what is asserted holds in every order:
    each check that wrote either passed (its own verification of what it wrote held) or failed naming
    ENOSPC; the appends (8 x 200 records, about 400 KiB) can never fit, so that check always fails."""
    work_dir = small_mount("size=64k")
    run = run_gate(tmp_path, "--device", "cpu", "--work-dir", str(work_dir))
    assert run.returncode == 1 and run.result["ok"] is False
    checks = run.result["checks"]
    for name, intact in INTACT.items():
        assert (checks[name]["ok"] and intact(checks[name])) or "ENOSPC" in checks[name]["reason"], (
            name, checks[name]["reason"])
    append = checks["jsonl_append"]
    assert append["ok"] is False and "ENOSPC (No space left on device)" in append["reason"]
    failed = [name for name in WRITING_CHECKS if not checks[name]["ok"]]
    assert {f.split(":")[0] for f in run.result["failures"]} == set(failed)  # nothing else failed
    assert all("ENOSPC" in f for f in run.result["failures"])
    assert checks["workspace_cleanup"]["ok"] is True and list(work_dir.iterdir()) == []


@pytest.mark.root
def test_a_read_only_work_dir_is_refused_with_exit_2_and_a_failed_result(small_mount, tmp_path):
    run = run_gate(tmp_path, "--device", "cpu", "--work-dir", str(small_mount("size=1m,ro")))
    assert run.returncode == 2 and run.result["ok"] is False
    assert run.result["failures"] == ["cannot create the workspace in --work-dir: Read-only file system"]
