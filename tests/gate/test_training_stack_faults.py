"""Each training-stack check broken for real, outside the project's code, and failing with a reason that names
what broke: no C++ compiler on PATH, a 1 MiB /dev/shm (a real tmpfs in a private mount namespace), a loader worker
that hangs, a dataset that spawn cannot pickle, an autocast that does nothing (the last three through the fault
venv's sitecustomize, tests/gate/faults/sitecustomize.py, patching torch or the interpreter in the worker).

Each runs the check's worker alone, started as the gate starts it (`python -I -B platform_runtime_worker.py
training_worker ...`, the gate's worker environment, its own session, a deadline), and records it with the gate's
own function (platform_runtime.result_records.training_check): a real process meeting a real fault, without the
gate's other checks around it. tests/gate/test_gate_training_stack.py runs the whole gate once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_runtime import children, isolation, result_records, startup

from tests.conftest import fault_python

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the faults patch a POSIX worker")


def run_alone(tmp_path: Path, check: str, *, fault: str | None = None, deadline: float = 120.0,
              env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()) -> dict:
    """The check's worker, started and collected as the gate does it; its record as the gate writes it."""
    folder = tmp_path / check
    python = fault_python() if fault is not None else Path(sys.executable)
    environ = {**startup.worker_environment(), **(env or {})}
    environ.pop("CXX", None)
    if fault is not None:
        environ["PLATFORM_RUNTIME_FAULT"] = fault
    command = [*prefix, str(python), "-I", "-B", str(children.WORKER_ENTRY), "training_worker", check, str(folder),
               "cpu", f"{time.time() + deadline:.3f}", str(isolation.locate_torch().site_dir)]
    started = time.monotonic()
    process = children.start(command, env=environ)
    outcome = children.collect(check, process, started, deadline, False)
    record = result_records.training_check(outcome, folder, [tmp_path])
    record["stderr_tail"] = outcome.stderr_tail
    return record


def test_compile_without_a_cxx_compiler_on_path_fails_naming_the_compiler(tmp_path):
    bare = tmp_path / "bin"  # a slim image's PATH: no compiler on it
    bare.mkdir()
    record = run_alone(tmp_path, "compile", env={"PATH": str(bare)})
    assert record["ok"] is False and record["stage"] == "compile"
    assert record["compiler"] == {"name": "g++", "found": False, "version": None}
    assert record["reason"].startswith("no C++ compiler: inductor's 'g++' (torch._inductor.config.cpp.cxx; CXX "
                                       "names another) is not on PATH")
    assert record["error"]["cause_type"] == "InvalidCxxCompiler"  # torch's own refusal, recorded
    assert record["eager_losses"] and "compiled_losses" not in record  # eager ran; the compiled model never did


def mount_namespace_available() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


SMALL_SHM = ("unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"', "sh")


@pytest.mark.skipif(not sys.platform.startswith("linux") or not mount_namespace_available(),
                    reason="needs root and unshare -m (a private mount namespace) to mount a 1 MiB /dev/shm")
def test_a_one_mib_dev_shm_fails_the_loader_naming_shared_memory_not_a_killed_worker(tmp_path):
    record = run_alone(tmp_path, "dataloader", prefix=SMALL_SHM, deadline=60)
    assert record["ok"] is False and record["error"]["cause"] == "shared-memory"
    assert record["shared_memory"]["total_bytes"] == 2 ** 20  # the worker's own view of the tmpfs it ran beside
    assert record["reason"].startswith("checks.dataloader failed (shared memory: a worker could not put its batch "
                                       "into shared memory; /dev/shm holds 1.0 MiB, a batch is 2 MiB")
    assert "No space left on device" in record["reason"] and "killed by signal" not in record["reason"]
    assert record["duration_s"] < 30  # the loader's error, not its deadline


def test_a_loader_worker_that_hangs_ends_at_the_loader_s_deadline_naming_the_worker_and_its_sample(tmp_path):
    deadline = 20.0  # the loader gets what its torch import left of it, less 3 s
    record = run_alone(tmp_path, "dataloader", fault="loader-worker-hangs", deadline=deadline)
    assert record["ok"] is False and record["status"] == "finished"  # it reported itself, before the gate's kill
    assert record["error"]["cause"] == "deadline" and record["hung"] == [{"worker": 1, "sample": 2}]
    assert record["reason"].startswith("checks.dataloader failed (its deadline: no batch arrived in time; the "
                                       f"loader's deadline {record['loader_deadline_s']} s; worker 1 hung in sample 2")
    assert record["loader_deadline_s"] <= deadline - 3 and record["duration_s"] < deadline


def test_a_dataset_spawn_cannot_pickle_fails_naming_pickling_and_the_start_method(tmp_path):
    record = run_alone(tmp_path, "dataloader", fault="loader-dataset-unpicklable", deadline=60)
    assert record["ok"] is False and record["start_method"] == "spawn" and record["stage"] == "start_workers"
    assert record["reason"].startswith("checks.dataloader failed (the dataset cannot be pickled for workers the "
                                       "start method spawns; start method 'spawn'")
    assert "cannot pickle '_io.BufferedReader' object" in record["reason"]


def test_an_autocast_that_does_nothing_fails_naming_the_type_it_did_not_run_in(tmp_path):
    record = run_alone(tmp_path, "autocast", fault="autocast-ignored", deadline=60)
    assert record["ok"] is False and record["stage"] == "done"  # the work ran; its types tell
    assert record["dtype"] == "bfloat16" and record["output_dtype"] == "float32"
    assert record["reason"] == "autocast did not run in bfloat16: the model's output under autocast is 'float32'"


@pytest.mark.full
def test_under_spawn_the_macos_and_windows_default_the_loader_passes(tmp_path):
    record = run_alone(tmp_path, "dataloader", fault="loader-start-method-spawn", deadline=120)
    assert record["ok"] is True, record["reason"]
    assert record["start_method"] == "spawn" and len(record["received"]) == 24


@pytest.mark.full
def test_a_compiler_that_hangs_is_killed_at_the_check_s_deadline_naming_the_stage(tmp_path):
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "g++").write_text("#!/bin/sh\nexec sleep 3600\n", encoding="utf-8")  # a wrapper waiting on a server
    (shims / "g++").chmod(0o755)
    (shims / "sleep").symlink_to(shutil.which("sleep"))
    deadline = 20.0
    record = run_alone(tmp_path, "compile", env={"PATH": str(shims)}, deadline=deadline)
    assert record["ok"] is False and record["status"] == "killed-at-deadline" and record["stage"] == "compiler"
    assert record["reason"] == f"checks.compile was killed at its deadline ({deadline} s) at stage 'compiler'"
