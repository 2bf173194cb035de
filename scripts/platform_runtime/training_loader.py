"""The data loader check's work: a torch DataLoader with WORKERS worker processes, started by the platform's default
start method (fork on Linux, spawn on macOS and Windows), over SAMPLES samples of 1 MiB each (rules.training_stack
makes their bytes), BATCH to a batch: the workers hand each batch back through shared memory (pinned memory too on
CUDA, pin_memory on). Every sample received is hashed as it arrived; the rule wants each exactly once and byte for
byte. The loader's own deadline ends its wait before the gate's kill, so a worker that hangs is named (each loader
worker writes which sample it entered and finished to its own progress file), and so are the other ways a loader
fails on a runner: shared memory too small for a batch, a dataset the start method cannot pickle."""

from __future__ import annotations

import ctypes
import hashlib
import multiprocessing
import os
import pickle
import signal
import sys
import time
import warnings
from pathlib import Path

from rules.training_stack import BATCH, SAMPLE_BYTES, SAMPLES, WORKERS, sample_bytes

from platform_runtime.progress_lines import Progress
from platform_runtime.training_record import hung_samples, loader_progress_file

SHARED_MEMORY = "/dev/shm"
# The loader stops waiting this long before the check's deadline (or a tenth of what is left, if more), so its
# report, naming what hung, is out before the gate kills the process.
MARGIN_S = 3.0
# How torch words a worker that could not put a batch into shared memory: the allocation refused (ENOSPC), or the
# worker killed by SIGBUS when a page of its shared memory could not be backed.
SHARED_MEMORY_WORDS = ("shared memory", "(shm)", "bus error", "no space left on device")


class Samples:
    """The dataset: sample i is the bytes rules.training_stack.sample_bytes(i) as a float32 tensor, with its index
    and the id of the worker that made it. A plain object (no torch at import), picklable under spawn."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        worker = info.id if info is not None else -1
        progress = Progress(loader_progress_file(Path(self.folder), worker)) if worker >= 0 else None
        if progress is not None:
            progress(event="enter", sample=index)
        data = torch.frombuffer(bytearray(sample_bytes(index)), dtype=torch.float32)
        if progress is not None:
            progress(event="done", sample=index)
        return torch.tensor(index), data, torch.tensor(worker)


class LoaderDeadline(RuntimeError):
    """The batches trickled in past the loader's deadline (each within the per-batch timeout)."""


def shared_memory() -> dict | None:
    """The size of /dev/shm, where torch's workers put their tensors on Linux; None elsewhere. (What is free there
    changes from one moment to the next: a failure names the size.)"""
    if not sys.platform.startswith("linux"):
        return None
    try:
        stat = os.statvfs(SHARED_MEMORY)
    except OSError:
        return {"path": SHARED_MEMORY, "total_bytes": None}
    return {"path": SHARED_MEMORY, "total_bytes": stat.f_blocks * stat.f_frsize}


def digest(row) -> str:
    """SHA-256 of a CPU tensor's bytes as they arrived, read by ctypes (no torch comparison involved)."""
    row = row.contiguous()
    return hashlib.sha256(ctypes.string_at(row.data_ptr(), row.numel() * row.element_size())).hexdigest()


def cause_of(exc: BaseException, stage: str) -> str:
    """Why the loader failed, in rules.training_stack.CAUSES' words: shared memory before a killed worker (torch
    reports a worker that SIGBUS ended as killed, and it ran out of shared memory)."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    text = " ".join(f"{type(e).__name__}: {e}" for e in chain)
    lowered = text.lower()
    if any(isinstance(e, LoaderDeadline) for e in chain) or "dataloader timed out" in lowered:
        return "deadline"
    if any(words in lowered for words in SHARED_MEMORY_WORDS):
        return "shared-memory"
    if stage == "start_workers" and (any(isinstance(e, pickle.PicklingError) for e in chain) or "pickle" in lowered):
        return "pickle"
    if "exited unexpectedly" in lowered or "killed by signal" in lowered:
        return "worker-exited"
    return "other"


def stop_workers() -> None:
    """End this process's loader workers now (a hung one would hold the iterator's shutdown for seconds). torch's
    SIGCHLD handler would raise "worker killed by signal" for those very kills, over the error being recorded: the
    default handler comes back first."""
    if hasattr(signal, "SIGCHLD"):
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for child in multiprocessing.active_children():
        child.kill()
    for child in multiprocessing.active_children():
        child.join(timeout=1)


def run(torch, device, folder: Path, deadline_at: float, stage, report: dict) -> None:
    from torch.utils.data import DataLoader

    from platform_runtime import cpu_share
    from platform_runtime.training_errors import error_of

    cpu_share.full_share()  # torch is imported: the loader's timed wait and its forks need the full weight
    pin = device.type == "cuda"
    left = deadline_at - time.time()
    deadline = round(max(1.0, left - max(MARGIN_S, left / 10)), 3)
    report.update(start_method=multiprocessing.get_start_method(), num_workers=WORKERS, samples=SAMPLES,
                  sharing_strategy=torch.multiprocessing.get_sharing_strategy(), batch_size=BATCH,
                  sample_bytes=SAMPLE_BYTES, pin_memory=pin, shared_memory=shared_memory(), loader_deadline_s=deadline)
    received: list[dict] = []
    batches = in_shared = pinned = 0
    started = time.monotonic()
    try:
        with warnings.catch_warnings():  # more workers than this host's CPUs is what the check asks for
            warnings.filterwarnings("ignore", message="This DataLoader will create")
            loader = DataLoader(Samples(str(folder)), batch_size=BATCH, num_workers=WORKERS, pin_memory=pin,
                                timeout=deadline)
            stage("start_workers")
            iterator = iter(loader)
        stage("iterate")
        for indices, data, workers in iterator:
            batches += 1
            in_shared += bool(data.is_shared())
            pinned += bool(pin and data.is_pinned())
            received += [{"index": int(indices[k]), "worker": int(workers[k]), "sha256": digest(data[k])}
                         for k in range(len(indices))]
            if time.monotonic() - started > deadline:
                raise LoaderDeadline(f"{len(received)} of {SAMPLES} samples in {deadline} s")
    except Exception as exc:  # noqa: BLE001 - how the loader failed is the check's finding
        report["error"] = {**error_of(exc, folder, stage.name), "cause": cause_of(exc, stage.name)}
        stop_workers()
    seen = {r["index"] for r in received}
    report.update(iterate_s=round(time.monotonic() - started, 4), received=received, batches=batches,
                  batches_in_shared_memory=in_shared, batches_pinned=pinned,
                  missing=[i for i in range(SAMPLES) if i not in seen],
                  hung=hung_samples(folder) if report.get("error") else [])
