"""Strict parsing, one reader (core.strict_json) for every result, index and worker payload: duplicate keys,
NaN, Infinity, numbers out of range and a byte-order mark are refused with the position named; a result
holding them is not authentic (verify exit 3), an index holding them is unreadable (exit 2)."""

from __future__ import annotations

import copy
import json
import math

import pytest
from core.contract import judge_bytes, parse_strict
from core.files import encode_json
from core.strict_json import NotStrict
from platform_runtime.children import parse_last_json

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.forged_evidence import index_and_verify
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"


@pytest.mark.parametrize("data, why", [
    (b'{"ok": false,\n "ok": true}', "duplicate key 'ok' at line 2 column 2 (char 15)"),
    (b'{"a": {"x": 1, "x": 2}}', "duplicate key 'x' at line 1 column 16 (char 15)"),
    (b'{"loss": NaN}', "NaN is not a JSON number at line 1 column 10 (char 9)"),
    (b'{"loss": Infinity}', "Infinity is not a JSON number at line 1 column 10"),
    (b'{"loss": -Infinity}', "-Infinity is not a JSON number at line 1 column 10"),
    (b'{"loss": 1e999}', "the number 1e999 is out of range"),
    (b'{"bytes": 99999999999999999999}', "the integer 99999999999999999999 is out of range"),
    (b'\xef\xbb\xbf{"ok": true}', "starts with a UTF-8 byte-order mark (at byte 0)"),
    (b'{"ok": tr', "not JSON"),
    (b'{"ok": "\xff"}', "not UTF-8"),
])
def test_the_strict_reader_refuses_with_the_position(data, why):
    with pytest.raises(ValueError) as refused:
        parse_strict(data)
    assert why in str(refused.value)


def test_the_strict_reader_reads_what_the_project_writes():
    document = {"b": [1, 2.5, -3e-8, "NaN", None, True], "a": {"nested": {"x": 9007199254740993}}}
    assert parse_strict(encode_json(document)) == document
    assert parse_strict(b'{"a": {"ok": 1}, "ok": 2}') == {"a": {"ok": 1}, "ok": 2}  # one key per object


def test_the_project_writes_a_non_finite_number_as_text():
    assert parse_strict(encode_json({"losses": [1.0, math.nan, math.inf, -math.inf]})) == {
        "losses": [1.0, "nan", "inf", "-inf"]}


def test_a_refused_result_is_not_authentic_in_the_judge():
    judgement = judge_bytes(b'{"schema": "kernodeck.platform-runtime.result/v1", "ok": false, "ok": true}')
    assert judgement.ok is False and judgement.forged and "duplicate key 'ok'" in judgement.forged[0]
    truncated = judge_bytes(b'{"schema": "kernodeck.platform-runtime.result/v1", "ok": tr')
    assert truncated.ok is False and truncated.forged == []  # a truncated file fails; it is not a forgery


def test_the_gate_refuses_a_worker_payload_that_is_not_strict():
    assert parse_last_json(b'{"ok": true, "loss": NaN}\n') is None
    assert parse_last_json(b'{"ok": false, "ok": true}\n') is None
    assert parse_last_json(b'{"ok": true}\n') == {"ok": True}


def _failing_then_passing_keys(real_result: dict) -> bytes:
    """A real result made to fail, then `ok`, `exit_code` and `failures` repeated with passing values: a
    lenient reader keeps the last, the strict one refuses."""
    document = copy.deepcopy(real_result)
    document["checks"]["jsonl_append"].update(missing=7, ok=False, reason="7 record(s) lost")
    document.update(ok=False, exit_code=1, failures=["jsonl_append: 7 record(s) lost"])
    text = json.dumps(document, indent=2)
    return (text[:text.rstrip().rindex("}")] + ',\n  "ok": true,\n  "exit_code": 0,\n  "failures": []\n}\n').encode()


def test_a_failing_result_with_passing_duplicate_keys_is_not_authentic(tmp_path, real):  # noqa: F811
    data = _failing_then_passing_keys(real)
    assert json.loads(data)["ok"] is True  # what a lenient reader would have judged
    verified, report = index_and_verify(tmp_path, data)
    assert verified.returncode == 3, verified.stdout
    assert any("duplicate key 'ok' at line" in problem for problem in report["problems"]), report["problems"]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "1e999"])
def test_a_result_holding_a_non_number_is_not_authentic(tmp_path, real, token):  # noqa: F811
    text = json.dumps(real, indent=2).replace('"duration_s": ', f'"duration_s": {token}, "was": ', 1)
    verified, report = index_and_verify(tmp_path, text.encode())
    assert verified.returncode == 3, verified.stdout
    assert any("at line" in p and ("not a JSON number" in p or "out of range" in p) for p in report["problems"])


def test_an_index_with_a_duplicate_key_is_refused_by_verify(tmp_path, real):  # noqa: F811
    verified, _ = index_and_verify(tmp_path, real)
    assert verified.returncode == 0
    index = tmp_path / "index.json"
    text = index.read_text()
    index.write_text(text[:text.rstrip().rindex("}")] + ', "predicateType": "x"}\n')
    again = index_cli("verify", str(index), "--artifacts",
                            str(tmp_path / "results"), cwd=ROOT)
    assert again.returncode == 2 and "duplicate key 'predicateType'" in again.stderr + again.stdout


def test_not_strict_is_a_value_error():
    assert issubclass(NotStrict, ValueError)
