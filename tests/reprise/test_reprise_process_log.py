"""A process log (logs/<name>.log: a train.py process's stdout and stderr) holds only what the run wrote: one
rule, reprise_compare.log_problems, applied by verify_resume.py before it writes its report and by the evidence
index to the recorded bytes. A warning raised during a real run becomes one `train.py: warning: ` line and the
verification passes; a line printed past train.py fails it (ok false, exit 1), naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reprise.reprise_support import copy_code, module, run_script, verdict, verify

common = module("reprise_common")
rc = module("reprise_compare")

EXPECTED = ["train.py: 10 steps done, final MSE (eval) 0.1, wrote continu"]
WARNING = "train.py: warning: UserWarning: resumed twice (reprise_core.py:170)"


def log_problems(text: str, expected: list[str] | None = EXPECTED) -> list[str]:
    return rc.log_problems("continu", text, expected)


def test_a_log_of_train_py_lines_and_its_warnings_holds():
    assert log_problems(EXPECTED[0] + "\n") == []
    assert log_problems(f"{WARNING}\n{EXPECTED[0]}\n{WARNING}\n") == []
    assert log_problems(f"{WARNING}\n", expected=None) == []


@pytest.mark.parametrize("text, words", [
    (f"{EXPECTED[0]}\nUserWarning: resumed twice\n", "logs/continu.log line 2 is 'UserWarning: resumed twice'"),
    (f"[W1201 init.cpp:1] NNPACK\n{EXPECTED[0]}\n", "logs/continu.log line 1 is '[W1201 init.cpp:1] NNPACK'"),
    (f"{EXPECTED[0]}\n\n", "logs/continu.log line 2 is ''"),
    (f"{EXPECTED[0]}\r\n", "logs/continu.log line 1 is 'train.py: 10 steps done, final MSE (eval) 0.1, wrote "
                           "continu\\r'"),
    (f"{EXPECTED[0]}\ntrain.py: caf\u00e9\n", "logs/continu.log line 2 is 'train.py: caf\u00e9'"),
    (f"{EXPECTED[0]}\ntrain.py: \ufffd\n", "logs/continu.log line 2 is 'train.py: \ufffd'"),
    (EXPECTED[0], "logs/continu.log ends without a newline"),
    ("", "logs/continu.log train.py line 1 is '(no such line)'"),
    (f"{EXPECTED[0]}\ntrain.py: 12 steps done\n", "logs/continu.log train.py line 2 is 'train.py: 12 steps done'"),
    ("train.py: 12 steps done\n", "the runs it wrote make train.py print 'train.py: 10 steps done"),
], ids=["foreign-warning", "c-level-line", "empty-line", "carriage-return", "non-ascii", "invalid-utf8",
        "no-final-newline", "empty-log", "extra-line", "other-line"])
def test_each_line_the_run_did_not_write_is_refused_by_its_line(text, words):
    problems = log_problems(text)
    assert len(problems) == 1 and words in problems[0], problems


def test_a_foreign_line_of_unknown_expectation_is_still_refused():
    """Where the summaries the expected lines come from are refused already, the lines' form still holds."""
    assert "line 1 is 'Traceback" in log_problems("Traceback (most recent call last):\n", expected=None)[0]


def test_a_warning_line_is_one_escaped_printable_line():
    line = common.warning_line("UserWarning", "two\nlines \\ caf\u00e9\r\u2028", "x.py:3")
    assert line == "train.py: warning: UserWarning: two\\nlines \\\\ caf\\xe9\\r\\u2028 (x.py:3)"
    assert log_problems(f"{line}\n{EXPECTED[0]}\n") == []


def _run_with_warnings(tmp_path: Path):
    """verify_resume.py of a copy of the folder whose training raises a Python warning (a message over two
    lines), a torch warning and a log record, in every train.py process."""
    code = copy_code(tmp_path / "copy")
    core = code / "reprise_core.py"
    text = core.read_text(encoding="utf-8")
    body = '    """``steps`` extra steps, from scratch or from a validated checkpoint, as a fresh process would."""\n'
    assert body in text
    core.write_text(text.replace(body, body + (
        "    import logging, warnings\n"
        "    warnings.warn('a test warning\\nover two lines', UserWarning)\n"
        "    torch.nn.functional.softmax(torch.ones(2))  # torch's own: implicit dim\n"
        "    logging.getLogger('reprise.test').warning('a logged warning')\n")), encoding="utf-8")
    output = tmp_path / "runs"
    ran = run_script(code / "verify_resume.py", "--output", str(output), cwd=code)
    return ran, output


def test_a_warning_raised_during_a_real_run_is_a_train_py_line_and_the_verification_passes(tmp_path):
    ran, output = _run_with_warnings(tmp_path)
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    assert ran.returncode == 0 and verdict(ran)["all_checks_passed"], (report["errors"], ran.stdout, ran.stderr)
    assert report["ok"] and report["errors"] == []
    for log in sorted((output / "logs").glob("*.log")):
        lines = log.read_text(encoding="utf-8").splitlines()
        assert all(line.startswith("train.py: ") for line in lines), (log.name, lines)
        warnings = [line for line in lines if line.startswith("train.py: warning: ")]
        assert any(line.startswith("train.py: warning: UserWarning: a test warning\\nover two lines "
                                   "(reprise_core.py:") for line in warnings), (log.name, lines)
        assert any("softmax" in line for line in warnings), (log.name, lines)
        assert "train.py: warning: logging.WARNING: reprise.test: a logged warning" in warnings, (log.name, lines)


def test_a_line_printed_past_train_py_fails_the_verification(tmp_path):
    """Another library printing straight to stderr (here a sitecustomize every train.py process imports): the
    line is not the run's, so the verification's own record is refused, ok false, exit 1, naming it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.stderr.write('another library: hello\\n')\n",
                                           encoding="utf-8")
    output = tmp_path / "runs"
    ran = verify(output, pythonpath=site)
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    assert ran.returncode == 1 and report["exit_code"] == 1, (ran.stdout, ran.stderr)
    assert report["ok"] is False and report["all_checks_passed"] is False and not verdict(ran)["all_checks_passed"]
    assert any("logs/continu.log line 1 is 'another library: hello'" in error for error in report["errors"]), \
        report["errors"]
    assert report["positive"] and report["negative_divergence_detected"], "only the logs are refused"

