"""The NFS VM's host-side parts that need no VM: module order, shared paths, verdicts that can fail,
the fault verdict (no false pass, no hang), step outputs, and the CLI's refusals."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from core.contract import GATE_CHECKS

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import initramfs, interpreter, job, phases, recipe, run_checks, two_clients_phase  # noqa: E402

CLI = ROOT / "tools" / "nfsvm" / "cli.py"
CHECKS = {name: {"ok": True} for name in GATE_CHECKS}  # flags only: what judge_fault reads
GOOD_GATE = {"ok": True, "exit_code": 0, "checks": CHECKS, "failures": [],
             "filesystem": {"type": "nfs4", "nfs_version": "4.2"}, "requirements": [{"name": "nfs", "ok": True}]}


def test_modules_load_after_what_they_need(tmp_path):
    (tmp_path / "modules.dep").write_text(
        "kernel/virtio_pci.ko: kernel/virtio.ko kernel/virtio_ring.ko\n"
        "kernel/virtio.ko: kernel/virtio_ring.ko\nkernel/virtio_ring.ko:\n"
        "kernel/9p.ko: kernel/9pnet.ko kernel/netfs.ko\nkernel/9pnet.ko:\nkernel/netfs.ko:\n"
        "kernel/9pnet_virtio.ko: kernel/9pnet.ko kernel/virtio_ring.ko\nkernel/overlay.ko:\n")
    order = [Path(p).name for p in initramfs.load_order(tmp_path)]
    assert order.index("virtio_ring.ko") < order.index("virtio.ko") < order.index("virtio_pci.ko")
    assert order.index("9pnet.ko") < order.index("9p.ko") and len(order) == len(set(order)) == 8
    with pytest.raises(RuntimeError, match="neither in modules.dep nor built in"):
        initramfs.load_order(tmp_path, ("virtio_pci", "nfsd"))


def test_the_recipe_hash_names_the_kernel_package():
    assert recipe.recipe_digest("linux-image-6.1.0-57-amd64") != recipe.recipe_digest("linux-image-6.1.0-58-amd64")


def test_shared_paths_are_the_repo_its_venv_and_base_python_without_nesting(tmp_path):
    paths = job.shared_paths(ROOT, ROOT / ".venv" / "bin" / "python")
    assert ROOT in paths and all(not (a != b and a in b.parents) for a in paths for b in paths)
    assert Path(os.path.realpath(sys.base_prefix)) in paths or any(p in Path(sys.base_prefix).parents for p in paths)


def test_the_guest_runs_the_host_venvs_packages_with_its_own_python_of_the_same_minor_version(tmp_path):
    import sysconfig

    host = job.host_python(ROOT / ".venv" / "bin" / "python")
    this = {"version": f"{sys.version_info[0]}.{sys.version_info[1]}", "release": platform.python_version(),
            "soabi": sysconfig.get_config_var("SOABI")}
    made = interpreter.guest_python({"python": "/host/venv/python", "host_python": host}, this,
                                    base_python=Path(sys.executable), venv=tmp_path / "venv")
    assert made["why"] == interpreter.WHY_IMAGE and made["site_packages"] == host["site_packages"]
    # Isolated as the gate's workers run: the venv's prefix, and the host venv's packages through the link.
    code = "import sys, jsonschema; print(sys.prefix); print(jsonschema.__file__)"
    prefix, where = subprocess.run([made["executable"], "-I", "-c", code], capture_output=True, text=True,
                                   check=True).stdout.splitlines()
    assert Path(prefix) == tmp_path / "venv"
    assert Path(where).resolve().is_relative_to(Path(host["site_packages"]))


@pytest.mark.parametrize("change", [{"version": "3.12"}, {"soabi": "cpython-311t-x86_64-linux-gnu"},
                                    {"one_site_dir": False}])
def test_another_version_abi_or_split_site_dirs_keep_the_host_venvs_interpreter(tmp_path, change):
    host = {"version": "3.11", "soabi": "cpython-311-x86_64-linux-gnu", "site_packages": "/x", "one_site_dir": True}
    image = {"version": "3.11", "soabi": "cpython-311-x86_64-linux-gnu"}
    job_facts = {"python": "/host/venv/python", "host_python": {**host, **change}}
    kept = interpreter.guest_python(job_facts, image, venv=tmp_path / "venv")
    assert kept["executable"] == "/host/venv/python" and kept["why"] == interpreter.WHY_HOST
    assert not (tmp_path / "venv").exists()


HOST_311 = {"version": "3.11", "release": "3.11.7", "soabi": "cpython-311-x86_64-linux-gnu", "site_packages": "/x",
            "one_site_dir": True}
IMAGE_311 = {"version": "3.11", "release": "3.11.2", "soabi": "cpython-311-x86_64-linux-gnu"}


def test_bytecode_the_host_wrote_keeps_the_host_venvs_interpreter_under_another_release(tmp_path):
    job_facts = {"python": "/host/venv/python", "host_python": {**HOST_311, "written_bytecode": 486}}
    kept = interpreter.guest_python(job_facts, IMAGE_311, venv=tmp_path / "venv")
    assert kept["executable"] == "/host/venv/python" and not (tmp_path / "venv").exists()
    assert "486 cached .pyc" in kept["why"] and "3.11.7" in kept["why"] and "3.11.2" in kept["why"]
    unknown = interpreter.guest_python({**job_facts, "host_python": HOST_311}, IMAGE_311, venv=tmp_path / "v2")
    assert unknown["executable"] == "/host/venv/python"  # not counted: not known to be none


@pytest.mark.parametrize("host, image", [({**HOST_311, "written_bytecode": 0}, IMAGE_311),
                                         ({**HOST_311, "written_bytecode": 486}, {**IMAGE_311, "release": "3.11.7"})])
def test_no_written_bytecode_or_the_same_release_runs_the_images_interpreter(tmp_path, host, image):
    made = interpreter.guest_python({"python": "/host/venv/python", "host_python": host}, image,
                                    base_python=Path(sys.executable), venv=tmp_path / "venv")
    assert made["why"] == interpreter.WHY_IMAGE


def test_written_bytecode_counts_the_pyc_files_no_record_lists(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg-1.0.dist-info").mkdir()
    (tmp_path / "pkg-1.0.dist-info" / "RECORD").write_text(
        "pkg/__init__.py,sha256=x,1\npkg/__pycache__/__init__.cpython-311.pyc,sha256=y,2\n"
        "pkg-1.0.dist-info/RECORD,,\n")
    for name in ("__init__.cpython-311.pyc", "mod.cpython-311.pyc", "other.cpython-311.opt-1.pyc"):
        (tmp_path / "pkg" / "__pycache__" / name).write_bytes(b"")
    (tmp_path / "pkg" / "data.pyc").write_bytes(b"")  # not in a __pycache__: not an import's cache
    assert interpreter.written_bytecode(tmp_path) == 2


def test_another_release_compiles_some_source_otherwise_which_is_why_its_bytecode_is_refused(tmp_path):
    """The premise, on real interpreters where two 3.11 releases are here (pyenv's and Debian's): a .pyc the
    other release wrote is loaded by this one (same magic number) and is not this one's compile."""
    other = Path("/usr/bin/python3")
    code = "import platform, sys; print(platform.python_version()); print(sys.implementation.cache_tag)"
    if not other.exists():
        pytest.skip("no second interpreter at /usr/bin/python3")
    release, tag = subprocess.run([str(other), "-I", "-c", code], capture_output=True, text=True).stdout.split()
    if tag != sys.implementation.cache_tag or release == platform.python_version():
        pytest.skip(f"/usr/bin/python3 is {release} ({tag}): not another release of this minor version")
    sys.path.insert(0, str(ROOT / "scripts"))
    from platform_runtime import bytecode

    source = tmp_path / "_arraypad_impl.py"
    numpy_file = Path(__import__("numpy").__file__).parent / "lib" / "_arraypad_impl.py"
    source.write_bytes(numpy_file.read_bytes())
    subprocess.run([str(other), "-I", "-m", "py_compile", str(source)], check=True)
    assert bytecode.mismatched(source) == [f"__pycache__/_arraypad_impl.{tag}.pyc"]


def test_a_venv_that_cannot_be_made_keeps_the_host_venvs_interpreter_saying_why(tmp_path):
    host = {"version": "3.11", "soabi": "x", "site_packages": "/x", "one_site_dir": True}
    (tmp_path / "venv").mkdir()  # already there: make_venv refuses to write over it
    (tmp_path / "venv" / "bin").mkdir()
    kept = interpreter.guest_python({"python": "/host/venv/python", "host_python": host},
                                    {"version": "3.11", "soabi": "x"}, venv=tmp_path / "venv")
    assert kept["executable"] == "/host/venv/python" and "could not be made" in kept["why"]


REAL_GATE = json.loads((ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json").read_text())
REAL_CHECKS = REAL_GATE["checks"]


@pytest.mark.parametrize("change", [
    {"ok": False}, {"exit_code": 1}, {"checks": {**REAL_CHECKS, "jsonl_append": {**REAL_CHECKS["jsonl_append"],
                                                                                 "ok": False}}},
    {"checks": {**REAL_CHECKS, "jsonl_append": {**REAL_CHECKS["jsonl_append"], "missing": 3}}},  # its ok left true
    {"checks": {k: v for k, v in REAL_CHECKS.items() if k != "workspace_cleanup"}},
    {"filesystem": {**REAL_GATE["filesystem"], "type": "tmpfs", "nfs_version": None}},
    {"requirements": [{"name": "nfs", "ok": False, "reason": "x"}]},
    {"arguments": {**REAL_GATE["arguments"], "require": []}, "requirements": []},
])
def test_the_gate_verdict_fails_on_any_missing_or_failed_proof(change):
    """Judged by the one judge (core.contract): flags re-derived from the facts, never taken as recorded."""
    assert run_checks.gate_check(REAL_GATE)[0] is True
    assert run_checks.gate_check({**REAL_GATE, **change})[0] is False


def test_a_restart_verdict_refuses_a_false_pass_a_hang_and_an_overrun():
    assert phases.judge_fault(GOOD_GATE, 0, 100.0, 300.0)["pass"] is True
    failed = {**GOOD_GATE, "ok": False, "exit_code": 1, "failures": ["jsonl_append: 3 record(s) lost"]}
    assert phases.judge_fault(failed, 1, 100.0, 300.0)["pass"] is True  # a named failure is honest
    lying = {**GOOD_GATE, "checks": {**CHECKS, "jsonl_append": {"ok": False}}}
    assert phases.judge_fault(lying, 0, 100.0, 300.0)["false_pass"] is True
    assert phases.judge_fault(lying, 0, 100.0, 300.0)["pass"] is False
    assert phases.judge_fault(GOOD_GATE, None, 400.0, 300.0)["pass"] is False  # killed: a hang
    assert phases.judge_fault(GOOD_GATE, 0, 330.0, 300.0)["pass"] is False  # past --timeout
    assert phases.judge_fault(None, 1, 10.0, 300.0)["pass"] is False
    assert phases.judge_fault({**failed, "failures": []}, 1, 10.0, 300.0)["pass"] is False  # unnamed


def test_step_outputs_are_read_in_the_heredoc_form(tmp_path):
    path = tmp_path / "out"
    path.write_text("dir<<EOF_1\n/tmp/a b\nEOF_1\nnfs<<EOF_2\n/tmp/nfs-x\nEOF_2\n")
    assert phases.read_outputs(path) == {"dir": "/tmp/a b", "nfs": "/tmp/nfs-x"}


def test_the_cli_says_what_to_install_when_qemu_is_missing(tmp_path):
    done = subprocess.run([sys.executable, "-B", str(CLI), "--output-dir", str(tmp_path / "o")],
                          capture_output=True, text=True, env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode == 2 and "apt-get install --no-install-recommends qemu-system-x86" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()


def test_the_cli_refuses_unknown_phases(tmp_path):
    done = subprocess.run([sys.executable, "-B", str(CLI), "--phases", "action,nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "subset of" in done.stderr and "Traceback" not in done.stderr


def test_a_run_without_results_fails_every_phase_check(tmp_path):
    powered_off = {"qemu_exit_code": 0, "timed_out": False, "guest_powered_off": True, "host_signal": None}
    checks = run_checks.judge(tmp_path, powered_off, list(job.PHASES))
    assert [c["name"] for c in checks if not c["ok"]] == ["gate", "harness", "two_clients", "server_restart",
                                                          "busy_unmount"]
    (tmp_path / "guest-error.txt").write_text("Traceback")
    assert run_checks.judge(tmp_path, powered_off, [])[0]["ok"] is False
    assert json.dumps(checks)


def appends(writers: int, records: int, drop: int = 0) -> bytes:
    from platform_runtime.jsonl import record_line

    lines = [record_line(w, q) for q in range(records) for w in range(writers)]
    return b"".join(lines[drop:])


def test_the_unlocked_control_passes_only_when_damage_happened_and_the_gate_checker_caught_it():
    job_ = {"repo": str(ROOT)}
    writer = {"exit_code": 0, "reason": None, "result": {"appended": 5}}
    run = {"writers_per_client": 2, "count_per_writer": 5, "clients": [{"exit_code": 0, "tasks": [writer]}] * 2}
    damaged = two_clients_phase.judge_appends(job_, run, appends(4, 5, drop=3), locked=False)
    assert damaged["damage_observed"] and damaged["caught_by_checker"] and damaged["pass"]
    intact = two_clients_phase.judge_appends(job_, run, appends(4, 5), locked=False)
    assert intact["damage_observed"] is False and intact["pass"] is False  # nothing shown, nothing proven
    assert two_clients_phase.judge_appends(job_, run, appends(4, 5), locked=True)["pass"] is True
    assert two_clients_phase.judge_appends(job_, run, appends(4, 5, drop=1), locked=True)["pass"] is False


def test_the_committed_nfs_evidence_matches_its_index_and_passed():
    evidence = ROOT / "evidence" / "nfs"
    done = subprocess.run([sys.executable, "-B", str(ROOT / "scripts" / "build_evidence_index.py"), "verify",
                           str(evidence / "evidence-index.json"), "--artifacts", str(evidence)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "verdict: PASS (authentic" in done.stdout, done.stdout + done.stderr
    from tests.conftest import validate

    validate(json.loads((evidence / "nfs-harness.json").read_text()), "nfs-harness.schema.json")
    run = json.loads((evidence / "nfs-vm-run.json").read_text())
    assert run["ok"] is True and all(check["ok"] for check in run["checks"]) and run["git"]["dirty"] is False
    text = "".join(p.read_text() for p in evidence.iterdir())
    # An absolute /tmp or /root path, not a repository file whose name starts so (evidence_index/root_sets.py).
    assert not re.search(r"(?<![\w./-])/(?:tmp|root)(?:/|\b)", text) and str(ROOT) not in text


def test_a_phase_that_raised_fails_the_vm_check_naming_the_exception_and_leaves_a_result(tmp_path):
    (tmp_path / "two_clients-error.txt").write_text("Traceback (most recent call last):\n  ...\nKeyError: 'tasks'\n")
    phases.write_missing_result(tmp_path, "two_clients", "the phase raised KeyError: 'tasks'")
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0, "timed_out": False},
                                                  ["two_clients"])}
    assert checks["vm"]["ok"] is False and "two_clients-error.txt: KeyError: 'tasks'" in checks["vm"]["detail"]
    assert checks["two_clients"]["ok"] is False
    assert checks["two_clients"]["detail"].startswith("the phase raised KeyError: 'tasks'")


def test_a_result_the_phase_wrote_itself_is_never_replaced(tmp_path):
    (tmp_path / "busy_unmount").mkdir()
    (tmp_path / "busy_unmount" / "busy-unmount.json").write_text('{"ok": false, "busy": {}}')
    phases.write_missing_result(tmp_path, "busy_unmount", "raised")
    assert json.loads((tmp_path / "busy_unmount" / "busy-unmount.json").read_text()) == {"ok": False, "busy": {}}
    assert set(phases.RESULT_FILES) == {*job.ALL_PHASES, job.INSTALL_PHASE}


@pytest.mark.parametrize("code, reason, budget", [
    ("import time; time.sleep(30)", "killed: still running", 2),
    # A budget no start-up reaches, even on a loaded machine: these must end by themselves, not be killed.
    ("print('not json')", "its last line is not JSON", 120),
    ("import sys; print('{}'); sys.exit(3)", "exited 3", 120),
])
def test_a_client_without_a_report_is_named_not_raised(code, reason, budget):
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    report = two_clients_phase.client_report(process, time.monotonic() + budget)
    assert reason in report["reason"] and "tasks" not in report and "stderr" in report


def test_a_client_report_is_its_last_json_line():
    process = subprocess.Popen([sys.executable, "-c", "print('mounted'); print('{\"tasks\": []}')"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert two_clients_phase.client_report(process, time.monotonic() + 30) == {"tasks": [], "exit_code": 0}


def test_unlocked_writers_write_only_once_every_writer_has_the_file_open(tmp_path):
    two = ROOT / "tools" / "nfsvm" / "two_clients.py"
    target, ready = tmp_path / "unlocked.jsonl", tmp_path / "sync"
    ready.mkdir()
    first = subprocess.Popen([sys.executable, "-B", str(two), "unlocked-append", str(target), "0", "5",
                              "--ready-dir", str(ready), "--writers", "2"], stdout=subprocess.PIPE, text=True)
    give_up = time.monotonic() + 120  # its start-up takes what it takes; then it holds at the barrier
    while not (ready / "ready-w0").exists():
        assert time.monotonic() < give_up and first.poll() is None, "the first writer never opened the file"
        time.sleep(0.05)
    time.sleep(1.0)  # the barrier wait below is at least this long, whatever the machine's load
    assert first.poll() is None and not target.read_bytes()  # opened, waiting for the other writer
    second = subprocess.run([sys.executable, "-B", str(two), "unlocked-append", str(target), "1", "5",
                             "--ready-dir", str(ready), "--writers", "2"], capture_output=True, text=True)
    reports = [json.loads(first.communicate(timeout=30)[0]), json.loads(second.stdout)]
    assert all(r["all_open_before_writing"] is True for r in reports) and reports[0]["barrier_wait_seconds"] >= 1.0
    assert len(target.read_bytes().splitlines()) == 10


def test_the_two_client_tasks_run_the_gate_workers_roles_as_the_gate_starts_them(tmp_path):
    """What broke the two-client phase: its own path to fs_worker.py stopped importing once the gate's
    workers needed their entry script. Here every task command it builds runs for real, without a VM."""
    from platform_runtime import fs_worker, jsonl

    job_ = {"repo": str(ROOT), "python": sys.executable}
    workspace = tmp_path / "platform-runtime-twoclients"
    workspace.mkdir()
    (workspace / "replace.json").write_bytes(fs_worker.version_document(-1, 0))
    (tmp_path / "stop").touch()  # the reader reads once more, then stops
    tasks = (two_clients_phase.client_tasks(job_, "locked.jsonl", tmp_path, tmp_path, range(0, 2), 5)
             + two_clients_phase.client_tasks(job_, "replace.json", tmp_path, tmp_path, range(0, 1), 3))
    for task in tasks:
        done = subprocess.run(task["argv"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (task["name"], done.stderr[-500:])
    assert jsonl.verify_records((workspace / "locked.jsonl").read_bytes(), 2, 5)["ok"] is True
    assert fs_worker.parse_version((workspace / "replace.json").read_bytes()) == (0, 2)


@pytest.mark.parametrize("limit, timeout", [(2400.0, 720.0), (4000.0, 1200.0), (600.0, 420.0)])
def test_each_guest_gate_has_its_share_of_the_vms_own_limit_and_never_less_than_the_floor(limit, timeout):
    assert job.gate_timeout_for(limit) == timeout
    made, _ = job.make_job(ROOT, ["action"], job.gate_timeout_for(limit))
    assert made["gate_timeout"] == made["fault_gate_timeout"] == timeout
