"""Review findings F23-F27 and F30, forged in copies of the committed evidence one fact at a time: each rule is
a pure function (scripts/reprise or scripts/core) that names the field; the untouched evidence passes it. Two
forgeries go through the real index (`build_evidence_index.py local`, then `verify`)."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, SCRIPTS

sys.path.insert(0, str(SCRIPTS / "reprise"))
import reprise_compare  # noqa: E402
import training_run_records  # noqa: E402
import verify_resume  # noqa: E402
from rules import gpu_probe, one_run, result_format  # noqa: E402

from tests.evidence_index.index_cli import index_cli

EVIDENCE = ROOT / "evidence"
CLI = SCRIPTS / "build_evidence_index.py"
RUN_LOCAL = next((EVIDENCE / "local" / "run-local").glob("reprise-*"))
CUDA_REPRISE = EVIDENCE / "cuda" / "run" / "reprise-verification"
# What a verification fingerprints beside its code: the verifier's own files (one list, verify_resume) and data.csv.
NOT_CODE = (*verify_resume.VERIFY_FILES, "data.csv")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def rebuild_and_verify(folder: Path) -> tuple[int, dict]:
    index, report = folder.parent / "index.json", folder.parent / "report.json"
    index_cli("local", "--results", str(folder), "--output", str(index),
                    "--source-root", str(ROOT))
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--json", str(report))
    return verified.returncode, load(report)


# --- F30: a reprise result's code_sha256 is the fingerprint of its own source.files --------------------------

def test_every_committed_reprise_result_records_the_fingerprint_of_its_files():
    for path in [*EVIDENCE.rglob("summary.json"), *EVIDENCE.rglob("verification.json")]:
        not_code = NOT_CODE if path.name == "verification.json" else ()
        assert reprise_compare.source_problems(load(path)["source"], not_code) == [], path


def test_files_rehashed_under_a_kept_fingerprint_are_refused_naming_both_values():
    source = load(CUDA_REPRISE / "continu" / "summary.json")["source"]
    source["files"]["train.py"] = hashlib.sha256((SCRIPTS / "reprise" / "train.py").read_bytes()).hexdigest()
    problems = reprise_compare.source_problems(source)
    assert len(problems) == 1 and problems[0].startswith(f"source.code_sha256 is '{source['code_sha256']}'")
    assert "the fingerprint of its source.files is '" in problems[0]


def test_a_result_reserialised_with_sorted_keys_keeps_its_fingerprint():
    source = load(RUN_LOCAL / "verification.json")["source"]
    source["files"] = dict(sorted(source["files"].items()))
    assert reprise_compare.source_problems(source, NOT_CODE) == []
    source["data_sha256"] = "0" * 64
    assert reprise_compare.source_problems(source, NOT_CODE)[0].startswith("source.data_sha256 is '000")


def test_the_cuda_reprise_evidence_rehashed_to_this_checkout_is_not_authentic(tmp_path):
    folder = tmp_path / "cuda"
    shutil.copytree(CUDA_REPRISE, folder / "reprise-verification")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "scripts/reprise"], capture_output=True,
                             text=True, check=True).stdout.split()
    for path in folder.rglob("*.json"):  # the reviewer's edit: every source.files hash set to this checkout's
        document = load(path)
        if "source" not in document:
            continue  # config.json
        for name in document["source"]["files"]:
            target = next(ROOT / t for t in tracked if t.endswith("/" + name))
            document["source"]["files"][name] = hashlib.sha256(target.read_bytes()).hexdigest()
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    code, report = rebuild_and_verify(folder)
    assert code == 3 and report["outcome"] == "not-authentic", report["problems"]
    for name in ("continu/summary.json", "verification.json"):
        assert any(name in p and "source.code_sha256 is '4f412ae5" in p for p in report["problems"]), name


# --- F26: a per-RNG negative control shows its own RNG diverged, and only it --------------------------------

def test_each_committed_control_shows_exactly_its_own_rng_diverged():
    for verification in (RUN_LOCAL / "verification.json", CUDA_REPRISE / "verification.json"):
        for key, control in load(verification)["negative_controls"]["controls"].items():
            assert reprise_compare.draws_problems(control["checks"], reprise_compare.omitted_by(key)) == []


def test_the_numpy_control_relabelled_as_the_python_control_is_refused_naming_the_draws():
    controls = load(RUN_LOCAL / "verification.json")["negative_controls"]["controls"]
    problems = reprise_compare.draws_problems(controls["numpy"]["checks"], reprise_compare.omitted_by("python"))
    assert any(p.startswith("next_draws_at_end.draws.python.passed is True") for p in problems), problems
    assert any(p.startswith("next_draws_at_end.draws.numpy.passed is False") for p in problems), problems


def test_a_verification_claiming_a_relabelled_control_was_detected_is_not_authentic(tmp_path):
    from evidence_index import crossfile
    from evidence_index.index_judge import Observed

    folder = tmp_path / RUN_LOCAL.name
    shutil.copytree(RUN_LOCAL, folder)
    base = folder / "controles"
    shutil.rmtree(base / "omit-python")
    shutil.copytree(base / "omit-numpy", base / "omit-python")
    for name, key in (("config.json", None), ("summary.json", "command")):
        document = load(base / "omit-python" / name)
        (document[key] if key else document)["omit_rng_restore"] = ["python"]
        (base / "omit-python" / name).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    observed = Observed(root=tmp_path)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data, rel = path.read_bytes(), "artifacts/" + path.relative_to(tmp_path).as_posix()
            observed.digests[rel] = hashlib.sha256(data).hexdigest()
            if rel.endswith(".json"):
                observed.json[rel] = (data, observed.digests[rel], len(data))
            elif rel.endswith(".sha256"):
                observed.sidecars[rel] = data
    subject = f"artifacts/{folder.name}/verification.json"
    # The forger's verification: compare()'s own facts for these folders, with every control claimed detected.
    recorded = load(folder / "verification.json")
    runs = {name: crossfile._run(f"artifacts/{folder.name}", name, observed)[0] for name in crossfile.RUN_FOLDERS}
    with crossfile._replaced(crossfile.verify_resume, "load", lambda _o, name: runs[name]):
        facts = crossfile.verify_resume.compare(Path("."), recorded["source"])
    forged = {**recorded, **copy.deepcopy(facts)}
    for control in forged["negative_controls"]["controls"].values():
        control["divergence_detected"] = True
    forged["negative_controls"]["all_detected"] = True
    forged["positive"] = True
    problems = crossfile.verification_problems(subject, forged, observed)
    assert any("negative_controls.controls.python is recorded as detected, but next_draws_at_end.draws.python"
               in p for p in problems), problems


# --- F23 and F25: a training-run folder is held to its contract ---------------------------------------------

def test_a_training_run_breaking_its_contract_fails_without_its_check_file(tmp_path):
    folder = tmp_path / "training-run"
    shutil.copytree(EVIDENCE / "local" / "training-run", folder)
    (folder / "evidence-index.json").unlink()
    (folder / "training-run-check.json").unlink()
    metrics = folder / "training-run" / "metrics.jsonl"
    text = metrics.read_text(encoding="utf-8")
    assert '"loss":0.4919077869934305' in text
    metrics.write_text(text.replace('"loss":0.4919077869934305', '"loss":"nan"'), encoding="utf-8")
    code, report = rebuild_and_verify(folder)
    assert code != 0 and report["outcome"] != "pass"
    reasons = [r for r in report["verdict"]["reasons"] if "breaks the training-run contract" in r]
    assert any("metrics.jsonl:" in r and "'nan'" in r for r in reasons), report["verdict"]["reasons"]


def _agreement(folder: Path) -> list[str]:
    found: list[str] = []
    lines = [(n, json.loads(line)) for n, line in enumerate((folder / "metrics.jsonl").read_text().splitlines(), 1)]
    seen = training_run_records.metrics_problems(lines, lambda *p: found.append(p[2]))
    training_run_records.agreement_problems(folder, load(folder / "config.json"), seen,
                                            lambda *p: found.append(p[2]))
    return found


def test_a_config_resume_the_summary_never_made_is_refused_naming_both_fields(tmp_path):
    folder = tmp_path / "training-run"
    shutil.copytree(EVIDENCE / "local" / "training-run" / "training-run", folder)
    assert _agreement(folder) == []
    config = load(folder / "config.json")
    config["resume"] = {"checkpoint_sha256": "76f2ecb6" * 8, "steps_done": 0}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    found = _agreement(folder)
    assert any(p.startswith("config.json resume is {") and "summary.json resumed_from is None" in p for p in found)
    assert any("summary.json command.resumed is False" in p for p in found), found


def test_every_committed_run_folder_agrees_with_its_summary_command():
    for summary in EVIDENCE.rglob("summary.json"):
        assert _agreement(summary.parent) == [], summary


# --- F24: a version-1 gate result keeps the isolation record the version-1 gate always wrote ---------------

CUDA_GATE = EVIDENCE / "cuda" / "run" / "platform-runtime-cuda.json"


def test_the_committed_v1_results_hold_their_isolation_record():
    for path in (CUDA_GATE, EVIDENCE / "cuda" / "no-visible-gpu" / "platform-runtime-no-visible-gpu.json"):
        assert result_format.missing_fields(load(path)) == [], path


def test_a_v1_result_without_its_isolation_record_is_refused():
    result = load(CUDA_GATE)
    del result["isolation"]
    assert result_format.missing_fields(result) == ["isolation is missing: the version-1 gate always recorded it"]
    result = load(CUDA_GATE)
    result["isolation"]["present"] = []
    assert result_format.missing_fields(result)[0].startswith("isolation.present is [] and")
    result = load(CUDA_GATE)
    del result["isolation"]["device_worker_loaded"]
    assert result_format.missing_fields(result)[0].startswith("isolation.device_worker_loaded is missing")


# --- F27: the CUDA probe's warnings and its device count -----------------------------------------------------

def test_a_probe_that_warned_does_not_back_a_cuda_claim():
    device = load(CUDA_GATE)["device"]
    assert gpu_probe.gpu_view_problems(device, "cuda") == []
    warned = copy.deepcopy(device)
    warned["cuda"]["driver_too_old_warning"] = True
    assert gpu_probe.gpu_view_problems(warned, "cuda")[0].startswith("device.cuda.driver_too_old_warning is True")
    warned = copy.deepcopy(device)
    warned["cuda"]["availability_warnings"] = 1
    assert gpu_probe.gpu_view_problems(warned, "cuda")[0].startswith("device.cuda.availability_warnings is 1")


def test_the_gate_device_count_is_the_diagnostic_gpu_count_of_its_folder():
    gate, diagnostic = load(CUDA_GATE), load(EVIDENCE / "cuda" / "run" / "kernodeck-diagnostic-gpu.json")
    assert one_run.run_problems([("gate", "gate", gate), ("diag", "diagnostic", diagnostic)]) == [[], []]
    gate["device"]["cuda"]["device_count"] = 2
    problems = one_run.run_problems([("gate", "gate", gate), ("diag", "diagnostic", diagnostic)])
    assert any("device.cuda.device_count is 2" in p for p in problems[0]), problems
    assert any("pytorch.gpu_count is 1" in p for p in problems[1]), problems


# --- F30 (the index's own fingerprint over its sources) -------------------------------------------------------

def test_an_index_whose_source_digest_is_not_that_of_its_source_files_is_refused():
    from evidence_index.checkout_hashes import files_digest_problems
    from evidence_index.verify import verify

    folder = EVIDENCE / "local" / "training-run"
    statement = load(folder / "evidence-index.json")
    assert files_digest_problems(statement["predicate"]["source_root"]) == []
    recorded = statement["predicate"]["source_root"]["files_sha256"]
    statement["predicate"]["source_root"]["files_sha256"] = "0" * 64
    report = verify(statement, {"artifacts": folder, "logs": None})
    assert report.outcome == "not-authentic"
    assert any(p.startswith("predicate.source_root.files_sha256 is '000") and recorded in p
               for p in report.problems), report.problems
