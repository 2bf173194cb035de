"""A gate result whose measurements say its checks did not hold, with every `ok` left true, is not authentic.

Each row starts from a real committed gate result (the ext4 run of evidence/local/filesystems, the run-local
run, the H200 run of evidence/cuda), makes ONE edit a forger would make (one measurement, one parameter, one
record, a field deleted), leaves every recorded flag as the gate wrote it, and judges the bytes as the index
judges each result it binds: refused as not authentic, naming the field. The rules recompute each verdict from
the measurements (docs/verdicts.md); the untouched results pass them (the controls at the end)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    CUDA_GATE,
    EVIDENCE,
    EXT4,
    NFS_GATE,
    RUN_LOCAL_GATE,
    Edit,
    assert_fails,
    assert_forged,
    assert_passes,
    assert_refused,
    at,
    committed,
    deleting,
    each,
    edited,
    indexed_alone,
    judged,
    row,
    setting,
    updating,
)

REPLACE, APPEND, WRITER = "checks.concurrent_replace", "checks.jsonl_append", "checks.failing_writer"
KILLED, DEVICE, LOCK = f"{WRITER}.killed_writer", "checks.device_compute", f"{APPEND}.lock_probe"
TRAINING, CHECKPOINT = f"{DEVICE}.training", f"{DEVICE}.checkpoint"
ENOLCK = {"type": "OSError", "errno": "ENOLCK", "message": "No locks available", "operation": "fcntl.lockf"}
ENOSPC = {"type": "OSError", "errno": "ENOSPC", "message": "No space left on device",
          "operation": "jsonl._write_all: written = os.write(fd, view)"}
STUCK = [{"pid": 80, "name": "python3", "state": "D"}]


def forgery(says: str, edit: Edit, *named: str, start: str = EXT4) -> Any:
    return row(says, start, edit, named)


# --- edits that must change more than one field to stay a consistent lie ------------------------------------

def _rising(document: dict) -> None:
    training = at(document, TRAINING)
    training["losses"] = sorted(training["losses"])  # loss_decreased, initial and final left as they were


def _negate_middle_loss(document: dict) -> None:
    losses = at(document, f"{TRAINING}.losses")
    losses[3] = -losses[3]  # the first and the last left as they were: loss_decreased still holds


def _loss_off_float32(document: dict) -> None:
    losses = at(document, f"{TRAINING}.losses")
    losses[5] = losses[5] + 0.1  # no float32 value: 0.1 is not one, and the sum is rounded in float64


def _unsynchronized(document: dict) -> None:
    for holder in (at(document, DEVICE), document["device"]):  # both copies, so they still agree
        holder["phases"]["training"]["synchronized"] = False


def _more_observed_than_kills(document: dict) -> None:
    killed = at(document, KILLED)
    killed["kills_mid_replace"] = killed["kills"] + 1


def _more_mid_replace_than_kills_without_a_temporary(document: dict) -> None:
    facts = at(document, KILLED)
    by_kills = facts["temporaries_left_by_kills"] - facts["temporaries_planted"]
    facts["kills_mid_replace"] = facts["kills"] - by_kills + 1


def _more_temporaries_than_kills_without_a_replace(document: dict) -> None:
    facts = at(document, KILLED)
    left = facts["kills"] - facts["kills_mid_replace"] + facts["temporaries_planted"] + 1
    facts.update(temporaries_left_by_kills=left, temporaries_swept=left)


def _one_version(document: dict) -> None:
    at(document, REPLACE).update(min_distinct_versions=1, distinct_versions_seen=1)


def _one_reader(document: dict) -> None:
    check = at(document, REPLACE)
    check["readers"] = 1
    check["roles"] = [r for r in check["roles"] if r["name"] != "r1"]


def _one_kill(document: dict) -> None:
    killed = at(document, KILLED)
    killed.update(kills_requested=1, kills=1, delays_ms=killed["delays_ms"][:1], kills_after_commit=1,
                  kills_mid_replace=min(killed["kills_mid_replace"], 1))


def _one_record_each(document: dict) -> None:
    check = at(document, APPEND)
    n = check["processes"]
    check.update(records_per_process=1, expected_records=n, lines=n, valid_records=n)


def _one_appender(document: dict) -> None:
    check = at(document, APPEND)
    per = check["records_per_process"]
    check.update(processes=1, expected_records=per, lines=per, valid_records=per)
    check["roles"] = check["roles"][:1]


def _no_lock(document: dict) -> None:
    check = at(document, APPEND)
    check["method"] = check["lock_probe"]["method"] = "none"


def _relabelled_nfs(document: dict) -> None:
    """The NFS facts a real NFS run records, on an ext4 run whose readers were never told to tolerate a miss."""
    document["filesystem"].update(type="nfs4", nfs_version="4.2", mount_options=[
        "rw", "relatime", "vers=4.2", "rsize=1048576", "wsize=1048576", "namlen=255", "hard", "proto=tcp",
        "timeo=600", "retrans=2", "sec=sys", "clientaddr=127.0.0.1", "local_lock=none", "addr=127.0.0.1"])
    assert at(document, f"{REPLACE}.tolerate_missing") is False


def _replace_reads_past_pauses(document: dict) -> None:
    """More reads than the readers' recorded seconds hold: one per reader pause (10 ms), and one more each."""
    from core import gate_parameters

    check = at(document, REPLACE)
    ran = [r["ran_s"] for r in check["roles"] if r["role"] == "replace-reader"]
    check["reads"] = int((sum(ran) + 0.001 * len(ran)) / gate_parameters.READER_PAUSE_S) + 2 * len(ran) + 1


def _more_attempts_than_the_window_allows(document: dict) -> None:
    from core.outcomes import lock_pauses

    attempt = at(document, f"{LOCK}.after_release")
    tries = 1
    while lock_pauses(tries) <= attempt["retry_window_s"]:
        tries += 1
    attempt.update(attempts=tries, waited_s=attempt["retry_window_s"])


def _every_deadline(value: float) -> Edit:
    """Every deadline the checks record set to `value`, every run time left as it was."""
    def edit(document: dict) -> None:
        checks = document["checks"]
        for name in ("concurrent_replace", "jsonl_append"):
            checks[name]["deadline_s"] = value
            for role in checks[name]["roles"]:
                role["deadline_s"] = value
        for key in ("while_held", "after_release"):
            checks["jsonl_append"]["lock_probe"][key]["deadline_s"] = value
        checks["failing_writer"]["killed_writer"]["deadline_s"] = value
    return edit


def _plus(path: str, source: str, more: float) -> Edit:
    """`path` set to the committed figure at `source` plus `more`."""
    return lambda document: setting(path, at(document, source) + more)(document)


def _killed_writer_ran_past_its_reserve(document: dict) -> None:
    from core.outcomes import ROLE_RESERVE_S

    killed = at(document, KILLED)
    killed["seconds"] = killed["deadline_s"] + ROLE_RESERVE_S + 1.0
    at(document, WRITER)["duration_s"] = killed["seconds"] + 1.0  # inside its check...
    document["duration_s"] = killed["seconds"] + 2.0  # ... and the run


def _sitecustomize_found_but_not_listed(document: dict) -> None:
    isolation = document["isolation"]
    isolation["present"].append("sitecustomize")
    isolation["findings"].append("a sitecustomize was loaded into the device worker at start-up")
    isolation["device_worker_loaded"] = []


def _shifted(path: str, seconds: float) -> Edit:
    return lambda d: d.update({path: (dt.datetime.fromisoformat(d[path]) + dt.timedelta(seconds=seconds)).isoformat()})


def _scaled(path: str, factor: float) -> Edit:
    return lambda d: d.update({path: round(d[path] * factor, 3)})


def _retained(document: dict) -> None:
    document["workspace_cleanup"]["status"] = "retained"
    document["checks"]["workspace_cleanup"]["status"] = "retained"


def _seccomp_raised(process: str, field: str) -> Edit:
    def edit(document: dict) -> None:
        status = at(document, f"isolation.processes.{process}")
        status[field] += 1
    return edit


def _dist_info_renamed(document: dict) -> None:
    build = document["device"]["torch_build"]
    build["dist_info"] = build["dist_info"].replace(".dist-info", "x.dist-info")


def _dist_info_of_release_0(document: dict) -> None:
    build = document["device"]["torch_build"]
    build["dist_info"] = "torch-0." + build["dist_info"].removeprefix("torch-")


# The committed ext4 run's own figures (a re-recording changes them): its duration, the seconds between its stamps.
RUN = committed(EXT4)
DURATION = RUN["duration_s"]
APART = int((dt.datetime.fromisoformat(RUN["finished_at"]) - dt.datetime.fromisoformat(RUN["started_at"]))
            .total_seconds())
PYTHONPATH_FINDING = "PYTHONPATH is set and the gate's own process was started without -I or -E"


def _vector_then_allowed_deleted(document: dict) -> None:
    """A PYTHONPATH run that a filesystem requirement refused, the requirement and the run made to hold, then
    `isolation.allowed` deleted so that the vector would go unjudged."""
    document["arguments"]["require_filesystem"] = "ext4"
    document["requirements"].append({"name": "filesystem=ext4", "ok": True,
                                     "reason": "the work dir's file system is ext4"})
    document["isolation"].update(present=["PYTHONPATH"], findings=[PYTHONPATH_FINDING], allowed=False)
    document["arguments"]["allow_injection_vectors"] = False
    document["ok"], document["exit_code"], document["failures"] = True, 0, []
    del document["isolation"]["allowed"]


CHECKS = [
    # concurrent_replace: the readers saw the document whole, and only versions a writer wrote
    forgery("a replace whose readers saw no version", updating(REPLACE, distinct_versions_seen=0),
            f"{REPLACE}.distinct_versions_seen is 0", start=RUN_LOCAL_GATE),
    forgery("a replace whose readers saw torn documents", updating(REPLACE, partial_reads=7),
            f"{REPLACE}.partial_reads is 7", start=RUN_LOCAL_GATE),
    forgery("a replace whose readers missed the name off NFS", updating(REPLACE, missing_reads=3),
            f"{REPLACE}.missing_reads is 3", start=RUN_LOCAL_GATE),
    forgery("missed names tolerated off NFS", updating(REPLACE, missing_reads=3, missing_reads_tolerated=True),
            f"{REPLACE}.missing_reads_tolerated is true on 'ext4'", start=RUN_LOCAL_GATE),
    forgery("missed names tolerated by readers never told to", updating(
        REPLACE, missing_reads=3, missing_reads_tolerated=True, tolerate_missing=False),
        f"{REPLACE}.missing_reads_tolerated is True, but the readers", start=RUN_LOCAL_GATE),
    forgery("readers told to tolerate a miss off NFS", updating(
        REPLACE, missing_reads=3, missing_reads_tolerated=True, tolerate_missing=True),
        f"{REPLACE}.tolerate_missing is true on 'ext4'", start=RUN_LOCAL_GATE),
    forgery("an NFS mount whose readers were never told to tolerate a miss", _relabelled_nfs,
            f"{REPLACE}.tolerate_missing is False on 'nfs4'", start=RUN_LOCAL_GATE),
    forgery("fewer writes than the writers make", updating(REPLACE, writes=150), f"{REPLACE}.writes is 150",
            start=RUN_LOCAL_GATE),
    forgery("more distinct versions than reads", updating(REPLACE, distinct_versions_seen=10**6),
            f"{REPLACE}.distinct_versions_seen is 1000000, more than", start=RUN_LOCAL_GATE),
    forgery("a replace that abandoned a process", updating(REPLACE, abandoned_processes=STUCK),
            f"{REPLACE}.abandoned_processes names 1", start=RUN_LOCAL_GATE),
    forgery("a negative count of busy rename retries", updating(REPLACE, writer_busy_rename_retries=-1),
            f"{REPLACE}.writer_busy_rename_retries is -1", start=RUN_LOCAL_GATE),
    forgery("a million busy rename retries", updating(REPLACE, writer_busy_rename_retries=10**6),
            f"{REPLACE}.writer_busy_rename_retries is 1000000", start=RUN_LOCAL_GATE),
    forgery("a final version of a writer never started",
            lambda d: setting(f"{REPLACE}.final_version", [at(d, REPLACE)["writers"], 49])(d),
            f"{REPLACE}.final_version"),
    forgery("a final version of a negative writer", setting(f"{REPLACE}.final_version.0", -3),
            f"{REPLACE}.final_version"),
    forgery("the initial document as the final version", setting(f"{REPLACE}.final_version.0", -1),
            f"{REPLACE}.final_version"),
    forgery("a billion reads", setting(f"{REPLACE}.reads", 10**9), f"{REPLACE}.reads"),
    forgery("one read more than the readers' pauses allow", _replace_reads_past_pauses, f"{REPLACE}.reads"),
    forgery("a negative count of reader sharing retries", setting(f"{REPLACE}.reader_sharing_retries", -5),
            f"{REPLACE}.reader_sharing_retries"),
    forgery("a negative count of writer sharing retries", setting(f"{REPLACE}.writer_sharing_retries", -5),
            f"{REPLACE}.writer_sharing_retries"),
    forgery("a boolean as the count of writer sharing retries", setting(f"{REPLACE}.writer_sharing_retries", True),
            f"{REPLACE}.writer_sharing_retries"),
    forgery("a reason on a passing replace check", setting(f"{REPLACE}.reason", "x"), f"{REPLACE}.reason"),
    forgery("the replace check's final version deleted",
            deleting(f"{REPLACE}.final_version", f"{REPLACE}.final_version_complete"),
            f"{REPLACE}.final_version is missing", start=RUN_LOCAL_GATE),
    # the gate's fixed parameters: a check that asked for less and got it is no check
    forgery("a replace that asked for one version", _one_version,
            f"{REPLACE}.min_distinct_versions is 1: the gate always runs with 10", start=RUN_LOCAL_GATE),
    forgery("a replace with one reader", _one_reader, f"{REPLACE}.readers is 1", start=RUN_LOCAL_GATE),
    forgery("a killed writer asked for one kill", _one_kill,
            f"{KILLED}.kills_requested is 1: the gate always runs with 20", start=RUN_LOCAL_GATE),
    forgery("an append of one record per process", _one_record_each, f"{APPEND}.records_per_process is 1",
            start=RUN_LOCAL_GATE),
    forgery("an append by one process", _one_appender, f"{APPEND}.processes is 1", start=RUN_LOCAL_GATE),
    forgery("an append taking no lock", _no_lock, f"{APPEND}.method is 'none'", start=RUN_LOCAL_GATE),
    forgery("a one by one matmul", updating(f"{DEVICE}.matmul", shape=[1, 1]), f"{DEVICE}.matmul.shape is [1, 1]",
            start=RUN_LOCAL_GATE),
    forgery("an int8 matmul", updating(f"{DEVICE}.matmul", dtype="int8"), f"{DEVICE}.matmul.dtype is 'int8'",
            start=RUN_LOCAL_GATE),
    # the role processes: each named once, each answered with exit 0 and no error
    forgery("a replace writer that gave no answer", lambda d: at(d, f"{REPLACE}.roles.1").update(answer="no-answer"),
            f"{REPLACE}.roles: NO ANSWER from 1 of 4 replace-writer process(es): w1", start=RUN_LOCAL_GATE),
    forgery("an appender that failed on a full disk",
            lambda d: at(d, f"{APPEND}.roles.5").update(answer="failed", error=ENOSPC),
            f"{APPEND}.roles: 1 of 8 append-writer process(es) failed: w5 ended with OSError ENOSPC",
            start=RUN_LOCAL_GATE),
    forgery("a replace writer dropped from the roles", deleting(f"{REPLACE}.roles.0"),
            f"{REPLACE}.roles holds 3 replace-writer process(es), the check records 4", start=RUN_LOCAL_GATE),
    forgery("a replace reader dropped from the roles", lambda d: at(d, f"{REPLACE}.roles").pop(),
            f"{REPLACE}.roles holds 1 replace-reader process(es)", start=RUN_LOCAL_GATE),
    forgery("an appender dropped from the roles", lambda d: at(d, f"{APPEND}.roles").pop(),
            f"{APPEND}.roles holds 7 append-writer process(es), the check records 8", start=RUN_LOCAL_GATE),
    forgery("a role that answered with exit 1", updating(f"{REPLACE}.roles.0", exit=1),
            f"{REPLACE}.roles: w0 answered with exit 1", start=RUN_LOCAL_GATE),
    forgery("a role that answered with an error", updating(f"{APPEND}.roles.2", error={
        "type": "OSError", "errno": "EIO", "message": "I/O error", "operation": "jsonl.append"}),
        f"{APPEND}.roles: w2 answered with exit 0 and error", start=RUN_LOCAL_GATE),
    forgery("two roles under one name", updating(f"{REPLACE}.roles.1", name="w0"), "each role process is named once",
            start=RUN_LOCAL_GATE),
    forgery("an append role of another check", updating(f"{APPEND}.roles.0", role="replace-writer"),
            f"{APPEND}.roles holds role(s) replace-writer this check does not start", start=RUN_LOCAL_GATE),
    forgery("a role kind that is not a string", updating(f"{REPLACE}.roles.0", role=[]),
            f"{REPLACE}.roles holds 3 replace-writer process(es)", start=RUN_LOCAL_GATE),
    forgery("a replace role that answered yet was abandoned", setting(f"{REPLACE}.roles.0.abandoned", True),
            "w0 answered, yet its abandoned is True"),
    forgery("the replace roles deleted", deleting(f"{REPLACE}.roles"), f"{REPLACE}.roles is missing",
            start=RUN_LOCAL_GATE),
    # jsonl_append: every record there once, whole, and the lock excluded another process
    forgery("appended records missing", updating(APPEND, missing=7), f"{APPEND}.missing is 7", start=RUN_LOCAL_GATE),
    forgery("fewer valid records than were appended", updating(APPEND, valid_records=1593),
            f"{APPEND}.valid_records is 1593", start=RUN_LOCAL_GATE),
    forgery("an append file ending in an unterminated line", updating(APPEND, unterminated_tail=True),
            f"{APPEND}.unterminated_tail is True", start=RUN_LOCAL_GATE),
    forgery("an appender in uninterruptible sleep at the deadline", updating(APPEND, blocked_at_deadline=STUCK),
            f"{APPEND}.blocked_at_deadline names 1 process(es) in uninterruptible sleep", start=RUN_LOCAL_GATE),
    forgery("a lock another process acquired while it was held", updating(f"{LOCK}.while_held", acquired=True),
            f"{LOCK}: the lock did not exclude another process", start=RUN_LOCAL_GATE),
    forgery("a lock probe's refused_while_held flag against its attempts", updating(LOCK, refused_while_held=False),
            f"{LOCK}.refused_while_held is recorded False, its measurements say True", start=RUN_LOCAL_GATE),
    forgery("a lock probe's ok flag against its attempts", updating(LOCK, ok=False),
            f"{LOCK}.ok is recorded False, its measurements say True", start=RUN_LOCAL_GATE),
    forgery("a lock attempt that gave no answer", updating(f"{LOCK}.after_release", answer="no-answer"),
            f"{LOCK}: lock probe: NO ANSWER from 1 of 1 lock-attempt process(es)", start=RUN_LOCAL_GATE),
    forgery("a lock attempt deleted", deleting(f"{LOCK}.while_held"), f"{LOCK}.while_held is missing",
            start=RUN_LOCAL_GATE),
    forgery("a lock attempt that is not an object", updating(LOCK, while_held="x"), f"{LOCK}: lock probe:",
            start=RUN_LOCAL_GATE),
    forgery("a lock attempt held that crashed with an error", each(setting(f"{LOCK}.while_held.exit", 1),
                                                                     setting(f"{LOCK}.while_held.error", ENOLCK)),
            "while-held answered with exit 1"),
    forgery("a lock attempt held that exited 1", setting(f"{LOCK}.while_held.exit", 1),
            "while-held answered with exit 1"),
    forgery("a lock attempt after release that exited 1", setting(f"{LOCK}.after_release.exit", 1),
            "after-release answered with exit 1"),
    forgery("no lock attempt while held", updating(f"{LOCK}.while_held", attempts=0), "while_held.attempts is 0"),
    forgery("no lock attempt after release", updating(f"{LOCK}.after_release", attempts=0),
            "after_release.attempts is 0"),
    forgery("a negative count of lock attempts", updating(f"{LOCK}.while_held", attempts=-2),
            "while_held.attempts is -2"),
    forgery("the lock attempts held deleted", lambda d: at(d, f"{LOCK}.while_held").pop("attempts"),
            "while_held.attempts is None"),
    forgery("a lock attempt retried while held", updating(f"{LOCK}.while_held", attempts=2),
            "while_held.attempts is 2 in a retry_window_s of 0.0"),
    forgery("more lock attempts than the retry window allows", _more_attempts_than_the_window_allows,
            "more than its retry_window_s"),
    forgery("lock attempts retried without pausing", updating(f"{LOCK}.after_release", attempts=4, waited_s=0.0),
            "after_release.waited_s is 0.0"),
    # failing_writer: each failure stage left the old file whole and no temporary behind
    forgery("a failing writer that did not leave the old file whole",
            updating(f"{WRITER}.stages.fsync", old_file_intact=False),
            f"{WRITER}.stages.fsync.old_file_intact is False", start=RUN_LOCAL_GATE),
    forgery("a failing writer's temporary left behind", updating(f"{WRITER}.stages.replace", temp_files_left=1),
            f"{WRITER}.stages.replace.temp_files_left", start=RUN_LOCAL_GATE),
    forgery("a partial write that raised nothing", updating(f"{WRITER}.stages.partial-write", raised=None),
            f"{WRITER}.stages.partial-write.raised", start=RUN_LOCAL_GATE),
    forgery("a failure stage that raised any text", setting(f"{WRITER}.stages.fsync.raised", "x"),
            f"{WRITER}.stages.fsync.raised"),
    forgery("a replace stage that raised another error", setting(f"{WRITER}.stages.replace.raised", "PermissionError"),
            f"{WRITER}.stages.replace.raised"),
    forgery("a killed writer that left torn documents", updating(KILLED, torn=2), f"{KILLED}.torn: 2",
            start=RUN_LOCAL_GATE),
    forgery("a killed writer that made no kill", updating(KILLED, kills=0), f"{KILLED}.kills: 0 of",
            start=RUN_LOCAL_GATE),
    forgery("a boolean as the count of torn documents", updating(KILLED, torn=False),
            f"{KILLED}.torn is False, a count",
            start=RUN_LOCAL_GATE),
    forgery("the count of lost documents deleted", lambda d: at(d, KILLED).pop("lost"),
            f"{KILLED}.lost is None, a count",
            start=RUN_LOCAL_GATE),
    forgery("more kills observed than made", _more_observed_than_kills, "kill(s) made (each kill is observed once)",
            start=RUN_LOCAL_GATE),
    forgery("fewer commits than kills after a commit", updating(KILLED, commits=0), f"{KILLED}.kills_after_commit is",
            start=RUN_LOCAL_GATE),
    forgery("no kill delays", updating(KILLED, delays_ms=[]), f"{KILLED}.delays_ms holds 0 value(s)",
            start=RUN_LOCAL_GATE),
    forgery("no temporary planted", updating(KILLED, temporaries_planted=0), f"{KILLED}.temporaries_planted is 0",
            start=RUN_LOCAL_GATE),
    forgery("more temporaries swept than planted and left", updating(
        KILLED, temporaries_swept=99, temporaries_left_by_kills=99, temporaries_planted=100),
        f"{KILLED}.temporaries_planted is 100 with 99 left", start=RUN_LOCAL_GATE),
    forgery("more mid-replace kills than kills that left no temporary",
            _more_mid_replace_than_kills_without_a_temporary,
            "a kill leaves a temporary only when"),
    forgery("more temporaries left than kills outside a replace", _more_temporaries_than_kills_without_a_replace,
            "a kill leaves a temporary only when"),
    forgery("two temporaries planted", setting(f"{KILLED}.temporaries_planted", 2), f"{KILLED}.temporaries_planted"),
    forgery("a killed writer's document of one byte", setting(f"{KILLED}.document_bytes", 1),
            f"{KILLED}.document_bytes is 1"),
    forgery("a negative seed", setting(f"{KILLED}.seed", -1), f"{KILLED}.seed is -1"),
    forgery("a seed written as text", setting(f"{KILLED}.seed", "2326688108"), f"{KILLED}.seed is '2326688108'"),
    forgery("a killed writer of negative seconds", setting(f"{KILLED}.seconds", -1),
            f"{KILLED}.seconds is -1: a duration", start=RUN_LOCAL_GATE),
    forgery("the killed writer's record deleted", deleting(KILLED), f"{KILLED} is missing", start=RUN_LOCAL_GATE),
    forgery("the killed writer's record deleted with the version that requires it",
            deleting("schema_version", KILLED), f"{KILLED} is missing", start=RUN_LOCAL_GATE),
    forgery("a result downgraded to version 1 without its append roles",
            each(setting("schema_version", 1), deleting(f"{APPEND}.roles")), f"{APPEND}.roles is missing",
            start=RUN_LOCAL_GATE),
    forgery("a schema version written as text", setting("schema_version", "2"), "schema_version is '2'",
            start=RUN_LOCAL_GATE),
    # device_compute: the training descended, by the update rule, and the checkpoint came back whole
    forgery("losses that rise under loss_decreased", _rising, f"{TRAINING}.losses go from", start=RUN_LOCAL_GATE),
    forgery("a loss that is not a number", lambda d: at(d, f"{TRAINING}.losses").__setitem__(3, "NaN"),
            f"{TRAINING}.losses", start=RUN_LOCAL_GATE),
    forgery("a negative mean squared error between a first and a last loss kept", _negate_middle_loss,
            f"{TRAINING}.losses holds -"),
    forgery("a loss that is no float32 value", _loss_off_float32, "is a float32 value"),
    forgery("an optimizer step off the update rule", updating(TRAINING, update_rule_max_relative_error=0.5),
            f"{TRAINING}.update_rule_max_relative_error is 0.5", start=RUN_LOCAL_GATE),
    forgery("fewer training steps than losses", setting(f"{TRAINING}.steps", 3),
            f"{TRAINING}.steps is 3, the worker recorded 12 loss(es)", start=RUN_LOCAL_GATE),
    forgery("parameters on no device", setting(f"{TRAINING}.parameter_device", ""), f"{TRAINING}.parameter_device"),
    forgery("parameters on the meta device", setting(f"{TRAINING}.parameter_device", "meta"),
            f"{TRAINING}.parameter_device"),
    forgery("a device error under a passing check", updating(DEVICE, error={
        "type": "RuntimeError", "errno": None, "message": "CUDA error: an illegal memory access",
        "operation": "stage training"}), f"{DEVICE}.error is", start=RUN_LOCAL_GATE),
    forgery("a training phase whose tensors sat on other devices",
            updating(f"{DEVICE}.phases.training", tensor_devices=["cpu", "meta"]),
            f"{DEVICE}.phases.training.tensor_devices", start=RUN_LOCAL_GATE),
    forgery("a training phase not synchronized", _unsynchronized, f"{DEVICE}.phases.training.synchronized is False",
            start=RUN_LOCAL_GATE),
    forgery("a peak allocation recorded on the CPU", setting(f"{DEVICE}.peak_allocated_bytes", 0),
            f"{DEVICE}.peak_allocated_bytes"),
    forgery("the device's peak allocation recorded on the CPU", setting("device.peak_allocated_bytes", 0),
            "device.peak_allocated_bytes"),
    forgery("a reloaded checkpoint whose forward pass differs", updating(CHECKPOINT, forward_max_abs_error=1e-3),
            f"{CHECKPOINT}.forward_max_abs_error is 0.001", start=RUN_LOCAL_GATE),
    forgery("a reloaded checkpoint whose tensors differ", updating(CHECKPOINT, mismatches=["0.weight"]),
            f"{CHECKPOINT}.mismatches", start=RUN_LOCAL_GATE),
    forgery("a checkpoint loaded without weights_only",
            updating(CHECKPOINT, load='torch.load(map_location="cpu", weights_only=False)'),
            f"{CHECKPOINT}.load is 'torch.load(map_location=\"cpu\", weights_only=False)'", start=RUN_LOCAL_GATE),
    forgery("the checkpoint's load call deleted", lambda d: at(d, CHECKPOINT).pop("load"), f"{CHECKPOINT}.load is None",
            start=RUN_LOCAL_GATE),
    forgery("an empty checkpoint", setting(f"{CHECKPOINT}.bytes", 0), f"{CHECKPOINT}.bytes is 0",
            start=RUN_LOCAL_GATE),
    forgery("the checkpoint's digest deleted", lambda d: at(d, CHECKPOINT).pop("sha256"), f"{CHECKPOINT}.sha256"),
    forgery("the checkpoint's ok deleted", lambda d: at(d, CHECKPOINT).pop("ok"), f"{CHECKPOINT}.ok"),
    forgery("a checkpoint digest of null", setting(f"{CHECKPOINT}.sha256", None), f"{CHECKPOINT}.sha256 is 'None'"),
    forgery("a checkpoint digest of one letter", setting(f"{CHECKPOINT}.sha256", "x"), f"{CHECKPOINT}.sha256 is 'x'"),
    forgery("a checkpoint saved from no device", setting(f"{CHECKPOINT}.saved_from_device", []),
            f"{CHECKPOINT}.saved_from_device is []"),
    forgery("a checkpoint saved from a GPU by a CPU run", setting(f"{CHECKPOINT}.saved_from_device", ["cuda"]),
            "saved_from_device is ['cuda'], the work ran on 'cpu'"),
    forgery("a device type the compute did not run on", updating("device", type="cuda"),
            "device.type is 'cuda', checks.device_compute ran on", start=RUN_LOCAL_GATE),
    forgery("a device type that is not a string", updating("device", type=[]),
            "device.type is [], checks.device_compute",
            start=RUN_LOCAL_GATE),
    forgery("no safe load", updating("device.load_safety", weights_only=False),
            "device.load_safety.weights_only is False", start=RUN_LOCAL_GATE),
    forgery("an unsafe load call", updating("device.load_safety", load_call="torch.load(path)"),
            "device.load_safety.load_call is", start=RUN_LOCAL_GATE),
    forgery("a torch exposed to a load advisory the record hides",
            lambda d: d["device"]["torch"].update(version="2.5.1"), "device.load_safety.advisories is",
            start=RUN_LOCAL_GATE),
    # the H200 run's device and memory, against its own device
    forgery("the H200 run's parameters on the CPU", setting(f"{TRAINING}.parameter_device", "cpu"),
            f"{TRAINING}.parameter_device", start=CUDA_GATE),
    forgery("the H200 run's negative peak", setting(f"{DEVICE}.peak_allocated_bytes", -1),
            f"{DEVICE}.peak_allocated_bytes", start=CUDA_GATE),
    forgery("the H200 run's peak above its device's memory",
            lambda d: setting(f"{DEVICE}.peak_allocated_bytes", d["device"]["cuda"]["total_memory_bytes"] * 10)(d),
            f"{DEVICE}.peak_allocated_bytes", start=CUDA_GATE),
    forgery("the H200 run's device peak negative",
            lambda d: setting("device.peak_allocated_bytes", -at(d, f"{DEVICE}.peak_allocated_bytes") - 1)(d),
            "device.peak_allocated_bytes", start=CUDA_GATE),
    forgery("the H200 run's device peak of zero", setting("device.peak_allocated_bytes", 0),
            "device.peak_allocated_bytes", start=CUDA_GATE),
    # what was asked ran, and what ran was asked
    forgery("collectives asked for and not recorded", updating("arguments", collectives="2"),
            "checks.collectives is missing, but arguments.collectives asked for '2'", start=RUN_LOCAL_GATE),
    # workspace_cleanup: cleaned, within its deadline, of the workspace it made
    forgery("a failed workspace cleanup beside a cleaned check", updating("workspace_cleanup", status="failed"),
            "workspace_cleanup.status is 'failed', checks.workspace_cleanup.status is 'cleaned'",
            start=RUN_LOCAL_GATE),
    forgery("a failed cleanup check", updating("checks.workspace_cleanup", status="failed"),
            "checks.workspace_cleanup.status is 'failed'", start=RUN_LOCAL_GATE),
    forgery("a reason on a passing cleanup", setting("checks.workspace_cleanup.reason", "x"),
            "checks.workspace_cleanup.reason"),
    forgery("a workspace that is a path out of the work dir", setting("workspace_cleanup.workspace", "../../etc"),
            "workspace_cleanup.workspace is '../../etc'", start=RUN_LOCAL_GATE),
    forgery("the root directory as the workspace", setting("workspace_cleanup.workspace", "/"),
            "workspace_cleanup.workspace is '/'", start=RUN_LOCAL_GATE),
    forgery("a cleanup after the run's global timeout", setting("workspace_cleanup.after_global_timeout", True),
            "workspace_cleanup.after_global_timeout is True"),
    forgery("a cleanup deadline other than its argument asked", setting("arguments.cleanup_timeout_s", 5.0),
            "workspace_cleanup.deadline_s is 30.0, but arguments.cleanup_timeout_s is 5.0"),
    forgery("a cleanup deadline longer than its argument asked", setting("workspace_cleanup.deadline_s", 60.0),
            "workspace_cleanup.deadline_s is 60.0, but arguments.cleanup_timeout_s is 30.0"),
    forgery("a hung file system under a thirty second cleanup deadline", setting("workspace_cleanup.file_system_hung",
                                                                                 True),
            "file_system_hung is True: the cleanup's deadline is at most 5.0"),
    forgery("an uncut cleanup deadline marked cut by the budget",
            setting("workspace_cleanup.deadline_cut_by_budget", True), "a cut deadline is shorter than 30.0"),
    forgery("a cleanup argument of sixty seconds under a thirty second deadline",
            setting("arguments.cleanup_timeout_s", 60.0), "an uncut deadline is the one wanted, 60.0"),
    forgery("a failed cleanup relabelled retained without --keep-workspace", _retained,
            "workspace_cleanup.status is 'retained' while arguments.keep_workspace is False"),
    forgery("the NFS action's retained workspace with --keep-workspace removed",
            setting("arguments.keep_workspace", False),
            "workspace_cleanup.status is 'retained' while arguments.keep_workspace is False", start=NFS_GATE),
    forgery("the NFS action's workspace marked cleaned though kept", each(
        setting("workspace_cleanup.status", "cleaned"), setting("checks.workspace_cleanup.status", "cleaned")),
        "workspace_cleanup.status is 'cleaned' while arguments.keep_workspace is True", start=NFS_GATE),
    # the clocks and deadlines of the run and its processes
    forgery("a run of several seconds under a one second timeout", setting("arguments.timeout_s", 1.0),
            f"duration_s is {DURATION}, longer than arguments.timeout_s 1.0"),
    forgery("a run of several seconds under a three second timeout", setting("arguments.timeout_s", 3.0),
            "longer than arguments.timeout_s 3.0"),
    forgery("a finish fifty seconds after the measured duration", _shifted("finished_at", 50),
            f"{APART + 50} s apart, but duration_s is {DURATION}"),
    forgery("a finish three seconds after the measured duration", _shifted("finished_at", 3),
            f"{APART + 3} s apart, but duration_s is {DURATION}"),
    forgery("a start three seconds before the measured duration", _shifted("started_at", -3),
            f"{APART + 3} s apart, but duration_s is {DURATION}"),
    forgery("a duration ten times its stamps", _scaled("duration_s", 10),
            f"{APART} s apart, but duration_s is {round(DURATION * 10, 3)}"),
    forgery("a duration twice its stamps", _scaled("duration_s", 2),
            f"{APART} s apart, but duration_s is {round(DURATION * 2, 3)}"),
    forgery("a check of negative duration", setting(f"{APPEND}.duration_s", -5),
            f"{APPEND}.duration_s is -5: a duration", start=RUN_LOCAL_GATE),
    forgery("every deadline a millisecond", _every_deadline(0.001), "past its deadline_s 0.001"),
    forgery("every deadline zero", _every_deadline(0.0), "past its deadline_s 0.0"),
    forgery("a role's deadline below its check's", setting(f"{REPLACE}.roles.0.deadline_s", 0.001),
            f"{REPLACE}.roles[w0].deadline_s is 0.001, less than"),
    forgery("a check's deadline below its roles'", setting(f"{REPLACE}.deadline_s", 0.001),
            f"{REPLACE}.roles[w0].deadline_s is"),
    forgery("a lock attempt's deadline of a millisecond", setting(f"{LOCK}.while_held.deadline_s", 0.001),
            f"{LOCK}.while_held.deadline_s is 0.001"),
    forgery("a role that ran longer than its check", _plus(f"{REPLACE}.roles.0.ran_s", f"{REPLACE}.duration_s", 1.0),
            "longer than its check's duration_s"),
    forgery("a check that ran longer than the run", _plus(f"{REPLACE}.duration_s", "duration_s", 1.0),
            f"{REPLACE}.duration_s is"),
    forgery("a role's deadline deleted", deleting(f"{APPEND}.roles.0.deadline_s"), "roles[w0].deadline_s is None"),
    forgery("a role's run time deleted", deleting(f"{APPEND}.roles.0.ran_s"), "roles[w0].ran_s is None"),
    forgery("a check's deadline deleted", deleting(f"{REPLACE}.deadline_s"), f"{REPLACE}.deadline_s is None"),
    forgery("a killed writer's deadline of a millisecond", setting(f"{KILLED}.deadline_s", 0.001),
            f"{KILLED}.deadline_s is 0.001"),
    forgery("a killed writer that ran past its reserve", _killed_writer_ran_past_its_reserve, f"{KILLED}.seconds is"),
    forgery("a failing writer's deadline of a millisecond", setting(f"{WRITER}.deadline_s", 0.001),
            f"{WRITER}.deadline_s is 0.001"),
    # where the sources came from
    forgery("no source file hashed", updating("source", files={}), "source.files is {}", start=RUN_LOCAL_GATE),
    forgery("a tree state with no head and no error", updating("source.git", head=None),
            "source.git has no head, with error None"),
    forgery("a head that is not a commit id", updating("source.git", head="HEAD"), "source.git.head is 'HEAD'"),
    forgery("a clean tree beside the digest of a diff", updating("source.git", diff_sha256="0" * 64),
            "source.git.dirty is False, but diff_sha256 is 000000000000"),
    forgery("a tree state written as text", updating("source.git", dirty="no"), "source.git.dirty is 'no', a bool"),
    forgery("a git error beside a head", updating("source.git", error="not a git checkout"),
            "source.git.error is 'not a git checkout' beside a head"),
]

STAGE_SIZES = [
    forgery(f"a {stage} stage's temporary size of {value!r} bytes",
            setting(f"{WRITER}.stages.{stage}.temp_bytes_at_failure", value),
            f"stages.{stage}.temp_bytes_at_failure is {value!r}")
    for stage in ("before-data", "partial-write", "fsync", "replace") for value in (-5, None, True, "4125", 4125.0)
] + [
    forgery(f"a {stage} stage's temporary size of {value} bytes, which that stage never writes",
            setting(f"{WRITER}.stages.{stage}.temp_bytes_at_failure", value), named)
    for stage, value, named in (("before-data", 10, "before-data.temp_bytes_at_failure is 10"),
                                ("fsync", 0, "replace.temp_bytes_at_failure is 4125, fsync's is 0"),
                                ("replace", 17, "replace.temp_bytes_at_failure is 17"),
                                ("partial-write", 4125, "partial-write.temp_bytes_at_failure is 4125"))
]

ISOLATION = [
    # the worker's environment and start-up are the ones the gate gives
    forgery("the device backends' autoload switched on",
            setting("isolation.worker_environment.TORCH_DEVICE_BACKEND_AUTOLOAD", "1"), "isolation.worker_environment"),
    forgery("the device backends' autoload switch removed",
            lambda d: d["isolation"]["worker_environment"].pop("TORCH_DEVICE_BACKEND_AUTOLOAD"),
            "isolation.worker_environment"),
    forgery("the worker environment removed", lambda d: d["isolation"].pop("worker_environment"),
            "isolation.worker_environment"),
    forgery("setuptools' distutils switched to local", setting("isolation.worker_environment.SETUPTOOLS_USE_DISTUTILS",
                                                               "local"), "isolation.worker_environment"),
    forgery("the worker's site directories plus the user site",
            lambda d: setting("isolation.worker_site_dirs",
                              d["isolation"]["worker_site_dirs"] + " plus the user site")(d),
            "isolation.worker_site_dirs"),
    forgery("a sitecustomize found in the worker but cut from its list", _sitecustomize_found_but_not_listed,
            "isolation.findings says 'a sitecustomize was loaded into the device worker at start-up'"),
    forgery("the parent alone isolated", setting("isolation.parent_flags.isolated", True), "-I (isolated) sets"),
    forgery("a parent flag written as text", setting("isolation.parent_flags.no_site", "false"),
            "isolation.parent_flags is"),
    forgery("the workers' interpreter line emptied", setting("isolation.workers", ""), "isolation.workers is ''"),
    # a current result is never exempt as an older one
    forgery("isolation.allowed deleted", deleting("isolation.allowed"),
            "isolation.allowed is None on a result of a gate that records it", start=RUN_LOCAL_GATE),
    forgery("the isolation record deleted", deleting("isolation"),
            "isolation is None on a result of a gate that records it", start=RUN_LOCAL_GATE),
    forgery("isolation.allowed deleted with its argument",
            deleting("isolation.allowed", "arguments.allow_injection_vectors"),
            "isolation.allowed is None on a result of a gate that records it", start=RUN_LOCAL_GATE),
    forgery("a refused vector's run made to hold, isolation.allowed deleted", _vector_then_allowed_deleted,
            "isolation.allowed is None on a result of a gate that records it", start=RUN_LOCAL_GATE),
    forgery("a version-1 result without the isolation record its gate always wrote", deleting("isolation"),
            "isolation is missing: the version-1 gate always recorded it", start=CUDA_GATE),
    forgery("a version-1 result listing no vector beside the .pth files it found", setting("isolation.present", []),
            "isolation.present is [] and", start=CUDA_GATE),
    forgery("a version-1 result without the modules its device worker loaded",
            deleting("isolation.device_worker_loaded"), "isolation.device_worker_loaded is missing", start=CUDA_GATE),
    forgery("the device views deleted", deleting("device.views"),
            "device.views is missing beside the device worker's phases", start=RUN_LOCAL_GATE),
    # `present` is what the facts beside it say
    forgery("an executing .pth file not listed as present", updating("isolation", executing_pth_files=["zz_plant.pth"]),
            "isolation.present is recorded [], its findings, executing_pth_files and device_worker_loaded say ['.pth']",
            start=RUN_LOCAL_GATE),
    forgery("a finding not listed as present", updating("isolation", findings=[PYTHONPATH_FINDING]),
            "isolation.present is recorded [], its findings", start=RUN_LOCAL_GATE),
    forgery("a module the worker loaded not listed as present", updating("isolation",
                                                                          device_worker_loaded=["sitecustomize"]),
            "say ['sitecustomize']", start=RUN_LOCAL_GATE),
    forgery("a vector present without its finding", updating("isolation", present=["LD_PRELOAD"]),
            "isolation.present is recorded ['LD_PRELOAD'], its findings", start=RUN_LOCAL_GATE),
    forgery("a finding the gate never writes", updating("isolation", findings=["nothing to see"]),
            "isolation.findings[0] 'nothing to see' is not a finding the gate writes", start=RUN_LOCAL_GATE),
    # `allowed` is what the arguments asked
    forgery("vectors allowed though not asked", updating("isolation", allowed=True),
            "isolation.allowed is recorded True, arguments.allow_injection_vectors is False", start=RUN_LOCAL_GATE),
    forgery("vectors asked for and not allowed", updating("arguments", allow_injection_vectors=True),
            "isolation.allowed is recorded False, arguments.allow_injection_vectors is True", start=RUN_LOCAL_GATE),
    # the RECORD checks: verified is recomputed from what they hashed
    forgery("a torch RECORD check verified over a mismatch", updating(
        "device.views.record", problems=["1 file(s) differ from torch's RECORD: torch/x.py"]),
        "device.views.record.verified is recorded True, its measurements say False", start=RUN_LOCAL_GATE),
    forgery("a torch RECORD check that hashed nothing", updating("device.views.record", files=0, bytes=0),
            "device.views.record hashed 0 file(s) of 0 bytes", start=RUN_LOCAL_GATE),
    forgery("the bytecode files uncounted", deleting("device.views.record.bytecode_unlisted"),
            "device.views.record.bytecode_unlisted is missing", start=RUN_LOCAL_GATE),
    forgery("the other distributions' RECORD check verified over a mismatch", updating(
        "device.views.distributions",
        problems=["1 file(s) differ from typing-extensions's RECORD: typing_extensions.py"]),
        "device.views.distributions.verified is recorded True, its measurements say False", start=RUN_LOCAL_GATE),
    forgery("the other distributions matching no loaded file", updating("device.views.distributions", loaded_files=0),
            "device.views.distributions matched 0 loaded files", start=RUN_LOCAL_GATE),
    forgery("the other distributions' RECORD check deleted", deleting("device.views.distributions"),
            "device.views.distributions is missing", start=RUN_LOCAL_GATE),
    # the processes' seccomp state, as the kernel shows it
]


@pytest.mark.parametrize(("start", "edit", "named"), CHECKS + STAGE_SIZES + ISOLATION)
def test_a_gate_result_with_one_fact_forged_under_its_ok_is_not_authentic(start: str, edit: Edit,
                                                                          named: tuple[str, ...]) -> None:
    document = edited(start, edit)
    assert document["ok"] is True  # every flag left as the real run recorded it
    assert_forged(judged(document), *named)


# Facts no rule of the gate's own reads, which the index holds (docs/verdicts.md): fields the gate writes together,
# the build's dist-info folder, the kernel's seccomp states. The result is indexed alone and verified.
INDEXED = [
    forgery("the replace check's missing_reads_tolerated flag deleted beside its counts",
            deleting(f"{REPLACE}.missing_reads_tolerated"), f"{REPLACE}.missing_reads_tolerated is missing beside"),
    forgery("a first replace role's abandoned flag deleted", deleting(f"{REPLACE}.roles.0.abandoned"),
            f"{REPLACE}.roles.0.abandoned is missing beside"),
    forgery("the lock probe's ok deleted beside its attempts", deleting(f"{LOCK}.ok"), f"{LOCK}.ok is missing beside"),
    forgery("the lock probe's refused_while_held deleted beside its attempts", deleting(f"{LOCK}.refused_while_held"),
            f"{LOCK}.refused_while_held is missing beside"),
    forgery("the held attempt's abandoned flag deleted", deleting(f"{LOCK}.while_held.abandoned"),
            f"{LOCK}.while_held.abandoned is missing beside"),
    forgery("the H200 run's lock probe ok deleted beside its attempts", deleting(f"{LOCK}.ok"),
            f"{LOCK}.ok is missing beside", start=CUDA_GATE),
    forgery("the failing writer's old_file_intact flag deleted beside its stages",
            deleting(f"{WRITER}.old_file_intact"), f"{WRITER}.old_file_intact is missing beside"),
    forgery("a deleted loss_decreased flag beside its losses", deleting(f"{TRAINING}.loss_decreased"),
            f"{TRAINING}.loss_decreased is missing beside"),
    forgery("a deleted final loss beside the losses", deleting(f"{TRAINING}.final_loss"),
            f"{TRAINING}.final_loss is missing beside"),
    forgery("a deleted update_rule_ok flag beside its error", deleting(f"{TRAINING}.update_rule_ok"),
            f"{TRAINING}.update_rule_ok is missing beside"),
    forgery("the gate's seccomp state raised alone", _seccomp_raised("gate", "seccomp"),
            "isolation.processes.gate.seccomp is "),
    forgery("the device worker's seccomp state raised alone", _seccomp_raised("workers.device_compute", "seccomp"),
            "isolation.processes.workers.device_compute.seccomp is "),
    forgery("the gate's parent's seccomp filters raised alone", _seccomp_raised("gate_parent", "seccomp_filters"),
            "isolation.processes.gate.seccomp_filters is 0, fewer than"),
    forgery("a dist-info folder naming another build", _dist_info_renamed, "device.torch_build.dist_info is '"),
    forgery("the H200 run's dist-info folder of another release", _dist_info_of_release_0,
            "device.torch_build.dist_info is '", start=CUDA_GATE),
]


@pytest.mark.parametrize(("start", "edit", "named"), INDEXED)
def test_a_gate_result_with_a_fact_only_the_index_holds_forged_is_not_authentic(tmp_path, start: str, edit: Edit,
                                                                                named: tuple[str, ...]) -> None:
    document = edited(start, edit)
    assert document["ok"] is True
    assert_refused(indexed_alone(tmp_path, document, start), *named)


# --- the controls -----------------------------------------------------------------------------------------

GATE_RESULTS = sorted(p.relative_to(EVIDENCE).as_posix() for p in EVIDENCE.rglob("*.json")
                      if b'"kernodeck.platform-runtime.result/v1"' in p.read_bytes())


@pytest.mark.parametrize("start", GATE_RESULTS)
def test_each_committed_gate_result_is_judged_as_it_ran(start: str) -> None:
    """Every committed gate result (v1 and v2, local, NFS VM, CUDA) passes, but the one that ran with no visible
    GPU, which fails for that reason only and is never called forged."""
    judgement = judged(committed(start))
    if start.startswith("cuda/no-visible-gpu/"):
        assert judgement.forged == [] and not judgement.ok
        assert judgement.reasons[0].startswith("checks.device_compute failed: CUDA requested"), judgement.reasons
    else:
        assert_passes(judgement)


def test_a_failing_check_recorded_as_failing_is_authentic_and_fails() -> None:
    """The other way round: a measurement that fails, with its flags saying so, is a plain failure."""
    document = committed(RUN_LOCAL_GATE)
    document["checks"]["concurrent_replace"].update(partial_reads=7, ok=False, reason="readers saw 7 partial")
    document.update(ok=False, exit_code=1, failures=["concurrent_replace: readers saw 7 partial"])
    judgement = judged(document)
    assert judgement.forged == []
    assert_fails(judgement, "checks.concurrent_replace.partial_reads is 7")


def test_a_version_1_result_without_the_later_fields_is_judged_by_its_own_version() -> None:
    old = committed(CUDA_GATE)
    assert "schema_version" not in old and "killed_writer" not in old["checks"]["failing_writer"]
    assert_passes(judged(old))
