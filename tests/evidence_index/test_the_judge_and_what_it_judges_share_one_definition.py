"""What the judge holds a result to is what its maker does, defined once: the device worker's tolerances, the
gate's fixed parameters and words, the NFS VM's image recipe, phases and steps, the reprise's own rules. A copy
of a constant or a rule on either side would be a second definition that can drift; here each is held to be the
same object, or to give the same answer on the committed runs (which satisfy every rule: the premises the tables
of forgeries start from)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.forged_evidence import EVIDENCE, EXT4, REPRISE, at, committed

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(SCRIPTS / "reprise"))


# --- the gate ---------------------------------------------------------------------------------------------

def test_the_tolerances_are_the_device_workers() -> None:
    from core import verdicts
    from platform_runtime import device_checkpoint, device_training

    assert device_training.STEPS is verdicts.STEPS == 12
    assert device_training.UPDATE_RULE_TOLERANCE is verdicts.UPDATE_RULE_TOLERANCE == 1e-5
    training = (SCRIPTS / "platform_runtime" / "device_training.py").read_text()
    assert "max_rule_error <= UPDATE_RULE_TOLERANCE" in training
    assert device_checkpoint.FORWARD_TOLERANCE is verdicts.FORWARD_TOLERANCE
    assert verdicts.FORWARD_TOLERANCE_DEVICE == 1e-5 and verdicts.FORWARD_TOLERANCE["cpu"] == 0.0


@pytest.mark.parametrize("start", [EXT4, "local/run-local/platform-runtime-cpu.json"])
def test_the_committed_runs_record_the_pinned_parameters(start: str) -> None:
    from core import gate_parameters

    result = committed(start)
    assert gate_parameters.gate_parameters(result) == []
    assert result["checks"]["concurrent_replace"]["min_distinct_versions"] == gate_parameters.MIN_DISTINCT_VERSIONS
    assert result["checks"]["failing_writer"]["killed_writer"]["kills_requested"] == gate_parameters.KILLS


def test_the_gate_judges_its_final_times_by_the_same_rules() -> None:
    """scripts/platform_runtime/gate.py applies verdicts.final_time_problems to the times it writes last."""
    from core import record_rules, verdicts

    late = {"started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:00:09+00:00",
            "duration_s": 9.0, "arguments": {"timeout_s": 5.0}, "workspace_cleanup": {"after_global_timeout": False}}
    assert verdicts.final_time_problems(late) == record_rules.timeout_held(late) != []


def test_the_gate_words_a_held_requirement_with_the_judges_function() -> None:
    from core.requirements import held_reason
    from platform_runtime.claims import Requirements, evaluate

    device = {"resolved": "cpu", "type": "cpu", "ran_on": ["cpu"]}
    filesystem = {"type": "ext4", "method": "linux-mountinfo-mnt-id"}
    held = evaluate(Requirements((), "cpu", "ext4"), {"system": "Linux"}, device, True, filesystem)
    assert [(v["ok"], v["reason"]) for v in held] == [
        (True, held_reason("device=cpu", device, filesystem)),
        (True, held_reason("filesystem=ext4", device, filesystem))]


def test_the_committed_measurements_are_what_the_rules_allow_and_no_bound_was_tuned_to_them() -> None:
    """Every committed loss is a float32 >= 0, each lock attempt tried once; each role ran a small part of its
    deadline, and the reserve is the most a check keeps (the deadlines are over 100 s)."""
    from core.outcomes import ROLE_RESERVE_S

    result = committed(EXT4)
    lock = "checks.jsonl_append.lock_probe"
    assert all(value >= 0 for value in at(result, "checks.device_compute.training.losses"))
    assert [at(result, f"{lock}.{key}")["attempts"] for key in ("while_held", "after_release")] == [1, 1]
    roles = [*at(result, "checks.concurrent_replace.roles"), *at(result, "checks.jsonl_append.roles"),
             *(at(result, f"{lock}.{key}") for key in ("while_held", "after_release"))]
    assert all(role["ran_s"] < role["deadline_s"] / 10 for role in roles)
    assert min(at(result, f"checks.{name}.deadline_s") for name in ("concurrent_replace", "jsonl_append")) / 4 \
        > ROLE_RESERVE_S


def test_every_committed_diagnostic_says_the_sentence_of_its_code() -> None:
    from core.diagnostic_words import message_problems

    reports = [json.loads(p.read_text()) for p in EVIDENCE.rglob("kernodeck-diagnostic-*.json")]
    assert reports and all(message_problems(r) == [] for r in reports)
    assert message_problems({**reports[0], "message": "x"})


# --- the NFS VM -----------------------------------------------------------------------------------------------

def test_the_judges_image_facts_are_the_recipes() -> None:
    from core import vm_image_judge
    from nfsvm import initramfs, recipe

    for init in recipe.INITS:
        assert vm_image_judge.IMAGE_PACKAGES[init] == recipe.packages(init)
    assert vm_image_judge.OFFLINE_PACKAGE == recipe.OFFLINE_PACKAGE
    assert vm_image_judge.INITRAMFS_TARGETS == initramfs.TARGETS
    assert vm_image_judge.SUITE == recipe.SUITE
    for folder in ("nfs", "nfs-systemd"):
        manifest = committed(f"{folder}/nfsvm-image.json")
        assert vm_image_judge.packages_digest(manifest["packages"]) == manifest["packages_sha256"]
        assert sorted(committed(f"{folder}/nfs-vm-run.json")["image"]) == sorted(vm_image_judge.IMAGE_BLOCK)


def test_the_judges_guest_packages_are_the_ones_the_guest_reads() -> None:
    source = (ROOT / "tools" / "nfsvm" / "phases.py").read_text()
    assert '"nfs-kernel-server", "nfs-common",\n                            "python3"]' in source


def test_the_margin_and_warm_up_are_the_guests() -> None:
    from core import vm_run_judge
    from nfsvm import phases

    assert phases.GATE_STEP_MARGIN_S == vm_run_judge.GATE_STEP_MARGIN_S
    assert phases.WarmUp.wait.__defaults__ == (vm_run_judge.WARM_UP_LIMIT_S,)
    assert all(committed(f"{f}/action-steps.json")["warm_up"]["what"] == vm_run_judge.WARM_UP_WHAT
               for f in ("nfs", "nfs-systemd"))


def test_the_phase_runs_the_variants_the_judge_holds_it_to() -> None:
    from core import vm_judge
    from nfsvm import two_clients_phase

    assert two_clients_phase.variants_table() is vm_judge.TWO_CLIENTS_VARIANTS
    assert vm_judge.VARIANTS == tuple(kind for *_, kind in vm_judge.TWO_CLIENTS_VARIANTS)


def test_the_vm_verdict_takes_the_gate_and_the_harness_from_the_one_judge() -> None:
    from nfsvm import run_checks

    gate = committed("nfs/platform-runtime-nfs.json")
    assert run_checks.gate_check(gate)[0] is True
    gate["checks"]["jsonl_append"]["missing"] = 7  # its ok left true
    ok, detail = run_checks.gate_check(gate)
    assert ok is False and "checks.jsonl_append.missing is 7" in detail
    harness, setup, steps = (committed(f"nfs/{name}") for name in ("nfs-harness.json", "nfs-harness-setup.json",
                                                                   "action-steps.json"))
    assert run_checks.harness_check(harness, setup, committed("nfs/platform-runtime-nfs.json"), steps)[0] is True
    harness["export_side_delete"]["workspace"] = "platform-runtime-000000000000"
    ok, detail = run_checks.harness_check(harness, setup, committed("nfs/platform-runtime-nfs.json"), steps)
    assert ok is False and "the gate's workspace_cleanup.workspace" in detail


# --- the reprise ------------------------------------------------------------------------------------------------

RUN_LOCAL = EVIDENCE / "local" / "run-local" / REPRISE
REPRISE_FOLDERS = [RUN_LOCAL, EVIDENCE / "cuda" / "run" / "reprise-verification"]


def _protocol(base: Any) -> tuple[dict, tuple]:
    import reprise_compare
    import verify_resume
    from evidence_index import crossfile

    report = json.loads((base / "verification.json").read_text())
    runs = {name: reprise_compare.load_run(base / name, name) for name in crossfile.RUN_FOLDERS}
    logs = {spec["name"]: (base / "logs" / f"{spec['name']}.log").read_text() for spec in verify_resume.plan()}
    return report, (verify_resume.plan(), runs, (verify_resume.CONTINUOUS, verify_resume.RESUMED),
                    list(verify_resume.NEGATIVE), logs)


@pytest.mark.parametrize("base", REPRISE_FOLDERS, ids=["run-local", "the H200 run"])
def test_the_committed_verifications_satisfy_the_protocol_rule_the_program_applies(base: Any) -> None:
    """verify_resume refuses its own report by the same rule (reprise_compare.protocol_problems) the judge applies:
    on the committed runs (CPU here, the H200's: a CUDA-built torch running the CPU protocol) it finds nothing;
    one edited record, one edited draw, and it names the field."""
    import reprise_compare

    report, args = _protocol(base)
    assert reprise_compare.protocol_problems(report, *args) == []
    report["protocol"]["processes"][3]["exit_code"] = 2
    assert reprise_compare.protocol_problems(report, *args) == [
        "protocol.processes[3:reprise-incomplete].exit_code is 2, the protocol's is 0"]
    report, args = _protocol(base)
    args[1]["reprise"].summary["next_draws"]["after_step"]["7"]["numpy"] = 0.25
    problems = reprise_compare.protocol_problems(report, *args)
    assert len(problems) == 1 and problems[0].startswith("reprise/summary.json next_draws.after_step.7 is"), problems


def test_the_judge_holds_a_process_log_to_the_rule_verify_resume_applies() -> None:
    """One function: the judge reaches the log rule only through the reprise's own module, the one verify_resume.py
    imports (a copy would be a second rule that can drift)."""
    import verify_resume
    from evidence_index.crossfile import reprise_compare

    assert verify_resume.rc.log_problems is reprise_compare.log_problems
    assert reprise_compare.log_problems("continu", "train.py: 10 steps done\n", None) == []
    assert reprise_compare.log_problems("continu", "train.py: 10 steps done\n\n", None) == [
        "logs/continu.log line 2 is '': a train.py process prints only printable ASCII lines starting 'train.py: ' "
        "(a warning as 'train.py: warning: '), so this line is not the run's"]


RUN_FOLDERS = [path.parent for path in EVIDENCE.rglob("summary.json")]


def test_every_committed_run_folder_agrees_with_its_config_metrics_summary_and_log() -> None:
    """Every committed run folder (CPU here, the H200's; 15 in all): its files agree at file level, its summary
    command is its config's, and logs/train.log is the one train.py renders from them, byte for byte."""
    import training_run_contract as contract

    assert len(RUN_FOLDERS) == 15
    found: list[Any] = []
    for root in RUN_FOLDERS:
        found.clear()
        config = json.loads((root / "config.json").read_text())
        lines = [(n, json.loads(line)) for n, line in enumerate((root / "metrics.jsonl").read_text().splitlines(), 1)]
        seen = contract.records.metrics_problems(lines, lambda *p: found.append(p))
        contract.records.agreement_problems(root, config, seen, lambda *p: found.append(p))
        summary = contract.records.read_summary(root, True, lambda *p: found.append(p))
        contract.records.log_problems(root, config, summary, seen["steps"], lambda *p: found.append(p))
        assert found == [], (root, found)


@pytest.mark.parametrize("path", [*EVIDENCE.rglob("summary.json"), *EVIDENCE.rglob("verification.json")],
                         ids=lambda path: path.relative_to(EVIDENCE).as_posix())
def test_every_committed_reprise_result_records_the_fingerprint_of_its_files(path: Any) -> None:
    import reprise_compare
    import verify_resume

    not_code = (*verify_resume.VERIFY_FILES, "data.csv") if path.name == "verification.json" else ()
    assert reprise_compare.source_problems(json.loads(path.read_text())["source"], not_code) == [], path


@pytest.mark.parametrize("base", REPRISE_FOLDERS, ids=["run-local", "the H200 run"])
def test_each_committed_control_shows_exactly_its_own_rng_diverged(base: Any) -> None:
    import reprise_compare

    for key, control in json.loads((base / "verification.json").read_text())["negative_controls"]["controls"].items():
        assert reprise_compare.draws_problems(control["checks"], reprise_compare.omitted_by(key)) == [], key

