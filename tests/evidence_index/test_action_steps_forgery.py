"""Reviewer r6: the committed NFS folders' action-steps.json, forged one fact at a time, re-indexed and verified.
Its clock readings (the warm-up's end, the gate step, the uptime read after it, the phase's whole time), the gate
step's limit, the warm-up's record and, under busybox, the null unit states are bound to each other, to the gate
result and to the VM's init (rules.nfs_vm_run.step_clock_problems, action_steps_problems); before, each of these
edits verified PASS. Every figure is read from the committed bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, edit_json, rebuild_and_verify
from tests.evidence_index.test_nfs_folder_forgery import MADE_AT

NAME = "action-steps.json"


def steps_of(folder: str) -> dict:
    return json.loads((EVIDENCE / folder / NAME).read_text())


def refused(code: int, report: dict, words: str) -> None:
    """Not authentic, one problem naming action-steps.json and the field."""
    assert_refused(code, report)
    assert any("action-steps.json: " in p and words in p for p in report["problems"]), (words, report["problems"])


def forged(tmp_path: Path, folder: str, change) -> tuple[int, dict]:
    copy = tmp_path / folder
    shutil.copytree(EVIDENCE / folder, copy)
    (copy / "evidence-index.json").unlink()
    edit_json(copy / NAME, change)
    return rebuild_and_verify(copy, made_at=MADE_AT)


@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
def test_the_untouched_folder_still_verifies(tmp_path, folder):
    copy = tmp_path / folder
    shutil.copytree(EVIDENCE / folder, copy)
    (copy / "evidence-index.json").unlink()
    code, report = rebuild_and_verify(copy, made_at=MADE_AT)
    assert (code, report["outcome"]) == (0, "pass"), report["problems"]


def test_the_margin_and_warm_up_are_the_guests():
    import sys

    from rules import nfs_vm_run

    sys.path.insert(0, str(EVIDENCE.parent / "tools"))
    from nfsvm import phases

    assert phases.GATE_STEP_MARGIN_S == nfs_vm_run.GATE_STEP_MARGIN_S
    assert phases.WarmUp.wait.__defaults__ == (nfs_vm_run.WARM_UP_LIMIT_S,)
    assert all(steps_of(f)["warm_up"]["what"] == nfs_vm_run.WARM_UP_WHAT for f in ("nfs", "nfs-systemd"))


def _gate_past_verdict(d: dict) -> None:
    d["steps"]["gate"]["seconds"] = round(d["kernel_uptime_at_gate_verdict_seconds"]
                                          - d["warm_up"]["ended_at_uptime"] + 1, 2)


def _setup_longer_than_phase(d: dict) -> None:
    d["steps"]["setup"]["seconds"] = round(d["phase_seconds"] - d["steps"]["gate"]["seconds"], 2)


def _warm_up_ended_later(d: dict) -> None:
    d["warm_up"]["ended_at_uptime"] = round(d["warm_up"]["ended_at_uptime"] + 10, 1)


def _warm_up_longer_than_uptime(d: dict) -> None:
    d["warm_up"]["seconds"] = round(d["warm_up"]["ended_at_uptime"] + 10, 1)


def _gate_shorter_than_its_result(d: dict) -> None:
    gate = json.loads((EVIDENCE / "nfs" / "platform-runtime-nfs.json").read_text())
    d["steps"]["gate"]["seconds"] = round(gate["duration_s"] - 1, 2)


@pytest.mark.parametrize("change, words", [
    (lambda d: d["steps"]["gate"].update(limit_seconds=d["steps"]["gate"]["limit_seconds"] + 240),
     "steps.gate.limit_seconds is"),
    (_gate_past_verdict, "past kernel_uptime_at_gate_verdict_seconds"),
    (_setup_longer_than_phase, "longer than phase_seconds"),
    (_warm_up_ended_later, "past kernel_uptime_at_gate_verdict_seconds"),
    (_warm_up_longer_than_uptime, "warm_up ran"),
    (_gate_shorter_than_its_result, "shorter than the gate result's duration_s"),
    (lambda d: d["warm_up"].update(exit_code=1), "warm_up.exit_code is 1"),
    (lambda d: d["warm_up"].update(what=d["warm_up"]["what"] + "x"), "warm_up.what is"),
    (lambda d: d.pop("phase_seconds"), "phase_seconds is None"),
    (lambda d: d.pop("kernel_uptime_at_gate_verdict_seconds"), "kernel_uptime_at_gate_verdict_seconds is None"),
    (lambda d: d.pop("warm_up"), "warm_up is None"),
    (lambda d: d.update(packaged_units_after_gate={}), "packaged_units_after_gate is {}"),
], ids=["limit-raised", "gate-past-verdict", "setup-past-phase", "warm-up-later", "warm-up-before-boot",
        "gate-shorter", "warm-up-failed", "warm-up-what", "no-phase-seconds", "no-verdict-uptime", "no-warm-up",
        "busybox-units"])
def test_one_forged_fact_of_the_busybox_steps_is_refused(tmp_path, change, words):
    refused(*forged(tmp_path, "nfs", change), words)


def test_the_systemd_steps_limit_raised_is_refused(tmp_path):
    refused(*forged(tmp_path, "nfs-systemd", lambda d: d["steps"]["gate"].update(
        limit_seconds=d["steps"]["gate"]["limit_seconds"] + 1)), "steps.gate.limit_seconds is")
