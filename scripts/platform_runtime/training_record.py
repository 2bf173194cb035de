"""The training-stack checks, the gate's side (stdlib only): the progress files a worker leaves in its check's
folder, read into the check's record whether the worker reported or its deadline killed it.

The worker (platform_runtime.training_worker) appends one flushed JSON line to `progress.jsonl` as it enters each
stage, and the data loader's worker processes one to `loader-worker-<id>.jsonl` as each enters and finishes a
sample; so after a kill the gate still names the stage the check was in and, for the data loader, the worker and
the sample it hung in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rules.training_stack import SAMPLES, WORKERS

from platform_runtime.progress_lines import read_events

PROGRESS_FILE = "progress.jsonl"
# What a record keeps of a worker's report, by check (anything else it printed is not kept).
COMMON_FIELDS = ("stage", "error", "torch", "device", "device_type", "run_s")
FIELDS = {
    "compile": ("backend", "fullgraph", "cache", "steps", "tolerance", "compiler", "triton", "graphs",
                "kernels_built", "eager_losses", "compiled_losses", "output_errors", "first_step_s",
                "later_steps_s", "eager_steps_s", "precompiled_header"),
    "autocast": ("dtype", "bf16_supported", "grad_scaler", "output_dtype", "loss_dtype", "parameter_dtype",
                 "gradient_dtype", "steps", "losses", "steps_s"),
    "dataloader": ("start_method", "sharing_strategy", "num_workers", "samples", "batch_size", "sample_bytes",
                   "pin_memory", "shared_memory", "received", "batches", "batches_in_shared_memory",
                   "batches_pinned", "loader_deadline_s", "iterate_s", "missing", "hung"),
}


def loader_progress_file(folder: Path, worker: int) -> Path:
    return folder / f"loader-worker-{worker}.jsonl"


def last_stage(folder: Path) -> str | None:
    stages = [e["stage"] for e in read_events(folder / PROGRESS_FILE) if isinstance(e.get("stage"), str)]
    return stages[-1] if stages else None


def hung_samples(folder: Path) -> list[dict[str, int]]:
    """Each loader worker's samples entered and never finished: where a worker hung (or was when it was killed)."""
    hung = []
    for worker in range(WORKERS):
        entered: list[int] = []
        done: set[int] = set()
        for event in read_events(loader_progress_file(folder, worker)):
            sample = event.get("sample")
            if not isinstance(sample, int) or not 0 <= sample < SAMPLES:
                continue
            if event.get("event") == "enter":
                entered.append(sample)
            elif event.get("event") == "done":
                done.add(sample)
        hung += [{"worker": worker, "sample": sample} for sample in entered if sample not in done]
    return hung


def record(name: str, folder: Path, payload: dict | None, killed: bool, deadline_s: float) -> dict[str, Any]:
    """The check's measurements: the worker's report when it gave one, else what its progress files say (the
    stage it was in; the data loader's hung samples)."""
    facts: dict[str, Any] = {"status": "finished" if payload is not None else "no-report", "deadline_s": deadline_s}
    if payload is not None:
        facts.update({key: payload.get(key) for key in (*COMMON_FIELDS, *FIELDS[name]) if key in payload})
    else:
        facts.update(stage=last_stage(folder), error=None)
        if name == "dataloader":
            facts["hung"] = hung_samples(folder)
    if killed:
        facts["status"] = "killed-at-deadline"
    return facts
