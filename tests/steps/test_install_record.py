"""The read-back after every install (scripts/steps/record_check.py) on real installed torch files with
torch's own RECORD rows: a flipped byte is found and the package named, in a file read in blocks or whole,
with one thread or several.

The files are copies (never links) of the project venv's torch, so a flip cannot reach that venv.
"""

from __future__ import annotations

import csv
import importlib.metadata
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import record_check  # noqa: E402

# One file above record_check.WHOLE (read in blocks), two read whole.
LARGE = "torch/bin/protoc"
SMALL = ("torch/version.py", "torch/__init__.py")


@pytest.fixture
def torch_site(tmp_path) -> Path:
    dist = importlib.metadata.distribution("torch")
    source = Path(dist.locate_file(""))
    record = next(f for f in dist.files if str(f).endswith(".dist-info/RECORD"))
    rows = {row[0]: row for row in csv.reader(dist.read_text("RECORD").splitlines()) if row}
    site = tmp_path / "site-packages"
    kept = []
    for name in (LARGE, *SMALL):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, site / name)
        kept.append(rows[name])
    assert (site / LARGE).stat().st_size > record_check.WHOLE
    (site / str(record)).parent.mkdir(parents=True)
    with open(site / str(record), "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(kept)
    return site


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x01]))


@pytest.mark.parametrize("workers", [1, 4])
def test_real_torch_files_match_their_record(torch_site, workers):
    assert record_check.problems(torch_site, workers=workers) == []


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("name", [LARGE, SMALL[0]])
def test_a_flipped_byte_in_an_installed_torch_file_is_found_and_torch_named(torch_site, name, workers):
    path = torch_site / name
    flip(path, path.stat().st_size // 2)  # the middle: past the first block of a large file
    assert record_check.problems(torch_site, workers=workers) == [f"torch: {name} differs from its RECORD hash"]


def test_a_flipped_last_byte_of_a_file_read_in_blocks_is_found(torch_site):
    path = torch_site / LARGE
    flip(path, path.stat().st_size - 1)
    assert record_check.problems(torch_site) == [f"torch: {LARGE} differs from its RECORD hash"]


def test_a_truncated_or_missing_torch_file_is_named_with_what_is_wrong(torch_site):
    path = torch_site / LARGE
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size - 1)
    assert record_check.problems(torch_site) == [f"torch: {LARGE} has {size - 1} bytes, RECORD says {size}"]
    path.unlink()
    assert record_check.problems(torch_site) == [f"torch: {LARGE} cannot be read (No such file or directory)"]


def test_each_package_is_named_once_by_its_first_bad_file_in_record_order(torch_site):
    for name in SMALL:
        flip(torch_site / name, 0)
    flip(torch_site / LARGE, 0)  # read first (largest first), listed first in RECORD: it is the one named
    other = torch_site / "kpr_other-1.0.dist-info"
    other.mkdir()
    (torch_site / "kpr_other.py").write_bytes(b"changed\n")
    (other / "RECORD").write_text("kpr_other.py,sha256=" + "A" * 43 + ",8\n")
    assert record_check.problems(torch_site, workers=3) == [
        "kpr-other: kpr_other.py differs from its RECORD hash", f"torch: {LARGE} differs from its RECORD hash"]
