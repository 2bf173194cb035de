"""The reprise verification's own record (its processes, environment, logs), the torch-free second view of
"bit for bit" (checkpoint bytes), the runs' logs and the training run's headline number, forged one fact at a
time in copies of the committed evidence, re-indexed and verified in this process: each is refused (not
authentic) naming the field, each untouched copy stays authentic. Most rules need no torch, so the judge runs
here with torch made unavailable to it (crossfile.torch_importable); the one that needs a load runs with it.
Without torch, `verify` does not say PASS unless told to accept the loads it could not repeat."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.checkouts import checkout_of

sys.path.insert(0, str(SCRIPTS / "reprise"))
import reprise_compare  # noqa: E402
import verify_resume  # noqa: E402
from common.files import encode_json  # noqa: E402
from evidence_index import crossfile  # noqa: E402
from evidence_index.local import build_local_index  # noqa: E402
from evidence_index.verify import WITHOUT_TORCH, Report, verify  # noqa: E402

EVIDENCE = ROOT / "evidence"
RUN_LOCAL = EVIDENCE / "local" / "run-local"
REPRISE = next(RUN_LOCAL.glob("reprise-*")).name
SOURCE_REASON = "source file(s) differ from this checkout"  # the committed runs predate today's sources


def copy(tmp_path: Path, relative: str) -> Path:
    folder = tmp_path / Path(relative).name
    shutil.copytree(EVIDENCE / relative, folder)
    (folder / "evidence-index.json").unlink(missing_ok=True)
    return folder


def made_by(folder: Path) -> Path:
    """The checkout that made the folder (the commit its gate result records), so that what is refused is the
    folder, not the gate sources that moved on since; a folder without a gate result: this checkout."""
    heads = [json.loads(path.read_text()).get("source", {}).get("git", {}).get("head")
             for path in sorted(folder.glob("platform-runtime-*.json"))]
    return checkout_of(heads[0]) if heads else ROOT


def judge(folder: Path, monkeypatch, torch: bool = False, allow_without_torch: bool = False) -> Report:
    """build_evidence_index.py local, then verify, in this process (torch hidden from the judge unless asked);
    the judge is this checkout's, the sources compared are those of the checkout that made the folder."""
    if not torch:
        monkeypatch.setattr(crossfile, "torch_importable", lambda: False)
    index = folder.parent / f"{folder.name}-index.json"
    index.write_bytes(encode_json(build_local_index(folder, output=index, source_root=made_by(folder), names=None)))
    statement = json.loads(index.read_text())
    return verify(statement, {"artifacts": folder, "logs": None}, allow_without_torch=allow_without_torch)


def assert_refused(report: Report, *words: str) -> None:
    assert report.outcome == "not-authentic", report.problems or report.verdict
    for word in words:
        assert any(word in problem for problem in report.problems), (word, report.problems)


def assert_authentic(report: Report, *allowed: str) -> None:
    assert report.outcome != "not-authentic" and not report.problems, report.problems
    reasons = (report.verdict or {}).get("reasons") or []
    assert all(any(word in reason for word in (SOURCE_REASON, *allowed)) for reason in reasons), reasons


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n")


def replace_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def swap_checkpoint(run: Path, source: Path) -> None:
    """run/checkpoint.pt := another real checkpoint, its .sha256 and the summary's digest and size redone."""
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    (run / "checkpoint.pt").write_bytes(data)
    (run / "checkpoint.pt.sha256").write_text(f"{digest}  checkpoint.pt\n")
    edit_json(run / "summary.json", lambda d: d["checkpoint"].update(sha256=digest, bytes=len(data)))


def verification(folder: Path) -> Path:
    return folder / REPRISE / "verification.json"


def processes(change):
    return lambda d: change(d["protocol"]["processes"])


# --- F10: the verification's record of the processes that ran, and its environment --------------------

@pytest.mark.parametrize("change, words", [
    (processes(lambda p: p[2].update(exit_code=1)),
     "protocol.processes[2:reprise].exit_code is 1, the protocol's is 0"),
    (processes(lambda p: p[2].update(argv=["python", "-B", "train.py", "--steps", "10", "--output", "reprise"])),
     "protocol.processes[2:reprise].argv is ['python', '-B', 'train.py', '--steps', '10', '--output', 'reprise']"),
    (processes(lambda p: p.clear()), "protocol.processes holds 0 record(s), the protocol runs 4"),
    (processes(lambda p: p.pop()), "protocol.processes holds 3 record(s), the protocol runs 4"),
    (processes(lambda p: p[0].update(wall_s=-1.0)), "protocol.processes[0:continu].wall_s is -1.0, not a duration"),
    (lambda d: d["protocol"].update(side_by_side=[["continu", "reprise"]]),
     "protocol.side_by_side is [['continu', 'reprise']], the protocol runs"),
    (lambda d: d["environment"].update(torch="2.11.0+cu130"),
     "environment.torch is '2.11.0+cu130', every run's summary records '2.13.0+cpu'"),
], ids=["resumed-exit-1", "resumed-without-resume-argv", "no-process", "one-missing", "wall-negative",
        "side-by-side", "verification-torch-cuda"])
def test_a_verification_whose_own_record_contradicts_its_protocol_is_not_authentic(tmp_path, monkeypatch, change,
                                                                                   words):
    folder = copy(tmp_path, "local/run-local")
    edit_json(verification(folder), change)
    assert_refused(judge(folder, monkeypatch), words)


def test_a_run_summary_claiming_another_torch_than_the_others_is_not_authentic(tmp_path, monkeypatch):
    """verify_resume starts every train.py with its own interpreter: the summaries' environments are one."""
    folder = copy(tmp_path, "local/run-local")
    edit_json(folder / REPRISE / "reprise" / "summary.json", lambda d: d["environment"].update(torch="2.11.0+cu130"))
    assert_refused(judge(folder, monkeypatch), "environment.torch: the runs' summaries disagree",
                   "reprise '2.11.0+cu130'")


def test_the_committed_verifications_satisfy_the_protocol_rule_the_program_applies():
    """verify_resume refuses its own report by the same rule (reprise_compare.protocol_problems): on the
    committed runs, CPU here and the CUDA machine's (a CUDA-built torch running the CPU protocol), it finds
    nothing; one edited record and it names the field."""
    for base in (RUN_LOCAL / REPRISE, EVIDENCE / "cuda" / "run" / "reprise-verification"):
        report = json.loads((base / "verification.json").read_text())
        runs = {name: reprise_compare.load_run(base / name, name) for name in crossfile.RUN_FOLDERS}
        logs = {spec["name"]: (base / "logs" / f"{spec['name']}.log").read_text() for spec in verify_resume.plan()}
        args = (verify_resume.plan(), runs, (verify_resume.CONTINUOUS, verify_resume.RESUMED),
                list(verify_resume.NEGATIVE), logs)
        assert reprise_compare.protocol_problems(report, *args) == [], base
        report["protocol"]["processes"][3]["exit_code"] = 2
        assert reprise_compare.protocol_problems(report, *args) == [
            "protocol.processes[3:reprise-incomplete].exit_code is 2, the protocol's is 0"]


def test_a_report_with_an_error_after_its_comparisons_does_not_pass():
    """verify_resume.conclude: a report its own record refused (an error recorded after the comparisons
    passed) exits 1, whatever the comparisons said."""
    report = {"completed": True, "positive": True, "negative_controls": {"all_detected": True},
              "errors": ["the verification's own record: protocol.processes[2:reprise].exit_code is 1"]}
    verify_resume.conclude(report)
    assert (report["ok"], report["all_checks_passed"], report["exit_code"]) == (False, False, 1)


# --- F13: the torch-free second view of "bit for bit" ---------------------------------------------------

def _short(run: Path) -> str:
    """The first 16 hex digits of a run folder's checkpoint, as the refusal names it (the committed run's own)."""
    return hashlib.sha256((run / "checkpoint.pt").read_bytes()).hexdigest()[:16]


def test_a_resumed_checkpoint_swapped_for_the_diverged_one_is_refused_without_torch(tmp_path, monkeypatch):
    """reprise/checkpoint.pt := reprise-incomplete's (the control that diverged), its .sha256 and the summary's
    digest redone: without any load, the resumed bytes are no longer the continuous run's."""
    folder = copy(tmp_path, "local/run-local")
    base = folder / REPRISE
    diverged, continuous = _short(base / "reprise-incomplete"), _short(base / "continu")
    swap_checkpoint(base / "reprise", base / "reprise-incomplete" / "checkpoint.pt")
    assert_refused(judge(folder, monkeypatch), f"reprise/checkpoint.pt is {diverged}...",
                   f"continu/checkpoint.pt is {continuous}...: a resume bit for bit")


def test_a_continuous_checkpoint_swapped_for_the_cut_is_refused_without_torch(tmp_path, monkeypatch):
    folder = copy(tmp_path, "local/run-local")
    base = folder / REPRISE
    resumed, cut = _short(base / "reprise"), _short(base / "coupure")
    swap_checkpoint(base / "continu", base / "coupure" / "checkpoint.pt")
    assert_refused(judge(folder, monkeypatch), f"reprise/checkpoint.pt is {resumed}..., continu/checkpoint.pt "
                   f"is {cut}...")


def test_a_negative_control_holding_the_positive_checkpoint_is_refused_without_torch(tmp_path, monkeypatch):
    folder = copy(tmp_path, "local/run-local")
    base = folder / REPRISE
    swap_checkpoint(base / "controles" / "omit-numpy", base / "continu" / "checkpoint.pt")
    assert_refused(judge(folder, monkeypatch), "controles/omit-numpy/checkpoint.pt is byte for byte continu's")


# --- F11: the logs are views of the run's other files ---------------------------------------------------

@pytest.mark.parametrize("path, old, new, words", [
    ("reprise/logs/train.log", "resumed=True", "resumed=False",
     "reprise: logs/train.log:1 is 'kernodeck reprise v1: 5 extra step(s), resumed=False"),
    ("reprise/logs/train.log", "loss 0.223466218373", "loss 0.023466218373", "reprise: logs/train.log:2 is 'step  6"),
    ("logs/reprise.log", "10 steps done", "12 steps done",
     "logs/reprise.log train.py line 1 is 'train.py: 12 steps done"),
    ("logs/reprise-incomplete.log", "omit-numpy\n", "omit-numpy\ntrain.py: control omitting the numpy RNG restore, "
     "wrote controles/omit-numpy\n", "logs/reprise-incomplete.log train.py line 4 is 'train.py: control omitting "
     "the numpy RNG restore, wrote controles/omit-numpy'; the runs it wrote make train.py print 'train.py: control "
     "omitting the torch"),
], ids=["train-log-resumed", "train-log-loss", "process-log-steps", "process-log-extra-line"])
def test_a_reprise_log_that_tells_another_story_is_not_authentic(tmp_path, monkeypatch, path, old, new, words):
    folder = copy(tmp_path, "local/run-local")
    replace_text(folder / REPRISE / path, old, new)
    assert_refused(judge(folder, monkeypatch), words)


@pytest.mark.parametrize("old, new, words", [
    ("loss 0.812338354422", "loss 0.012338354422", "logs/train.log:2 is 'step  1  loss 0.012338354422"),
    ("resumed=False", "resumed=True", "logs/train.log:1 is 'kernodeck reprise v1: 5 extra step(s), resumed=True"),
    ("final MSE (eval) 0.357238050981", "final MSE (eval) 0.057238050981",
     'logs/train.log:7 is "final MSE (eval) 0.057238050981'),
], ids=["loss-digit", "claims-resume", "final-mse"])
def test_a_training_run_log_that_tells_another_story_is_not_authentic(tmp_path, monkeypatch, old, new, words):
    """The check's recorded log size redone too: the log is compared line by line, not by its size."""
    folder = copy(tmp_path, "local/training-run")
    log = folder / "training-run" / "logs" / "train.log"
    replace_text(log, old, new)
    edit_json(folder / "training-run-check.json", lambda d: d["checks"]["log"].update(bytes=log.stat().st_size))
    assert_refused(judge(folder, monkeypatch), "training-run-check.json re-run on training-run: check.ok: recorded "
                   "True", words)


def test_every_committed_reprise_log_is_the_one_its_run_files_render():
    """train.py writes logs/train.log with training_run_records.train_log_text; the rule re-renders each
    committed one (CPU here, the CUDA machine's) from config.json, metrics.jsonl and summary.json, byte for byte."""
    import training_run_contract as contract

    roots = [path.parent for path in EVIDENCE.rglob("summary.json")]
    assert len(roots) == 15
    found: list = []
    for root in roots:
        config = json.loads((root / "config.json").read_text())
        lines = [(n, json.loads(line)) for n, line in enumerate((root / "metrics.jsonl").read_text().splitlines(), 1)]
        seen = contract.records.metrics_problems(lines, lambda *p: found.append(p))
        summary = contract.records.read_summary(root, True, lambda *p: found.append(p))
        contract.records.log_problems(root, config, summary, seen["steps"], lambda *p: found.append(p))
        assert found == [], root
        found.clear()


# --- F12: the training run's headline number, recomputed from its checkpoint (needs torch) ---------------

def test_a_training_run_final_mse_that_its_checkpoint_does_not_give_is_not_authentic(tmp_path, monkeypatch):
    """metrics.jsonl's end record, summary.json and the log all say 0.057...: the checkpoint's weights on
    data.csv give 0.357... (the judge loads the checkpoint with torch and evaluates it)."""
    pytest.importorskip("torch")
    folder = copy(tmp_path, "local/training-run")
    run = folder / "training-run"
    replace_text(run / "metrics.jsonl", '"final_mse_eval":0.3572380509811964', '"final_mse_eval":0.0572380509811964')
    edit_json(run / "summary.json", lambda d: d.update(final_mse_eval=0.0572380509811964))
    replace_text(run / "logs" / "train.log", "final MSE (eval) 0.357238050981", "final MSE (eval) 0.057238050981")
    report = judge(folder, monkeypatch, torch=True)
    assert_refused(report, "final_mse_eval is 0.0572380509811964, the checkpoint's weights on data.csv give "
                   "0.357238050981")
    assert not report.taken_as_recorded


# --- F13: without torch, no PASS that rests on a load nobody repeated -----------------------------------

@pytest.mark.parametrize("relative", ["local/run-local", "local/training-run"])
def test_without_torch_an_untouched_copy_is_authentic_but_not_a_pass_unless_accepted(tmp_path, monkeypatch,
                                                                                      relative):
    folder = copy(tmp_path, relative)
    refused = judge(folder, monkeypatch)
    assert_authentic(refused, WITHOUT_TORCH)
    assert refused.outcome == "fail" and refused.taken_as_recorded
    assert any(WITHOUT_TORCH in reason for reason in refused.verdict["reasons"])
    accepted = judge(folder, monkeypatch, allow_without_torch=True)
    assert_authentic(accepted)
    assert accepted.taken_as_recorded == refused.taken_as_recorded
    assert not any(WITHOUT_TORCH in reason for reason in accepted.verdict["reasons"])


def test_the_verify_command_without_torch_says_what_it_took_as_recorded(tmp_path):
    """The CLI in a Python where torch does not import: the build notes the loads it took as recorded; verify
    exits 1 with the reason, or with --allow-without-torch prints the verdict line counting them; never the
    line a torch verify prints."""
    from tests.evidence_index.test_crossfile_forgery import without_torch

    folder = copy(tmp_path, "local/training-run")
    env = without_torch(tmp_path)
    cli = [sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py")]
    index = tmp_path / "index.json"
    built = subprocess.run([*cli, "local", "--results", str(folder), "--output", str(index)], capture_output=True,
                           text=True, timeout=120, env=env)
    assert "note: 2 checkpoint load(s) taken as recorded (this Python has no torch)" in built.stdout, built.stdout
    verify_cli = [*cli, "verify", str(index), "--artifacts", str(folder)]
    refused = subprocess.run(verify_cli, capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode == 1 and "checkpoint load(s) not repeated: this Python has no torch" in refused.stdout
    accepted = subprocess.run([*verify_cli, "--allow-without-torch"], capture_output=True, text=True, timeout=120,
                              env=env)
    verdict = next(line for line in accepted.stdout.splitlines() if line.startswith("verdict:"))
    assert "checkpoint load(s) taken as recorded (no torch)" in verdict, accepted.stdout
