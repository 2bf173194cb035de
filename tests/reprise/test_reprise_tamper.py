"""Checkpoints and data tampered with from outside the project: each is refused by train.py with a clear
error and exit 2, nothing runs, nothing is written, and the tampered input is left as it was."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from tests.reprise.reprise_support import REPRISE, copy_code, copy_run, protocol_run, train, tree_bytes, write_sha256


@pytest.fixture(scope="module")
def cut_folder():
    return protocol_run().output / "coupure"


@pytest.fixture
def cut(cut_folder, tmp_path) -> Path:
    """A private copy of the protocol's interrupted run, to tamper with."""
    return copy_run(cut_folder, tmp_path / "coupure")


def resume(checkpoint: Path, output: Path, **kwargs):
    return train("--steps", "5", "--resume", str(checkpoint), "--output", str(output), **kwargs)


def assert_refused(ran, output: Path, *phrases: str) -> None:
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr
    for phrase in phrases:
        assert phrase in ran.stderr, ran.stderr
    assert not output.exists(), "a refused run must create nothing"


def test_a_flipped_byte_is_refused_before_loading(cut, tmp_path):
    checkpoint = cut / "checkpoint.pt"
    data = bytearray(checkpoint.read_bytes())
    data[len(data) // 2] ^= 0x01
    checkpoint.write_bytes(bytes(data))
    before = tree_bytes(cut)
    ran = resume(checkpoint, tmp_path / "out")
    assert_refused(ran, tmp_path / "out", "does not match", "checkpoint.pt.sha256", "refused before loading")
    assert tree_bytes(cut) == before


def test_a_missing_fingerprint_is_refused(cut, tmp_path):
    (cut / "checkpoint.pt.sha256").unlink()
    assert_refused(resume(cut / "checkpoint.pt", tmp_path / "out"), tmp_path / "out", "checkpoint.pt.sha256 is missing")


def test_an_oversized_checkpoint_is_refused_even_with_a_matching_fingerprint(cut, tmp_path):
    checkpoint = cut / "checkpoint.pt"
    checkpoint.write_bytes(checkpoint.read_bytes() + b"\0" * (2 << 20))
    write_sha256(checkpoint)
    assert_refused(resume(checkpoint, tmp_path / "out"), tmp_path / "out", "above the bound")


class Payload:
    """Unpickling this runs code: it writes the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('payload ran')",))


def payload_checkpoint(kind: str, marker: Path) -> bytes:
    if kind == "raw pickle":
        return pickle.dumps({"model": Payload(marker)}, protocol=2)
    buffer = io.BytesIO()
    torch.save({"model": Payload(marker)}, buffer)  # a real torch zip checkpoint carrying the payload
    return buffer.getvalue()


def unpickle_unsafely(data: bytes) -> None:
    """What an unsafe loader would do: proves the payload is live (it runs here, in the test)."""
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    pickle.loads(data)  # noqa: S301 - deliberately unsafe, on the test's own payload


@pytest.mark.parametrize("kind", ["raw pickle", "torch zip"])
def test_a_code_running_pickle_with_an_updated_fingerprint_is_refused_and_never_runs(cut, tmp_path, kind):
    proof = tmp_path / "proof-marker"
    unpickle_unsafely(payload_checkpoint(kind, proof))
    assert proof.read_text() == "payload ran", "the payload must be live for this test to mean anything"

    marker = tmp_path / "marker"
    checkpoint = cut / "checkpoint.pt"
    checkpoint.write_bytes(payload_checkpoint(kind, marker))
    write_sha256(checkpoint)
    ran = resume(checkpoint, tmp_path / "out")
    assert_refused(ran, tmp_path / "out", "weights_only=True")
    assert not marker.exists(), "the payload ran inside train.py"


def rewrite(cut: Path, mutate) -> Path:
    checkpoint = cut / "checkpoint.pt"
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    mutate(state)
    torch.save(state, checkpoint)
    write_sha256(checkpoint)
    return checkpoint


@pytest.mark.parametrize(("mutation", "message"), [
    (lambda s: s.pop("optimizer"), "missing key 'optimizer'"),
    (lambda s: s["rng"].pop("numpy"), "missing key 'rng.numpy'"),
    (lambda s: s.update(version=2), "version 2"),
    (lambda s: s.update(code_sha256="0" * 64), "different code"),
], ids=["no-optimizer", "no-numpy-rng", "other-version", "other-code"])
def test_an_incomplete_or_foreign_state_is_refused_not_reinitialised(cut, tmp_path, mutation, message):
    checkpoint = rewrite(cut, mutation)
    assert_refused(resume(checkpoint, tmp_path / "out"), tmp_path / "out", message)


def test_a_changed_data_csv_value_is_refused(tmp_path):
    code = copy_code(tmp_path / "copy")
    lines = (code / "data.csv").read_text().splitlines()
    x1, x2, target = lines[3].split(",")
    lines[3] = f"{x1},{x2},{float(target) + 0.001!r}"
    (code / "data.csv").write_text("\n".join(lines) + "\n")
    ran = train("--steps", "5", "--output", str(tmp_path / "out"), code=code, cwd=code)
    assert_refused(ran, tmp_path / "out", "data.csv line 4", "target")


def test_a_checkpoint_for_another_data_csv_is_refused(cut, tmp_path):
    """Same numbers written differently: data.csv's SHA-256 no longer matches the checkpoint's."""
    code = copy_code(tmp_path / "copy")
    text = (code / "data.csv").read_text()
    (code / "data.csv").write_text(text.replace("-1.0,-0.9,", "-1.00,-0.9,", 1))
    ran = train("--steps", "5", "--resume", str(cut / "checkpoint.pt"), "--output", str(tmp_path / "out"),
                code=code, cwd=code)
    assert_refused(ran, tmp_path / "out", "different data.csv")


def test_train_refuses_an_output_folder_that_exists(cut, tmp_path):
    before = tree_bytes(cut)
    ran = resume(cut / "checkpoint.pt", cut)
    assert ran.returncode == 2 and "already exists" in ran.stderr and "Traceback" not in ran.stderr
    assert tree_bytes(cut) == before


def test_integrity_refusals_happen_before_torch_starts(cut, tmp_path):
    (cut / "checkpoint.pt").write_bytes(b"not a checkpoint")
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import train; "
             "code = train.main(['--steps', '5', '--resume', sys.argv[2], '--output', sys.argv[3]]); "
             "sys.exit(10 + code if 'torch' not in sys.modules else 99)")
    ran = subprocess.run([sys.executable, "-B", "-c", probe, str(REPRISE), str(cut / "checkpoint.pt"),
                          str(tmp_path / "out")], capture_output=True, text=True)
    assert ran.returncode == 12, ran.stderr  # refused (2), torch never imported
    assert not (tmp_path / "out").exists()
