"""`local` (index local results, no GitHub) and `verify` (recompute every digest from the bytes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS, validate
from support.fake_github import gate_result, source_hashes

CLI = SCRIPTS / "build_evidence_index.py"
SOURCES = ["scripts/build_evidence_index.py", "scripts/evidence_index/local.py"]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    return subprocess.run([sys.executable, "-B", str(CLI), *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def results(tmp_path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    sources = source_hashes(ROOT, SOURCES)
    gate = gate_result("linux", sources=sources, in_actions=False)
    (folder / "platform-runtime-cpu.json").write_text(json.dumps(gate, indent=2))
    (folder / "extra-check.json").write_text(json.dumps({"ok": True, "violations": []}))
    (folder / "platform-runtime-cpu.log").write_text("not a result\n")
    return folder


def index_local(results: Path, output: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    completed = cli("local", "--results", str(results), "--output", str(output))
    index = json.loads(output.read_text()) if output.exists() else None
    if index is not None:
        validate(index, "evidence-index.schema.json")
    return completed, index


def test_local_results_that_are_ok_pass_and_are_bound_to_their_bytes_and_sources(results, tmp_path):
    completed, index = index_local(results, results / "evidence-index.json")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    subjects = {s["name"]: s["digest"]["sha256"] for s in index["subject"]}
    assert set(subjects) == {"artifacts/platform-runtime-cpu.json", "artifacts/extra-check.json"}
    import hashlib

    assert subjects["artifacts/platform-runtime-cpu.json"] == hashlib.sha256(
        (results / "platform-runtime-cpu.json").read_bytes()).hexdigest()
    predicate = index["predicate"]
    assert predicate["verdict"] == {"pass": True, "reasons": []}
    assert predicate["source_root"]["files"] == source_hashes(ROOT, SOURCES)
    assert predicate["source_root"]["git"]["head"]
    gate = next(r for r in predicate["results"] if r["kind"] == "gate")
    assert gate["schema_valid"] is True and gate["ok"] is True
    # rerunning over the same folder skips the index it wrote itself
    again, _ = index_local(results, results / "evidence-index.json")
    assert again.returncode == 0


def test_no_temp_paths_or_host_names_are_recorded(results, tmp_path):
    import socket

    _, index = index_local(results, tmp_path / "index.json")
    text = json.dumps(index)
    assert str(tmp_path) not in text and str(ROOT) not in text
    assert socket.gethostname() not in text


def test_a_local_result_that_is_not_ok_fails(results, tmp_path):
    (results / "extra-check.json").write_text(json.dumps({"ok": False, "violations": ["loss is NaN"]}))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    assert "extra-check.json says ok=false" in index["predicate"]["verdict"]["reasons"]
    assert "verdict: FAIL" in completed.stdout


def test_a_local_result_made_by_other_sources_fails(results, tmp_path):
    gate = json.loads((results / "platform-runtime-cpu.json").read_text())
    gate["source"]["files"]["scripts/build_evidence_index.py"] = "0" * 64
    (results / "platform-runtime-cpu.json").write_text(json.dumps(gate))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    assert ("platform-runtime-cpu.json: 1 source file(s) differ from this checkout: scripts/build_evidence_index.py"
            in index["predicate"]["verdict"]["reasons"])


def test_a_result_that_is_not_json_or_says_nothing_fails(results, tmp_path):
    (results / "broken.json").write_text("{not json")
    (results / "mute.json").write_text("{}")
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    reasons = index["predicate"]["verdict"]["reasons"]
    assert any(r.startswith("broken.json: not JSON") for r in reasons)
    assert "mute.json states neither ok nor status passed/failed" in reasons


def test_an_empty_results_folder_proves_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    completed, index = index_local(tmp_path / "empty", tmp_path / "index.json")
    assert completed.returncode == 1 and index["predicate"]["verdict"]["reasons"] == [
        "no result files to index: nothing is proven"]


def test_a_missing_results_folder_is_a_usage_error_and_writes_nothing(tmp_path):
    completed, index = index_local(tmp_path / "nope", tmp_path / "index.json")
    assert completed.returncode == 2 and index is None
    assert "is not a folder" in completed.stderr and "Traceback" not in completed.stderr


def test_verify_matches_untouched_files(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 0, completed.stdout
    assert "match     artifacts/platform-runtime-cpu.json" in completed.stdout and "2 match" in completed.stdout


def test_verify_fails_on_a_tampered_file(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    path = results / "platform-runtime-cpu.json"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1
    assert "mismatch  artifacts/platform-runtime-cpu.json" in completed.stdout
    assert "match     artifacts/extra-check.json" in completed.stdout


def test_verify_fails_on_a_missing_file(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    (results / "extra-check.json").unlink()
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1 and "missing   artifacts/extra-check.json" in completed.stdout


def test_verify_does_not_follow_a_link_out_of_the_folder(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    outside = tmp_path / "outside.json"
    shutil.move(results / "extra-check.json", outside)
    (results / "extra-check.json").symlink_to(outside)
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1 and "invalid   artifacts/extra-check.json" in completed.stdout


def test_verify_refuses_subject_names_that_escape(results, tmp_path):
    _, index = index_local(results, tmp_path / "index.json")
    index["subject"].append({"name": "artifacts/../../etc/passwd", "digest": {"sha256": "0" * 64}})
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1 and "invalid   artifacts/../../etc/passwd" in completed.stdout


def test_verify_checks_logs_only_where_told(tmp_path):
    logs, artifacts = tmp_path / "logs", tmp_path / "artifacts"
    logs.mkdir()
    artifacts.mkdir()
    (logs / "1-linux.log").write_bytes(b"log bytes")
    import hashlib

    index = {"_type": "https://in-toto.io/Statement/v1", "predicateType": "x", "predicate": {},
             "subject": [{"name": "logs/1-linux.log", "digest": {"sha256": hashlib.sha256(b"log bytes").hexdigest()}}]}
    (tmp_path / "index.json").write_text(json.dumps(index))
    unchecked = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(artifacts))
    assert unchecked.returncode == 0 and "unchecked logs/1-linux.log" in unchecked.stdout
    (logs / "1-linux.log").write_bytes(b"log bytes!")
    checked = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(artifacts), "--logs", str(logs))
    assert checked.returncode == 1 and "mismatch  logs/1-linux.log" in checked.stdout


@pytest.mark.parametrize("content", ["not json", json.dumps({"subject": []}), json.dumps([1, 2])])
def test_verify_of_something_that_is_not_an_index_is_a_usage_error(tmp_path, content):
    (tmp_path / "index.json").write_text(content)
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(tmp_path))
    assert completed.returncode == 2 and "Traceback" not in completed.stderr


def test_verify_without_required_arguments_is_a_usage_error(tmp_path):
    completed = cli("verify", str(tmp_path / "index.json"))
    assert completed.returncode == 2 and "--artifacts" in completed.stderr


def test_named_results_are_indexed_exactly_and_a_missing_one_fails(results, tmp_path):
    nested = results / "resume-run"
    nested.mkdir()
    (nested / "verification.json").write_text(json.dumps({"ok": True}))
    (nested / "config.json").write_text(json.dumps({"lr": 0.1}))  # not named: not indexed
    output = results / "evidence-index.json"
    completed = cli("local", "--results", str(results), "--result", "platform-runtime-cpu.json",
                    "--result", "resume-run/verification.json", "--output", str(output),
                    "--verdict-output", str(results / "evidence-verdict.json"))
    assert completed.returncode == 0, completed.stdout
    index = json.loads(output.read_text())
    assert [s["name"] for s in index["subject"]] == ["artifacts/platform-runtime-cpu.json",
                                                     "artifacts/resume-run/verification.json"]
    verdict = json.loads((results / "evidence-verdict.json").read_text())
    import hashlib

    assert verdict == {"schema": "kernodeck.evidence-index.verdict/v1", "ok": True, "reasons": [],
                       "index": "evidence-index.json", "index_sha256": hashlib.sha256(output.read_bytes()).hexdigest(),
                       "subjects": 2}
    missing = cli("local", "--results", str(results), "--result", "gone.json", "--output", str(tmp_path / "i.json"),
                  "--verdict-output", str(tmp_path / "v.json"))
    assert missing.returncode == 1
    assert json.loads((tmp_path / "v.json").read_text())["reasons"] == ["gone.json: missing: the step wrote no result"]
    # the verdict file of a previous run is not taken for a result
    again, _ = index_local(results, tmp_path / "again.json")
    assert again.returncode == 0


def test_a_named_result_outside_the_folder_is_a_usage_error(results, tmp_path):
    completed = cli("local", "--results", str(results), "--result", "../x.json", "--output", str(tmp_path / "i.json"))
    assert completed.returncode == 2 and not (tmp_path / "i.json").exists()


def test_a_source_named_by_its_tail_is_compared_with_the_one_tracked_file_it_names(results, tmp_path):
    real = source_hashes(ROOT, ["scripts/build_evidence_index.py"])["scripts/build_evidence_index.py"]
    (results / "resume.json").write_text(json.dumps({"ok": True, "source": {"files": {
        "build_evidence_index.py": real}}}))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 0, completed.stdout
    resolved = index["predicate"]["source_root"]["resolved"]
    assert resolved == {"build_evidence_index.py": "scripts/build_evidence_index.py"}
    # a tail that names several tracked files (or none) is not guessed: it differs
    (results / "resume.json").write_text(json.dumps({"ok": True, "source": {"files": {"__init__.py": real}}}))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    reasons = index["predicate"]["verdict"]["reasons"]
    assert "resume.json: 1 source file(s) differ from this checkout: __init__.py" in reasons


def test_a_result_of_a_known_kind_must_validate_against_its_schema(results, tmp_path):
    # check_training_run.py's results have a schema: a document that merely says ok is not one of them
    (results / "training-run-check.json").write_text(json.dumps({"ok": True}))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    assert any(r.startswith("training-run-check.json does not validate against its schema")
               for r in index["predicate"]["verdict"]["reasons"])


def test_verify_fails_an_index_whose_verdict_was_edited_to_pass(results, tmp_path):
    (results / "extra-check.json").write_text(json.dumps({"ok": False}))
    _, index = index_local(results, tmp_path / "index.json")
    assert index["predicate"]["verdict"]["pass"] is False
    index["predicate"]["verdict"] = {"pass": True, "reasons": []}
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1
    assert "inconsistent: the recorded verdict (pass=True) is not what the predicate supports" in completed.stdout


def test_verify_fails_an_index_whose_predicate_and_subjects_disagree(results, tmp_path):
    _, index = index_local(results, tmp_path / "index.json")
    index["predicate"]["results"][0]["sha256"] = "0" * 64
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 1 and "inconsistent: result: the predicate records 000000000000" in completed.stdout


def test_the_local_summary_is_appended_with_the_verdict_first(results, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    (results / "extra-check.json").write_text(json.dumps({"ok": False}))
    cli("local", "--results", str(results), "--output", str(tmp_path / "index.json"), "--summary", str(summary))
    text = summary.read_text()
    assert text.startswith("earlier step\n## Local evidence: FAIL\n")
    assert "- extra-check.json says ok=false" in text
    assert "| platform-runtime-cpu.json | gate | yes | valid | cpu / ext4 |" in text


def test_the_local_job_ends_with_the_index_of_every_earlier_steps_result(tmp_path):
    import run_local

    last = run_local.STEPS[-1]
    assert last.name == "evidence index" and last.result == "evidence-verdict.json"
    earlier = [step.result for step in run_local.STEPS[:-1]]
    completed = subprocess.run(last.command(tmp_path), capture_output=True, text=True, timeout=60, cwd=last.cwd)
    # nothing ran here, so every earlier step's result is missing and the verdict fails, naming each one
    assert completed.returncode == 1
    verdict = json.loads((tmp_path / "evidence-verdict.json").read_text())
    assert verdict["ok"] is False
    assert verdict["reasons"] == [f"{name}: missing: the step wrote no result" for name in earlier]
