"""The gate's own times (started_at, finished_at, duration_s) are judged once, by the rules the judge applies to
the recorded result (rules.gate_result.FINAL_TIME_RULES), on the times the result records: a time problem fails
the run and is listed once in its failures."""

from __future__ import annotations

import datetime as dt

from rules import gate_result

from tests.gate.test_early_start import gate_with_early_start


def test_a_time_problem_fails_the_run_and_is_listed_once(tmp_path):
    # A started_at 30 s before the monotonic start duration_s counts from: the two clocks split, as they did in
    # the NFS VM (7499467). Judged at the interim times and again at the final ones, it was worded twice, with
    # two different duration_s values, and listed twice.
    split = "early.started_at = (dt.datetime.fromisoformat(early.started_at) - dt.timedelta(seconds=30)).isoformat()"
    done, result = gate_with_early_start(tmp_path, split)
    assert done.returncode != 0 and result["ok"] is False and result["exit_code"] != 0, done.stderr
    assert all(check["ok"] for check in result["checks"].values()), result["failures"]
    timed = [failure for failure in result["failures"] if failure.startswith("started_at is ")]
    assert len(timed) == 1 and "but duration_s is" in timed[0], result["failures"]
    assert result["failures"] == gate_result.final_time_problems(result)  # the judge's words for the recorded times
    assert dt.datetime.fromisoformat(result["finished_at"]) > dt.datetime.fromisoformat(result["started_at"])


def test_the_gates_two_judgements_apply_each_of_the_judges_result_rules_once():
    # The gate judges the result before its final times (skipping FINAL_TIME_RULES) and the final times after:
    # together exactly the judge's rules, none twice, so the gate fails what the judge refuses, once.
    late = {"started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:00:39+00:00",
            "duration_s": 9.0, "arguments": {"timeout_s": 5.0}, "workspace_cleanup": {"after_global_timeout": False}}
    before = gate_result.result_problems(late, skip=gate_result.FINAL_TIME_RULES)
    final = gate_result.final_time_problems(late)
    assert sorted(before + final) == sorted(gate_result.result_problems(late))
    assert len(final) == 2 and not set(final) & set(before)  # 39 s against 9.0, and 9.0 over the 5.0 timeout
    assert set(gate_result.FINAL_TIME_RULES) <= set(gate_result.result_rule_names())
