"""Reading runner job logs: the setup groups, annotations the runner wrote, and nothing else."""

from __future__ import annotations

import random

import pytest
from evidence_index.logparse import LogScanner, scan_bytes

from tests.evidence_index.fake_github import runner_log


@pytest.mark.parametrize("platform, image, version, os_text", [
    ("linux", "ubuntu-24.04", "20260824.1.0", "Ubuntu 24.04.3 LTS"),
    ("windows", "win25-vs2026", "20260824.214.3", "Microsoft Windows Server 2025 10.0.26100 Datacenter"),
    ("mps", "macos15", "20260727.0256.1", "macOS 15.6 24G84"),
])
def test_the_runner_image_name_version_and_os_are_read_from_the_setup_lines(platform, image, version, os_text):
    runner = scan_bytes(runner_log(platform))["runner"]
    assert (runner["image"], runner["image_version"], runner["os"]) == (image, version, os_text)
    assert runner["runner_version"] == "2.328.0"


def test_the_provisioner_version_is_not_taken_for_the_image_version():
    runner = scan_bytes(runner_log("linux"))["runner"]
    assert runner["image_version"] != "20260811.377"


def test_a_self_hosted_runner_has_no_image_and_no_host_name_is_recorded():
    result = scan_bytes(runner_log("cuda"))
    assert result["runner"]["image"] is None and "gpu-box-01" not in repr(result)


def test_a_clean_log_has_no_errors_even_when_a_command_echoes_the_error_marker():
    result = scan_bytes(runner_log("linux", echo_error_text=True))
    assert result["error_count"] == 0 and result["nonzero_exit_count"] == 0


def test_error_annotations_and_non_zero_exits_are_found():
    result = scan_bytes(runner_log("linux", errors=("disk full",), exit_code=2))
    assert result["error_lines"] == ["##[error]disk full", "##[error]Process completed with exit code 2."]
    assert result["nonzero_exits"] == [{"code": 2, "line": "##[error]Process completed with exit code 2."}]


def test_exit_code_zero_is_not_a_failure():
    log = b"2026-08-24T10:00:00.0000000Z Process completed with exit code 0.\n"
    assert scan_bytes(log)["nonzero_exit_count"] == 0
    log = b"2026-08-24T10:00:00.0000000Z Process completed with exit code 137.\n"
    assert scan_bytes(log)["nonzero_exits"][0]["code"] == 137


def test_crlf_logs_and_a_last_line_without_newline_are_read():
    log = runner_log("windows", exit_code=1).replace(b"\n", b"\r\n").rstrip(b"\r\n")
    result = scan_bytes(log)
    assert result["nonzero_exits"][0]["code"] == 1 and result["runner"]["image"] == "win25-vs2026"
    assert not result["error_lines"][0].endswith("\r")


def test_chunk_boundaries_do_not_change_the_result():
    log = runner_log("mps", errors=("a", "b"), exit_code=1, filler_lines=2000)
    whole = scan_bytes(log)
    rng = random.Random(7)
    for _ in range(5):
        scanner = LogScanner()
        position = 0
        while position < len(log):
            step = rng.choice([1, 3, 17, 4096, 65536])
            scanner.update(log[position:position + step])
            position += step
        assert scanner.result() == whole


def test_counts_go_on_past_the_lines_kept():
    log = b"".join(b"2026-08-24T10:00:00.0000000Z ##[error]boom %d\n" % n for n in range(500))
    result = scan_bytes(log)
    assert result["error_count"] == 500 and len(result["error_lines"]) == 50


def test_a_giant_line_does_not_grow_memory():
    scanner = LogScanner()
    for _ in range(64):
        scanner.update(b"y" * 1_000_000)
    assert len(scanner._carry) <= 4096
