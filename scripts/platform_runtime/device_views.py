"""The views of the device worker's torch that the worker cannot forge, taken by the gate's parent: torch's
files against its RECORD (hashed in a thread while the worker imports torch), the libraries the worker really
mapped (/proc/<pid>/maps, read while it waits after its report), and on CUDA the kernel driver's list of
GPUs. rules.trust judges what they recorded."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from common.strict_json import parse_strict

from platform_runtime import (
    children,
    dependencies,
    driver_access,
    driver_files,
    interpreter_layout,
    interpreter_state,
    loaded_files,
    nvidia_driver,
    procmaps,
    startup,
    torch_record,
    worker_watch,
)
from platform_runtime.isolation import torch_search_dirs

NOT_CHECKED = {"verified": False, "distributions": [], "files": 0, "bytes": 0, "loaded_files": 0,
               "bytecode_compared": 0, "not_checked": [], "duration_s": 0.0, "after_report_s": 0.0}


class DeviceViews:
    def __init__(self, site_dir: Path | None, build: dict | None) -> None:
        self.site_dir = site_dir
        self.dist_info = (build or {}).get("dist_info")
        self.mappings: list[procmaps.Mapping] | None = None
        self.open_files: list[str] | None = None
        self.seen: dict | None = None
        self._record: dict | None = None
        self._dependencies: dict | None = None  # dependencies.verify_required's report, from the same process
        self._loaded: dict | None = None  # loaded_files.check's report, made after the worker's
        self._loaded_thread: threading.Thread | None = None
        self._thread: threading.Thread | None = None
        self._process = None
        self.record_startup: dict | None = None  # the RECORD check process's own start-up facts
        self.watch = None  # platform_runtime.worker_watch.WorkerWatch: the RECORD check's process is looked at too

    def start_record_check(self) -> None:
        """Hash torch's files in a process of its own at the file-system workers' low weight (in this process it
        took a full share of the CPU beside the device worker, the gate's critical path), collected by a daemon
        thread (a hung file system must not keep the gate from exiting)."""
        command = children.worker_command("torch_record", str(self.site_dir or ""), self.dist_info or "")
        watch = self.watch
        self._process = children.start(command if watch is None else worker_watch.held(command),
                                       env=startup.worker_environment(), hold=watch is not None)

        def check() -> None:
            if watch is None:
                out, _ = self._process.communicate()
            else:  # it waits after its report until its status and maps are read (record_check kills it at the end)
                outcome = children.collect_after_report("torch_record", self._process, time.monotonic(), 86400.0,
                                                        False, lambda pid, _: watch.observe("torch_record", pid))
                out = json.dumps(outcome.payload).encode() if outcome.payload is not None else b""
            try:
                report = parse_strict(out)
            except ValueError:
                report = None
            if not isinstance(report, dict) or self._process.returncode != 0:
                ended = children.describe_returncode(self._process.returncode)
                report = {"verified": False, "files": 0, "bytes": 0, "duration_s": 0.0,
                          "problems": [f"the RECORD check's process ended {ended} without a report"]}
            self.record_startup = interpreter_state.take_facts(report)  # the gate judges how it was started
            required = report.pop(torch_record.DEPENDENCIES_KEY, None)
            self._dependencies = required if isinstance(required, dict) else None
            self._record = report

        self._thread = threading.Thread(target=check, name="torch-record", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Kill the RECORD check's process (an interrupted gate leaves nothing running)."""
        if self._process is not None and self._process.poll() is None:
            children.kill_tree(self._process)

    def record_check(self, timeout: float) -> dict:
        """The RECORD check's report, waiting at most `timeout` seconds (the gate's deadline) for it."""
        if self._thread is None:
            self._dependencies = dependencies.verify_required(torch_search_dirs(), self.site_dir, self.dist_info)
            return torch_record.verify(self.site_dir, self.dist_info)
        self._thread.join(timeout=max(timeout, 0.0))
        if self._record is None:
            children.kill_tree(self._process)
            return {"verified": False, "files": 0, "bytes": 0, "duration_s": round(timeout, 3),
                    "problems": ["torch's files were still being hashed against its RECORD at the gate's deadline"]}
        return self._record

    def observe(self, pid: int, report: dict | None = None) -> None:
        """Called while the device worker waits after its report: what it has mapped, from outside; then the
        files it loaded are matched to their distributions in a thread, beside the checks still running."""
        text = procmaps.read_maps(pid)
        self.mappings = procmaps.parse_maps(text) if text else None
        self.open_files = driver_access.open_targets(pid)
        # what the driver files are, while the worker holds them, not only what they are named
        # (platform_runtime.driver_files)
        self.seen = {"device_nodes": driver_files.device_nodes(pid, driver_access.DRIVER_DEVICE),
                     "maps_text": text or "", "machine": driver_files.interpreter_machine(pid)}
        self._loaded_thread = threading.Thread(target=self._check_loaded, args=(report or {},), name="loaded-files",
                                               daemon=True)
        self._loaded_thread.start()

    def _required(self) -> list[dict]:
        """The distributions checked before the report, once the RECORD check's process has given them."""
        if self._thread is not None:
            self._thread.join()  # a daemon thread: record_check's deadline kills the process this waits on
        required = self._dependencies
        checked = required["distributions"] if isinstance(required, dict) and isinstance(
            required.get("distributions"), list) else []
        # torch's own files are views.record's: hashed once, in the RECORD check's process.
        return checked + ([{"site": str(self.site_dir), "dist_info": self.dist_info}] if self.dist_info else [])

    def _check_loaded(self, report: dict) -> None:
        started = time.monotonic()
        worker = report.get("loaded_files")
        paths = [p for p in worker if isinstance(p, str)] if isinstance(worker, list) else []
        paths += [m.path for m in self.mappings or []]
        paths += [f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)]
        loaded = loaded_files.check(paths, torch_search_dirs(), self._required, interpreter_layout.stdlib_dirs())
        if not isinstance(worker, list):
            loaded["problems"].append("the device worker reported no list of the files it loaded")
        loaded["after_report_s"] = round(time.monotonic() - started, 3)
        self._loaded = loaded

    def _lib_dir(self) -> Path | None:
        return self.site_dir / "torch" / "lib" if self.site_dir is not None else None

    def _mapped(self, isolation: dict) -> dict:
        if not sys.platform.startswith("linux"):
            return {"observed": "not-linux", "torch_lib": []}
        if self.mappings is None:
            return {"observed": "unreadable", "torch_lib": []}
        lib_dir = self._lib_dir()
        try:
            names = sorted(os.listdir(lib_dir)) if lib_dir is not None else []
        except OSError:
            names = []
        mapped = [name for name in names if procmaps.is_mapped(self.mappings, lib_dir / name)]
        # The worker's own libraries (torch's, the interpreter's) taken from an LD_LIBRARY_PATH folder instead.
        own = set(names) | {Path(m.path).name for m in procmaps.parse_maps(procmaps.read_maps("self") or "")}
        for name in procmaps.mapped_from(self.mappings, startup.untrusted_library_path_dirs(),
                                             startup.trusted_library_dirs()):
            if name in own:
                finding = f"{name} is mapped into the device worker from an LD_LIBRARY_PATH directory"
                if "LD_LIBRARY_PATH" not in isolation["present"]:
                    isolation["present"].append("LD_LIBRARY_PATH")
                if finding not in isolation["findings"]:
                    isolation["findings"].append(finding)
        return {"observed": "linux-proc-maps", "torch_lib": mapped}

    def _distributions(self, report: dict, timeout: float) -> dict:
        """device.views.distributions: the distributions torch requires, checked before the report, and every
        file loaded from a site directory by the worker (its report, the maps the parent read) or by the parent
        itself matched to a checked distribution (rules.trust.distribution_problems judges it)."""
        if self._loaded_thread is None:  # observe never ran (no report read while the worker lived)
            self._check_loaded(report)
        else:
            self._loaded_thread.join(timeout=max(timeout, 0.0))
        required, loaded = self._dependencies, self._loaded
        if not isinstance(required, dict) or not isinstance(required.get("distributions"), list) or loaded is None:
            return {**NOT_CHECKED, "problems": ["the distributions the device worker loaded were not checked against "
                                                "their RECORDs before the gate's deadline"]}
        checked = required["distributions"] + loaded["late"]
        problems = [p for r in required["distributions"] for p in r["problems"]] + loaded["problems"]
        return {"verified": not problems, "distributions": sorted({r["name"] for r in checked}),
                "files": sum(r["files"] for r in checked), "bytes": sum(r["bytes"] for r in checked),
                "loaded_files": loaded["loaded_files"],
                "bytecode_compared": sum(r["bytecode_compared"] for r in checked) + loaded["bytecode_compared"],
                "package_manager_verified": sum(r.get("package_manager_verified", 0) for r in checked),
                "not_checked": sorted(set(loaded["not_checked"]) | set(required.get("without_record") or [])),
                "problems": problems,
                "duration_s": round(required.get("duration_s", 0.0) + loaded["duration_s"], 3),
                "after_report_s": loaded["after_report_s"]}

    def record(self, report: dict, isolation: dict, timeout: float) -> dict:
        """device.views: what each view saw (measurements; rules.trust.device_view_problems judges them)."""
        views: dict = {"record": self.record_check(timeout), "mapped": self._mapped(isolation)}
        views["distributions"] = self._distributions(report, timeout)
        kind = report.get("type")
        if kind in ("cuda", "rocm") and views["mapped"].get("observed") == "linux-proc-maps":
            views["driver_access"] = driver_access.summarize(self.open_files, self.mappings, kind, self.seen,
                                                             self._lib_dir())
        if kind == "cuda":
            check = nvidia_driver.uuid_check((report.get("cuda") or {}).get("uuid"))
            views["driver"] = {**check, "problem": nvidia_driver.uuid_problem(check)}
        return views
