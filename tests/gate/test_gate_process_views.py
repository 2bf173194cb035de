"""Issue 31: the gate refuses a run whose processes could have had their system calls answered by someone else
(a tracer, a seccomp filter added for them), and one where any worker, not only the gate, mapped a library from
an LD_LIBRARY_PATH folder. Each attack is real (tests/gate/view_kit.py, from the r5 review): it rewrites what
the gate reads so that `--require nfs` would hold on this machine, and the gate fails it naming the vector.
A filter the gate shares with the process that started it (a Docker container's) is recorded and not refused."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_runtime import worker_watch
from rules import isolation_record, process_status

from tests.conftest import run_gate
from tests.gate import view_kit
from tests.gate.test_gate_injection import FORGED, assert_refused_naming, fstype, nfs_verdict

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc status and maps are Linux's")


def gate_under(wrapper: list[str], tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    """run_gate, with the gate's interpreter started through `wrapper`."""
    return run_gate(tmp_path, *args, env=env, python_prefix=wrapper)


def test_a_ptrace_seccomp_supervisor_rewriting_the_mount_view_fails_require_nfs_named_as_a_tracer(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    supervisor = view_kit.program("nfslie", tmp_path / "bin")
    env = {"WORK_PREFIX": str(work), "FAKE_MOUNTINFO": str(view_kit.nfs_mountinfo_for(work, tmp_path / "mi"))}
    run = gate_under([str(supervisor)], tmp_path, "--device", "cpu", "--require", "nfs", "--work-dir", str(work),
                     env=env)
    assert_refused_naming(run, "tracer")
    assert FORGED in nfs_verdict(run)["reason"]  # the supervisor did rewrite the mount table the probe read
    assert run.result["filesystem"]["statfs_f_type"] == 0x6969 and fstype(work) != "nfs4"  # and fstatfs
    processes = run.result["isolation"]["processes"]
    assert processes["gate"]["traced"] is True and processes["gate_parent"]["traced"] is False
    assert {"file-system probe", "device_compute", "workspace_cleanup", "torch_record"} <= set(processes["workers"])
    assert all(status["traced"] for status in processes["workers"].values()), processes["workers"]
    assert "the file-system probe worker is traced (TracerPid is not 0): its tracer can rewrite every answer the " \
           "kernel gives it" in run.result["isolation"]["findings"]
    # The supervisor's own seccomp filter (RET_TRACE) was installed for the gate: its parent has none.
    assert "seccomp filter" in run.result["isolation"]["present"]
    assert isolation_record.isolation_forgeries(run.result) == []


def test_the_judge_refuses_a_tracer_deleted_from_present_and_findings_while_the_status_says_traced(tmp_path):
    result = {"arguments": {"allow_injection_vectors": False},
              "isolation": {"allowed": False, "present": ["tracer"], "executing_pth_files": [],
                            "findings": ["the gate's own process is traced (TracerPid is not 0): its tracer can "
                                         "rewrite every answer the kernel gives it"],
                            "processes": {"gate": {"traced": True, "seccomp": 0, "seccomp_filters": 0},
                                          "gate_parent": {"traced": False, "seccomp": 0, "seccomp_filters": 0},
                                          "workers": {}}}}
    assert isolation_record.isolation_forgeries(result) == []
    edited = copy.deepcopy(result)
    edited["isolation"].update(present=[], findings=[])
    assert any("isolation.present is recorded []" in p and "'tracer'" in p
               for p in isolation_record.isolation_forgeries(edited))
    worker = copy.deepcopy(edited)
    worker["isolation"]["processes"]["gate"]["traced"] = False
    worker["isolation"]["processes"]["workers"]["file-system probe"] = {"traced": False, "seccomp": 2,
                                                                        "seccomp_filters": 1}
    assert any("'seccomp filter'" in p for p in isolation_record.isolation_forgeries(worker))


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_gate_run_under_strace_is_refused_as_traced(tmp_path):
    run = gate_under(["strace", "-f", "-qq", "-o", "/dev/null"], tmp_path, "--device", "cpu", "--require", "nfs")
    assert_refused_naming(run, "tracer")
    assert "seccomp filter" not in run.result["isolation"]["present"]  # strace adds no filter here


def test_a_seccomp_filter_added_for_the_gate_is_refused_and_one_its_parent_has_too_is_only_recorded(tmp_path):
    wrap = view_kit.program("seccomp_wrap", tmp_path / "bin")
    work = tmp_path / "work"
    work.mkdir()
    args = ("--device", "cpu", "--require-filesystem", fstype(work), "--work-dir", str(work))
    added = gate_under([str(wrap), "child"], tmp_path, *args)
    verdict = next(v for v in added.result["requirements"] if v["name"].startswith("filesystem="))
    assert added.returncode == 1 and verdict["ok"] is False and "seccomp filter" in verdict["reason"]
    assert added.result["isolation"]["present"] == ["seccomp filter"]
    assert added.result["isolation"]["processes"]["gate"]["seccomp"] == 2

    container = gate_under([str(wrap), "parent"], tmp_path, *args)  # as in a Docker container: inherited
    assert container.returncode == 0 and container.result["ok"] is True, container.result["failures"]
    processes = container.result["isolation"]["processes"]
    assert processes["gate"] == processes["gate_parent"] == {"traced": False, "seccomp": 2, "seccomp_filters": 1}
    assert container.result["isolation"]["present"] == []
    assert {status["seccomp_filters"] for status in processes["workers"].values()} == {1}


def test_a_worker_with_a_filter_the_gate_lacks_is_a_vector(tmp_path):
    """A real process under a real filter, watched as a worker of this (unfiltered) process."""
    wrap = view_kit.program("seccomp_wrap", tmp_path / "bin")
    child = subprocess.Popen([str(wrap), "child", "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        grandchild = None
        while grandchild is None and time.monotonic() < deadline:
            children = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()
            grandchild = int(children[0]) if children else None
            time.sleep(0.02)
        time.sleep(0.2)  # past its exec
        watch = worker_watch.WorkerWatch()
        watch.gate = worker_watch.read_status("self")
        watch.observe("failing_writer", grandchild)
        isolation = {"present": [], "findings": []}
        watch.record(isolation)
    finally:
        child.kill()
        child.wait()
    assert isolation["present"] == ["seccomp filter"]
    assert isolation["findings"] == ["the failing_writer worker has a seccomp filter count other than the gate's "
                                     "own process: a filter was added for that worker"]
    assert isolation["processes"]["workers"]["failing_writer"]["seccomp_filters"] == 1


def test_the_status_parser_reads_this_kernels_fields():
    status = worker_watch.read_status("self")
    assert status is not None and status["traced"] is False and isinstance(status["seccomp"], int)
    assert process_status.parse_status("Name:\tx\nTracerPid:\t4242\nSeccomp:\t2\nSeccomp_filters:\t3\n") == {
        "traced": True, "seccomp": 2, "seccomp_filters": 3}
    assert process_status.parse_status("TracerPid:\t0\nSeccomp:\t2\n") == {"traced": False, "seccomp": 2,
                                                                          "seccomp_filters": None}


def test_a_libffi_shim_only_the_workers_load_fails_require_nfs_named_in_each_worker(tmp_path):
    """r5's F3: the gate's own process never maps libffi (it imports no ctypes); the file-system probe does."""
    shim = view_kit.ffi_shim_dir(tmp_path / "ll")
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env={"LD_LIBRARY_PATH": str(shim)})
    assert_refused_naming(run, "LD_LIBRARY_PATH")
    assert FORGED in nfs_verdict(run)["reason"]  # the shim did rewrite the probe's answer
    findings = run.result["isolation"]["findings"]
    assert "libffi.so.8 is mapped into the file-system probe worker from an LD_LIBRARY_PATH directory" in findings
    assert "libffi.so.8 is mapped into the device worker from an LD_LIBRARY_PATH directory" in findings
    assert not any("gate's own process" in f for f in findings), findings
    assert isolation_record.isolation_forgeries(run.result) == []


def test_any_library_a_worker_maps_from_an_ld_library_path_folder_is_named_but_a_gpu_runtime_in_a_torch_worker(
        tmp_path):
    """Real processes mapping real libraries from an LD_LIBRARY_PATH folder: a copy of the system's libuuid (what
    the device worker's torch loads and the gate never does) and a CUDA-runtime-named library."""
    folder = tmp_path / "ll"
    folder.mkdir()
    uuid = view_kit.SYSTEM_LIBS / "libuuid.so.1"
    if not uuid.exists():
        pytest.skip("no system libuuid.so.1")
    shutil.copy(uuid.resolve(), folder / "libuuid.so.1")
    view_kit._cc("-shared", "-fPIC", "-o", str(folder / "libcudart.so.12"), str(view_kit.FIXTURES / "stub.c"))
    code = ("import ctypes, sys; ctypes.CDLL('libuuid.so.1'); ctypes.CDLL('libcudart.so.12'); "
            "print('up', flush=True); sys.stdin.read()")
    env = {"LD_LIBRARY_PATH": str(folder), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env=env)
    try:
        assert process.stdout.readline() == b"up\n"
        watch = worker_watch.WorkerWatch()
        os.environ["LD_LIBRARY_PATH"] = str(folder)  # the gate's own environment names the folder
        try:
            for worker in ("device_compute", "compile", "autocast", "dataloader", "collectives", "jsonl_append"):
                watch.observe(worker, process.pid)
        finally:
            del os.environ["LD_LIBRARY_PATH"]
    finally:
        process.stdin.close()
        process.wait()
    for torch_worker in ("device_compute", "compile", "autocast", "dataloader", "collectives"):
        # libcudart: what a CUDA box's folder is for, and a CUDA torch maps it wherever it is imported
        assert watch.libraries[torch_worker] == ["libuuid.so.1"], torch_worker
    assert watch.libraries["jsonl_append"] == ["libcudart.so.12", "libuuid.so.1"]  # a worker without torch
    isolation = {"present": [], "findings": []}
    watch.record(isolation)
    for finding in isolation["findings"]:
        assert isolation_record.vector_of(finding) in isolation["present"], finding
    assert "libuuid.so.1 is mapped into the device worker from an LD_LIBRARY_PATH directory" in isolation["findings"]


def test_every_finding_about_processes_names_its_vector_for_the_judge():
    processes = {"gate": {"traced": True, "seccomp": 2, "seccomp_filters": 1}, "gate_parent": None,
                 "workers": {"file-system probe": {"traced": True, "seccomp": 2, "seccomp_filters": 2},
                             "concurrent_replace roles": {"traced": False, "seccomp": 2, "seccomp_filters": 3}}}
    found = process_status.vectors(processes)
    assert len(found) == 5
    parent_differs = dict(processes, gate_parent={"traced": False, "seccomp": 0, "seccomp_filters": 0})
    found += process_status.vectors(parent_differs)
    for vector, finding in found:
        assert isolation_record.vector_of(finding) == vector, finding
    assert isolation_record.vector_of(worker_watch.worker_finding("libffi.so.8", "file-system probe")) == \
        "LD_LIBRARY_PATH"


def test_the_gates_git_takes_no_library_from_ld_library_path(tmp_path, monkeypatch):
    """A libz.so.1 on LD_LIBRARY_PATH (here one with no symbols: git could not start with it) is never loaded by
    the git that answers source.git (it loaded libz from the caller's folder before: the r5 review, F3)."""
    from common.provenance import git_state

    from tests.conftest import ROOT

    folder = tmp_path / "ll"
    folder.mkdir()
    view_kit._cc("-shared", "-fPIC", "-o", str(folder / "libz.so.1"), "-Wl,-soname,libz.so.1",
                 str(view_kit.FIXTURES / "stub.c"))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(folder))
    broken = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-p", "HEAD"], capture_output=True,
                            env=dict(os.environ))
    assert broken.returncode != 0 and b"libz.so.1" in broken.stderr  # a git that loads from it breaks
    state = git_state(ROOT)
    assert state["error"] is None and len(state["head"]) == 40, state


def test_a_libstdcxx_only_the_device_worker_maps_from_ld_library_path_fails_a_requirement_named(tmp_path):
    """r5's F7 leg: torch maps libstdc++.so.6 in the device worker only (the gate never does); a copy of the
    system's own in an LD_LIBRARY_PATH folder (where a shim would be) is what the loader takes, and is named."""
    real = view_kit.SYSTEM_LIBS / "libstdc++.so.6"
    if not real.exists():
        pytest.skip("no system libstdc++.so.6")
    folder = tmp_path / "ll"
    folder.mkdir()
    shutil.copy(real.resolve(), folder / "libstdc++.so.6")
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env={"LD_LIBRARY_PATH": str(folder)})
    assert_refused_naming(run, "LD_LIBRARY_PATH")
    findings = run.result["isolation"]["findings"]
    assert "libstdc++.so.6 is mapped into the device worker from an LD_LIBRARY_PATH directory" in findings
    assert not any("gate's own process" in f for f in findings), findings
