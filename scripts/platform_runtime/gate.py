"""The gate's orchestration: a workspace on the work dir's file system, the device check and the three
file-system checks in parallel isolated child processes with deadlines, cleanup within its own deadline
(even after the global --timeout), then the requirements judged on what ran and on the torch build the
gate's interpreter finds (platform_runtime.result_records writes each check and judges the result)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from core import verdicts
from core.contract import GATE_SCHEMA_ID
from core.gate_parameters import MIN_DISTINCT_VERSIONS
from core.provenance import git_state, github_facts, platform_facts
from core.record_rules import FS_CHECKS, HUNG_CLEANUP_S
from core.result_format import SCHEMA_VERSION
from core.training_stack import CHECKS as TRAINING_CHECKS
from core.training_stack import DEFAULT_TIMEOUT_S as DEFAULT_TRAINING_TIMEOUT_S

from platform_runtime import (
    budget,
    children,
    device_views,
    early_start,
    interpreter_state,
    isolation,
    result_records,
    startup,
    torch_build,
    worker_watch,
)
from platform_runtime.binary_arch import record as record_binaries
from platform_runtime.claims import NFS_TYPES, Requirements, conflicts
from platform_runtime.request import device_to_resolve
from platform_runtime.result import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    private_paths,
    redact_local_paths,
)
from platform_runtime.sources import REPO_ROOT, hash_sources

# The device worker's deadline with the default --timeout (600 s) is Options.device_timeout_s (300 s); it grows with
# a longer --timeout by this share, as each file-system check's does (children.FS_CHECK_SHARE).
DEVICE_CHECK_SHARE = 0.5


@dataclass
class Options:
    device: str = "auto"
    requirements: Requirements = field(default_factory=lambda: Requirements((), None, None))
    work_dir: Path = Path(".")
    work_dir_given: bool = False
    keep_workspace: bool = False
    timeout_s: float = 600.0
    cleanup_timeout_s: float = 30.0
    device_timeout_s: float = 300.0
    fs_timeout_s: float = children.FS_CHECK_TIMEOUT_S
    probe_timeout_s: float = 30.0
    collectives: str | None = None  # a number of ranks, "auto", or None: the check is not run
    collectives_timeout_s: float = 60.0  # the process group's timeout (init and every op)
    collectives_port: int = 0  # 0: the launcher picks a free loopback port

    @property
    def collectives_deadline_s(self) -> float:
        """The collective check's own deadline: the group's timeout twice (init, then one op) and the time to
        start the launcher and the ranks, each importing torch; the whole group is killed at it."""
        return 2 * self.collectives_timeout_s + 20.0
    training_stack: bool = False  # the compile, autocast and dataloader checks (core.training_stack)
    training_stack_timeout_s: float = DEFAULT_TRAINING_TIMEOUT_S  # each of those checks' own deadline
    allow_injection_vectors: bool = False

    def fs_check_timeout(self) -> float:
        """Each file-system check's own deadline: its default, or its share of a longer --timeout."""
        return max(self.fs_timeout_s, self.timeout_s * children.FS_CHECK_SHARE)

    def device_check_timeout(self) -> float:
        """The device worker's own deadline: its default, or its share of a longer --timeout, as the file-system
        checks' (a slow machine given more time, such as a loaded host's VM importing torch under emulation, gives
        it to the device check too instead of ending it with no answer at a fixed deadline)."""
        return max(self.device_timeout_s, self.timeout_s * DEVICE_CHECK_SHARE)


def arguments_of(options: Options) -> dict:
    return {
        "device": options.device, "require": list(options.requirements.platforms),
        "require_device": options.requirements.device, "require_filesystem": options.requirements.filesystem,
        "work_dir": "given" if options.work_dir_given else "current-directory",
        "keep_workspace": options.keep_workspace, "timeout_s": options.timeout_s,
        "cleanup_timeout_s": options.cleanup_timeout_s, "collectives": options.collectives,
        "collectives_timeout_s": options.collectives_timeout_s if options.collectives else None,
        "training_stack": options.training_stack,
        "training_stack_timeout_s": options.training_stack_timeout_s if options.training_stack else None,
        "allow_injection_vectors": options.allow_injection_vectors,
    }


_now = early_start.wall_now


def skeleton(options: Options, requested_device: str, started_at: str | None = None) -> dict:
    """The result before anything ran: every required field, ok false. started_at: the wall clock read with the
    monotonic start duration_s counts from (now, when not given)."""
    return {
        "schema": GATE_SCHEMA_ID, "schema_version": SCHEMA_VERSION, "ok": False, "exit_code": EXIT_FAILED,
        "failures": [],
        "started_at": started_at or _now(), "duration_s": 0.0,
        "arguments": arguments_of(options), "requirements": [], "platform": platform_facts(),
        "device": {"requested": requested_device, "resolved": None, "type": None},
        "filesystem": {"type": None, "method": "not-probed"},
        "checks": {}, "workspace_cleanup": {"status": "not-run", "workspace": None,
                                             "deadline_s": options.cleanup_timeout_s},
        "source": {"files": {}, "git": None}, "github": github_facts(),
    }



class Gate:
    def __init__(self, options: Options, early: early_start.EarlyDevice | None = None) -> None:
        """early: the device worker the entry script started before importing this module (None: started here)."""
        self.options = options
        self.early = early
        # --timeout counts from this process's start and ends at its exit: the checks' deadline leaves the
        # kills, the cleanup and the result inside it (platform_runtime.budget).
        self.budget = budget.Budget(options.timeout_s, options.cleanup_timeout_s)
        self.deadline = self.budget.checks
        self.running: list = [] if early is None else [early.process]  # live Popen objects, killed on interrupt
        self.private = private_paths(options.work_dir)
        # Only the interpreter's own site-packages, never PYTHONPATH: the one the early device worker was told.
        self.torch = early.torch if early is not None else isolation.locate_torch()
        self.build = torch_build.read_build(self.torch.site_dir)
        self.cleaner = None  # the cleanup worker, started early, waiting for its go (_start_early)
        self.startups: dict[str, dict | None] = {}  # each worker's own start-up facts, by check (_note_startups)
        self.views = device_views.DeviceViews(self.torch.site_dir, self.build)
        self.records = result_records.ResultRecorder(options, self.torch, self.build, self.views, self.deadline,
                                                     self.private)
        # Every worker's /proc status and maps, read from outside while it waits after its report (issue 31).
        self.watch = self.views.watch = worker_watch.WorkerWatch()

    # --- children ---------------------------------------------------------------------------------------

    def _launch(self, name: str, command: list[str], timeout: float, hold: bool = False) -> tuple:
        """Start a child; its timeout is capped by the checks' deadline (the cleanup has its own: _cleanup)."""
        capped, by_global = self.deadline.cap(timeout)
        return self._start(name, command, capped, by_global, hold)

    def _start(self, name: str, command: list[str], capped: float, by_global: bool, hold: bool = False,
               started: float | None = None) -> tuple:
        """started: the monotonic instant its timeout counts from (now, after the spawn, when not given).
        Every worker waits after its report until _collect has looked at it (worker_watch.held)."""
        process = children.start(worker_watch.held(command), env=startup.worker_environment(), hold=True)
        self.running.append(process)
        return name, process, time.monotonic() if started is None else started, capped, by_global

    def _collect(self, launched: tuple) -> children.ChildOutcome:
        name, process, started, timeout, by_global = launched

        def observe(pid: int, report: dict) -> None:  # while it waits after its report: its maps, its tracer
            if name == "device_compute":
                self.views.observe(pid, report)
            self.watch.observe(name, pid)

        outcome = children.collect_after_report(name, process, started, timeout, by_global, observe,
                                                grace=self.budget.kill_grace)
        self.watch.observe_roles(name, outcome.payload)
        self.running.remove(process)
        self.startups[name] = interpreter_state.take_facts(outcome.payload)
        return outcome

    def _note_startups(self, result: dict) -> None:
        """Every worker's start-up facts into the isolation record, each one not started as asked a vector."""
        if not isinstance(result.get("isolation"), dict):
            return
        if self.views.record_startup is not None:
            self.startups["torch RECORD check"] = self.views.record_startup
        for name, facts in self.startups.items():
            interpreter_state.note_worker(result["isolation"], name, facts)

    def device_to_resolve(self) -> str:
        """--device auto with a required device means that device: its own failure then says why."""
        return device_to_resolve(self.options.device, self.options.requirements)

    def kill_all(self, cleaner: bool = True) -> None:
        """Kill every running child; cleaner=False spares the waiting cleanup worker (a probe that timed out
        still has its workspace removed)."""
        for process in list(self.running):
            children.kill_tree(process)
        if cleaner and self.cleaner is not None:
            children.kill_tree(self.cleaner)
        self.views.stop()

    def _reason(self, outcome: children.ChildOutcome) -> str:
        return result_records.reason(outcome, self.private)

    # --- the run ----------------------------------------------------------------------------------------

    def run(self, take_over: Callable[[], None] | None = None) -> dict:
        """take_over: called first inside the interrupt handling (the entry script's held signals)."""
        options = self.options
        # The run's duration counts from the early device worker's start, so it holds every check's.
        started = self.started = self.early.started if self.early is not None else time.monotonic()
        result = skeleton(options, self.device_to_resolve(), self.early.started_at if self.early is not None else None)
        result["platform"]["binaries"] = record_binaries(self.torch.site_dir)  # machine's 2nd view
        refused = conflicts(options.requirements, options.device)
        workspace_name = self.early.workspace_name if self.early is not None else early_start.workspace_name()
        failures: list[str] = []
        exit_code = EXIT_OK
        if refused and self.early is not None:  # nothing runs for conflicting requirements
            children.kill_tree(self.early.process)
            self.early.process.communicate()
            self.running.remove(self.early.process)
        try:
            if take_over is not None:
                take_over()
            # The device worker is the critical path: it starts before the gate's own bookkeeping (the source
            # hashes, git, the isolation record), which then runs beside its torch import.
            early = None if refused else self._start_early(workspace_name)
            sources, missing_sources = hash_sources()
            failures += [f"source file missing: {path}" for path in missing_sources]
            result["source"] = {"files": sources, "git": git_state(REPO_ROOT)}
            result["isolation"] = startup.record(options.allow_injection_vectors)
            result["device"]["torch_build"] = {
                **(self.build or torch_build.NO_BUILD), "found_in": self.torch.found_in,
                "ignored_copies": list(self.torch.ignored),
                "install": torch_build.read_install(self.torch.site_dir, REPO_ROOT)}
            if refused:
                failures += [f"conflicting requirements: {text}" for text in refused]
                exit_code = EXIT_USAGE
            else:
                exit_code = self._run_checks(result, failures, workspace_name, early)
        except KeyboardInterrupt:
            self.kill_all()
            failures.append("interrupted before the checks finished")
            exit_code = EXIT_INTERRUPTED
        if self.cleaner is not None:  # never told to go (a probe that failed at once): it removes nothing
            children.kill_tree(self.cleaner)
        self._note_startups(result)
        return self.records.finish(result, failures, exit_code, started)

    def _start_early(self, workspace_name: str) -> tuple:
        """The device worker first, then torch's RECORD check and the cleanup worker (which waits for its go,
        so that removing the workspace at the end does not wait for a fresh interpreter)."""
        workspace = self.options.work_dir / workspace_name
        if self.early is None:
            device = self._launch("device_compute", early_start.device_worker_command(
                self.device_to_resolve(), workspace, self.torch), self.options.device_check_timeout(), hold=True)
        else:  # its duration and deadline count from its own start
            capped, by_global = self.deadline.cap(self.options.device_check_timeout())
            device = ("device_compute", self.early.process, self.early.started, capped, by_global)
        self.views.start_record_check()  # torch's files hashed while the worker imports torch
        if not self.options.keep_workspace:
            command = children.worker_command("fs_worker", "cleanup", str(workspace), "--wait-for-go")
            self.cleaner = children.start(command, env=startup.worker_environment(), hold=True)
        return device

    def _run_checks(self, result: dict, failures: list[str], workspace_name: str, device: tuple) -> int:
        workspace = self.options.work_dir / workspace_name
        refused = self._probe(result, failures, device, workspace_name)
        if refused is not None:
            return refused
        result["workspace_cleanup"]["workspace"] = workspace_name
        outcomes = self._run_parallel(device, workspace, result["filesystem"].get("type") in NFS_TYPES)
        for outcome in outcomes:
            self.records.record(result, failures, outcome, workspace)
        global_timeout = any(outcome.global_deadline for outcome in outcomes)
        hung = any(outcome.stuck for outcome in outcomes)
        self._cleanup(result, workspace, failures, after_global_timeout=global_timeout, hung=hung)
        self._note_startups(result)  # before the requirements are judged: a vector refuses them
        self.watch.record(result["isolation"])  # the workers' views, before any requirement is judged
        self.records.judge(result, failures, self.started)
        return EXIT_TIMEOUT if global_timeout else EXIT_OK

    def _probe(self, result: dict, failures: list[str], device: tuple, workspace_name: str) -> int | None:
        """Detect the file system and make the workspace; an exit code when the run cannot go on."""
        probe = self._collect(self._launch(
            "file-system probe", children.worker_command("fs_worker", "probe", str(self.options.work_dir),
                                                         workspace_name), self.options.probe_timeout_s))
        payload = probe.payload or {}
        if payload.get("ok") and probe.returncode == 0:  # its report counts only if it also exited 0 by itself
            result["filesystem"] = payload["filesystem"]
            return None
        self.kill_all(cleaner=False)
        self._collect(device)
        reason = payload.get("reason") or "probe failed"
        if payload.get("ok"):
            reason = f"the file-system probe reported but exited {children.describe_returncode(probe.returncode)}"
        failures.append(self._reason(probe) if probe.failure() else redact_local_paths(reason, self.private))
        if probe.timed_out:  # it may have made the workspace before it hung: try to remove it, or name it
            result["workspace_cleanup"]["workspace"] = workspace_name
            self._cleanup(result, self.options.work_dir / workspace_name, failures, probe.global_deadline)
        if probe.global_deadline:
            return EXIT_TIMEOUT
        return EXIT_USAGE if payload.get("usage_error") else EXIT_FAILED

    def _run_parallel(self, device: tuple, workspace: Path, on_nfs: bool) -> list[children.ChildOutcome]:
        fs_args = {
            "failing_writer": ["failing-writer", str(workspace)],
            "concurrent_replace": ["replace", str(workspace), "--min-versions", str(MIN_DISTINCT_VERSIONS),
                                   *(["--tolerate-missing"] if on_nfs else [])],
            "jsonl_append": ["append", str(workspace)],
        }
        launched = [device]
        for name in FS_CHECKS:
            # The check learns its own deadline, so the roles it starts get what is left of it.
            timeout, by_global = self.deadline.cap(self.options.fs_check_timeout())
            command = children.worker_command("fs_worker", *fs_args[name])
            # Its kill counts from the instant its deadline is read, not from after the spawn: then nothing the
            # check records ran past that deadline (core.outcomes.timing_problems).
            started = time.monotonic()
            command += ["--deadline-at", f"{time.time() + timeout:.3f}"]
            launched.append(self._start(name, command, timeout, by_global, started=started))
        if self.options.collectives:
            launched.append(self._launch("collectives", self._collectives_command(workspace),
                                         self.options.collectives_deadline_s))
        for name in TRAINING_CHECKS if self.options.training_stack else ():
            # Each its own deadline, told to the worker so the data loader ends its own wait before the kill.
            timeout, by_global = self.deadline.cap(self.options.training_stack_timeout_s)
            started = time.monotonic()
            command = self._training_command(name, workspace, time.time() + timeout)
            launched.append(self._start(name, command, timeout, by_global, started=started))
        pool = ThreadPoolExecutor(max_workers=len(launched))  # each duration ends when its own child does
        try:
            return list(pool.map(self._collect, launched))
        except BaseException:  # an interrupt: the children must die before the collector threads can end
            self.kill_all()
            raise
        finally:
            pool.shutdown(wait=True)

    def _collectives_command(self, workspace: Path) -> list[str]:
        resolved = self.device_to_resolve()
        device = "auto" if resolved == "auto" else ("cuda" if resolved.startswith("cuda") else "cpu")
        args = [str(workspace / "collectives"), self.options.collectives, device, str(self.options.collectives_port),
                str(self.options.collectives_timeout_s)]
        if self.torch.site_dir is not None:
            args.append(str(self.torch.site_dir))
        return children.worker_command("collective_worker", *args)

    def _training_command(self, name: str, workspace: Path, deadline_at: float) -> list[str]:
        args = [name, str(workspace / "training_stack" / name), self.device_to_resolve(), f"{deadline_at:.3f}"]
        if self.torch.site_dir is not None:
            args.append(str(self.torch.site_dir))
        return children.worker_command("training_worker", *args)

    def _cleanup(self, result: dict, workspace: Path, failures: list[str], after_global_timeout: bool,
                 hung: bool = False) -> None:
        """Remove the workspace within the cleanup's own deadline, which the checks' deadline does not cut: it
        runs in the slot the budget keeps for it before --timeout (platform_runtime.budget), and gets the whole
        --cleanup-timeout when the checks left that much. When a check was left in uninterruptible sleep the work
        dir's file system is not answering (a hard NFS mount whose server is gone): the cleanup then gets a short
        deadline, so the gate still returns."""
        cleanup = result["workspace_cleanup"]
        cleanup["after_global_timeout"] = after_global_timeout
        wanted = min(self.options.cleanup_timeout_s, HUNG_CLEANUP_S) if hung else self.options.cleanup_timeout_s
        deadline, by_budget = self.budget.cleanup_deadline(wanted)
        cleanup["deadline_s"] = round(deadline, 3)
        cleanup["deadline_cut_by_budget"] = by_budget  # the judge's second view of deadline_s (core.record_rules)
        if hung:
            cleanup["file_system_hung"] = True
        if self.options.keep_workspace:
            cleanup["status"] = "retained"
            result["checks"]["workspace_cleanup"] = {
                "ok": True, "duration_s": 0.0, "reason": None, "status": "retained",
                "note": "kept by --keep-workspace: not cleaned; whoever keeps it must verify its removal"}
            return
        process, self.cleaner, go = self.cleaner, None, b"go\n"
        if process is None or process.poll() is not None:  # none waiting (or it died): a fresh one, no go needed
            process, go = children.start(children.worker_command("fs_worker", "cleanup", str(workspace)),
                                         env=startup.worker_environment()), None
        self.watch.observe("workspace_cleanup", process.pid)  # waiting for its go: already all it maps
        outcome = children.collect("workspace_cleanup", process, time.monotonic(), deadline, by_budget,
                                   grace=lambda: budget.CLEANUP_GRACE_S, input=go)
        self.startups["workspace_cleanup"] = interpreter_state.take_facts(outcome.payload)
        removed = bool(outcome.payload and outcome.payload.get("ok"))
        status = "cleaned" if removed else ("timeout" if outcome.timed_out else "failed")
        cleanup["status"] = status
        check = {"ok": False, "duration_s": outcome.duration_s, "reason": None, "status": status}
        if outcome.blocked:
            check["blocked_at_deadline"] = outcome.blocked
        ok = check["ok"] = not verdicts.check_problems("workspace_cleanup", check)
        if outcome.abandoned:
            check["abandoned"] = True
            check["abandoned_processes"] = outcome.stuck
        if not ok:
            check["reason"] = self._reason(outcome) + f" (the workspace {workspace.name} is left in the work dir)"
            failures.append(f"workspace_cleanup: {check['reason']}")
        result["checks"]["workspace_cleanup"] = check


def run(options: Options, early: early_start.EarlyDevice | None = None) -> dict:
    return Gate(options, early).run()


def usage_result(message: str) -> dict:
    """The result for arguments that could not be parsed: nothing ran; `arguments` holds the defaults."""
    result = skeleton(Options(), "auto")
    sources, _ = hash_sources()
    result["platform"]["binaries"] = record_binaries(None)  # torch's _C is not looked for: nothing ran
    result.update(exit_code=EXIT_USAGE, failures=[f"invalid arguments: {message}"], usage_error=message,
                  source={"files": sources, "git": git_state(REPO_ROOT)}, finished_at=_now())
    return result
