"""Facts that span files, forged in copies of the committed evidence one fact at a time, then re-indexed
(`build_evidence_index.py local`) and verified: each is refused as not authentic (exit 3) naming the field,
and the untouched copy stays authentic. (evidence/local ran older sources than this checkout: each copy is
indexed against the checkout its gate result records, so the gate sources that moved on since are not what is
refused; a folder with no gate result, against this one, where its index fails on that alone: exit 1.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
EVIDENCE = ROOT / "evidence"


def made_by(folder: Path) -> Path:
    """The checkout that made the folder (the commit its gate result records), so that what is refused is the
    folder, not the gate sources that moved on since; a folder without a gate result: this checkout."""
    from tests.evidence_index.checkouts import checkout_of

    heads = [json.loads(path.read_text()).get("source", {}).get("git", {}).get("head")
             for path in sorted(folder.glob("platform-runtime-*.json"))]
    return checkout_of(heads[0]) if heads and heads[0] else ROOT


def rebuild_and_verify(folder: Path, *names: str, env: dict | None = None, made_at: str | None = None
                       ) -> tuple[int, dict]:
    """`made_at`: the commit that made the folder, where its gate result cannot say (the VM has no git)."""
    from tests.evidence_index.checkouts import checkout_of

    index = folder.parent / f"{folder.name}-index.json"
    results = [arg for name in names for arg in ("--result", name)]
    root = checkout_of(made_at) if made_at else made_by(folder)
    index_cli("local", "--results", str(folder), *results, "--output",
                    str(index), "--source-root", str(root), env=env)
    assert index.is_file()
    report = folder.parent / f"{folder.name}-report.json"
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--json", str(report), env=env)
    return verified.returncode, json.loads(report.read_text())


def copy(tmp_path: Path, relative: str) -> Path:
    folder = tmp_path / Path(relative).name
    shutil.copytree(EVIDENCE / relative, folder)
    (folder / "evidence-index.json").unlink(missing_ok=True)
    return folder


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n")


def replace_checkpoint(folder: Path, data: bytes) -> None:
    """Another checkpoint, with its .sha256 redone (the summary and the verification left as they were)."""
    (folder / "checkpoint.pt").write_bytes(data)
    digest = subprocess.run(["sha256sum", "checkpoint.pt"], cwd=folder, capture_output=True, text=True, check=True)
    (folder / "checkpoint.pt.sha256").write_text(digest.stdout)


def assert_refused(code: int, report: dict, *words: str) -> None:
    assert code == 3 and report["outcome"] == "not-authentic", report["problems"]
    for word in words:
        assert any(word in problem for problem in report["problems"]), (word, report["problems"])


def reprise(folder: Path) -> Path:
    return next(folder.glob("reprise-*"))


# --- the reprise verification and its summaries ----------------------------------------------------------

def test_the_untouched_run_local_copy_stays_authentic(tmp_path):
    code, report = rebuild_and_verify(copy(tmp_path, "local/run-local"))
    # Authentic: it passes, or (once the gate's sources move on after the recording) fails on that alone.
    assert (report["outcome"], code) in (("pass", 0), ("fail", 1)) and not report["problems"], report["problems"]
    assert all("source file(s) differ from this checkout" in r for r in report["verdict"]["reasons"])


def test_a_swapped_cut_checkpoint_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    cut = reprise(folder) / "coupure"
    replace_checkpoint(cut, (cut / "checkpoint.pt").read_bytes() + b"\0")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "coupure/summary.json.checkpoint.sha256 is",
                   "integrity.fingerprints.runs.coupure.checkpoint_sha256_matches_summary: recorded True")


def test_a_checkpoint_whose_sha256_file_disagrees_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    (reprise(folder) / "continu" / "checkpoint.pt.sha256").write_text("0" * 64 + "  checkpoint.pt\n")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "continu/checkpoint.pt.sha256 names 0000")


def test_a_weights_error_under_passed_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    edit_json(reprise(folder) / "verification.json",
              lambda d: d["positive_resume"]["checks"]["weights"].update(max_abs_error=0.5))
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "positive_resume.checks.weights.max_abs_error: recorded 0.5, the bytes say 0.0")


def test_negative_controls_that_did_not_diverge_are_not_authentic(tmp_path):
    """Every control folder replaced by the exact resume (which does not diverge); the verification still says
    each control diverged."""
    folder = copy(tmp_path, "local/run-local")
    base = reprise(folder)
    for control in ("reprise-incomplete", "controles/omit-python", "controles/omit-numpy", "controles/omit-torch"):
        for name in ("summary.json", "checkpoint.pt", "checkpoint.pt.sha256"):
            shutil.copyfile(base / "reprise" / name, base / control / name)
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "negative_controls.all_detected: recorded True, the bytes say False",
                   "negative_divergence_detected: recorded True, the bytes say False")


def test_a_resumed_checkpoint_swapped_for_a_diverged_one_is_not_authentic(tmp_path):
    """The resumed run's checkpoint replaced by the torch control's (it diverged), its .sha256 and the summary's
    checkpoint digest and size redone, the summary's state (equal to continu's) left: every digest agrees and
    the verification re-derives from the summaries, so only loading the checkpoint (weights_only) and comparing
    its tensors with the summary's state shows it."""
    import hashlib

    folder = copy(tmp_path, "local/run-local")
    resumed = reprise(folder) / "reprise"
    forged = (resumed.parent / "controles" / "omit-torch" / "checkpoint.pt").read_bytes()
    replace_checkpoint(resumed, forged)
    edit_json(resumed / "summary.json", lambda d: d["checkpoint"].update(
        sha256=hashlib.sha256(forged).hexdigest(), bytes=len(forged)))
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "reprise/summary.json: state: model.0.bias, model.0.weight",
                   "differ from the checkpoint's tensors", "reprise/checkpoint.pt",
                   "reprise/summary.json: history differs from the checkpoint's")


def _run_file(run: str, name: str, change):
    def edit(base: Path) -> None:
        path = base / run / name
        if name.endswith(".jsonl"):
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            change(lines)
            path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        else:
            edit_json(path, change)
    return edit


@pytest.mark.parametrize("edit, words", [
    (_run_file("reprise", "metrics.jsonl", lambda m: m[0].update(loss=9.9)),
     "reprise: metrics.jsonl:1: loss 9.9, summary.json history.losses holds"),
    (_run_file("reprise", "config.json", lambda d: d["resume"].update(checkpoint_sha256="0" * 64)),
     "reprise/config.json resume is {'checkpoint_sha256': '000000"),
    (_run_file("reprise", "config.json", lambda d: d.update(omit_rng_restore=["torch"])),
     "reprise/config.json omit_rng_restore is ['torch'], the verification expects []"),
    (_run_file("reprise", "config.json", lambda d: d.update(lr=0.5)),
     "reprise/config.json lr is 0.5, the verification expects 0.03"),
    (_run_file("controles/omit-numpy", "config.json", lambda d: d.update(omit_rng_restore=["python"])),
     "controles/omit-numpy/config.json omit_rng_restore is ['python'], the verification expects ['numpy']"),
    (_run_file("continu", "config.json", lambda d: d.update(steps=5)),
     "continu/config.json steps is 5, the verification expects 10"),
], ids=["metrics-loss", "resume-digest", "omit-torch", "lr", "control-omits-another", "continu-steps"])
def test_a_run_folder_whose_config_or_metrics_contradict_its_summary_is_not_authentic(tmp_path, edit, words):
    """The verification is re-derived from the summaries; each run folder's metrics.jsonl and config.json must
    say the same: the metrics lines the summary's losses, the config the role the verification gave that run
    (steps, coupure's checkpoint by SHA-256, the RNG restores it omits, lr)."""
    folder = copy(tmp_path, "local/run-local")
    edit(reprise(folder))
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "verification.json: ", words)


# --- the training-run check, re-run by the index ---------------------------------------------------------

def test_the_untouched_training_run_copy_stays_authentic(tmp_path):
    code, report = rebuild_and_verify(copy(tmp_path, "local/training-run"))
    assert report["outcome"] != "not-authentic", report["problems"]


def test_a_replaced_training_run_checkpoint_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/training-run")
    run = folder / "training-run"
    replace_checkpoint(run, (run / "checkpoint.pt").read_bytes() + b"\0")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "training-run-check.json re-run on training-run: check.checks.checkpoints.files")


def test_a_checkpoint_that_does_not_load_weights_only_is_not_authentic(tmp_path):
    """A pickle naming os.system in place of the checkpoint, its .sha256 and the check's SHA-256 redone, the
    check's `weights_only_load: true` left: the index repeats the load (torch.load(weights_only=True)) and
    refuses it, as check_training_run.py does on the same folder."""
    import hashlib
    import os
    import pickle

    folder = copy(tmp_path, "local/training-run")
    run = folder / "training-run"
    forged = pickle.dumps(os.system)  # not weights: the weights_only unpickler refuses its global
    replace_checkpoint(run, forged)

    def redo(document: dict) -> None:
        entry = document["checks"]["checkpoints"]["files"][0]
        entry.update(bytes=len(forged), sha256=hashlib.sha256(forged).hexdigest())
        assert entry["weights_only_load"] is True and document["ok"] is True
    edit_json(folder / "training-run-check.json", redo)
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "training-run-check.json re-run on training-run: check.checks.checkpoints.files",
                   "weights_only_load")
    rerun = subprocess.run([sys.executable, "-B", str(SCRIPTS / "check_training_run.py"), str(run)],
                           capture_output=True, text=True, timeout=120)
    assert rerun.returncode != 0 and "weights_only" in rerun.stdout + rerun.stderr


def _metrics(change):
    def edit(run: Path) -> None:
        lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        change(lines)
        (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return edit


def _json(name: str, change):
    return lambda run: edit_json(run / name, change)


@pytest.mark.parametrize("edit, words", [
    (_metrics(lambda m: m[0].update(loss=1e300)), "metrics.jsonl:1: loss 1e+300, summary.json history.losses holds"),
    (_metrics(lambda m: m[0].update(loss="nan")), "metrics.jsonl:1: loss is 'nan': the loss was not finite"),
    (_json("summary.json", lambda d: d.update(steps_done=1)), "summary.json steps_done is 1, the last step in"),
    (_json("summary.json", lambda d: d["history"].update(losses=[5.0] * 5)),
     "summary.json history.losses holds 5.0 for step 1"),
    (_json("summary.json", lambda d: d.update(final_mse_eval=99.0)), "summary.json final_mse_eval is 99.0"),
    (_json("config.json", lambda d: d.update(device="cuda")), "config.json device is 'cuda', the run ran with"),
    (_json("config.json", lambda d: d.update(steps=500)), "config.json steps is 500, metrics.jsonl holds 5 step"),
], ids=["loss-1e300", "loss-nan-text", "summary-steps-done", "summary-losses", "summary-final-mse", "config-cuda",
        "config-500-steps"])
def test_a_training_run_whose_files_disagree_under_an_ok_check_is_not_authentic(tmp_path, edit, words):
    """The committed training run, one file edited so that it tells another story than the others, its check
    (ok: true, no problem) left: the index re-runs the check, which compares config.json, metrics.jsonl,
    summary.json and the checkpoint, and refuses the recorded pass naming the file and the field."""
    folder = copy(tmp_path, "local/training-run")
    edit(folder / "training-run")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "training-run-check.json re-run on training-run: check.ok: recorded True", words)


def test_a_training_run_check_naming_a_folder_that_is_not_there_fails(tmp_path):
    folder = copy(tmp_path, "local/training-run")
    edit_json(folder / "training-run-check.json", lambda d: d.update(run_dir="elsewhere"))
    code, report = rebuild_and_verify(folder)
    assert code in (1, 3) and any("elsewhere is not unpacked beside it" in r for r in report["verdict"]["reasons"])


# --- the NFS harness record ------------------------------------------------------------------------------

HARNESS_FILES = ("nfs-harness.json", "platform-runtime-nfs.json")
# The commit the VM ran (its gate results name none: the guest has no git), as the host recorded the run.
NFS_COMMIT = json.loads((ROOT / "evidence" / "nfs" / "nfs-vm-run.json").read_text())["git"]["head"]


def nfs_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "nfs"
    folder.mkdir()
    for name in HARNESS_FILES:
        shutil.copyfile(EVIDENCE / "nfs" / name, folder / name)
    return folder


def test_the_untouched_nfs_copy_stays_authentic(tmp_path):
    code, report = rebuild_and_verify(nfs_copy(tmp_path), *HARNESS_FILES, made_at=NFS_COMMIT)
    assert report["outcome"] != "not-authentic", report["problems"]


@pytest.mark.parametrize("change, words", [
    (lambda d: d["export_side_delete"].update(absent_after=False),
     "export_side_delete.verified is recorded True, its facts say False"),
    (lambda d: d["export_side_delete"].update(nfs_leftovers=[".nfs000000000001"]),
     "export_side_delete.verified is recorded True, its facts say False"),
    (lambda d: d["export_side_delete"].update(workspace="platform-runtime-000000000000"),
     "export_side_delete.workspace is 'platform-runtime-000000000000', the gate's workspace_cleanup.workspace"),
    (lambda d: d["unmount"].update(still_mounted_as=["127.0.0.1:/", "nfs4"]),
     "unmount.unmounted is recorded True, its facts say False"),
    (lambda d: d["server"].update(nfsd_threads_after="4"), "server.stopped is recorded True, its facts say False"),
], ids=["export-still-holds-it", "silly-renames-left", "another-workspace", "still-mounted", "server-running"])
def test_a_forged_harness_record_is_not_authentic(tmp_path, change, words):
    folder = nfs_copy(tmp_path)
    edit_json(folder / "nfs-harness.json", change)
    code, report = rebuild_and_verify(folder, *HARNESS_FILES, made_at=NFS_COMMIT)
    assert_refused(code, report, words)


# --- an index built and verified by an interpreter without torch -----------------------------------------

NO_TORCH = """import importlib.util, sys
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a, **k: None if name.split(".")[0] == "torch" else _find(name, *a, **k)
sys.modules["torch"] = None  # import torch raises ImportError
"""


def without_torch(tmp_path: Path) -> dict:
    import os

    site = tmp_path / "no-torch"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_TORCH)
    return dict(os.environ, PYTHONPATH=str(site))


@pytest.mark.parametrize("relative", ["local/run-local", "local/training-run"])
def test_without_torch_the_untouched_copies_stay_authentic(tmp_path, relative):
    """No checkpoint is loaded (the summaries' account of them is taken as recorded): nothing is refused for it."""
    code, report = rebuild_and_verify(copy(tmp_path, relative), env=without_torch(tmp_path))
    assert report["outcome"] != "not-authentic" and not report["problems"], report["problems"]


def test_without_torch_the_rules_across_files_still_hold(tmp_path):
    """The file-level bindings need no torch: a metrics loss the summary never saw is refused all the same."""
    folder = copy(tmp_path, "local/run-local")
    _run_file("reprise", "metrics.jsonl", lambda m: m[0].update(loss=9.9))(reprise(folder))
    code, report = rebuild_and_verify(folder, env=without_torch(tmp_path))
    assert_refused(code, report, "reprise: metrics.jsonl:1: loss 9.9, summary.json history.losses holds")
