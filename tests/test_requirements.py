"""--require conditions hold only on positive evidence, and impossible combinations are refused."""

from __future__ import annotations

from platform_runtime.requirements import Requirements, conflicts, evaluate

CPU_DEVICE = {"type": "cpu", "resolved": "cpu", "ran_on": ["cpu"], "peak_allocated_bytes": None}
CUDA_DEVICE = {"type": "cuda", "resolved": "cuda:0", "ran_on": ["cuda"], "peak_allocated_bytes": 1 << 20}
EXT4 = {"type": "ext4", "method": "linux-mountinfo-mnt-id", "nfs_version": None}
NFS4 = {"type": "nfs4", "method": "linux-mountinfo-mnt-id", "nfs_version": "4.2"}
NTFS = {"type": "ntfs", "method": "win32-GetVolumeInformationW", "drive_type": "fixed"}


def verdict(platforms=(), device=None, fs=None, system="Linux", dev=CPU_DEVICE, ok=True, filesystem=EXT4):
    return evaluate(Requirements(tuple(platforms), device, fs), system, dev, ok, filesystem)


def test_no_conflict_for_a_satisfiable_set():
    assert conflicts(Requirements(("cuda", "nfs"), "cuda", "nfs4"), "cuda:1") == []


def test_cuda_holds_only_when_the_work_ran_and_allocated_on_cuda():
    assert verdict(["cuda"], dev=CUDA_DEVICE)[0]["ok"] is True
    assert verdict(["cuda"], dev=CPU_DEVICE)[0]["ok"] is False
    assert verdict(["cuda"], dev={**CUDA_DEVICE, "peak_allocated_bytes": 0})[0]["ok"] is False
    assert verdict(["cuda"], dev={**CUDA_DEVICE, "ran_on": ["cpu", "cuda"]})[0]["ok"] is False
    assert verdict(["cuda"], dev=CUDA_DEVICE, ok=False)[0]["ok"] is False


def test_mps_holds_only_on_mps():
    mps = {"type": "mps", "resolved": "mps", "ran_on": ["mps"], "peak_allocated_bytes": 4096}
    assert verdict(["mps"], dev=mps, system="Darwin")[0]["ok"] is True
    assert verdict(["mps"], dev={**mps, "peak_allocated_bytes": 0}, system="Darwin")[0]["ok"] is False


def test_nfs_holds_only_for_an_nfs_mount_found_in_mountinfo():
    assert verdict(["nfs"], filesystem=NFS4)[0]["ok"] is True
    refused = verdict(["nfs"], filesystem=EXT4)[0]
    assert refused["ok"] is False and "ext4" in refused["reason"]
    # A Windows volume named NFS is not Linux mountinfo evidence.
    assert verdict(["nfs"], system="Windows", filesystem={**NTFS, "type": "nfs"})[0]["ok"] is False


def test_windows_needs_the_platform_and_the_volume_api():
    assert verdict(["windows"], system="Windows", filesystem=NTFS)[0]["ok"] is True
    assert verdict(["windows"], system="Linux", filesystem=EXT4)[0]["ok"] is False
    assert verdict(["windows"], system="Windows", filesystem={**NTFS, "type": None})[0]["ok"] is False


def test_fine_grained_filesystem_requirement():
    assert verdict(fs="nfs", filesystem=NFS4)[0]["ok"] is True
    assert verdict(fs="EXT4")[0]["ok"] is True
    assert verdict(fs="xfs")[0]["ok"] is False


def test_github_run_is_recorded_field_by_field_and_only_inside_actions():
    from core.provenance import github_facts

    assert github_facts({"GITHUB_SHA": "a" * 40}) is None
    env = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "a" * 40, "GITHUB_RUN_ID": "33304800747",
           "GITHUB_RUN_ATTEMPT": "2", "PLATFORM_RUNTIME_JOB_ID": "99239323612", "GITHUB_TOKEN": "ghs_secret",
           "RUNNER_NAME": "private-box", "HOME": "/home/someone"}
    facts = github_facts(env)
    assert facts["run_id"] == "33304800747" and facts["run_attempt"] == "2" and facts["job_id"] == "99239323612"
    text = repr(facts)
    assert "ghs_secret" not in text and "private-box" not in text and "/home/someone" not in text
