"""A run's outcomes written into the gate's result, and the result judged on them. Each finished child becomes
the check the result records: the measurements it reported, `ok` set by the check's rule in core.verdicts (the
judge recomputes it from the same measurements, never from the worker's word), and a reason worded for a reader
with the run's local paths redacted; the device check's report is held against the gate's own views (the
installed build, the libraries mapped into the worker, the modules loaded at its start-up). Then the
requirements and the result-level rules judge the whole, and the final times, once, by the rules the judge
applies to them in the recorded result (core.verdicts.FINAL_TIME_RULES)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from core import collectives, start_up_rules, training_stack, trust, verdicts
from core.platforms import os_facts

from platform_runtime import (
    children,
    collective_record,
    device_views,
    isolation,
    startup,
    torch_build,
    training_record,
)
from platform_runtime.claims import MPS_FALLBACK, evaluate
from platform_runtime.early_start import wall_now
from platform_runtime.result import EXIT_FAILED, EXIT_OK, EXIT_USAGE, redact_local_paths

if TYPE_CHECKING:
    from platform_runtime.gate import Options

DEVICE_FIELDS = ("resolved", "type", "torch", "load_safety", "cuda", "mps", "ran_on", "peak_allocated_bytes",
                 "phases")
DEVICE_CHECK_FIELDS = ("stage", "matmul", "training", "checkpoint", "ran_on", "peak_allocated_bytes", "phases",
                       "error")


def reason(outcome: children.ChildOutcome, private: list[Path]) -> str:
    """Why a child failed: how it ended (with its last error line) or what it reported, local paths redacted."""
    failure = outcome.failure()
    if failure and not outcome.timed_out and outcome.stderr_tail.strip():
        last = outcome.stderr_tail.strip().splitlines()[-1][:300]
        failure += f" (last error line: {last})"
    if failure is None:
        failure = outcome.payload.get("reason") or "failed"
    return redact_local_paths(failure, private)


class ResultRecorder:
    """Writes each check's record into the result, and its reason into `failures` when its rule finds problems;
    then judges the result as a whole."""

    def __init__(self, options: Options, torch: isolation.TorchLocation, build: dict | None,
                 views: device_views.DeviceViews, deadline: children.Deadline, private: list[Path]) -> None:
        """deadline: the checks' deadline (the device views' reads stop at it)."""
        self.options, self.torch, self.build, self.views = options, torch, build, views
        self.deadline, self.private = deadline, private

    def record(self, result: dict, failures: list[str], outcome: children.ChildOutcome, workspace: Path) -> None:
        if outcome.name == "collectives":
            self._record_collectives(result, failures, outcome, workspace / "collectives")
            return
        if outcome.name in training_stack.CHECKS:
            self._record_training(result, failures, outcome, workspace / "training_stack" / outcome.name)
            return
        check: dict = {"ok": False, "duration_s": outcome.duration_s, "reason": None}
        if outcome.blocked:
            check["blocked_at_deadline"] = outcome.blocked
        if outcome.abandoned:
            check["abandoned"] = True
            check["abandoned_processes"] = outcome.stuck
        if outcome.payload is not None:
            details = dict(outcome.payload)
            if outcome.name == "device_compute":
                details = self._record_device(result, details)
            details.pop("ok", None)
            details.pop("reason", None)
            check.update(details)
        # The recorded ok is the rule's, computed from the measurements the check records (the judge recomputes
        # it); the worker's own problems only word the reason.
        problems = verdicts.check_problems(outcome.name, check)
        check["ok"] = not problems
        if not check["ok"]:
            worker_ok = outcome.payload is not None and outcome.payload.get("ok") is True
            check["reason"] = "; ".join(problems[:3]) if worker_ok else reason(outcome, self.private)
            if outcome.name == "device_compute" and result["device"].get("build_cross_check"):
                check["reason"] = "; ".join([*result["device"]["build_cross_check"], check["reason"]])
            failures.append(f"{outcome.name}: {check['reason']}")
        result["checks"][outcome.name] = check

    def _record_device(self, result: dict, details: dict) -> dict:
        """The device worker's facts into result["device"], held against the gate's own views; the check's part."""
        result["device"].update({k: details.get(k) for k in DEVICE_FIELDS})
        # The worker's word is checked against the installed build, whatever it said: a result-level fact
        # (core.verdicts.build_cross_check), which fails the run.
        missing = isolation.missing_torch_reason(self.torch)
        cross = [missing] if missing else []
        cross += torch_build.cross_check(self.build, details.get("torch"), details.get("type"))
        result["device"]["views"] = self.views.record(details, result["isolation"], timeout=self.deadline.remaining())
        cross += trust.device_view_problems(result["device"])
        result["device"]["build_cross_check"] = cross
        loaded = details.get("startup_modules")
        result["isolation"]["device_worker_loaded"] = loaded
        accepted = start_up_rules.accepted_modules(result["isolation"])  # the platform's own (Debian's sitecustomize)
        for name in loaded if isinstance(loaded, list) else []:  # the judge derives `present` from it too
            if name in startup.START_UP_MODULES and name not in result["isolation"]["present"] and name not in accepted:
                result["isolation"]["present"].append(name)
                result["isolation"]["findings"].append(f"a {name} was loaded into the device worker at start-up")
        return {k: details.get(k) for k in DEVICE_CHECK_FIELDS}

    def _record_collectives(self, result: dict, failures: list[str], outcome: children.ChildOutcome,
                            folder: Path) -> None:
        """The launcher's facts and every rank's progress; `ok` is the rule's, recomputed by the judge."""
        requested = self.options.collectives
        measured = collective_record.record(folder, requested if requested == "auto" else int(requested),
                                            outcome.payload, outcome.timed_out, self.options.collectives_deadline_s)
        check: dict = {"ok": False, "duration_s": outcome.duration_s, "reason": None, **measured}
        if outcome.abandoned:
            check["abandoned"] = True
        if outcome.global_deadline:  # the gate's --timeout cut the group before its own deadline
            check["killed_by"] = "the gate's --timeout"
        problems = collectives.problems(check)
        if outcome.payload is None and not outcome.timed_out:
            problems.insert(0, reason(outcome, self.private))
        check["ok"] = not problems
        if problems:
            check["reason"] = redact_local_paths(collective_record.summary_reason(check, problems), self.private)
            failures.append(f"collectives: {check['reason']}")
        result["checks"]["collectives"] = check

    def _record_training(self, result: dict, failures: list[str], outcome: children.ChildOutcome,
                         folder: Path) -> None:
        check = training_check(outcome, folder, self.private)
        if not check["ok"]:
            failures.append(f"{outcome.name}: {check['reason']}")
        result["checks"][outcome.name] = check

    def judge(self, result: dict, failures: list[str], started: float) -> None:
        """The requirements, on what ran, and every result-level rule but the final times' (finish() applies
        those once, to the times the result records: applied here too, they word the one problem again with
        this moment's duration_s). started: the monotonic start duration_s counts from."""
        environment = {MPS_FALLBACK: bool(os.environ.get(MPS_FALLBACK))}  # the parent's own view
        held = evaluate(self.options.requirements, result["platform"], result["device"],
                        result["checks"]["device_compute"]["ok"], result["filesystem"], environment,
                        result["checks"].get("collectives"), injection=trust.injection_refusal(result),
                        facts=os_facts(result))
        result["requirements"] = held
        failures += [f"requirement {v['name']} not met: {v['reason']}" for v in held if not v["ok"]]
        stamp_times(result, started)  # the rules that read them need them present; finish() writes the final ones
        failures += verdicts.result_problems(result, skip=verdicts.FINAL_TIME_RULES)

    def finish(self, result: dict, failures: list[str], exit_code: int, started: float) -> dict:
        """The final times, judged by their rules (not after a usage error: nothing ran), then `ok` and the exit
        code: a run with a failure never exits 0."""
        stamp_times(result, started)
        if exit_code != EXIT_USAGE:
            failures += verdicts.final_time_problems(result)
        if failures and exit_code == EXIT_OK:
            exit_code = EXIT_FAILED
        result.update(ok=not failures and exit_code == EXIT_OK, exit_code=exit_code, failures=failures)
        return result


def training_check(outcome: children.ChildOutcome, folder: Path, private: list[Path]) -> dict:
    """A training-stack check's record: its worker's measurements (or, after a kill, the stage its progress files
    name), `ok` by the check's rule in core.training_stack (which the judge recomputes), and a reason when not ok."""
    measured = training_record.record(outcome.name, folder, outcome.payload, outcome.timed_out,
                                      round(outcome.timeout_s, 3))
    check: dict = {"ok": False, "duration_s": outcome.duration_s, "reason": None, **measured}
    if outcome.blocked:
        check["blocked_at_deadline"] = outcome.blocked
    if outcome.abandoned:
        check["abandoned"] = True
        check["abandoned_processes"] = outcome.stuck
    if outcome.global_deadline:  # the gate's --timeout cut it before its own deadline
        check["killed_by"] = "the gate's --timeout"
    problems = verdicts.check_problems(outcome.name, check)
    if outcome.payload is None and not outcome.timed_out:
        problems.insert(0, reason(outcome, private))
    check["ok"] = not problems
    if problems:
        check["reason"] = redact_local_paths("; ".join(problems[:4]), private)[:1500]
    return check


def stamp_times(result: dict, started: float) -> None:
    """duration_s from the run's monotonic start, and finished_at read beside it (core.time_views holds the two)."""
    result.update(duration_s=round(time.monotonic() - started, 3), finished_at=wall_now())
