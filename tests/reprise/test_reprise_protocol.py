"""verify_resume.py end to end, as the specification describes it; one protocol run shared by all tests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from tests.conftest import ROOT, validate
from tests.reprise.reprise_support import (
    REPRISE,
    VERDICT_KEYS,
    contract,
    copy_code,
    protocol_run,
    run_script,
    train,
    tree_bytes,
    verdict,
    verify,
)

FOLDERS = ["continu", "coupure", "reprise", "reprise-incomplete",
           "controles/omit-python", "controles/omit-numpy", "controles/omit-torch"]


@pytest.fixture(scope="module")
def protocol():
    return protocol_run()


def test_the_folder_runs_copied_alone_with_a_python_that_cannot_see_scripts(protocol):
    # The shared protocol run is made from a copy of scripts/reprise/ alone, outside the repository.
    assert not protocol.code.resolve().is_relative_to(ROOT.resolve())
    assert sorted(p.name for p in protocol.code.iterdir() if p.is_file()) == \
        sorted(p.name for p in REPRISE.iterdir() if p.is_file())
    assert not protocol.sees_scripts, "the Python of the copied-alone run could import from scripts/"
    assert protocol.ran.returncode == 0, protocol.ran.stdout + protocol.ran.stderr
    assert "ModuleNotFoundError" not in protocol.ran.stderr


def test_protocol_exits_0_and_the_last_line_is_the_specified_verdict(protocol):
    assert protocol.ran.returncode == 0, protocol.ran.stdout + protocol.ran.stderr
    last = protocol.ran.stdout.strip().splitlines()[-1]
    assert last == ('{"device":"cpu","all_checks_passed":true,"positive":true,'
                    '"negative_divergence_detected":true,"report":"verification.json"}')
    assert list(json.loads(last)) == VERDICT_KEYS


def test_verification_json_matches_its_schema(protocol):
    validate(protocol.report, "reprise-verification.schema.json")
    assert protocol.report["ok"] is True and protocol.report["exit_code"] == 0 and protocol.report["errors"] == []


def test_four_processes_ran_two_by_two(protocol):
    processes = protocol.report["protocol"]["processes"]
    assert [(p["name"], p["phase"], p["exit_code"]) for p in processes] == [
        ("continu", 1, 0), ("coupure", 1, 0), ("reprise", 2, 0), ("reprise-incomplete", 2, 0)]
    assert processes[2]["argv"][-4:] == ["--resume", "coupure/checkpoint.pt", "--output", "reprise"]
    assert "--omit-rng-restore" in processes[3]["argv"]


def test_resume_equals_continuous_run_and_every_error_is_kept_even_zero(protocol):
    checks = protocol.report["positive_resume"]["checks"]
    assert all(check["passed"] for check in checks.values())
    assert checks["losses"]["errors"] == [0.0] * 10
    assert checks["learning_rates"]["errors"] == [0.0] * 10
    assert checks["final_mse_eval"]["errors"] == [0.0]
    assert set(checks["weights"]["errors"]) == {"0.weight", "0.bias", "3.weight", "3.bias"}
    assert all(error == 0.0 for error in checks["weights"]["errors"].values())
    assert len(checks["optimizer_state"]["errors"]) == 12  # exp_avg, exp_avg_sq, step for 4 tensors


def test_interruption_is_inside_the_pass_at_cursor_20_of_24(protocol):
    boundary = protocol.report["resume_boundary"]
    assert boundary["passed"]
    assert {k: boundary["position"][k] for k in ("steps_done", "epoch", "cursor", "rows_consumed", "rows")} == {
        "steps_done": 5, "epoch": 0, "cursor": 20, "rows_consumed": 20, "rows": 24}
    for rng in ("python", "numpy", "torch"):
        draw = boundary["next_draws"]["draws"][rng]
        assert draw["continuous_after_step"] == draw["cut_at_end"] == draw["resumed_at_start"]
    assert boundary["next_lr"]["continuous"] == boundary["next_lr"]["resumed"] == 0.015


@pytest.mark.parametrize("control", ["all", "python", "numpy", "torch"])
def test_each_omitted_rng_restore_makes_the_training_diverge(protocol, control):
    entry = protocol.report["negative_controls"]["controls"][control]
    assert entry["passed"] is False and entry["divergence_detected"] is True
    assert entry["checks"]["losses"]["max_abs_error"] > 1e-6
    assert entry["checks"]["weights"]["max_abs_error"] > 1e-6
    assert entry["omitted"] == (["numpy", "python", "torch"] if control == "all" else [control])


def test_integrity_guards_held(protocol):
    integrity = protocol.report["integrity"]
    assert integrity["passed"]
    assert integrity["adam_steps"]["runs"]["reprise"] == {"expected": 10, "found": [10.0]}
    assert integrity["resumed_from_cut"]["passed"]
    assert all(all(run.values()) for run in integrity["fingerprints"]["runs"].values())
    assert integrity["lr_schedule_matches_specification"]["errors"] == [0.0] * 10


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_run_folder_has_checkpoint_fingerprint_summary_and_meets_the_contract(protocol, folder):
    run = protocol.output / folder
    for name in ("checkpoint.pt", "checkpoint.pt.sha256", "summary.json"):
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    validate(summary, "reprise-summary.schema.json")
    result = contract.check_run_dir(run)
    assert result["ok"], result["problems"]


def test_steps_counts_extra_steps(protocol):
    summary = json.loads((protocol.output / "reprise" / "summary.json").read_text(encoding="utf-8"))
    assert summary["command"]["steps"] == 5 and summary["steps_done"] == 10
    assert summary["resumed_from"]["steps_done"] == 5


def test_checkpoint_holds_every_part_with_rng_states_as_plain_types(protocol):
    state = torch.load(protocol.output / "coupure" / "checkpoint.pt", map_location="cpu", weights_only=True)
    assert set(state) == {"schema", "version", "project", "code_sha256", "data_sha256", "model", "optimizer",
                          "scheduler", "progress", "rng", "history"}
    assert sum(t.numel() for t in state["model"].values()) == 33
    assert all(t.dtype == torch.float64 for t in state["model"].values())
    assert set(state["progress"]) == {"permutation", "epoch", "cursor", "rows_consumed", "steps_done"}
    python_state = state["rng"]["python"]
    assert all(type(v) is int for v in python_state["internal"]) and len(python_state["internal"]) == 625

    def plain(value) -> bool:
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        return type(value) in (int, str)

    assert plain(state["rng"]["numpy"]) and state["rng"]["numpy"]["bit_generator"] == "PCG64"
    assert state["rng"]["torch"].dtype == torch.uint8
    assert len(state["history"]["losses"]) == len(state["history"]["lrs"]) == 5


def test_eval_mse_consumes_no_randomness(protocol):
    summary = json.loads((protocol.output / "continu" / "summary.json").read_text(encoding="utf-8"))
    assert summary["next_draws"]["after_step"]["10"] == summary["next_draws"]["at_end"]


def test_reports_hold_no_absolute_path(protocol):
    base = str(protocol.output.parent)
    for path in [protocol.output / "verification.json", *protocol.output.rglob("*.json"),
                 *protocol.output.rglob("*.log"), *protocol.output.rglob("*.jsonl")]:
        assert base not in path.read_text(encoding="utf-8"), path


def test_a_control_run_in_process_equals_the_same_control_in_its_own_process(protocol, tmp_path):
    """verify_resume.py runs the per-RNG controls inside process 4; a separate process gives the same bytes."""
    ran = train("--steps", "5", "--resume", str(protocol.output / "coupure" / "checkpoint.pt"),
                "--omit-rng-restore", "python", "--output", str(tmp_path / "alone"))
    assert ran.returncode == 0, ran.stderr
    alone = json.loads((tmp_path / "alone" / "summary.json").read_text(encoding="utf-8"))
    inside = json.loads((protocol.output / "controles" / "omit-python" / "summary.json").read_text(encoding="utf-8"))
    for key in ("history", "final_mse_eval", "next_draws", "progress"):
        assert alone[key] == inside[key], key
    assert alone["checkpoint"]["state_sha256"] == inside["checkpoint"]["state_sha256"]


def test_verify_refuses_an_output_folder_that_exists_and_changes_nothing(protocol):
    before = tree_bytes(protocol.output)
    ran = verify(protocol.output)
    assert ran.returncode == 2
    assert "already exists" in ran.stderr and "Traceback" not in ran.stderr
    assert tree_bytes(protocol.output) == before


def test_verify_exits_2_with_a_report_when_it_cannot_complete(tmp_path):
    code = copy_code(tmp_path / "copy")
    rows = (code / "data.csv").read_text().splitlines()
    (code / "data.csv").write_text("\n".join(rows[:-1]) + "\n")  # 23 rows: the exercise cannot run
    ran = run_script(code / "verify_resume.py", "--output", str(tmp_path / "out"), cwd=code)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert verdict(ran) == {"device": "cpu", "all_checks_passed": False, "positive": False,
                            "negative_divergence_detected": False, "report": "verification.json"}
    report = json.loads((tmp_path / "out" / "verification.json").read_text(encoding="utf-8"))
    validate(report, "reprise-verification.schema.json")
    assert report["completed"] is False and report["exit_code"] == 2
    assert "expected 24 rows, found 23" in report["errors"][0]


def test_the_verifier_itself_never_imports_torch(tmp_path):
    """It only reads files; four torch start-ups are the protocol's whole cost, a fifth would be waste."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import verify_resume, reprise_compare; "
             "sys.exit(1 if 'torch' in sys.modules or 'numpy' in sys.modules else 0)")
    ran = subprocess.run([sys.executable, "-B", "-c", probe, str(REPRISE)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
