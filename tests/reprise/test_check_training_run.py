"""scripts/check_training_run.py DIR: the training-run contract, one test per promise and per way to break it."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import validate
from tests.reprise.reprise_support import ROOT, copy_run, protocol_run, run_script, tree_bytes, write_sha256

CHECKER = ROOT / "scripts" / "check_training_run.py"


@pytest.fixture(scope="module")
def good_folder() -> Path:
    """A folder train.py wrote (the protocol's continuous run): the contract's reference."""
    return protocol_run().output / "continu"


@pytest.fixture
def run_dir(good_folder, tmp_path) -> Path:
    return copy_run(good_folder, tmp_path / "run")


def check(folder: Path, tmp_path: Path):
    output = tmp_path / "check.json"
    ran = run_script(CHECKER, str(folder), "--output", str(output), cwd=tmp_path)
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if result is not None:
        validate(result, "training-run-check.schema.json")
    return ran, result


def assert_violation(ran, result, code: str, where: str) -> None:
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert result["ok"] is False
    assert any(p["code"] == code and p["path"] == where for p in result["problems"]), result["problems"]
    assert "VIOLATES" in ran.stdout and "Traceback" not in ran.stderr


def test_a_folder_written_by_train_py_satisfies_the_contract(run_dir, tmp_path):
    ran, result = check(run_dir, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert result["ok"] is True and result["problems"] == []
    assert result["checks"]["checkpoints"]["files"][0]["weights_only_load"] is True
    assert result["checks"]["metrics"]["lines"] == 11  # 10 steps and the end record
    assert result["run_dir"] == "run"  # the folder's name, never its full path


@pytest.mark.parametrize("missing", ["config.json", "metrics.jsonl", "logs/train.log", "checkpoint.pt.sha256"])
def test_a_missing_file_is_named(run_dir, tmp_path, missing):
    (run_dir / missing).unlink()
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "missing", missing)
    assert f"{missing} is missing" in ran.stdout


def test_a_folder_without_checkpoint_violates_the_contract(run_dir, tmp_path):
    (run_dir / "checkpoint.pt").unlink()
    (run_dir / "checkpoint.pt.sha256").unlink()
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "missing", "*.pt")


def test_nan_in_metrics_is_refused(run_dir, tmp_path):
    with open(run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"step": 11, "loss": NaN}\n')
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "non_finite", "metrics.jsonl:12")


def test_an_unparsable_metrics_line_is_refused(run_dir, tmp_path):
    with open(run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"step": 11, "loss": 0.1\n')
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "unparsable", "metrics.jsonl:12")


def test_infinity_in_config_is_refused(run_dir, tmp_path):
    config = json.loads((run_dir / "config.json").read_text())
    text = json.dumps({**config, "lr": float("inf")})
    (run_dir / "config.json").write_text(text)
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "non_finite", "config.json")


def test_a_checksum_mismatch_is_refused_and_the_checkpoint_not_loaded(run_dir, tmp_path):
    checkpoint = run_dir / "checkpoint.pt"
    data = bytearray(checkpoint.read_bytes())
    data[100] ^= 0xFF
    checkpoint.write_bytes(bytes(data))
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "checksum_mismatch", "checkpoint.pt")
    assert result["checks"]["checkpoints"]["files"][0]["weights_only_load"] is False


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('payload ran')",))


def test_a_checkpoint_that_is_not_weights_only_loadable_is_refused_and_never_runs(run_dir, tmp_path):
    marker = tmp_path / "marker"
    data = pickle.dumps({"model": Payload(marker)}, protocol=2)
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(Payload(proof), protocol=2))  # noqa: S301 - proves the payload is live
    assert proof.exists()
    checkpoint = run_dir / "checkpoint.pt"
    checkpoint.write_bytes(data)
    write_sha256(checkpoint)
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, "not_weights_only_loadable", "checkpoint.pt")
    assert not marker.exists(), "the checker ran the payload"


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def edit_metrics(folder: Path, change) -> None:
    lines = [json.loads(line) for line in (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    change(lines)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _tensor_nudged(summary: dict) -> None:
    summary["state"]["model.0.bias"]["values"][0] += 1e-6  # the summary no longer describes its checkpoint


@pytest.mark.parametrize("edit, code, where, words", [
    (lambda f: edit_metrics(f, lambda m: m[0].update(loss="nan")), "non_finite", "metrics.jsonl:1",
     "loss is 'nan': the loss was not finite, the run failed"),
    (lambda f: edit_metrics(f, lambda m: m[0].update(loss="0.5")), "not_a_number", "metrics.jsonl:1",
     "loss is '0.5', not a number"),
    (lambda f: edit_metrics(f, lambda m: m[0].update(loss=1e300)), "disagrees", "metrics.jsonl:1",
     "summary.json history.losses holds"),
    (lambda f: edit_metrics(f, lambda m: m.pop(3)), "steps_mismatch", "metrics.jsonl:4",
     "step 5 follows step 3"),
    (lambda f: edit_json(f / "config.json", lambda d: d.update(steps=500)), "steps_mismatch", "config.json",
     "config.json steps is 500, metrics.jsonl holds 10 step record(s)"),
    (lambda f: edit_json(f / "config.json", lambda d: d.pop("steps")), "missing", "config.json",
     "config.json does not record steps"),
    (lambda f: edit_json(f / "summary.json", lambda d: d.update(steps_done=1)), "steps_mismatch", "summary.json",
     "summary.json steps_done is 1, the last step in metrics.jsonl is 10"),
    (lambda f: edit_json(f / "summary.json", lambda d: d["history"].update(losses=[5.0] * 10)), "disagrees",
     "metrics.jsonl:1", "summary.json history.losses holds 5.0 for step 1"),
    (lambda f: edit_json(f / "summary.json", lambda d: d.update(final_mse_eval=99.0)), "disagrees", "summary.json",
     "summary.json final_mse_eval is 99.0"),
    (lambda f: edit_json(f / "config.json", lambda d: d.update(device="cuda")), "disagrees", "config.json",
     "config.json device is 'cuda', the run ran with device 'cpu'"),
    (lambda f: edit_json(f / "summary.json", _tensor_nudged), "checkpoint_disagrees", "checkpoint.pt",
     "state: model.0.bias differ from the checkpoint's tensors"),
    (lambda f: (f / "summary.json").unlink(), "missing", "summary.json", "summary.json is missing"),
], ids=["loss-nan-text", "loss-text", "loss-1e300", "step-line-dropped", "config-steps", "config-steps-deleted",
        "summary-steps-done", "summary-losses", "summary-final-mse", "config-device", "summary-state",
        "summary-deleted"])
def test_files_that_tell_two_stories_violate_the_contract(run_dir, tmp_path, edit, code, where, words):
    """Each file well-formed on its own, one fact changed in one of them: the check compares config.json,
    metrics.jsonl, summary.json and the loaded checkpoint, and names the file and the field."""
    edit(run_dir)
    ran, result = check(run_dir, tmp_path)
    assert_violation(ran, result, code, where)
    assert words in ran.stdout, ran.stdout


def test_every_problem_is_listed_not_only_the_first(run_dir, tmp_path):
    (run_dir / "config.json").unlink()
    (run_dir / "logs" / "train.log").write_text("")
    (run_dir / "checkpoint.pt.sha256").write_text("0" * 64 + "  checkpoint.pt\n")
    ran, result = check(run_dir, tmp_path)
    assert ran.returncode == 1
    assert {p["code"] for p in result["problems"]} == {"missing", "empty", "checksum_mismatch"}


def test_a_bad_invocation_exits_2_and_writes_nothing(tmp_path):
    output = tmp_path / "check.json"
    ran = run_script(CHECKER, str(tmp_path / "absent"), "--output", str(output), cwd=tmp_path)
    assert ran.returncode == 2 and "is not a folder" in ran.stderr and "Traceback" not in ran.stderr
    assert not output.exists()


def test_checking_changes_nothing_in_the_run_folder(run_dir, tmp_path):
    before = tree_bytes(run_dir)
    check(run_dir, tmp_path)
    assert tree_bytes(run_dir) == before


def test_file_level_checks_do_not_start_torch(run_dir):
    (run_dir / "checkpoint.pt.sha256").write_text("0" * 64 + "  checkpoint.pt\n")
    probe = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
             "import training_run_contract as c; r = c.check_run_dir(Path(sys.argv[2])); "
             "sys.exit(0 if not r['ok'] and 'torch' not in sys.modules else 1)")
    ran = subprocess.run([sys.executable, "-B", "-c", probe, str(ROOT / "scripts" / "reprise"), str(run_dir)],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
