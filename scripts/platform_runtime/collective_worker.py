"""The collective check's launcher and its ranks, in their own processes (the gate's parent never imports torch).

    platform_runtime_worker.py collective_worker FOLDER REQUESTED DEVICE PORT TIMEOUT_S [TORCH_SITE_DIR]

REQUESTED is a number of ranks or `auto` (one per visible GPU when there are two or more); DEVICE is cpu, cuda
or auto. The launcher imports torch from the directory the gate named (as the device worker does), picks the
backend (NCCL on CUDA, RCCL under ROCm's "nccl", gloo on the CPU), writes launcher.json, and starts the ranks
with torch.multiprocessing.start_processes(start_method="spawn"), not torchrun: spawn passes this
interpreter's flags (-I -B) to every rank, and its ranks stay in the launcher's process group, so the gate's
deadline kill ends the whole group (torchrun's agent starts each rank in a session of its own and as a plain
`python -u`). Each rank sets the env:// variables torchrun would (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), then init_process_group with a timeout, the ops of rules.collectives.OPS on its own device, each
answer and the devices of its tensors appended to its progress file, a barrier and destroy_process_group.
Prints one JSON object (the launcher's facts); the gate reads the ranks' files itself.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sys
import time
from pathlib import Path

from rules.collectives import (
    BACKENDS,
    LAUNCHER,
    LIBRARIES,
    MAX_WORLD,
    PORT_FREE,
    PORT_GIVEN,
    broadcast_source,
    env_switch_names,
    inputs,
    nccl_version_text,
)

from platform_runtime import interpreter_state
from platform_runtime.collective_record import LAUNCHER_FILE, progress_file
from platform_runtime.device_worker import first_line_without_paths, import_torch
from platform_runtime.progress_lines import Progress

JOIN_GRACE_S = 2.0  # after one rank fails, how long the others get before SIGTERM (then SIGKILL)


def rank_progress(path: Path):
    """A rank's progress: `progress(event, **fields)` appends one flushed line (platform_runtime.progress_lines)."""
    append = Progress(path)
    return lambda event, **fields: append(event=event, **fields)


def _devices(tensors) -> list[str]:
    return sorted({str(t.device) for t in tensors})


def _flat(tensors) -> list[int]:
    return [int(v) for t in tensors for v in t.detach().to("cpu").reshape(-1).tolist()]


def _uuid(torch, tensor) -> str | None:
    """The GPU's UUID, so two ranks on one GPU show; None on the CPU (asked of CUDA only where it runs)."""
    if not torch.cuda.is_available() or tensor.device.type != "cuda":
        return None
    uuid = getattr(torch.cuda.get_device_properties(tensor.device), "uuid", None)
    return str(uuid) if uuid is not None else None


def _ops(torch, dist, world: int, rank: int, device):
    """(name, run) for each answering op; run() returns (tensors whose values are the answer, every tensor)."""
    given = inputs(world, rank)

    def tensor(values):
        return torch.tensor(values, dtype=torch.int64, device=device)

    def all_reduce(key, op):
        def run():
            t = tensor(given[key])
            dist.all_reduce(t, op=op)
            return [t], [t]
        return run

    def broadcast():
        t = tensor(given["broadcast"])
        dist.broadcast(t, src=broadcast_source(world))
        return [t], [t]

    def all_gather():
        mine = tensor(given["all_gather"])
        out = [tensor([0] * len(given["all_gather"])) for _ in range(world)]
        dist.all_gather(out, mine)
        return out, [mine, *out]

    def reduce_scatter():
        chunks = [tensor(chunk) for chunk in given["reduce_scatter"]]
        out = tensor([0] * len(chunks[0]))
        dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM)
        return [out], [out, *chunks]

    return [("all_reduce_sum", all_reduce("all_reduce_sum", dist.ReduceOp.SUM)),
            ("all_reduce_max", all_reduce("all_reduce_max", dist.ReduceOp.MAX)),
            ("broadcast", broadcast), ("all_gather", all_gather), ("reduce_scatter", reduce_scatter)]


def rank_main(rank: int, world: int, device_type: str, folder: str, port: int, timeout_s: float,
              site_dir: str | None) -> None:
    """One rank (run by spawn as `rank_main(rank, ...)`): every op timed, its answer and devices recorded."""
    # torchrun's env:// protocol, set before torch is imported (code that reads them at import sees them too).
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    progress = rank_progress(progress_file(Path(folder), rank))
    progress("started", rank=rank, local_rank=rank)
    op = "import"
    try:
        torch = import_torch(site_dir)
        import torch.distributed as dist

        torch.set_num_threads(1)
        device = torch.device("cpu")
        if device_type in ("cuda", "rocm"):
            device = torch.device("cuda", rank)
            torch.cuda.set_device(device)

        def sync():
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        op = "init"
        progress("enter", op=op)
        started = time.perf_counter()
        dist.init_process_group(BACKENDS[device_type], init_method="env://", rank=rank, world_size=world,
                                timeout=dt.timedelta(seconds=timeout_s))
        progress("done", op=op, s=round(time.perf_counter() - started, 4))
        for op, run in _ops(torch, dist, world, rank, device):
            progress("enter", op=op)
            started = time.perf_counter()
            answer, every = run()
            sync()
            seconds = time.perf_counter() - started
            progress("done", op=op, s=round(seconds, 4), answer=_flat(answer), devices=_devices(every),
                     device=str(every[0].device), device_uuid=_uuid(torch, every[0]))
        for op, call in (("barrier", dist.barrier), ("destroy", dist.destroy_process_group)):
            progress("enter", op=op)
            started = time.perf_counter()
            call()
            sync()
            progress("done", op=op, s=round(time.perf_counter() - started, 4))
    except Exception as exc:  # noqa: BLE001 - the failure is recorded; the exit status tells the launcher
        message = first_line_without_paths(str(exc), Path(folder))
        progress("error", op=op, error=f"{type(exc).__name__} in {op}: {message}")
        sys.stdout.flush()
        os._exit(1)  # not an exception: spawn would print its traceback; the other ranks are ended by join
    progress("finished")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def resolve(torch, requested: str, device: str) -> dict:
    """The device type, backend and world size, or a status saying why nothing runs."""
    facts: dict = {"status": "resolved", "visible_gpus": 0}
    gpu = device != "cpu" and torch.cuda.is_available()
    if gpu:
        facts["visible_gpus"] = int(torch.cuda.device_count())
    if device == "cuda" and not gpu:
        return {**facts, "status": "refused", "reason": "--device cuda, but torch.cuda.is_available() is False"}
    kind = ("rocm" if getattr(torch.version, "hip", None) else "cuda") if gpu else "cpu"
    facts.update(device_type=kind, backend=BACKENDS[kind], library=LIBRARIES[kind])
    if requested == "auto":
        if facts["visible_gpus"] < 2:
            return {**facts, "status": "skipped", "world_size": None,
                    "reason": f"{facts['visible_gpus']} visible GPU(s): auto runs one rank per GPU on two or more"}
        world = facts["visible_gpus"]
    else:
        world = int(requested)
    facts["world_size"] = world
    if kind != "cpu" and world > facts["visible_gpus"]:
        return {**facts, "status": "refused", "reason": f"{world} ranks asked for, {facts['visible_gpus']} GPU(s) "
                                                          "visible: NCCL runs one rank per GPU"}
    if not 1 <= world <= MAX_WORLD:
        return {**facts, "status": "refused", "reason": f"world size {world} is outside 1..{MAX_WORLD}"}
    if kind == "cpu":
        facts["library_version"] = None  # gloo ships inside torch: its version is torch's
    else:
        facts["library_version"] = nccl_version_text(_nccl_version(torch))
    return facts


def _nccl_version(torch):
    try:
        return torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - a build without NCCL answers no version; the ranks then fail at init
        return None


def launch(folder: Path, requested: str, device: str, port: int, timeout_s: float, site_dir: str | None) -> dict:
    facts: dict = {"status": "import", "requested": requested if requested == "auto" else int(requested),
                   "launcher": LAUNCHER, "timeout_s": timeout_s, "env_switches_set": env_switch_names(os.environ)}
    try:
        torch = import_torch(site_dir)
    except Exception as exc:  # noqa: BLE001 - no torch is a result
        return {**facts, "status": "failed", "error": f"torch could not be imported ({type(exc).__name__})"}
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessException

    facts["torch"] = torch.__version__
    facts.update(resolve(torch, requested, device))
    facts["port"] = PORT_GIVEN if port else PORT_FREE
    port = port or free_port()
    (folder / LAUNCHER_FILE).write_text(json.dumps(facts, sort_keys=True), encoding="utf-8")
    if facts["status"] != "resolved":
        return facts
    facts["status"] = "running"
    try:
        context = mp.start_processes(rank_main, args=(facts["world_size"], facts["device_type"], str(folder), port,
                                                      timeout_s, site_dir),
                                     nprocs=facts["world_size"], join=False, start_method="spawn")
        while not context.join(grace_period=JOIN_GRACE_S):
            pass
    except ProcessException as exc:  # a rank failed: join ended the others
        return {**facts, "status": "failed", "error": first_line_without_paths(str(exc), folder)}
    return {**facts, "status": "finished"}


def main(argv: list[str]) -> int:
    folder, requested, device, port, timeout_s = Path(argv[0]), argv[1], argv[2], int(argv[3]), float(argv[4])
    folder.mkdir(parents=True, exist_ok=True)
    report = launch(folder, requested, device, port, timeout_s, argv[5] if len(argv) > 5 else None)
    report[interpreter_state.STARTUP_KEY] = interpreter_state.worker_facts()  # judged by rules.interpreter_start
    sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
