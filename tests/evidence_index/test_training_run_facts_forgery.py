"""A reprise run's config.json and its summary's checkpoint record and RNG draws, forged one fact at a time in
copies of the committed evidence (the outside review r4, findings 2, 14 and 20), re-indexed and verified in this
process (with torch where the rule needs the checkpoint loaded): each is refused (not authentic) naming the
field, and the training-run check (check_training_run.py, which the index re-runs) refuses the forged folder
too. The figures a refusal names are read from the committed bytes. (The untouched copies staying authentic:
test_crossfile_forgery, test_reprise_record_forgery.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS
from tests.evidence_index.test_reprise_record_forgery import (
    EVIDENCE,
    REPRISE,
    RUN_LOCAL,
    assert_refused,
    copy,
    edit_json,
    judge,
)

sys.path.insert(0, str(SCRIPTS / "reprise"))
import reprise_compare  # noqa: E402
import training_run_contract as contract  # noqa: E402
import verify_resume  # noqa: E402
from evidence_index import crossfile  # noqa: E402

RERUN = "training-run-check.json re-run on training-run: check.ok: recorded True"
COMMITTED = EVIDENCE / "local" / "training-run" / "training-run"
SUMMARY = json.loads((COMMITTED / "summary.json").read_text())
CONFIG = json.loads((COMMITTED / "config.json").read_text())
HIDDEN = SUMMARY["state"]["model.0.bias"]["shape"][0]
DATA_ROWS = len((SCRIPTS / "reprise" / "data.csv").read_text().strip().splitlines()) - 1
CHECKPOINT_BYTES = (COMMITTED / "checkpoint.pt").stat().st_size
LAST = str(SUMMARY["steps_done"])


def refused_by_the_check(run: Path, *words: str) -> None:
    """training_run_contract.check_run_dir (what check_training_run.py and the index run) on the folder: not ok,
    each word in one of its problems (the judge's refusal lists the first five)."""
    result = contract.check_run_dir(run)
    assert result["ok"] is False
    for word in words:
        assert any(word in problem["message"] for problem in result["problems"]), (word, result["problems"])


def checker_refuses(run: Path, *words: str) -> None:
    """scripts/check_training_run.py on the forged folder: exit 1, each word in what it prints."""
    ran = subprocess.run([sys.executable, "-B", str(SCRIPTS / "check_training_run.py"), str(run)],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stdout + ran.stderr
    for word in words:
        assert word in ran.stdout, (word, ran.stdout)


def forged_training_run(tmp_path: Path, name: str, change) -> Path:
    folder = copy(tmp_path, "local/training-run")
    edit_json(folder / "training-run" / name, change)
    return folder


def test_r4_finding_2_a_config_rewritten_to_another_model_and_impossible_values_is_refused(tmp_path, monkeypatch):
    """hidden 64, lr 0.3, rows 2400, batch 0, dropout -1, seed 1, gamma 0, step_size -4: the config's own rule
    names the impossible values, the weights, data.csv and the first draws contradict the rest."""
    pytest.importorskip("torch")
    folder = forged_training_run(tmp_path, "config.json", lambda d: d.update(
        hidden=64, lr=0.3, rows=2400, batch=0, dropout=-1.0, seed=1, gamma=0.0, step_size=-4))
    words = ("config.json batch is 0, not an integer from 1", "config.json dropout is -1.0, not a probability in "
             "[0, 1)", "config.json step_size is -4, not an integer of at least 1",
             f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN} hidden",
             f"holds {DATA_ROWS} row(s)", "the python RNG seeded with 1 (config.json seed) draws")
    assert_refused(judge(folder, monkeypatch, torch=True), RERUN, *words[:3])  # the judge lists 5 of them
    checker_refuses(folder / "training-run", *words)


@pytest.mark.parametrize("change, words", [
    ({"batch": 0}, ["config.json batch is 0, not an integer from 1 to the rows"]),
    ({"batch": CONFIG["rows"] + 1}, [f"config.json batch is {CONFIG['rows'] + 1}, not an integer from 1 to the rows"]),
    ({"dropout": 1.0}, ["config.json dropout is 1.0, not a probability in [0, 1)"]),
    ({"step_size": 0}, ["config.json step_size is 0, not an integer of at least 1"]),
    ({"gamma": 0.0}, ["config.json gamma is 0.0, not a positive number"]),
    ({"hidden": 64}, [f"config.json hidden is 64, the run's weights (summary.json state model.0.bias) hold {HIDDEN}",
                      f"config.json hidden is 64, kernodeck reprise v1 trains with {HIDDEN}"]),
    ({"lr": 0.3}, [f"metrics.jsonl:1: lr {CONFIG['lr']} at step 1, StepLR from config.json (lr 0.3",
                   f"summary.json scheduler.base_lrs is [{CONFIG['lr']}], config.json says [0.3]"]),
    ({"gamma": 0.25}, [f"metrics.jsonl:4: lr {CONFIG['lr'] * CONFIG['gamma']} at step 4, StepLR from config.json",
                       "summary.json scheduler.gamma is 0.5, config.json says 0.25"]),
    ({"step_size": 2}, ["metrics.jsonl:3: lr", "summary.json scheduler.step_size is 3, config.json says 2"]),
    ({"rows": 2400}, ["config.json rows is 2400, data.csv", f"holds {DATA_ROWS} row(s)",
                      "summary.json progress.permutation is not a permutation of the 2400 rows"]),
    ({"batch": 2}, ["metrics.jsonl:1: rows [", "not 2 row(s)", "summary.json progress.rows_consumed is"]),
    ({"seed": 1}, ["summary.json next_draws.at_start.python is", "the numpy RNG seeded with 1 (config.json seed)",
                   "next_draws.at_start.torch is"]),
    ({"omit_rng_restore": ["torch"]}, ["config.json omit_rng_restore is ['torch'] for a run that did not resume"]),
    ({"optimizer": "sgd"}, ["config.json holds 'optimizer', which train.py never writes"]),
], ids=["batch-0", "batch-above-rows", "dropout-1", "step-size-0", "gamma-0", "hidden", "lr", "gamma", "step-size",
        "rows", "batch", "seed", "omit-without-resume", "unknown-key"])
def test_a_config_fact_another_file_contradicts_is_refused(tmp_path, monkeypatch, change, words):
    pytest.importorskip("torch")
    folder = forged_training_run(tmp_path, "config.json", lambda d: d.update(change))
    assert_refused(judge(folder, monkeypatch, torch=True), RERUN, words[0])
    refused_by_the_check(folder / "training-run", *words)


@pytest.mark.parametrize("key", ["hidden", "seed", "dropout"])
def test_a_config_fact_deleted_is_refused(tmp_path, monkeypatch, key):
    folder = forged_training_run(tmp_path, "config.json", lambda d: d.pop(key))
    assert_refused(judge(folder, monkeypatch), RERUN, f"config.json does not record {key}")


def test_r4_finding_14_a_summary_checkpoint_size_and_draws_out_of_range_are_refused(tmp_path, monkeypatch):
    pytest.importorskip("torch")

    def change(d: dict) -> None:
        d["checkpoint"]["bytes"] += 3
        d["next_draws"]["at_end"] = {"python": 1.4, "numpy": 1.9, "torch": -0.3}
    folder = forged_training_run(tmp_path, "summary.json", change)
    words = (f"summary.json checkpoint.bytes is {CHECKPOINT_BYTES + 3}, checkpoint.pt is {CHECKPOINT_BYTES}",
             "next_draws.at_end is {'python': 1.4, 'numpy': 1.9, 'torch': -0.3}: a uniform draw of each",
             f"the draw after the last step (after_step.{LAST}) is {SUMMARY['next_draws']['after_step'][LAST]!r}")
    assert_refused(judge(folder, monkeypatch, torch=True), RERUN, *words)
    checker_refuses(folder / "training-run", *words, "the checkpoint's RNG states draw")


def _shifted(draws: dict) -> dict:
    return {rng: (value + 0.37) % 1.0 for rng, value in draws.items()}


@pytest.mark.parametrize("change, words", [
    (lambda d: d["next_draws"].update(at_end=_shifted(d["next_draws"]["at_end"])),
     [f"the draw after the last step (after_step.{LAST})", "the checkpoint's RNG states draw"]),
    (lambda d: d["next_draws"].update(at_end=_shifted(d["next_draws"]["at_end"]),
                                      after_step={**d["next_draws"]["after_step"],
                                                  LAST: _shifted(d["next_draws"]["at_end"])}),
     ["the checkpoint's RNG states draw"]),
    (lambda d: d["next_draws"].update(at_start=_shifted(d["next_draws"]["at_start"])),
     [f"the python RNG seeded with {CONFIG['seed']} (config.json seed) draws", "next_draws.at_start.torch is"]),
    (lambda d: d["next_draws"]["after_step"].pop("3"), ["next_draws.after_step records steps ['1', '2', '4'"]),
    (lambda d: d["next_draws"]["after_step"]["2"].update(numpy=-0.5), ["next_draws.after_step.2 is {"]),
    (lambda d: d["checkpoint"].update(sha256="0" * 64), ["summary.json checkpoint.sha256 is '000000"]),
    (lambda d: d.update(parameters=d["parameters"] + 1),
     [f"summary.json parameters is {SUMMARY['parameters'] + 1}, its weights (state model.*) hold "
      f"{SUMMARY['parameters']}"]),
    (lambda d: d.update(next_lr=0.03), ["summary.json next_lr is 0.03, StepLR from config.json gives"]),
], ids=["at-end-in-range", "at-end-and-last-step", "at-start", "a-step-missing", "a-step-out-of-range",
        "checkpoint-sha256", "parameters", "next-lr"])
def test_a_summary_draw_or_checkpoint_record_its_other_files_contradict_is_refused(tmp_path, monkeypatch, change,
                                                                                   words):
    pytest.importorskip("torch")
    folder = forged_training_run(tmp_path, "summary.json", change)
    assert_refused(judge(folder, monkeypatch, torch=True), RERUN, words[0])
    refused_by_the_check(folder / "training-run", *words)


# --- run-local's reprise: the same rules in each run folder, and the draws across runs --------------------

def forged_reprise(tmp_path: Path, run: str, change) -> Path:
    folder = copy(tmp_path, "local/run-local")
    edit_json(folder / REPRISE / run / "summary.json", change)
    return folder


def test_r4_finding_14_a_continuous_run_with_another_size_and_first_draws_is_refused(tmp_path, monkeypatch):
    size = (RUN_LOCAL / REPRISE / "continu" / "checkpoint.pt").stat().st_size

    def change(d: dict) -> None:
        d["checkpoint"]["bytes"] += 3
        d["next_draws"]["at_start"] = {"python": 1.4, "numpy": 1.9, "torch": -0.3}
    folder = forged_reprise(tmp_path, "continu", change)
    assert_refused(judge(folder, monkeypatch), "continu/summary.json next_draws.at_start is {'python': 1.4",
                   "coupure/summary.json next_draws.at_start.python is", "both seeded it with one seed")
    refused_by_the_check(folder / REPRISE / "continu",  # the judge lists 12; the folder's own check says all
                         f"summary.json checkpoint.bytes is {size + 3}, checkpoint.pt is {size}")


def test_r4_finding_20_a_resume_whose_draws_after_steps_6_to_9_differ_is_refused(tmp_path, monkeypatch):
    continuous = json.loads((RUN_LOCAL / REPRISE / "continu" / "summary.json").read_text())

    def change(d: dict) -> None:
        for step in ("6", "7", "8", "9"):
            d["next_draws"]["after_step"][step] = {"python": 0.125, "numpy": 0.25, "torch": 0.5}
    folder = forged_reprise(tmp_path, "reprise", change)
    assert_refused(judge(folder, monkeypatch), *(
        f"reprise/summary.json next_draws.after_step.{step} is {{'python': 0.125, 'numpy': 0.25, 'torch': 0.5}}, "
        f"continu's is {continuous['next_draws']['after_step'][step]!r}" for step in ("6", "7", "8", "9")))


@pytest.mark.parametrize("run, change, words", [
    ("coupure", lambda d: d["next_draws"]["after_step"]["2"].update(torch=0.5),
     "coupure/summary.json next_draws.after_step.2 is"),
    ("controles/omit-numpy", lambda d: d["next_draws"]["at_start"].update(python=0.5),
     "controles/omit-numpy/summary.json next_draws.at_start.python is 0.5, coupure's next_draws.at_end.python is"),
    ("controles/omit-numpy", lambda d: d["next_draws"]["at_start"].update(numpy=0.5),
     "controles/omit-numpy/summary.json next_draws.at_start.numpy is 0.5, continu's next_draws.at_start.numpy is"),
], ids=["cut-step-2", "control-restored-rng", "control-omitted-rng"])
def test_a_run_whose_draws_another_run_contradicts_is_refused(tmp_path, monkeypatch, run, change, words):
    folder = forged_reprise(tmp_path, run, change)
    assert_refused(judge(folder, monkeypatch), words)


def test_verify_resume_refuses_the_same_draws_by_the_same_rule():
    """reprise_compare.protocol_problems, which verify_resume applies to its own report before writing it: the
    committed run passes it; the resumed run's draws after step 7 changed in memory, it names the field."""
    base = RUN_LOCAL / REPRISE
    report = json.loads((base / "verification.json").read_text())
    runs = {name: reprise_compare.load_run(base / name, name) for name in crossfile.RUN_FOLDERS}
    logs = {spec["name"]: (base / "logs" / f"{spec['name']}.log").read_text() for spec in verify_resume.plan()}
    args = (verify_resume.plan(), runs, (verify_resume.CONTINUOUS, verify_resume.RESUMED),
            list(verify_resume.NEGATIVE), logs)
    assert reprise_compare.protocol_problems(report, *args) == []
    runs["reprise"].summary["next_draws"]["after_step"]["7"]["numpy"] = 0.25
    problems = reprise_compare.protocol_problems(report, *args)
    assert len(problems) == 1 and problems[0].startswith("reprise/summary.json next_draws.after_step.7 is"), problems


def test_the_committed_run_folders_satisfy_the_config_and_draws_rules():
    """Every committed reprise run folder (CPU here, the CUDA machine's), file level: no problem."""
    roots = [path.parent for path in EVIDENCE.rglob("summary.json")]
    assert len(roots) == 15
    found: list = []
    for root in roots:
        found.clear()
        config = json.loads((root / "config.json").read_text())
        lines = [(n, json.loads(line)) for n, line in enumerate((root / "metrics.jsonl").read_text().splitlines(), 1)]
        seen = contract.records.metrics_problems(lines, lambda *p: found.append(p))
        contract.records.agreement_problems(root, config, seen, lambda *p: found.append(p))
        assert found == [], (root, found)
