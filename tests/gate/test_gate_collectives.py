"""The collective check, run as a user runs it: gloo with two ranks on this CPU, passing, then broken from outside
the project's code (tests/gate/faults/sitecustomize.py in the fault venv, and a port the test holds). Every
broken run ends ok: false with a non-zero exit within the check's deadline, naming the rank and the op.

Each gate run starts three torch processes (the launcher and two ranks) beside the device worker, so every run
is shared by the tests that read it (module-scoped fixtures)."""

from __future__ import annotations

import json
import socket
import sys
import time

import pytest
from rules import collectives

from tests.conftest import run_gate

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the collective faults patch a POSIX rank")

TIMEOUT = 10  # the process group's timeout in the fault runs (ranks start seconds apart on a busy host)
DEADLINE = 2 * TIMEOUT + 20


def gate_run(tmp_path_factory, *args, fault=None, env=None):
    tmp = tmp_path_factory.mktemp("collectives")
    started = time.monotonic()
    run = run_gate(tmp, "--device", "cpu", *args, fault=fault, env=env)
    run.seconds = time.monotonic() - started
    return run


def faulty(tmp_path_factory, fault, ranks="1"):
    return gate_run(tmp_path_factory, "--collectives", "2", "--collectives-timeout", str(TIMEOUT), fault=fault,
                    env={"PLATFORM_RUNTIME_FAULT_RANKS": ranks})


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    # Two switches set by name, and one unrelated variable whose name and value must not appear.
    return gate_run(tmp_path_factory, "--collectives", "2", "--require", "collectives",
                    env={"NCCL_P2P_DISABLE": "1", "GLOO_SOCKET_IFNAME": "lo", "UNRELATED_SECRET": "s3cr3t-value"})


def check_of(run) -> dict:
    return run.result["checks"]["collectives"]


def test_two_gloo_ranks_answer_every_op_exactly_and_the_requirement_holds(passing):
    assert passing.returncode == 0 and passing.result["ok"] is True, passing.result["failures"]
    check = check_of(passing)
    assert check["ok"] is True and check["status"] == "finished" and check["unfinished"] == []
    assert (check["backend"], check["library"], check["device_type"], check["world_size"]) == ("gloo", "gloo", "cpu", 2)
    assert check["launcher"] == collectives.LAUNCHER and check["torch"].startswith("2.")
    for rank in check["ranks"]:
        assert rank["finished"] and rank["device"] == "cpu" and sorted(rank["ops"]) == sorted(collectives.OPS)
        want = collectives.expected(2, rank["rank"])
        assert {op: rank["ops"][op]["answer"] for op in collectives.ANSWERING_OPS} == want
        assert all(rank["ops"][op]["s"] >= 0 for op in collectives.OPS)
    verdict = {"name": "collectives", "ok": True,
               "reason": "2 ranks on gloo answered every op exactly, each on its own device"}
    assert verdict in passing.result["requirements"]


def test_the_switches_are_recorded_by_name_and_nothing_else_of_the_environment(passing):
    assert check_of(passing)["env_switches_set"] == ["GLOO_SOCKET_IFNAME", "NCCL_P2P_DISABLE"]
    text = passing.output.read_text(encoding="utf-8")
    assert "UNRELATED_SECRET" not in text and "s3cr3t-value" not in text and '"lo"' not in text


def test_the_ranks_answers_are_rejudged_from_the_record(passing):
    """ok is the rule's verdict on the measurements: one answer edited makes the same rule fail."""
    check = json.loads(json.dumps(check_of(passing)))
    assert collectives.problems(check) == []
    check["ranks"][1]["ops"]["all_gather"]["answer"][3] += 1
    assert any("rank 1 all_gather answered" in p for p in collectives.problems(check))


def test_the_judge_recomputes_the_check_and_refuses_an_edited_answer_left_ok(passing):
    from evidence_index.documents import judge_bytes

    assert judge_bytes(passing.output.read_bytes()).ok is True
    edited = json.loads(passing.output.read_text(encoding="utf-8"))
    edited["checks"]["collectives"]["ranks"][0]["ops"]["all_reduce_max"]["answer"][0] = 99  # ok stays true
    judgement = judge_bytes(json.dumps(edited).encode())
    assert judgement.ok is False
    assert any("rank 0 all_reduce_max answered [99" in reason for reason in judgement.reasons)


def test_without_the_option_the_check_is_absent(tmp_path_factory, passing):
    run = gate_run(tmp_path_factory)
    assert run.returncode == 0 and "collectives" not in run.result["checks"]
    assert run.result["arguments"]["collectives"] is None


def test_auto_on_a_box_without_two_gpus_is_skipped_and_cannot_satisfy_the_requirement(tmp_path_factory):
    run = gate_run(tmp_path_factory, "--require", "collectives")
    check = check_of(run)
    assert check["status"] == "skipped" and check["visible_gpus"] == 0 and check["ranks"] == []
    assert run.returncode == 1 and run.result["ok"] is False
    verdict = next(v for v in run.result["requirements"] if v["name"] == "collectives")
    assert verdict["ok"] is False and "skipped" in verdict["reason"]


# --- broken from outside -------------------------------------------------------------------------------------

def assert_failed_in_time(run, deadline=DEADLINE):
    assert run.result["ok"] is False and run.returncode == 1, run.result["failures"]
    assert check_of(run)["ok"] is False
    assert check_of(run)["duration_s"] <= deadline + 5  # the kill's grace, beyond it: never later


@pytest.fixture(scope="module")
def wrong_sum(tmp_path_factory):
    return faulty(tmp_path_factory, "rank-wrong-sum")


def test_a_rank_returning_a_wrong_sum_fails_naming_the_rank_and_op(wrong_sum):
    assert_failed_in_time(wrong_sum)
    reason = check_of(wrong_sum)["reason"]
    assert "rank 1 all_reduce_sum answered" in reason and "rank 0" not in reason
    assert check_of(wrong_sum)["status"] == "finished"  # every op ran: only the answer tells


@pytest.fixture(scope="module")
def wrong_device(tmp_path_factory):
    return faulty(tmp_path_factory, "rank-wrong-device")


def test_a_rank_silently_on_another_device_fails_naming_the_rank(wrong_device):
    assert_failed_in_time(wrong_device)
    check = check_of(wrong_device)
    assert check["status"] == "finished" and check["ranks"][1]["device"] == "cuda:0"
    assert "rank 1 ran on 'cuda:0', its own device is 'cpu'" in check["reason"]


@pytest.fixture(scope="module")
def never_joins(tmp_path_factory):
    return faulty(tmp_path_factory, "rank-never-joins")


def test_a_rank_that_never_joins_times_the_group_out_and_is_named(never_joins):
    assert_failed_in_time(never_joins)
    check = check_of(never_joins)
    assert {"rank": 1, "op": "init"} in check["unfinished"]
    assert "rank 1 in init" in check["reason"] and "waiting for clients" in check["ranks"][0]["error"]
    assert check_of(never_joins)["duration_s"] < DEADLINE  # the group's timeout ended it, not the deadline


@pytest.fixture(scope="module")
def hangs_in_op(tmp_path_factory):
    return faulty(tmp_path_factory, "rank-hangs-in-op")


def test_a_rank_that_hangs_inside_an_op_is_ended_and_named_with_its_op(hangs_in_op):
    assert_failed_in_time(hangs_in_op)
    check = check_of(hangs_in_op)
    assert {"rank": 1, "op": "broadcast"} in check["unfinished"] and "rank 1 in broadcast" in check["reason"]
    assert check["ranks"][0]["error"].startswith("RuntimeError in broadcast")  # its peer timed out there


@pytest.fixture(scope="module")
def all_hang(tmp_path_factory):
    return faulty(tmp_path_factory, "rank-hangs-in-op", ranks="all")


def test_a_group_hung_past_every_timeout_is_killed_at_the_deadline_naming_every_rank(all_hang):
    assert_failed_in_time(all_hang)
    check = check_of(all_hang)
    assert check["status"] == "killed-at-deadline"
    assert check["unfinished"] == [{"rank": 0, "op": "broadcast"}, {"rank": 1, "op": "broadcast"}]
    assert check["reason"].startswith("killed at the check's deadline: rank 0 in broadcast, rank 1 in broadcast")
    assert DEADLINE <= check["duration_s"] <= DEADLINE + 5
    assert all_hang.result["checks"]["workspace_cleanup"]["ok"] is True  # no rank left holding the workspace


@pytest.fixture(scope="module")
def port_in_use(tmp_path_factory):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(8)
        port = holder.getsockname()[1]
        return gate_run(tmp_path_factory, "--collectives", "2", "--collectives-timeout", str(TIMEOUT),
                        "--collectives-port", str(port))


def test_a_group_that_cannot_initialise_on_a_port_in_use_fails_naming_init(port_in_use):
    assert_failed_in_time(port_in_use)
    check = check_of(port_in_use)
    assert check["port"] == "given" and check["status"] == "failed"
    assert check["ranks"][0]["last_op"] == "init" and check["ranks"][0]["error"].startswith("DistNetworkError in init")


@pytest.mark.parametrize("args, words", [
    (["--collectives", "0"], "--collectives: must be auto or a number of ranks from 1 to 64"),
    (["--collectives", "many"], "--collectives: must be auto or a number of ranks"),
    (["--collectives", "2", "--collectives-port", "70000"], "--collectives-port: must be a TCP port"),
    (["--collectives", "2", "--collectives-timeout", "-1"], "--collectives-timeout: must be between"),
])
def test_bad_collective_options_are_usage_errors_with_a_message_and_no_traceback(tmp_path, args, words):
    run = run_gate(tmp_path, *args)
    assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr
    assert run.result["exit_code"] == 2 and run.result["checks"] == {}
