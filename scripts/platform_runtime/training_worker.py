"""One training-stack check in its own process (the gate's parent never imports torch).

    platform_runtime_worker.py training_worker CHECK FOLDER DEVICE DEADLINE_AT [TORCH_SITE_DIR]

CHECK is compile, autocast or dataloader (rules.training_stack.CHECKS); FOLDER the check's folder in the gate's
workspace (its progress file, inductor's fresh cache, the loader workers' progress); DEVICE what the gate resolves
(auto, cpu, cuda, cuda:N, mps), resolved here by the device worker's own function; DEADLINE_AT the wall-clock
instant the gate kills this process (the data loader ends its own wait before it and names what hung). torch is
imported from exactly the directory the gate named, as the device worker does. Prints one JSON object: the
check's measurements, which the gate's rule (rules.training_stack) judges; a failure is a measurement too (the
stage it stopped at and its error, without paths).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from common.files import finite

from platform_runtime import interpreter_state
from platform_runtime.device_resolve import device_kind, resolve
from platform_runtime.device_worker import first_line_without_paths, import_torch
from platform_runtime.progress_lines import Progress
from platform_runtime.training_errors import error_of, innermost  # noqa: F401 - the worker's names
from platform_runtime.training_record import PROGRESS_FILE


class Stage:
    """The stage the check is in, appended to its progress file as it is entered (the gate reads it after a kill)."""

    def __init__(self, folder: Path) -> None:
        self.name = "import"
        self.progress = Progress(folder / PROGRESS_FILE)
        self.progress(stage=self.name)

    def __call__(self, name: str) -> None:
        self.name = name
        self.progress(stage=name)


def runner(check: str):
    if check == "compile":
        from platform_runtime.training_compile import run
    elif check == "autocast":
        from platform_runtime.training_autocast import run
    else:
        from platform_runtime.training_loader import run
    return run


def prepare(check: str, folder: Path) -> None:
    """What must be set before torch is imported: inductor compiles in this process (no pool of helper
    interpreters started without -I) into a cache that holds nothing yet, inside the check's folder, so the
    compiler really runs and the workspace's removal takes the cache with it."""
    if check == "compile":
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"


def run(check: str, folder: Path, requested: str, deadline_at: float, site_dir: str | None) -> dict:
    stage = Stage(folder)
    report: dict = {"stage": "import", "error": None}
    started = time.monotonic()
    prepare(check, folder)
    try:
        torch = import_torch(site_dir)
    except Exception as exc:  # noqa: BLE001 - no torch is a result
        report["error"] = {"type": type(exc).__name__, "cause_type": None, "stage": "import",
                           "message": f"torch could not be imported: {first_line_without_paths(str(exc), folder)}"}
        return report
    report["torch"] = torch.__version__
    torch.set_num_threads(1)
    try:
        stage("resolve")
        resolved, why, _, _ = resolve(torch, requested)
        if resolved is None:
            report.update(stage="resolve", error={"type": "DeviceUnavailable", "cause_type": None,
                                                  "message": why, "stage": "resolve"})
            return report
        device = torch.device(resolved)
        report.update(device=resolved, device_type=device_kind(torch, device))
        runner(check)(torch, device, folder, deadline_at, stage, report)
    except Exception as exc:  # noqa: BLE001 - every failure is a reported result
        report.update(stage=stage.name, error=error_of(exc, folder, stage.name))
        return report
    finally:
        report["run_s"] = round(time.monotonic() - started, 3)
    if report.get("error") is None:
        report["stage"] = "done"
    else:
        report["stage"] = stage.name
    return report


def main(argv: list[str]) -> int:
    check, folder, requested, deadline_at = argv[0], Path(argv[1]), argv[2], float(argv[3])
    folder.mkdir(parents=True, exist_ok=True)
    report = run(check, folder, requested, deadline_at, argv[4] if len(argv) > 4 else None)
    report[interpreter_state.STARTUP_KEY] = interpreter_state.worker_facts()  # judged by rules.interpreter_start
    sys.stdout.write(json.dumps(finite(report), sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
