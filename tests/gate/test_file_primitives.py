"""The atomic writer, the JSONL verifier and the replace check's own refusal to prove nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from core.files import (
    CHUNK,
    atomic_write_bytes,
    atomic_write_json,
    encode_json,
    sha256_bytes,
    sha256_file,
)
from platform_runtime.fs_worker import FAILURE_STAGES, failing_stage
from platform_runtime.jsonl import record_line, verify_records
from platform_runtime.sources import GATE_SOURCES, REPO_ROOT

from tests.conftest import SCRIPTS


@pytest.mark.parametrize("stage", FAILURE_STAGES)
def test_atomic_writer_failing_at_each_stage_keeps_the_old_bytes_and_no_temp(tmp_path, stage):
    facts = failing_stage(tmp_path, stage)
    assert facts["raised"] == "OSError" and facts["old_file_intact"] is True and facts["temp_files_left"] == 0
    assert [p.name for p in tmp_path.iterdir()] == [f"state-{stage}.json"]
    # The failure struck where it says: nothing written, half written, or everything written but not durable.
    size = len(json.dumps({"version": 2, "payload": "n" * 4096}))
    assert facts["temp_bytes_at_failure"] == {"before-data": 0, "partial-write": size // 2}.get(stage, size)


def test_sha256_file_matches_hashlib_across_block_boundaries(tmp_path):
    data = bytes(range(256)) * (CHUNK // 256 * 2 + 3)  # more than two blocks, not a multiple of one
    (tmp_path / "big").write_bytes(data)
    assert sha256_file(tmp_path / "big") == hashlib.sha256(data).hexdigest() == sha256_bytes(data)


def test_encode_json_is_sorted_indented_lf_utf8_and_atomic_write_json_writes_exactly_it(tmp_path):
    document = {"b": "\u00e9", "a": [1, {"d": 2, "c": 3}]}
    data = encode_json(document)
    assert data == (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")
    assert b"\r" not in data and data.index(b'"a"') < data.index(b'"b"')
    atomic_write_json(tmp_path / "doc.json", document)
    assert (tmp_path / "doc.json").read_bytes() == data


def records(writers: int = 2, per: int = 3) -> list[bytes]:
    return [record_line(w, s) for w in range(writers) for s in range(per)]


def test_jsonl_verifier_accepts_every_record_once():
    assert verify_records(b"".join(records()), 2, 3)["ok"] is True


@pytest.mark.parametrize("mutate, key", [
    (lambda lines: lines[1:], "missing"),
    (lambda lines: lines + lines[:1], "duplicated"),
    (lambda lines: lines[:2] + [lines[2][:30] + lines[3]] + lines[4:], "corrupt_lines"),
    (lambda lines: lines + [record_line(9, 0)], "unexpected"),
])
def test_jsonl_verifier_catches_lost_duplicated_torn_and_foreign_records(mutate, key):
    verdict = verify_records(b"".join(mutate(records())), 2, 3)
    assert verdict["ok"] is False and verdict[key] >= 1


def test_jsonl_verifier_catches_a_partial_last_line():
    data = b"".join(records())
    assert verify_records(data[:-1], 2, 3)["unterminated_tail"] is True


def test_replace_check_that_saw_too_few_versions_fails(tmp_path):
    # One writer, two versions: nothing to race against, so the check must refuse to call it proven.
    completed = subprocess.run([sys.executable, "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"), "fs_worker",
                                "replace", str(tmp_path), "--writers", "1", "--replaces", "2", "--min-versions", "10"],
                               capture_output=True, text=True, timeout=120)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["ok"] is False and "proved nothing" in result["reason"]


@pytest.mark.parametrize("module", [[], ["device_worker"], ["os"]], ids=["none", "not-a-fs-worker", "foreign"])
def test_the_worker_entry_point_runs_only_the_file_system_worker(module):
    completed = subprocess.run([sys.executable, "-I", "-B", str(SCRIPTS / "platform_runtime_worker.py"), *module],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2 and completed.stdout == ""
    usage = "usage: platform_runtime_worker.py {fs_worker,collective_worker,killed_writer,torch_record,training_worker}"
    assert usage in completed.stderr


def test_every_module_of_the_gate_is_in_the_hashed_source_list():
    package = {f"scripts/platform_runtime/{p.name}" for p in (SCRIPTS / "platform_runtime").glob("*.py")}
    assert package | {"scripts/platform_runtime_worker.py"} <= set(GATE_SOURCES)  # the workers' entry point too
    assert all((REPO_ROOT / path).is_file() for path in GATE_SOURCES)


def test_every_module_the_gate_and_its_workers_load_is_hashed():
    """Not only the package: whatever of ours the gate and each worker import (core's rules decide every ok),
    read from a fresh interpreter, so a module added to core without joining the list is found."""
    workers = "gate, device_worker, fs_worker, collective_worker, killed_writer"
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import platform_runtime_check; "
             f"from platform_runtime import {workers}; "
             "print('\\n'.join(sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))))")
    loaded = subprocess.run([sys.executable, "-I", "-c", probe, str(SCRIPTS)], capture_output=True, text=True,
                            check=True).stdout.split()
    ours = {Path(path).resolve().relative_to(REPO_ROOT).as_posix() for path in loaded
            if Path(path).resolve().is_relative_to(SCRIPTS.resolve())}
    assert ours and not ours - set(GATE_SOURCES), sorted(ours - set(GATE_SOURCES))


def test_the_one_atomic_writer_creates_missing_folders_only_when_asked(tmp_path):
    target = tmp_path / "new" / "folder" / "index.json"
    with pytest.raises(FileNotFoundError):
        atomic_write_bytes(target, b"{}")
    assert not (tmp_path / "new").exists()
    atomic_write_bytes(target, b"{}", parents=True)
    assert target.read_bytes() == b"{}" and [p.name for p in target.parent.iterdir()] == ["index.json"]
