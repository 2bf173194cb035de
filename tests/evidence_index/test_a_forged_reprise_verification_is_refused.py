"""A reprise verification is re-derived from its run folders, each run folder from its own files: one fact of the
committed verification (evidence/local/run-local's reprise, the H200 run's) edited, or one file of a run folder,
and the folder re-indexed and verified in this process is refused as not authentic, naming the file and the field.

The verification says a resume from a cut checkpoint continued bit for bit and that each negative control
diverged; its summaries, checkpoints, metrics, configs and logs must tell the same story. Most rules need no
torch: those rows are judged with torch hidden from the judge, as where torch does not import; the rows whose
rule loads a checkpoint (weights_only) are judged with it. The figures a refusal names are read from the
committed bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from evidence_index.verify import WITHOUT_TORCH

from tests.conftest import ROOT
from tests.evidence_index.forged_evidence import (
    EVIDENCE,
    REPRISE,
    FolderEdit,
    appending,
    assert_authentic,
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

RUN_LOCAL = EVIDENCE / "local" / "run-local"
SOURCES_MOVED_ON = "source file(s) differ from this checkout"  # the committed runs predate today's sources
TRACEBACK = "Traceback (most recent call last):\nRuntimeError: checkpoint.pt: PytorchStreamReader failed\n"
CONTINUOUS = json.loads((RUN_LOCAL / REPRISE / "continu" / "summary.json").read_text())
CUT_WALL = json.loads((RUN_LOCAL / REPRISE / "verification.json").read_text())["protocol"]["processes"][1]


def _short(folder: Path, run: str) -> str:
    """The first 16 hex digits of a run folder's committed checkpoint, as a refusal names it."""
    return hashlib.sha256((folder / REPRISE / run / "checkpoint.pt").read_bytes()).hexdigest()[:16]


def _filled(words: str, short: dict[str, str]) -> str:
    """The words with each <run> replaced by the first digits of that run's committed checkpoint."""
    for run, digits in short.items():
        words = words.replace(f"<{run}>", digits)
    return words


def in_reprise(name: str, change: Any) -> FolderEdit:
    return in_file(f"{REPRISE}/{name}", change)


def _checkpoint_of(run: str, more: bytes = b"") -> Any:
    return lambda folder: (folder / REPRISE / run / "checkpoint.pt").read_bytes() + more


def _controls_that_did_not_diverge(folder: Path) -> None:
    """Every control folder replaced by the exact resume (which does not diverge)."""
    base = folder / REPRISE
    for control in ("reprise-incomplete", "controles/omit-python", "controles/omit-numpy", "controles/omit-torch"):
        for name in ("summary.json", "checkpoint.pt", "checkpoint.pt.sha256"):
            (base / control / name).write_bytes((base / "reprise" / name).read_bytes())


def _resumed_swapped_for_the_torch_control(folder: Path) -> None:
    """The resumed run's checkpoint replaced by the torch control's (it diverged), its .sha256 and the summary's
    digest and size redone, the summary's state (equal to continu's) left: only loading the checkpoint shows it."""
    replacing_checkpoint(f"{REPRISE}/reprise", _checkpoint_of("controles/omit-torch"), summary=True)(folder)


def _metrics(run: str, change: Any) -> FolderEdit:
    def edit(folder: Path) -> None:
        path = folder / REPRISE / run / "metrics.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        change(lines)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return edit


def _processes(change: Any) -> FolderEdit:
    return in_reprise("verification.json", lambda d: change(d["protocol"]["processes"]))


def _continuous_of_another_size_and_first_draws(document: dict) -> None:
    document["checkpoint"]["bytes"] += 3
    document["next_draws"]["at_start"] = {"python": 1.4, "numpy": 1.9, "torch": -0.3}


def _resume_drew_otherwise_after_step_6(document: dict) -> None:
    for step in ("6", "7", "8", "9"):
        document["next_draws"]["after_step"][step] = {"python": 0.125, "numpy": 0.25, "torch": 0.5}


V = "verification.json: "
VERIFICATION = [
    # the verification re-derived from the summaries and checkpoints
    row("the cut run's checkpoint swapped, its .sha256 redone", "local/run-local",
        replacing_checkpoint(f"{REPRISE}/coupure", _checkpoint_of("coupure", b"\0")), False,
        ("coupure/summary.json.checkpoint.sha256 is",
         "integrity.fingerprints.runs.coupure.checkpoint_sha256_matches_summary: recorded True")),
    row("a checkpoint whose .sha256 file names other bytes", "local/run-local",
        lambda f: (f / REPRISE / "continu" / "checkpoint.pt.sha256").write_text("0" * 64 + "  checkpoint.pt\n"), False,
        ("continu/checkpoint.pt.sha256 names 0000",)),
    row("a weights error recorded under a passing resume", "local/run-local",
        in_reprise("verification.json", lambda d: d["positive_resume"]["checks"]["weights"].update(max_abs_error=0.5)),
        False, ("positive_resume.checks.weights.max_abs_error: recorded 0.5, the bytes say 0.0",)),
    row("negative controls that did not diverge, recorded as detected", "local/run-local",
        _controls_that_did_not_diverge, False,
        ("negative_controls.all_detected: recorded True, the bytes say False",
         "negative_divergence_detected: recorded True, the bytes say False")),
    row("the resumed checkpoint swapped for a diverged one, every digest redone", "local/run-local",
        _resumed_swapped_for_the_torch_control, True,
        ("reprise/summary.json: state: model.0.bias, model.0.weight", "differ from the checkpoint's tensors",
         "reprise/checkpoint.pt", "reprise/summary.json: history differs from the checkpoint's")),
    # each run folder's metrics and config say what its summary and the verification say
    row("a resumed run's metrics loss its summary never held", "local/run-local",
        _metrics("reprise", lambda m: m[0].update(loss=9.9)), False,
        (V, "reprise: metrics.jsonl:1: loss 9.9, summary.json history.losses holds")),
    row("a resumed run's config resuming from another checkpoint", "local/run-local",
        in_reprise("reprise/config.json", lambda d: d["resume"].update(checkpoint_sha256="0" * 64)), False,
        (V, "reprise/config.json resume is {'checkpoint_sha256': '000000")),
    row("a resumed run's config omitting the torch RNG restore", "local/run-local",
        in_reprise("reprise/config.json", lambda d: d.update(omit_rng_restore=["torch"])), False,
        (V, "reprise/config.json omit_rng_restore is ['torch'], the verification expects []")),
    row("a resumed run's config of another learning rate", "local/run-local",
        in_reprise("reprise/config.json", lambda d: d.update(lr=0.5)), False,
        (V, "reprise/config.json lr is 0.5, the verification expects 0.03")),
    row("the numpy control's config omitting another RNG", "local/run-local",
        in_reprise("controles/omit-numpy/config.json", lambda d: d.update(omit_rng_restore=["python"])), False,
        (V, "controles/omit-numpy/config.json omit_rng_restore is ['python'], the verification expects ['numpy']")),
    row("the continuous run's config of another step count", "local/run-local",
        in_reprise("continu/config.json", lambda d: d.update(steps=5)), False,
        (V, "continu/config.json steps is 5, the verification expects 10")),
    # the verification's own record of the processes it ran and the environment
    row("the resumed process recorded exiting 1", "local/run-local", _processes(lambda p: p[2].update(exit_code=1)),
        False, ("protocol.processes[2:reprise].exit_code is 1, the protocol's is 0",)),
    row("the resumed process recorded without its resume arguments", "local/run-local",
        _processes(lambda p: p[2].update(argv=["python", "-B", "train.py", "--steps", "10", "--output", "reprise"])),
        False, ("protocol.processes[2:reprise].argv is ['python', '-B', 'train.py', '--steps', '10', '--output', "
                "'reprise']",)),
    row("no process recorded", "local/run-local", _processes(lambda p: p.clear()), False,
        ("protocol.processes holds 0 record(s), the protocol runs 4",)),
    row("one process record missing", "local/run-local", _processes(lambda p: p.pop()), False,
        ("protocol.processes holds 3 record(s), the protocol runs 4",)),
    row("a process of negative wall time", "local/run-local", _processes(lambda p: p[0].update(wall_s=-1.0)), False,
        ("protocol.processes[0:continu].wall_s is -1.0, not a duration",)),
    row("processes recorded side by side that the protocol runs in order", "local/run-local",
        in_reprise("verification.json", lambda d: d["protocol"].update(side_by_side=[["continu", "reprise"]])), False,
        ("protocol.side_by_side is [['continu', 'reprise']], the protocol runs",)),
    row("the verification naming another torch than its runs", "local/run-local",
        in_reprise("verification.json", lambda d: d["environment"].update(torch="2.11.0+cu130")), False,
        ("environment.torch is '2.11.0+cu130', every run's summary records '2.13.0+cpu'",)),
    row("one run's summary naming another torch than the others", "local/run-local",
        in_reprise("reprise/summary.json", lambda d: d["environment"].update(torch="2.11.0+cu130")), False,
        ("environment.torch: the runs' summaries disagree", "reprise '2.11.0+cu130'")),
    row("the continuous process recorded shorter than the cut one it ran beside", "local/run-local",
        _processes(lambda p: p[0].update(wall_s=0.001)), False,
        ("protocol.processes[0:continu].wall_s 0.001 is less than "
         f"protocol.processes[1:coupure].wall_s {CUT_WALL['wall_s']}",)),
    # bit for bit, without torch: the checkpoints' bytes
    row("the resumed checkpoint swapped for the diverged control's", "local/run-local",
        replacing_checkpoint(f"{REPRISE}/reprise", _checkpoint_of("reprise-incomplete"), summary=True), False,
        ("reprise/checkpoint.pt is <reprise-incomplete>...",
         "continu/checkpoint.pt is <continu>...: a resume bit for bit")),
    row("the continuous checkpoint swapped for the cut one's", "local/run-local",
        replacing_checkpoint(f"{REPRISE}/continu", _checkpoint_of("coupure"), summary=True), False,
        ("reprise/checkpoint.pt is <reprise>..., continu/checkpoint.pt is <coupure>...",)),
    row("a negative control holding the positive checkpoint", "local/run-local",
        replacing_checkpoint(f"{REPRISE}/controles/omit-numpy", _checkpoint_of("continu"), summary=True), False,
        ("controles/omit-numpy/checkpoint.pt is byte for byte continu's",)),
    # the logs are views of the run's other files
    row("a train.log saying the resumed run did not resume", "local/run-local",
        replacing_text(f"{REPRISE}/reprise/logs/train.log", "resumed=True", "resumed=False"), False,
        ("reprise: logs/train.log:1 is 'kernodeck reprise v1: 5 extra step(s), resumed=False",)),
    row("a train.log loss its metrics never held", "local/run-local",
        replacing_text(f"{REPRISE}/reprise/logs/train.log", "loss 0.223466218373", "loss 0.023466218373"), False,
        ("reprise: logs/train.log:2 is 'step  6",)),
    row("a process log counting other steps", "local/run-local",
        replacing_text(f"{REPRISE}/logs/reprise.log", "10 steps done", "12 steps done"), False,
        ("logs/reprise.log train.py line 1 is 'train.py: 12 steps done",)),
    row("a process log with a line its runs never made train.py print", "local/run-local",
        replacing_text(f"{REPRISE}/logs/reprise-incomplete.log", "omit-numpy\n", "omit-numpy\ntrain.py: control "
                       "omitting the numpy RNG restore, wrote controles/omit-numpy\n"), False,
        ("logs/reprise-incomplete.log train.py line 4 is 'train.py: control omitting the numpy RNG restore, wrote "
         "controles/omit-numpy'; the runs it wrote make train.py print 'train.py: control omitting the torch",)),
    row("a traceback appended to a process log", "local/run-local",
        appending(f"{REPRISE}/logs/continu.log", TRACEBACK), False,
        ("logs/continu.log line 2 is 'Traceback (most recent call last):'",)),
    row("a warning prepended to a process log", "local/run-local",
        appending(f"{REPRISE}/logs/reprise.log", "UserWarning: resuming WITHOUT the RNG state\n", before=True), False,
        ("logs/reprise.log line 1 is 'UserWarning: resuming WITHOUT the RNG state'",)),
    row("a line added to the H200 run's process log", "cuda/run",
        appending("reprise-verification/logs/continu.log", "extra line\n"), False,
        ("logs/continu.log line 2 is 'extra line'",)),
    row("a train.py line appended after a warning line train.py could print", "local/run-local",
        lambda f: (appending(f"{REPRISE}/logs/reprise.log", "train.py: warning: UserWarning: resumed "
                             "(reprise_core.py:170)\n", before=True)(f),
                   appending(f"{REPRISE}/logs/reprise.log", "train.py: 12 steps done\n")(f)), False,
        ("logs/reprise.log train.py line 2 is 'train.py: 12 steps done'",)),
    # the RNG draws: each run's, and across the runs
    row("the continuous run's checkpoint size and first draws out of range", "local/run-local",
        in_reprise("continu/summary.json", _continuous_of_another_size_and_first_draws), False,
        ("continu/summary.json next_draws.at_start is {'python': 1.4",
         "coupure/summary.json next_draws.at_start.python is", "both seeded it with one seed")),
    row("a resume whose draws after steps 6 to 9 differ from the continuous run's", "local/run-local",
        in_reprise("reprise/summary.json", _resume_drew_otherwise_after_step_6), False,
        tuple(f"reprise/summary.json next_draws.after_step.{step} is {{'python': 0.125, 'numpy': 0.25, "
              f"'torch': 0.5}}, continu's is {CONTINUOUS['next_draws']['after_step'][step]!r}"
              for step in ("6", "7", "8", "9"))),
    row("the cut run's draw after step 2 changed", "local/run-local",
        in_reprise("coupure/summary.json", lambda d: d["next_draws"]["after_step"]["2"].update(torch=0.5)), False,
        ("coupure/summary.json next_draws.after_step.2 is",)),
    row("a control that restored the RNG it omits", "local/run-local",
        in_reprise("controles/omit-numpy/summary.json", lambda d: d["next_draws"]["at_start"].update(python=0.5)),
        False, ("controles/omit-numpy/summary.json next_draws.at_start.python is 0.5, coupure's "
                "next_draws.at_end.python is",)),
    row("a control whose omitted RNG drew as if restored", "local/run-local",
        in_reprise("controles/omit-numpy/summary.json", lambda d: d["next_draws"]["at_start"].update(numpy=0.5)),
        False, ("controles/omit-numpy/summary.json next_draws.at_start.numpy is 0.5, continu's "
                "next_draws.at_start.numpy is",)),
]


@pytest.mark.parametrize(("relative", "edit", "torch", "named"), VERIFICATION)
def test_a_reprise_verification_its_run_folders_refute_is_not_authentic(tmp_path, monkeypatch, relative: str,
                                                                        edit: FolderEdit, torch: bool,
                                                                        named: tuple[str, ...]) -> None:
    folder = copied(tmp_path, relative)
    short = {run: _short(folder, run) for run in ("continu", "coupure", "reprise", "reprise-incomplete")} \
        if relative == "local/run-local" else {}
    edit(folder)
    if not torch:
        hide_torch(monkeypatch)
    assert_refused(reindexed(folder), *(_filled(words, short) for words in named))


def _relabel_numpy_control_as_python(folder: Path) -> None:
    """The numpy control copied in as the python control (its config and command saying python), and a
    verification made again by the project's own comparison of these folders, every control claimed detected."""
    import shutil
    import sys

    base = folder / REPRISE / "controles"
    shutil.rmtree(base / "omit-python")
    shutil.copytree(base / "omit-numpy", base / "omit-python")
    edit_json(base / "omit-python" / "config.json", lambda d: d.update(omit_rng_restore=["python"]))
    edit_json(base / "omit-python" / "summary.json", lambda d: d["command"].update(omit_rng_restore=["python"]))
    sys.path.insert(0, str(ROOT / "scripts" / "reprise"))
    import verify_resume

    recorded = json.loads((folder / REPRISE / "verification.json").read_text())
    facts = verify_resume.compare(folder / REPRISE, recorded["source"])
    forged = {**recorded, **facts}
    for control in forged["negative_controls"]["controls"].values():
        control["divergence_detected"] = True
    forged["negative_controls"]["all_detected"] = True
    forged["positive"] = True
    (folder / REPRISE / "verification.json").write_text(json.dumps(forged, indent=2) + "\n")


def test_a_verification_claiming_a_relabelled_control_diverged_is_not_authentic(tmp_path, monkeypatch) -> None:
    """A per-RNG control shows its own RNG diverged, and only it: the numpy control relabelled python shows the
    python draws agreeing."""
    folder = copied(tmp_path, "local/run-local")
    _relabel_numpy_control_as_python(folder)
    hide_torch(monkeypatch)
    assert_refused(reindexed(folder), "negative_controls.controls.python is recorded as detected, but "
                                      "next_draws_at_end.draws.python")


def test_the_h200_reprise_run_rehashed_to_this_checkout_is_not_authentic(tmp_path, monkeypatch) -> None:
    """Every source.files digest of the H200 run's reprise set to this checkout's bytes, the fingerprint kept:
    the fingerprint is of its own source.files."""
    import subprocess

    folder = copied(tmp_path, "cuda/run/reprise-verification", name="reprise-verification")
    folder = folder.parent
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "scripts/reprise"], capture_output=True,
                             text=True, check=True).stdout.split()
    for path in folder.rglob("*.json"):
        document = json.loads(path.read_text())
        if "source" not in document:
            continue  # config.json
        for name in document["source"]["files"]:
            target = next(ROOT / t for t in tracked if t.endswith("/" + name))
            document["source"]["files"][name] = hashlib.sha256(target.read_bytes()).hexdigest()
        path.write_text(json.dumps(document, indent=2) + "\n")
    hide_torch(monkeypatch)
    report = reindexed(folder, source_root=ROOT)
    assert_refused(report)
    for name in ("continu/summary.json", "verification.json"):
        assert any(name in p and "source.code_sha256 is '4f412ae5" in p for p in report.problems), name


# --- the controls -----------------------------------------------------------------------------------------

def test_the_untouched_run_local_copy_stays_authentic(tmp_path) -> None:
    """Authentic: it passes, or (once the gate's sources move on after the recording) fails on that alone."""
    assert_authentic(reindexed(copied(tmp_path, "local/run-local")), SOURCES_MOVED_ON)


def test_a_warning_line_train_py_prints_is_a_line_the_run_could_write(tmp_path, monkeypatch) -> None:
    folder = copied(tmp_path, "local/run-local")
    appending(f"{REPRISE}/logs/reprise.log", "train.py: warning: UserWarning: resumed (reprise_core.py:170)\n",
              before=True)(folder)
    hide_torch(monkeypatch)
    assert_authentic(reindexed(folder, allow_without_torch=True), SOURCES_MOVED_ON)


@pytest.mark.parametrize("relative", ["local/run-local", "local/training-run"])
def test_without_torch_an_untouched_copy_is_authentic_but_no_pass_unless_accepted(tmp_path, monkeypatch,
                                                                                  relative: str) -> None:
    folder = copied(tmp_path, relative)
    hide_torch(monkeypatch)
    refused = reindexed(folder)
    assert_authentic(refused, WITHOUT_TORCH, SOURCES_MOVED_ON)
    assert refused.outcome == "fail" and refused.taken_as_recorded
    assert any(WITHOUT_TORCH in reason for reason in refused.verdict["reasons"])
    accepted = reindexed(folder, allow_without_torch=True)
    assert_authentic(accepted, SOURCES_MOVED_ON)
    assert accepted.taken_as_recorded == refused.taken_as_recorded
    assert not any(WITHOUT_TORCH in reason for reason in accepted.verdict["reasons"])

