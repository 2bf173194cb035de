"""The reprise folder reads its JSON strictly, as every reader of a judged document does (issue 18): a duplicate
key (the last value would win), NaN, Infinity or a number out of range in a run's summary.json, config.json or
a metrics.jsonl line is refused with its position named. The folder runs copied alone, so the strict reader
is a copy of core's, kept identical here."""

from __future__ import annotations

import shutil

import pytest

from tests.reprise.reprise_support import REPRISE, ROOT, _load

contract = _load("training_run_contract")
common = _load("reprise_common")
compare = _load("reprise_compare")
RUN = next((ROOT / "evidence" / "local" / "run-local").glob("reprise-*")) / "continu"  # a real run's folder


def test_the_folder_s_strict_reader_is_core_s_byte_for_byte():
    assert (REPRISE / "strict_json.py").read_bytes() == (ROOT / "scripts" / "common" / "strict_json.py").read_bytes()


def test_a_real_summary_loads(tmp_path):
    assert compare.load_run(shutil.copytree(RUN, tmp_path / "continu"), "continu").summary["steps_done"] > 0


@pytest.mark.parametrize("edit, words", [
    (lambda text: text.rstrip().removesuffix("}") + ', "steps_done": 999}\n', "duplicate key 'steps_done' at line"),
    (lambda text: text.replace('"final_mse_eval": ', '"final_mse_eval": NaN, "was": ', 1), "NaN is not a JSON number"),
    (lambda text: text.replace('"final_mse_eval": ', '"final_mse_eval": 1e999, "was": ', 1), "out of range"),
])
def test_a_summary_that_is_not_strict_json_is_refused(tmp_path, edit, words):
    folder = shutil.copytree(RUN, tmp_path / "continu")
    summary = folder / common.SUMMARY_NAME
    summary.write_text(edit(summary.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(common.RepriseError) as refused:
        compare.load_run(folder, "continu")
    assert "not strict JSON" in str(refused.value) and words in str(refused.value)


@pytest.mark.parametrize("line, code, words", [
    ('{"step": 11, "loss": 0.5, "loss": 0.1}', "duplicate_key", "duplicate key 'loss' at line 1 column 27"),
    ('{"step": 11, "loss": Infinity}', "non_finite", "Infinity is not a JSON number"),
    ('{"step": 123456789012345678901, "loss": 0.1}', "out_of_range", "out of range"),
])
def test_a_metrics_line_that_is_not_strict_json_is_refused(tmp_path, line, code, words):
    folder = shutil.copytree(RUN, tmp_path / "continu")
    metrics = folder / contract.METRICS_FILE
    metrics.write_text(metrics.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    problems: list[dict] = []
    assert contract.check_metrics(folder, problems)["ok"] is False
    lines = len(metrics.read_text(encoding="utf-8").splitlines())
    assert any(p["code"] == code and p["path"] == f"{contract.METRICS_FILE}:{lines}" and words in p["message"]
               for p in problems), problems


def test_a_config_with_a_duplicate_key_is_refused(tmp_path):
    folder = shutil.copytree(RUN, tmp_path / "continu")
    config = folder / contract.CONFIG_FILE
    config.write_text(config.read_text(encoding="utf-8").rstrip().removesuffix("}") + ', "lr": 10.0}\n',
                      encoding="utf-8")
    problems: list[dict] = []
    assert contract.check_config(folder, problems)["ok"] is False
    assert [p["code"] for p in problems] == ["duplicate_key"] and "duplicate key 'lr'" in problems[0]["message"]
