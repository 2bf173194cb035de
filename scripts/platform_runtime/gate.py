"""The gate's orchestration: a workspace on the work dir's file system, the device check and the three
file-system checks in parallel child processes with deadlines, cleanup within its own deadline, then the
requirements judged on what ran."""

from __future__ import annotations

import datetime as dt
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from core.provenance import git_state, github_facts, platform_facts

from platform_runtime import children
from platform_runtime.requirements import NFS_TYPES, Requirements, conflicts, evaluate
from platform_runtime.result import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    SCHEMA_ID,
    private_paths,
    scrub,
)
from platform_runtime.sources import REPO_ROOT, hash_sources

FS_CHECKS = ("failing_writer", "concurrent_replace", "jsonl_append")


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
    fs_timeout_s: float = 120.0
    probe_timeout_s: float = 30.0
    min_versions: int = 10


class Gate:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.deadline = children.Deadline(options.timeout_s)
        self.running: list = []  # live Popen objects, killed on interrupt
        self.private = private_paths(options.work_dir)

    # --- children ---------------------------------------------------------------------------------------

    def _launch(self, name: str, command: list[str], timeout: float) -> tuple:
        capped, by_global = self.deadline.cap(timeout)
        process = children.start(command)
        self.running.append(process)
        return name, process, time.monotonic(), capped, by_global

    def _collect(self, launched: tuple) -> children.ChildOutcome:
        name, process, started, timeout, by_global = launched
        outcome = children.collect(name, process, started, timeout, by_global)
        self.running.remove(process)
        return outcome

    def device_to_resolve(self) -> str:
        """--device auto with a required device means that device: its own failure then says why."""
        wanted = self.options.requirements.device_types()
        if self.options.device == "auto" and len(wanted) == 1:
            return next(iter(wanted))
        return self.options.device

    def kill_all(self) -> None:
        for process in list(self.running):
            children.kill_tree(process)

    def _reason(self, outcome: children.ChildOutcome) -> str:
        failure = outcome.failure()
        if failure and not outcome.timed_out and outcome.stderr_tail.strip():
            last = outcome.stderr_tail.strip().splitlines()[-1][:300]
            failure += f" (last error line: {last})"
        if failure is None:
            failure = outcome.payload.get("reason") or "failed"
        return scrub(failure, self.private)

    # --- the run ----------------------------------------------------------------------------------------

    def run(self) -> dict:
        options = self.options
        started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        started = time.monotonic()
        sources, missing_sources = hash_sources()
        result: dict = {
            "schema": SCHEMA_ID, "ok": False, "exit_code": EXIT_FAILED, "failures": [],
            "started_at": started_at, "duration_s": 0.0,
            "arguments": {
                "device": options.device, "require": list(options.requirements.platforms),
                "require_device": options.requirements.device,
                "require_filesystem": options.requirements.filesystem,
                "work_dir": "given" if options.work_dir_given else "current-directory",
                "keep_workspace": options.keep_workspace, "timeout_s": options.timeout_s,
                "cleanup_timeout_s": options.cleanup_timeout_s,
            },
            "requirements": [], "platform": platform_facts(),
            "device": {"requested": self.device_to_resolve(), "resolved": None, "type": None},
            "filesystem": {"type": None, "method": "not-probed"},
            "checks": {}, "workspace_cleanup": {"status": "not-run", "workspace": None,
                                                 "deadline_s": options.cleanup_timeout_s},
            "source": {"files": sources, "git": git_state(REPO_ROOT)}, "github": github_facts(),
        }
        failures: list[str] = [f"source file missing: {path}" for path in missing_sources]
        exit_code = EXIT_OK
        try:
            refused = conflicts(options.requirements, options.device)
            if refused:
                failures += [f"conflicting requirements: {text}" for text in refused]
                exit_code = EXIT_USAGE
            else:
                exit_code = self._run_checks(result, failures)
        except KeyboardInterrupt:
            self.kill_all()
            failures.append("interrupted before the checks finished")
            exit_code = EXIT_INTERRUPTED
        if failures and exit_code == EXIT_OK:
            exit_code = EXIT_FAILED
        result.update(ok=not failures and exit_code == EXIT_OK, exit_code=exit_code, failures=failures,
                      duration_s=round(time.monotonic() - started, 3))
        return result

    def _run_checks(self, result: dict, failures: list[str]) -> int:
        options = self.options
        workspace_name = f"platform-runtime-{secrets.token_hex(6)}"
        workspace = options.work_dir / workspace_name
        # The device worker starts now, beside the probe, so importing torch overlaps everything else.
        device_command = children.worker_command("device_worker", self.device_to_resolve(), str(workspace / "device"))
        device = self._launch("device_compute", device_command, options.device_timeout_s)
        probe = self._collect(self._launch(
            "file-system probe", children.worker_command("fs_worker", "probe", str(options.work_dir), workspace_name),
            options.probe_timeout_s))
        payload = probe.payload or {}
        if not payload.get("ok"):
            self.kill_all()
            self._collect(device)
            failures.append(self._reason(probe) if probe.failure() else scrub(payload.get("reason") or "probe failed",
                                                                              self.private))
            if probe.global_deadline:
                return EXIT_TIMEOUT
            return EXIT_USAGE if payload.get("usage_error") else EXIT_FAILED
        result["filesystem"] = payload["filesystem"]
        result["workspace_cleanup"]["workspace"] = workspace_name

        fs_args = {
            "failing_writer": ["failing-writer", str(workspace)],
            "concurrent_replace": ["replace", str(workspace), "--min-versions", str(options.min_versions),
                                   *(["--tolerate-missing"] if payload["filesystem"].get("type") in NFS_TYPES
                                     else [])],
            "jsonl_append": ["append", str(workspace)],
        }
        launched = [device]
        launched += [self._launch(name, children.worker_command("fs_worker", *fs_args[name]), options.fs_timeout_s)
                     for name in FS_CHECKS]
        pool = ThreadPoolExecutor(max_workers=len(launched))  # each duration ends when its own child does
        try:
            outcomes = list(pool.map(self._collect, launched))
        except BaseException:  # an interrupt: the children must die before the collector threads can end
            self.kill_all()
            raise
        finally:
            pool.shutdown(wait=True)
        global_timeout = any(outcome.global_deadline for outcome in outcomes)

        device_payload: dict = {}
        for outcome in outcomes:
            check = {"ok": False, "duration_s": outcome.duration_s, "reason": None}
            if outcome.payload is not None:
                details = dict(outcome.payload)
                if outcome.name == "device_compute":
                    device_payload = details
                    details = {k: details.get(k) for k in ("stage", "matmul", "training", "checkpoint", "ran_on",
                                                           "peak_allocated_bytes")}
                else:
                    details.pop("ok", None)
                details.pop("reason", None)
                check.update(details)
                check["ok"] = outcome.payload.get("ok") is True
            if not check["ok"]:
                check["reason"] = self._reason(outcome)
                failures.append(f"{outcome.name}: {check['reason']}")
            result["checks"][outcome.name] = check
        result["device"].update({k: device_payload.get(k) for k in
                                 ("resolved", "type", "torch", "load_safety", "cuda", "mps", "ran_on",
                                  "peak_allocated_bytes")})

        cleanup_status = self._cleanup(result, workspace, failures)
        global_timeout = global_timeout or cleanup_status == "global-timeout"
        verdicts = evaluate(options.requirements, result["platform"]["system"], result["device"],
                            result["checks"]["device_compute"]["ok"], result["filesystem"])
        result["requirements"] = verdicts
        failures += [f"requirement {v['name']} not met: {v['reason']}" for v in verdicts if not v["ok"]]
        return EXIT_TIMEOUT if global_timeout else EXIT_OK

    def _cleanup(self, result: dict, workspace: Path, failures: list[str]) -> str:
        cleanup = result["workspace_cleanup"]
        if self.options.keep_workspace:
            cleanup["status"] = "retained"
            result["checks"]["workspace_cleanup"] = {
                "ok": True, "duration_s": 0.0, "reason": None, "status": "retained",
                "note": "kept by --keep-workspace: not cleaned; whoever keeps it must verify its removal"}
            return "retained"
        outcome = self._collect(self._launch("workspace_cleanup",
                                             children.worker_command("fs_worker", "cleanup", str(workspace)),
                                             self.options.cleanup_timeout_s))
        ok = bool(outcome.payload and outcome.payload.get("ok"))
        status = "cleaned" if ok else ("timeout" if outcome.timed_out else "failed")
        cleanup["status"] = status
        check = {"ok": ok, "duration_s": outcome.duration_s, "reason": None, "status": status}
        if not ok:
            check["reason"] = self._reason(outcome)
            failures.append(f"workspace_cleanup: {check['reason']}")
        result["checks"]["workspace_cleanup"] = check
        return "global-timeout" if outcome.global_deadline else status


def run(options: Options) -> dict:
    return Gate(options).run()
