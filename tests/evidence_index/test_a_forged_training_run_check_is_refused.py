"""A training-run check is re-run by the index on the folder it names: the committed training run
(evidence/local/training-run) with one file edited so that it tells another story than the others, its check
(`ok: true`, no problem) left as recorded, re-indexed and verified in this process, is refused as not authentic,
naming the file and the field. The run folder's own check (scripts/reprise/training_run_contract.check_run_dir,
what check_training_run.py runs and the index re-runs) names every contradiction, where the index lists the
first five. The rows whose rule loads the checkpoint (weights_only) run with torch; the others with torch hidden
from the judge. The figures a refusal names are read from the committed bytes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCRIPTS
from tests.evidence_index.forged_evidence import (
    EVIDENCE,
    FolderEdit,
    assert_authentic,
    assert_not_passing,
    assert_refused,
    copied,
    edit_json,
    hide_torch,
    in_file,
    reindexed,
    replacing_checkpoint,
    replacing_text,
    row,
)

sys.path.insert(0, str(SCRIPTS / "reprise"))
import training_run_contract  # noqa: E402 - the folder's own check, scripts/reprise

RUN = "training-run"
RERUN = "training-run-check.json re-run on training-run: check.ok: recorded True"
FILES = "training-run-check.json re-run on training-run: check.checks.checkpoints.files"
COMMITTED = EVIDENCE / "local" / "training-run" / RUN
SUMMARY = json.loads((COMMITTED / "summary.json").read_text())
CONFIG = json.loads((COMMITTED / "config.json").read_text())
HIDDEN = SUMMARY["state"]["model.0.bias"]["shape"][0]
DATA_ROWS = len((SCRIPTS / "reprise" / "data.csv").read_text().strip().splitlines()) - 1
CHECKPOINT_BYTES = (COMMITTED / "checkpoint.pt").stat().st_size
LAST = str(SUMMARY["steps_done"])
SOURCES_MOVED_ON = "source file(s) differ from this checkout"


def in_run(name: str, change: Any) -> FolderEdit:
    return in_file(f"{RUN}/{name}", change)


def _metrics(change: Any) -> FolderEdit:
    def edit(folder: Path) -> None:
        path = folder / RUN / "metrics.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        change(lines)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return edit


def _pickle_of_os_system(folder: Path) -> None:
    """A pickle naming os.system in place of the checkpoint, its .sha256 and the check's SHA-256 redone, the
    check's `weights_only_load: true` left."""
    import os
    import pickle

    forged = pickle.dumps(os.system)  # not weights: the weights_only unpickler refuses its global
    replacing_checkpoint(RUN, lambda _folder: forged)(folder)

    def redo(document: dict) -> None:
        entry = document["checks"]["checkpoints"]["files"][0]
        entry.update(bytes=len(forged), sha256=hashlib.sha256(forged).hexdigest())
        assert entry["weights_only_load"] is True and document["ok"] is True
    edit_json(folder / "training-run-check.json", redo)


def _log_line(old: str, new: str) -> FolderEdit:
    """One line of logs/train.log changed, the check's recorded log size redone: the log is compared line by line."""
    def edit(folder: Path) -> None:
        log = folder / RUN / "logs" / "train.log"
        replacing_text(f"{RUN}/logs/train.log", old, new)(folder)
        edit_json(folder / "training-run-check.json", lambda d: d["checks"]["log"].update(bytes=log.stat().st_size))
    return edit


def _final_mse_everywhere_but_the_checkpoint(folder: Path) -> None:
    """metrics.jsonl's end record, summary.json and the log all say 0.057...: the checkpoint's weights say 0.357."""
    replacing_text(f"{RUN}/metrics.jsonl", '"final_mse_eval":0.3572380509811964',
                   '"final_mse_eval":0.0572380509811964')(folder)
    edit_json(folder / RUN / "summary.json", lambda d: d.update(final_mse_eval=0.0572380509811964))
    replacing_text(f"{RUN}/logs/train.log", "final MSE (eval) 0.357238050981", "final MSE (eval) 0.057238050981")(
        folder)


def _shifted(draws: dict) -> dict:
    return {rng: (value + 0.37) % 1.0 for rng, value in draws.items()}


def _config(**change: Any) -> FolderEdit:
    return in_run("config.json", lambda d: d.update(change))


def _summary_size_and_draws(document: dict) -> None:
    document["checkpoint"]["bytes"] += 3
    document["next_draws"]["at_end"] = {"python": 1.4, "numpy": 1.9, "torch": -0.3}


# (the edit, whether its rule loads the checkpoint, the words the index names, the words the folder's check names)
TRAINING_RUN = [
    row("the checkpoint replaced, its .sha256 redone", replacing_checkpoint(
        RUN, lambda f: (f / RUN / "checkpoint.pt").read_bytes() + b"\0"), True, (FILES,), ()),
    row("a pickle that does not load weights_only in place of the checkpoint", _pickle_of_os_system, True,
        (FILES, "weights_only_load"), ()),
    row("a metrics loss of 1e300", _metrics(lambda m: m[0].update(loss=1e300)), False,
        (RERUN, "metrics.jsonl:1: loss 1e+300, summary.json history.losses holds"), ()),
    row("a metrics loss written as the text nan", _metrics(lambda m: m[0].update(loss="nan")), False,
        (RERUN, "metrics.jsonl:1: loss is 'nan': the loss was not finite"), ()),
    row("a summary whose steps done are not the last step", in_run("summary.json", lambda d: d.update(steps_done=1)),
        False, (RERUN, "summary.json steps_done is 1, the last step in"), ()),
    row("a summary of other losses than its metrics",
        in_run("summary.json", lambda d: d["history"].update(losses=[5.0] * 5)), False,
        (RERUN, "summary.json history.losses holds 5.0 for step 1"), ()),
    row("a summary of another final MSE", in_run("summary.json", lambda d: d.update(final_mse_eval=99.0)), False,
        (RERUN, "summary.json final_mse_eval is 99.0"), ()),
    row("a config of another device", _config(device="cuda"), False,
        (RERUN, "config.json device is 'cuda', the run ran with"), ()),
    row("a config of 500 steps", _config(steps=500), False,
        (RERUN, "config.json steps is 500, metrics.jsonl holds 5 step"), ()),
    # the config: its own values possible, and the other files made by it
    row("a config rewritten to another model with impossible values",
        _config(hidden=64, lr=0.3, rows=2400, batch=0, dropout=-1.0, seed=1, gamma=0.0, step_size=-4), True,
        (RERUN, "config.json batch is 0, not an integer from 1", "config.json dropout is -1.0, not a probability in "
         "[0, 1)", "config.json step_size is -4, not an integer of at least 1"),
        ("config.json batch is 0, not an integer from 1", "config.json dropout is -1.0, not a probability in [0, 1)",
         "config.json step_size is -4, not an integer of at least 1",
         f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN} hidden",
         f"holds {DATA_ROWS} row(s)", "the python RNG seeded with 1 (config.json seed) draws")),
    row("a batch of no rows", _config(batch=0), True,
        (RERUN, "config.json batch is 0, not an integer from 1 to the rows"),
        ("config.json batch is 0, not an integer from 1 to the rows",)),
    row("a batch of more rows than the data", _config(batch=CONFIG["rows"] + 1), True,
        (RERUN, f"config.json batch is {CONFIG['rows'] + 1}, not an integer from 1 to the rows"),
        (f"config.json batch is {CONFIG['rows'] + 1}, not an integer from 1 to the rows",)),
    row("a dropout of one", _config(dropout=1.0), True,
        (RERUN, "config.json dropout is 1.0, not a probability in [0, 1)"),
        ("config.json dropout is 1.0, not a probability in [0, 1)",)),
    row("a scheduler step size of zero", _config(step_size=0), True,
        (RERUN, "config.json step_size is 0, not an integer of at least 1"),
        ("config.json step_size is 0, not an integer of at least 1",)),
    row("a scheduler gamma of zero", _config(gamma=0.0), True,
        (RERUN, "config.json gamma is 0.0, not a positive number"),
        ("config.json gamma is 0.0, not a positive number",)),
    row("a hidden width the weights do not have", _config(hidden=64), True,
        (RERUN, f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN}"),
        (f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN}",
         f"config.json hidden is 64, kernodeck reprise v1 trains with {HIDDEN}")),
    row("a learning rate the metrics did not train with", _config(lr=0.3), True,
        (RERUN, f"metrics.jsonl:1: lr {CONFIG['lr']} at step 1, StepLR from config.json (lr 0.3"),
        (f"metrics.jsonl:1: lr {CONFIG['lr']} at step 1, StepLR from config.json (lr 0.3",
         f"summary.json scheduler.base_lrs is [{CONFIG['lr']}], config.json says [0.3]")),
    row("a scheduler gamma the metrics did not decay by", _config(gamma=0.25), True,
        (RERUN, f"metrics.jsonl:4: lr {CONFIG['lr'] * CONFIG['gamma']} at step 4, StepLR from config.json"),
        (f"metrics.jsonl:4: lr {CONFIG['lr'] * CONFIG['gamma']} at step 4, StepLR from config.json",
         "summary.json scheduler.gamma is 0.5, config.json says 0.25")),
    row("a scheduler step size the metrics did not decay at", _config(step_size=2), True,
        (RERUN, "metrics.jsonl:3: lr"),
        ("metrics.jsonl:3: lr", "summary.json scheduler.step_size is 3, config.json says 2")),
    row("a row count the data does not have", _config(rows=2400), True, (RERUN, "config.json rows is 2400, data.csv"),
        ("config.json rows is 2400, data.csv", f"holds {DATA_ROWS} row(s)",
         "summary.json progress.permutation is not a permutation of the 2400 rows")),
    row("a batch the metrics' rows refute", _config(batch=2), True, (RERUN, "metrics.jsonl:1: rows ["),
        ("metrics.jsonl:1: rows [", "not 2 row(s)", "summary.json progress.rows_consumed is")),
    row("a seed the first draws refute", _config(seed=1), True, (RERUN, "summary.json next_draws.at_start.python is"),
        ("summary.json next_draws.at_start.python is", "the numpy RNG seeded with 1 (config.json seed)",
         "next_draws.at_start.torch is")),
    row("an RNG restore omitted by a run that did not resume", _config(omit_rng_restore=["torch"]), True,
        (RERUN, "config.json omit_rng_restore is ['torch'] for a run that did not resume"),
        ("config.json omit_rng_restore is ['torch'] for a run that did not resume",)),
    row("a config key train.py never writes", _config(optimizer="sgd"), True,
        (RERUN, "config.json holds 'optimizer', which train.py never writes"),
        ("config.json holds 'optimizer', which train.py never writes",)),
    row("a config resume the summary never made", in_run("config.json", lambda d: d.update(
        resume={"checkpoint_sha256": "76f2ecb6" * 8, "steps_done": 0})), False, (RERUN,),
        ("config.json resume is {", "summary.json command.resumed is False")),
    row("the config's hidden width deleted", in_run("config.json", lambda d: d.pop("hidden")), False,
        (RERUN, "config.json does not record hidden"), ()),
    row("the config's seed deleted", in_run("config.json", lambda d: d.pop("seed")), False,
        (RERUN, "config.json does not record seed"), ()),
    row("the config's dropout deleted", in_run("config.json", lambda d: d.pop("dropout")), False,
        (RERUN, "config.json does not record dropout"), ()),
    # the summary: its checkpoint record and its RNG draws
    row("a summary of another checkpoint size and draws out of range", in_run("summary.json", _summary_size_and_draws),
        True, (RERUN, f"summary.json checkpoint.bytes is {CHECKPOINT_BYTES + 3}, checkpoint.pt is {CHECKPOINT_BYTES}",
               "next_draws.at_end is {'python': 1.4, 'numpy': 1.9, 'torch': -0.3}: a uniform draw of each",
               f"the draw after the last step (after_step.{LAST}) is {SUMMARY['next_draws']['after_step'][LAST]!r}"),
        (f"summary.json checkpoint.bytes is {CHECKPOINT_BYTES + 3}, checkpoint.pt is {CHECKPOINT_BYTES}",
         "next_draws.at_end is {'python': 1.4, 'numpy': 1.9, 'torch': -0.3}: a uniform draw of each",
         f"the draw after the last step (after_step.{LAST}) is {SUMMARY['next_draws']['after_step'][LAST]!r}",
         "the checkpoint's RNG states draw")),
    row("the draws at the end moved within their range", in_run("summary.json", lambda d: d["next_draws"].update(
        at_end=_shifted(d["next_draws"]["at_end"]))), True,
        (RERUN, f"the draw after the last step (after_step.{LAST})"),
        (f"the draw after the last step (after_step.{LAST})", "the checkpoint's RNG states draw")),
    row("the draws at the end and after the last step moved together", in_run("summary.json", lambda d: d[
        "next_draws"].update(at_end=_shifted(d["next_draws"]["at_end"]), after_step={
            **d["next_draws"]["after_step"], LAST: _shifted(d["next_draws"]["at_end"])})), True,
        (RERUN, "the checkpoint's RNG states draw"), ("the checkpoint's RNG states draw",)),
    row("the first draws moved", in_run("summary.json", lambda d: d["next_draws"].update(
        at_start=_shifted(d["next_draws"]["at_start"]))), True,
        (RERUN, f"the python RNG seeded with {CONFIG['seed']} (config.json seed) draws"),
        (f"the python RNG seeded with {CONFIG['seed']} (config.json seed) draws", "next_draws.at_start.torch is")),
    row("a step's draws missing", in_run("summary.json", lambda d: d["next_draws"]["after_step"].pop("3")), True,
        (RERUN, "next_draws.after_step records steps ['1', '2', '4'"),
        ("next_draws.after_step records steps ['1', '2', '4'",)),
    row("a step's draw out of range", in_run("summary.json", lambda d: d["next_draws"]["after_step"]["2"].update(
        numpy=-0.5)), True, (RERUN, "next_draws.after_step.2 is {"), ("next_draws.after_step.2 is {",)),
    row("a summary naming another checkpoint digest", in_run("summary.json", lambda d: d["checkpoint"].update(
        sha256="0" * 64)), True, (RERUN, "summary.json checkpoint.sha256 is '000000"),
        ("summary.json checkpoint.sha256 is '000000",)),
    row("a summary counting a parameter its weights lack", in_run("summary.json", lambda d: d.update(
        parameters=d["parameters"] + 1)), True,
        (RERUN, f"summary.json parameters is {SUMMARY['parameters'] + 1}, its weights (state model.*) hold "
                f"{SUMMARY['parameters']}"),
        (f"summary.json parameters is {SUMMARY['parameters'] + 1}, its weights (state model.*) hold "
         f"{SUMMARY['parameters']}",)),
    row("a summary's next learning rate StepLR does not give", in_run("summary.json", lambda d: d.update(
        next_lr=0.03)), True, (RERUN, "summary.json next_lr is 0.03, StepLR from config.json gives"),
        ("summary.json next_lr is 0.03, StepLR from config.json gives",)),
    # the log is the one train.py renders from the files
    row("a log line of another loss", _log_line("loss 0.812338354422", "loss 0.012338354422"), False,
        (RERUN, "logs/train.log:2 is 'step  1  loss 0.012338354422"), ()),
    row("a log saying the run resumed", _log_line("resumed=False", "resumed=True"), False,
        (RERUN, "logs/train.log:1 is 'kernodeck reprise v1: 5 extra step(s), resumed=True"), ()),
    row("a log of another final MSE", _log_line("final MSE (eval) 0.357238050981", "final MSE (eval) 0.057238050981"),
        False, (RERUN, 'logs/train.log:7 is "final MSE (eval) 0.057238050981'), ()),
    # the headline number, recomputed from the checkpoint's weights
    row("a final MSE every file states and the checkpoint's weights do not give",
        _final_mse_everywhere_but_the_checkpoint, True,
        ("final_mse_eval is 0.0572380509811964, the checkpoint's weights on data.csv give 0.357238050981",), ()),
]


@pytest.mark.parametrize(("edit", "torch", "named", "checked"), TRAINING_RUN)
def test_a_training_run_whose_files_disagree_under_an_ok_check_is_not_authentic(
        tmp_path, monkeypatch, edit: FolderEdit, torch: bool, named: tuple[str, ...], checked: tuple[str, ...]) -> None:
    if torch:
        pytest.importorskip("torch")
    folder = copied(tmp_path, "local/training-run")
    edit(folder)
    if not torch:
        hide_torch(monkeypatch)
    report = reindexed(folder)
    assert_refused(report, *named)
    assert not torch or not report.taken_as_recorded  # what a load proves was proved by loading
    if checked:
        problems = [problem["message"] for problem in training_run_contract.check_run_dir(folder / RUN)["problems"]]
        for words in checked:
            assert any(words in problem for problem in problems), (words, problems)


def test_a_training_run_breaking_its_contract_fails_without_its_check_file(tmp_path, monkeypatch) -> None:
    """No training-run-check.json beside it: the index holds the folder to the contract itself."""
    folder = copied(tmp_path, "local/training-run")
    (folder / "training-run-check.json").unlink()
    replacing_text(f"{RUN}/metrics.jsonl", '"loss":0.4919077869934305', '"loss":"nan"')(folder)
    hide_torch(monkeypatch)
    report = reindexed(folder)
    reasons = [r for r in report.verdict["reasons"] if "breaks the training-run contract" in r]
    assert report.outcome != "pass" and any("metrics.jsonl:" in r and "'nan'" in r for r in reasons), reasons


def test_a_training_run_check_naming_a_folder_that_is_not_there_fails(tmp_path, monkeypatch) -> None:
    folder = copied(tmp_path, "local/training-run")
    edit_json(folder / "training-run-check.json", lambda d: d.update(run_dir="elsewhere"))
    hide_torch(monkeypatch)
    assert_not_passing(reindexed(folder), "elsewhere is not unpacked beside it")


def test_the_untouched_training_run_copy_stays_authentic(tmp_path) -> None:
    assert_authentic(reindexed(copied(tmp_path, "local/training-run")), SOURCES_MOVED_ON)


# --- check_training_run.py, the command a user runs on the folder -------------------------------------------

@pytest.mark.parametrize(("edit", "words"), [
    row("a pickle in place of the checkpoint", _pickle_of_os_system, ("weights_only",)),
    row("a config rewritten to another model with impossible values",
        _config(hidden=64, lr=0.3, rows=2400, batch=0, dropout=-1.0, seed=1, gamma=0.0, step_size=-4),
        ("config.json batch is 0, not an integer from 1", "config.json dropout is -1.0, not a probability in [0, 1)",
         "config.json step_size is -4, not an integer of at least 1",
         f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN} hidden",
         f"holds {DATA_ROWS} row(s)", "the python RNG seeded with 1 (config.json seed) draws")),
    row("a summary of another checkpoint size and draws out of range", in_run("summary.json", _summary_size_and_draws),
        (f"summary.json checkpoint.bytes is {CHECKPOINT_BYTES + 3}, checkpoint.pt is {CHECKPOINT_BYTES}",
         "next_draws.at_end is {'python': 1.4, 'numpy': 1.9, 'torch': -0.3}: a uniform draw of each",
         f"the draw after the last step (after_step.{LAST}) is {SUMMARY['next_draws']['after_step'][LAST]!r}",
         "the checkpoint's RNG states draw")),
])
def test_check_training_run_refuses_the_forged_folder_naming_each_fact(tmp_path, edit: FolderEdit,
                                                                      words: tuple[str, ...]) -> None:
    """scripts/check_training_run.py on the forged folder: exit 1, no traceback, each word in what it prints."""
    pytest.importorskip("torch")
    folder = copied(tmp_path, "local/training-run")
    edit(folder)
    ran = subprocess.run([sys.executable, "-B", str(SCRIPTS / "check_training_run.py"), str(folder / RUN)],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stdout + ran.stderr
    for word in words:
        assert word in ran.stdout + ran.stderr, (word, ran.stdout)


def test_the_verify_command_without_torch_says_what_it_took_as_recorded(tmp_path) -> None:
    """The CLI in a Python where torch does not import: the build notes the loads it took as recorded; verify
    exits 1 with the reason, or with --allow-without-torch prints the verdict line counting them."""
    import os

    site = tmp_path / "no-torch"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import importlib.util, sys\n_find = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a, **k: (\n"
        "    None if name.split('.')[0] == 'torch' else _find(name, *a, **k))\n"
        "sys.modules['torch'] = None  # import torch raises ImportError\n")
    env = dict(os.environ, PYTHONPATH=str(site))
    folder = copied(tmp_path, "local/training-run")
    cli = [sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py")]
    index = tmp_path / "index.json"
    built = subprocess.run([*cli, "local", "--results", str(folder), "--output", str(index)], capture_output=True,
                           text=True, timeout=120, env=env)
    assert "note: 2 checkpoint load(s) taken as recorded (this Python has no torch)" in built.stdout, built.stdout
    verify = [*cli, "verify", str(index), "--artifacts", str(folder)]
    refused = subprocess.run(verify, capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode == 1 and "checkpoint load(s) not repeated: this Python has no torch" in refused.stdout
    accepted = subprocess.run([*verify, "--allow-without-torch"], capture_output=True, text=True, timeout=120, env=env)
    verdict = next(line for line in accepted.stdout.splitlines() if line.startswith("verdict:"))
    assert "checkpoint load(s) taken as recorded (no torch)" in verdict, accepted.stdout
