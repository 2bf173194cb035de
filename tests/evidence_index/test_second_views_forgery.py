"""Every fact a verdict depends on has a second view: committed evidence and a real gate result made now, edited
ONE fact at a time, indexed (`build_evidence_index.py local`, or `build` against the fake GitHub) and verified.
None passes; the untouched controls do. The rules are rules.machine_arch, rules.fs_magic and rules.times."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from rules.registry import judge

from tests.conftest import ROOT
from tests.evidence_index.checkouts import checkout_of
from tests.evidence_index.fake_github import job_times, runner_log
from tests.evidence_index.test_evidence_index_forgery import build_run, real_result  # noqa: F401 - the fixture
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture

EXT4 = ROOT / "evidence" / "local" / "filesystems" / "platform-runtime-cpu-ext4-root.json"


def committed() -> dict:
    return json.loads(EXT4.read_text(encoding="utf-8"))


def made_by() -> Path:
    """A checkout of the commit whose gate made the committed result (its source.git.head): the result is
    compared with those sources, so only the edit can make it fail."""
    return checkout_of(committed()["source"]["git"]["head"])


def _refused(tmp_path, document: dict, *named: str) -> list[str]:
    root = made_by() if document["source"]["git"]["head"] == committed()["source"]["git"]["head"] else ROOT
    verified, report = index_and_verify(tmp_path, document, root)
    assert verified.returncode == 3, verified.stdout + verified.stderr
    text = "\n".join(report["problems"])
    for name in named:
        assert name in text, text
    return report["problems"]


def test_the_untouched_real_result_passes(tmp_path, real):  # noqa: F811
    verified, report = index_and_verify(tmp_path, real)
    assert verified.returncode == 0, report["problems"]


def test_the_untouched_committed_result_passes_against_the_sources_that_made_it(tmp_path):
    verdict = judge(committed())
    assert verdict.ok and verdict.forged == [], verdict.reasons
    verified, report = index_and_verify(tmp_path, committed(), made_by())
    assert verified.returncode == 0, report["problems"]


@pytest.mark.parametrize("machine", ["arm64", "aarch64", "ppc64le"])
def test_the_committed_ext4_result_edited_to_another_machine_is_not_authentic(tmp_path, machine):
    """The measured false pass: evidence recorded before the headers existed still holds its wheel tags."""
    document = committed()
    document["platform"]["machine"] = machine
    _refused(tmp_path, document, f"platform.machine is {machine!r}", "device.torch_build.wheel_tags shows x86_64")


def test_a_real_result_edited_to_another_machine_is_refused_by_each_binary_header(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    document["platform"]["machine"] = "aarch64"
    _refused(tmp_path / "one", document, "platform.binaries.interpreter shows x86_64",
             "platform.binaries.torch_c shows x86_64", "device.torch_build.wheel_tags shows x86_64")
    document["device"]["torch_build"]["wheel_tags"] = []  # the headers alone suffice
    _refused(tmp_path / "headers", document, "platform.binaries.interpreter shows x86_64")


def test_a_real_result_edited_to_another_file_system_type_is_refused_by_its_statfs_magic(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    assert document["filesystem"]["statfs_f_type"] == 0xEF53 and document["filesystem"]["type"] == "ext4"
    document["filesystem"]["type"] = "xfs"  # its options (rw,relatime,discard,...) say nothing of xfs
    _refused(tmp_path, document, "filesystem.type is 'xfs', but the kernel's statfs f_type is 0xef53")


def test_a_real_result_edited_to_another_magic_is_refused(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    document["filesystem"]["statfs_f_type"] = 0x58465342
    _refused(tmp_path, document, "filesystem.type is 'ext4', but the kernel's statfs f_type is 0x58465342, xfs's")


@pytest.mark.parametrize("path", ["platform.binaries", "filesystem.statfs_f_type", "finished_at"])
def test_a_real_result_without_a_second_view_its_gate_records_is_refused(tmp_path, real, path):  # noqa: F811
    document = copy.deepcopy(real)
    *parents, last = path.split(".")
    holder = document
    for key in parents:
        holder = holder[key]
    del holder[last]
    _refused(tmp_path, document, f"{path if path != 'platform.binaries' else 'platform.binaries.interpreter'} is "
                                 "missing")


def test_a_legit_box_of_an_unknown_file_system_passes_and_its_index_says_what_is_unconfirmed(tmp_path, real):  # noqa: F811
    """A real result as a box on a file system the table does not know would record it (type and magic both
    new: two facts, as that box's kernel would give them): authentic and passing, listed as unconfirmed."""
    document = copy.deepcopy(real)
    document["filesystem"].update(type="lustre", statfs_f_type=0x0BD00BD0)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 0, report["problems"]
    index = json.loads((tmp_path / "index.json").read_text())
    records = index["predicate"]["results"]
    assert any("taken as recorded" in line for r in records for line in r.get("unconfirmed", [])), records


def test_a_real_result_whose_start_was_moved_is_refused_by_its_finished_at(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    document["started_at"] = "2026-01-01T00:00:00+00:00"
    _refused(tmp_path, document, "started_at is '2026-01-01T00:00:00+00:00' and finished_at", "but duration_s is")


def test_a_committed_result_that_started_after_its_index_was_built_is_not_authentic(tmp_path):
    document = committed()
    document["started_at"] = "2036-12-01T15:09:00+00:00"
    _refused(tmp_path, document, "started_at is '2036-12-01T15:09:00+00:00'", "after the index's built_at")


def test_a_start_that_is_not_a_time_is_refused(tmp_path):
    document = committed()
    document["started_at"] = "yesterday"
    _refused(tmp_path, document, "started_at is 'yesterday': not a time with its zone")


def _a_year_back(result: bytes) -> bytes:
    """The result's own clock moved whole: started_at and finished_at a year earlier (two fields, so that only
    GitHub's view is left to refuse it)."""
    document = json.loads(result)
    for key in ("started_at", "finished_at"):
        document[key] = str(int(document[key][:4]) - 1) + document[key][4:]
    return json.dumps(document, indent=2).encode()


def test_online_the_github_job_window_holds_the_run(tmp_path, real_result):  # noqa: F811
    """The job that uploaded the result ran when GitHub says it did (fake_github.job_times of the real bytes):
    the result's clock moved a year back is refused by the job's started_at; the untouched result passes."""
    files = {"platform-runtime-linux.json": real_result}
    control = build_run(tmp_path / "control", "linux", files, runner_log("linux"))
    assert control.verify().returncode == 0, control.verify().stdout
    moved = build_run(tmp_path / "moved", "linux", {"platform-runtime-linux.json": _a_year_back(real_result)},
                      runner_log("linux"), window=job_times(real_result))
    done = moved.verify()
    assert done.returncode == 3, done.stdout
    assert "before the job's started_at (GitHub)" in done.stdout, done.stdout
