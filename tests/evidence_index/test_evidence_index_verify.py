"""`local` (index local results, no GitHub) and `verify` (recompute every digest and judgement from the bytes).
Forgeries of real indexes are in test_a_forged_evidence_index_is_refused.py and
test_an_online_index_is_held_to_what_github_says.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS, validate
from tests.evidence_index.fake_github import FAKE_SOURCES, fake_source_root, gate_result, source_hashes
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
SOURCES = FAKE_SOURCES  # the fake gate results are version-1 shaped: compared with fake_source_root()
DIAGNOSTIC = ROOT / "evidence" / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"
REPRISE = next((ROOT / "evidence" / "local" / "run-local").glob("reprise-*/verification.json"))
FAILED_DIAGNOSTIC = json.dumps(dict(json.loads(DIAGNOSTIC.read_text()), status="failed", exit_code=1))


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI; a local index of this module's fake gate results is compared with fake_source_root()."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    if args[:1] == ("local",) and "--source-root" not in args:
        args = (*args, "--source-root", str(fake_source_root()))
    return index_cli(*args, env=env)


def local_gate(sources: dict) -> dict:
    """A gate result beside the real diagnostic: it records the interpreter the diagnostic ran, and the
    code-running .pth the diagnostic saw in that interpreter's site-packages (setuptools' own, which a version-1
    gate listed as executing): the results of one folder are one machine's run (core.one_run)."""
    gate = gate_result("linux", sources=sources, in_actions=False)
    runtime = json.loads(DIAGNOSTIC.read_text())["runtime"]
    gate["platform"]["python"] = runtime["python"]
    if ".pth" in runtime.get("injection_vectors", []):
        gate["isolation"].update(present=[".pth"], executing_pth_files=["distutils-precedence.pth"])
    return gate


@pytest.fixture
def results(tmp_path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    sources = source_hashes(fake_source_root(), SOURCES)
    gate = local_gate(sources)
    (folder / "platform-runtime-cpu.json").write_text(json.dumps(gate, indent=2))
    shutil.copyfile(DIAGNOSTIC, folder / "extra-check.json")  # a real diagnostic report, under another name
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
    # every file of the folder is bound; only the JSON ones are results
    assert set(subjects) == {"artifacts/platform-runtime-cpu.json", "artifacts/extra-check.json",
                             "artifacts/platform-runtime-cpu.log"}
    import hashlib

    assert subjects["artifacts/platform-runtime-cpu.json"] == hashlib.sha256(
        (results / "platform-runtime-cpu.json").read_bytes()).hexdigest()
    predicate = index["predicate"]
    assert predicate["verdict"] == {"pass": True, "reasons": []}
    assert predicate["source_root"]["files"] == source_hashes(fake_source_root(), SOURCES)
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
    host = socket.gethostname()

    def strings(value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
        elif isinstance(value, str):
            yield value

    # No recorded value is the host's name; a short name ("vm") is also a word of our own file names
    # (scripts/core/vm_run_judge.py), so only a name long enough to mean a host is looked for inside values.
    assert host not in set(strings(index))
    assert len(host) < 6 or host not in text


def test_a_local_result_that_is_not_ok_fails(results, tmp_path):
    (results / "extra-check.json").write_text(FAILED_DIAGNOSTIC)
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    assert any(r.startswith("extra-check.json (diagnostic) fails:") and "status is 'failed'" in r
               for r in index["predicate"]["verdict"]["reasons"]), index["predicate"]["verdict"]["reasons"]
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
    assert any(r.startswith("mute.json (unknown) fails: not a result this project knows") for r in reasons)


@pytest.mark.parametrize("document", [{"ok": True}, {"ok": True, "status": "passed", "checks": {}}])
def test_a_bare_ok_alone_never_passes(tmp_path, document):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "result.json").write_text(json.dumps(document))
    completed, index = index_local(tmp_path / "r", tmp_path / "index.json")
    assert completed.returncode == 1
    assert index["predicate"]["results"][0]["kind"] == "unknown"


def test_a_gate_result_without_its_checks_fails(results, tmp_path):
    gate = json.loads((results / "platform-runtime-cpu.json").read_text())
    gate["checks"] = {}
    (results / "platform-runtime-cpu.json").write_text(json.dumps(gate))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    reasons = index["predicate"]["verdict"]["reasons"][0]
    assert "checks.device_compute is missing" in reasons or "does not validate" in reasons, reasons


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
    assert completed.stdout.splitlines()[-1].startswith("verdict: PASS (authentic: 3 subject(s) match")


def test_verify_fails_on_a_tampered_file(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    path = results / "platform-runtime-cpu.json"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3
    assert "mismatch  artifacts/platform-runtime-cpu.json" in completed.stdout
    assert "artifacts/extra-check.json" not in completed.stdout  # it matches


def test_verify_fails_on_a_missing_file(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    (results / "extra-check.json").unlink()
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3 and "missing   artifacts/extra-check.json" in completed.stdout


def test_verify_does_not_follow_a_link_out_of_the_folder(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    outside = tmp_path / "outside.json"
    shutil.move(results / "extra-check.json", outside)
    (results / "extra-check.json").symlink_to(outside)
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3 and "invalid   artifacts/extra-check.json" in completed.stdout


def test_verify_refuses_subject_names_that_escape(results, tmp_path):
    _, index = index_local(results, tmp_path / "index.json")
    index["subject"].append({"name": "artifacts/../../etc/passwd", "digest": {"sha256": "0" * 64}})
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3 and "invalid   artifacts/../../etc/passwd" in completed.stdout


def test_an_index_that_binds_logs_needs_logs_to_verify(tmp_path):
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    index = {"_type": "https://in-toto.io/Statement/v1", "predicateType": "x", "predicate": {},
             "subject": [{"name": "logs/1-linux.log", "digest": {"sha256": "0" * 64}}]}
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(artifacts))
    assert completed.returncode == 2 and "--logs" in completed.stderr


@pytest.mark.parametrize("content", ["not json", json.dumps([1, 2])])
def test_verify_of_something_that_is_not_an_index_is_a_usage_error(tmp_path, content):
    (tmp_path / "index.json").write_text(content)
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(tmp_path))
    assert completed.returncode == 2 and "Traceback" not in completed.stderr


def test_verify_without_required_arguments_is_a_usage_error(tmp_path):
    completed = cli("verify", str(tmp_path / "index.json"))
    assert completed.returncode == 2 and "--artifacts" in completed.stderr


def test_named_results_are_indexed_exactly_and_a_missing_one_fails(results, tmp_path):
    nested = results / "resume-run"
    # a real reprise verification with its run folders (the judge re-derives it from them: alone it cannot pass)
    shutil.copytree(REPRISE.parent, nested)
    output = results / "evidence-index.json"
    completed = cli("local", "--results", str(results), "--result", "platform-runtime-cpu.json",
                    "--result", "resume-run/verification.json", "--output", str(output),
                    "--verdict-output", str(results / "evidence-verdict.json"))
    assert completed.returncode == 0, completed.stdout
    index = json.loads(output.read_text())
    folder = sorted(f"artifacts/resume-run/{p.relative_to(nested).as_posix()}" for p in nested.rglob("*")
                    if p.is_file())
    assert [s["name"] for s in index["subject"]] == ["artifacts/platform-runtime-cpu.json", *folder]
    names = [r["name"] for r in index["predicate"]["results"]]
    assert names[0] == "platform-runtime-cpu.json" and "resume-run/verification.json" in names
    assert "resume-run/continu/summary.json" in names and "resume-run/continu/config.json" not in names
    verdict = json.loads((results / "evidence-verdict.json").read_text())
    import hashlib

    assert verdict == {"schema": "kernodeck.evidence-index.verdict/v1", "ok": True, "reasons": [],
                       "index": "evidence-index.json", "index_sha256": hashlib.sha256(output.read_bytes()).hexdigest(),
                       "subjects": 1 + len(folder)}
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
    # a real reprise verification names its sources by their tails (train.py, for scripts/reprise/train.py)
    shutil.copytree(REPRISE.parent, results / "resume-run")
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 0, completed.stdout
    resolved = index["predicate"]["source_root"]["resolved"]
    assert resolved["train.py"] == "scripts/reprise/train.py"
    assert resolved["verify_resume.py"] == "scripts/reprise/verify_resume.py"
    # a tail that names several tracked files (or none) is not guessed: it differs
    verification = results / "resume-run" / "verification.json"
    document = json.loads(verification.read_text())
    document["source"]["files"]["__init__.py"] = document["source"]["files"].pop("train.py")
    verification.write_text(json.dumps(document))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    reasons = index["predicate"]["verdict"]["reasons"]
    assert "resume-run/verification.json: 1 source file(s) differ from this checkout: __init__.py" in reasons

def test_a_result_of_a_known_kind_must_validate_against_its_schema(results, tmp_path):
    # check_training_run.py's results have a schema: a document that merely says ok is not one of them
    (results / "training-run-check.json").write_text(json.dumps({"schema": "kernodeck.training-run-check",
                                                                   "version": 1, "ok": True}))
    completed, index = index_local(results, tmp_path / "index.json")
    assert completed.returncode == 1
    assert any(r.startswith("training-run-check.json (training-run-check) fails: does not validate against its "
                            "schema")
               for r in index["predicate"]["verdict"]["reasons"])


def test_verify_fails_an_index_whose_verdict_was_edited_to_pass(results, tmp_path):
    (results / "extra-check.json").write_text(FAILED_DIAGNOSTIC)
    _, index = index_local(results, tmp_path / "index.json")
    assert index["predicate"]["verdict"]["pass"] is False
    index["predicate"]["verdict"] = {"pass": True, "reasons": []}
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3
    assert "not authentic: predicate.verdict.pass: recorded True, the bytes say False" in completed.stdout


def test_verify_fails_an_index_whose_predicate_and_subjects_disagree(results, tmp_path):
    _, index = index_local(results, tmp_path / "index.json")
    index["predicate"]["results"][0]["sha256"] = "0" * 64
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3 and "records 000000000000 for artifacts/" in completed.stdout


def test_the_local_summary_is_appended_with_the_verdict_first(results, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    (results / "extra-check.json").write_text(FAILED_DIAGNOSTIC)
    cli("local", "--results", str(results), "--output", str(tmp_path / "index.json"), "--summary", str(summary))
    text = summary.read_text()
    assert text.startswith("earlier step\n## Local evidence: FAIL\n")
    assert "- extra-check.json (diagnostic) fails: " in text and "status is 'failed'" in text
    assert "| platform-runtime-cpu.json | gate | yes | valid | cpu / ext4 |" in text


def test_a_local_step_passes_by_the_one_judge_not_by_a_bare_ok(tmp_path):
    import run_local

    def step(document: dict) -> run_local.Step:
        def command(out: Path) -> list[str]:  # a real process writes the document, as a step's script would
            return [sys.executable, "-c", f"open({str(out / 'r.json')!r}, 'w').write({json.dumps(document)!r})"]
        return run_local.Step("t", command, "r.json", lambda result: "described")

    gate = json.loads((ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    assert run_local.run_step(step(gate), tmp_path)[0] is True
    ok, text, _ = run_local.run_step(step({"ok": True}), tmp_path)
    assert ok is False and "an unknown document never passes" in text
    assert run_local.run_step(step({"status": "passed"}), tmp_path)[0] is False


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


@pytest.mark.parametrize("edit", [
    lambda p: p.update(results="not a list"),
    lambda p: p.update(results=[{"subject": "artifacts/platform-runtime-cpu.json", "sha256": 5}]),
    lambda p: p.pop("source_root"),
], ids=["results-not-a-list", "result-reshaped", "no-source-root"])
def test_a_predicate_edited_into_another_shape_is_not_authentic_and_no_traceback(results, tmp_path, edit):
    _, index = index_local(results, tmp_path / "index.json")
    edit(index["predicate"])
    (tmp_path / "index.json").write_text(json.dumps(index))
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results))
    assert completed.returncode == 3 and "Traceback" not in completed.stderr, completed.stdout + completed.stderr


def test_verify_json_report_on_stdout(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    completed = cli("verify", str(tmp_path / "index.json"), "--artifacts", str(results), "--json", "-")
    report = json.loads(completed.stdout)
    assert completed.returncode == 0 and report["outcome"] == "pass" and report["verdict"]["pass"] is True
    assert {row["status"] for row in report["subjects"]} == {"match"}


def test_verify_without_jsonschema_is_a_usage_error_not_a_verdict(results, tmp_path):
    index_local(results, tmp_path / "index.json")
    blocker = tmp_path / "no-jsonschema"
    blocker.mkdir()
    (blocker / "jsonschema.py").write_text("raise ImportError('jsonschema is not installed here')\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    env["PYTHONPATH"] = str(blocker)
    completed = subprocess.run([sys.executable, "-B", str(CLI), "verify", str(tmp_path / "index.json"),
                                "--artifacts", str(results)], capture_output=True, text=True, timeout=60, env=env)
    assert completed.returncode == 2 and "verify needs jsonschema" in completed.stderr
