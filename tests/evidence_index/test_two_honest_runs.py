"""Two honest runs compare equal: two REAL gate runs back to back on this machine (one commit, this venv, one
work dir), each indexed with `build_evidence_index.py local`, then `diff`. What varied between them (seeds,
timings, what the scheduler decided: declared by the rules that read those fields, scripts/core/noise.py) is
counted and listed, never a difference; a real change beside it still is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from core.noise import CLASSES

from tests.conftest import ROOT, SCRIPTS

CLI = SCRIPTS / "build_evidence_index.py"
RESULT = "platform-runtime-cpu.json"


def run(*args: object, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return subprocess.run([sys.executable, "-B", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)


def gate_run(folder: Path, work: Path) -> Path:
    folder.mkdir()
    done = run(SCRIPTS / "platform_runtime_check.py", "--device", "cpu", "--work-dir", work, "--output",
               folder / RESULT, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    indexed = run(CLI, "local", "--results", folder, "--output", folder.with_suffix(".index.json"), "--source-root",
                  ROOT, timeout=120)
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    return folder


@pytest.mark.slow
def test_two_real_gate_runs_back_to_back_have_no_difference_and_show_what_varied_within_noise(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    first, second = gate_run(tmp_path / "first", work), gate_run(tmp_path / "second", work)

    done = run(CLI, "diff", first.with_suffix(".index.json"), second.with_suffix(".index.json"), "--old-artifacts",
               first, "--new-artifacts", second, "--json", tmp_path / "d.json", "--verbose", timeout=120)
    document = json.loads((tmp_path / "d.json").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert document["differences"] == 0 and document["changes"] == []
    # what varied is shown: counted on the summary line, each listed with --verbose and kept in the JSON
    noise = document["noise"]
    assert document["within_noise"] == len(noise) > 0
    assert {n["noise"] for n in noise} <= set(CLASSES)
    assert ("checks.failing_writer.killed_writer.seed", "seed") in {(n["path"], n["noise"]) for n in noise}
    assert f"0 difference(s); {len(noise)} measurement(s) varied within noise" in done.stdout
    listed = [line for line in done.stdout.splitlines() if line.startswith("  ") and ": " in line]
    assert len(listed) == len(noise), done.stdout

    # A real change beside that noise is still a difference: the second run's jsonl_append failing, told as the
    # gate tells it (the judge recomputes the check from its measurements, so the failure is authentic).
    result = json.loads((second / RESULT).read_text())
    check = result["checks"]["jsonl_append"]
    check.update(missing=7, valid_records=check["valid_records"] - 7, ok=False, reason="7 records missing")
    result.update(ok=False, exit_code=1, failures=["jsonl_append: 7 records missing"])
    (tmp_path / "failed.json").write_text(json.dumps(result, indent=2))
    failed = run(CLI, "diff", first / RESULT, tmp_path / "failed.json", "--json", tmp_path / "f.json", timeout=120)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    changed = json.loads((tmp_path / "f.json").read_text())
    assert {c["path"] for c in changed["changes"]} == {
        "checks.jsonl_append.missing", "checks.jsonl_append.valid_records", "checks.jsonl_append.ok",
        "checks.jsonl_append.reason", "ok", "exit_code", "failures"}
    assert changed["within_noise"] == len(noise)
