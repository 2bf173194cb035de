"""The gate with --training-stack, run once as a user runs it on this CPU: compile, autocast and dataloader pass,
each recorded with what it found; the judge re-derives each verdict from the recorded bytes and refuses a
measurement edited while `ok` stays true; diff and the HTML report read the new checks. The faults are in
tests/gate/test_training_stack_faults.py (each check's worker alone), the rules in test_training_stack_rules.py.

One gate run (about a minute here: inductor's first compile of the model, forward and backward, dominates), shared
by every test that reads it."""

from __future__ import annotations

import copy
import json

import pytest
from core import training_stack as ts
from core.contract import judge_bytes

from tests.conftest import run_gate


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    return run_gate(tmp_path_factory.mktemp("training-stack"), "--device", "cpu", "--training-stack")


def test_the_gate_with_the_training_stack_passes_on_this_cpu(passing):
    assert passing.returncode == 0 and passing.result["ok"] is True, passing.result["failures"]
    checks = passing.result["checks"]
    assert all(checks[name]["ok"] is True and checks[name]["reason"] is None for name in ts.CHECKS)
    assert passing.result["arguments"]["training_stack"] is True
    assert passing.result["arguments"]["training_stack_timeout_s"] == ts.DEFAULT_TIMEOUT_S
    # every worker started as the gate starts its workers, and said so
    assert set(ts.CHECKS) <= set(passing.result["isolation"]["worker_startup"])


def test_compile_records_the_compiler_it_built_with_and_the_first_compile_apart(passing):
    check = passing.result["checks"]["compile"]
    assert check["compiler"]["name"] == "g++" and check["compiler"]["found"] is True
    assert check["compiler"]["version"].startswith("g++")
    assert check["kernels_built"] >= 1 and check["graphs"] >= 1 and check["cache"] == "fresh"
    assert check["first_step_s"] > check["later_steps_s"]  # the first compiled step holds the compile
    assert check["precompiled_header"] in ("built", "reused")  # torch's global header cache, outside the fresh one
    assert max(check["output_errors"]) <= ts.COMPILE_TOLERANCE


def test_autocast_ran_bfloat16_on_the_cpu_with_float32_weights(passing):
    check = passing.result["checks"]["autocast"]
    assert (check["dtype"], check["output_dtype"], check["gradient_dtype"]) == ("bfloat16", "bfloat16", "float32")
    assert check["grad_scaler"] is None and check["losses"][-1] < check["losses"][0]


def test_the_loader_received_every_sample_once_intact_through_shared_memory(passing):
    check = passing.result["checks"]["dataloader"]
    assert check["start_method"] == "fork" and check["pin_memory"] is False  # Linux's default, a CPU
    assert sorted(r["index"] for r in check["received"]) == list(range(ts.SAMPLES))
    assert all(r["sha256"] == ts.sample_sha256(r["index"]) for r in check["received"])
    assert check["batches_in_shared_memory"] == check["batches"] == ts.SAMPLES // ts.BATCH
    assert check["shared_memory"]["path"] == "/dev/shm" and check["shared_memory"]["total_bytes"] > 0


def forged(passing, forge) -> list[str]:
    document = json.loads(passing.output.read_text(encoding="utf-8"))
    forge(document)  # ok stays true everywhere
    judgement = judge_bytes(json.dumps(document).encode())
    assert judgement.ok is False
    return judgement.reasons


def test_the_judge_recomputes_each_check_and_refuses_an_edited_measurement_left_ok(passing):
    assert judge_bytes(passing.output.read_bytes()).ok is True
    reasons = forged(passing, lambda d: d["checks"]["dataloader"]["received"][7].update(sha256="0" * 64))
    assert any("sample 7 arrived altered" in r for r in reasons)
    reasons = forged(passing, lambda d: d["checks"]["compile"]["output_errors"].__setitem__(5, 0.25))
    assert any("step 5: an output of the compiled model differs from eager's by 0.25" in r for r in reasons)
    reasons = forged(passing, lambda d: d["checks"]["autocast"].update(output_dtype="float32"))
    assert any("autocast did not run in bfloat16" in r for r in reasons)
    reasons = forged(passing, lambda d: d["checks"].pop("dataloader"))
    assert any("checks.dataloader is missing, but arguments.training_stack asked for it" in r for r in reasons)


def test_the_html_report_shows_what_each_check_found(passing):
    from evidence_index import report

    page = report._result("linux", "gate", passing.result)
    for words in ("compiler.version", "g++", "first_step_s", "start_method", "fork", "received (samples)",
                  "bfloat16"):
        assert words in page, words
    assert passing.result["checks"]["dataloader"]["received"][0]["sha256"] not in page  # the JSON keeps those


def test_diff_calls_a_new_compiler_an_environment_change_and_an_altered_sample_a_check_change(passing):
    from evidence_index.diff import Tolerance, diff_documents

    new = copy.deepcopy(passing.result)
    new["checks"]["compile"]["compiler"]["version"] = "g++ (Debian 13.1.0) 13.1.0"
    new["checks"]["dataloader"]["received"][3]["sha256"] = "1" * 64
    kinds = {c.path: c.kind for c in diff_documents(passing.result, new, Tolerance(), "linux")}
    assert kinds == {"checks.compile.compiler.version": "environment", "checks.dataloader.received.3.sha256": "check"}


def test_each_noise_declaration_names_a_field_of_this_run_and_two_honest_runs_differ_only_within_it(passing):
    from core.noise import BY_KIND, TIMING
    from evidence_index.diff import Tolerance, diff_documents

    from tests.evidence_index.test_measurement_noise import leaf_paths

    paths = leaf_paths(passing.result)
    for declared in (d for d in BY_KIND["gate"] if d.owner == "core.training_stack"):
        assert any(p == declared.path for p in paths), declared.path
    again = copy.deepcopy(passing.result)  # a second run on a busier machine: every clock reading moves
    for name in ts.CHECKS:
        for key, value in list(again["checks"][name].items()):
            if key.endswith("_s") and isinstance(value, (int, float)):
                again["checks"][name][key] = round(value * 3 + 5, 3)
    changes = diff_documents(passing.result, again, Tolerance(), "linux", result_kind="gate")
    assert changes and all(c.noise == TIMING for c in changes), [c.path for c in changes if c.noise is None]


def test_a_bad_training_stack_timeout_is_a_usage_error_with_a_message_and_no_traceback(tmp_path):
    run = run_gate(tmp_path, "--training-stack", "--training-stack-timeout", "0")
    assert run.returncode == 2 and "--training-stack-timeout: must be between" in run.stderr
    assert "Traceback" not in run.stderr and run.result["checks"] == {}
