"""The test runner counts and prints every skip with its reason, and --fail-on-skip turns one into a failure."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def run_all(tmp_path, *args: str) -> subprocess.CompletedProcess:
    suite = tmp_path / "test_sample.py"
    suite.write_text("import pytest\n\ndef test_runs():\n    pass\n\n"
                     "@pytest.mark.skip(reason='needs a thing this host lacks')\ndef test_skipped():\n    pass\n")
    return subprocess.run([sys.executable, str(ROOT / "tools" / "run_tests.py"), "--no-lint", *args, str(suite), "-q",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)


def test_a_skip_is_counted_and_printed_with_its_reason(tmp_path):
    completed = run_all(tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "== skipped: 1 test(s)" in completed.stdout
    assert "test_skipped: needs a thing this host lacks" in completed.stdout


def test_fail_on_skip_fails_a_run_with_a_skip(tmp_path):
    completed = run_all(tmp_path, "--fail-on-skip")
    assert completed.returncode == 1 and "every selected test had to run" in completed.stdout
