"""The collective check's facts, written once: what each rank contributes, the exact answers computed in pure
Python (never by torch), the device each rank must be on, the environment switches recorded by name, and the
verdict (`problems`) computed from the recorded measurements alone, never from the check's `ok`.

Stdlib only: the ranks (scripts/platform_runtime/collective_worker.py) take their inputs from here, the gate
sets the check's `ok` from `problems`, and the judge recomputes it on the recorded bytes.
"""

from __future__ import annotations

import math
import re
from typing import Any

from common.values import count_or_none, is_int, positive, whole_in

# The order every rank runs them in; `init` is init_process_group, `destroy` destroy_process_group.
OPS = ("init", "all_reduce_sum", "all_reduce_max", "broadcast", "all_gather", "reduce_scatter", "barrier",
       "destroy")
ANSWERING_OPS = ("all_reduce_sum", "all_reduce_max", "broadcast", "all_gather", "reduce_scatter")
LENGTH = 8  # elements per rank and op (int64: exact on every backend, no rounding to argue about)
MAX_WORLD = 64
LAUNCHER = "torch.multiprocessing.start_processes(start_method=spawn)"
BACKENDS = {"cpu": "gloo", "cuda": "nccl", "rocm": "nccl"}  # torch names RCCL "nccl" on ROCm
LIBRARIES = {"cpu": "gloo", "cuda": "nccl", "rocm": "rccl"}
# How the launcher says it picked the rendezvous port (collective_worker.launch): one of these two texts.
PORT_GIVEN, PORT_FREE = "given", "free port chosen by the launcher"
# Variables that change how a collective runs, recorded by NAME when set (never their values); any other
# name with one of these prefixes is recorded too, nothing else of the environment.
ENV_SWITCHES = ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SOCKET_IFNAME",
                "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_CUMEM_ENABLE", "NCCL_NVLS_ENABLE",
                "GLOO_SOCKET_IFNAME", "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                "TORCH_DISTRIBUTED_DEBUG", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "CUDA_DEVICE_ORDER")
ENV_PREFIXES = ("NCCL_", "RCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_GLOO_", "TORCH_DISTRIBUTED_")
NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def env_switch_names(environ: Any) -> list[str]:
    """The names (only) of the collective switches set in `environ`."""
    return sorted(name for name in environ if environ.get(name) is not None and NAME.match(name)
                  and (name in ENV_SWITCHES or name.startswith(ENV_PREFIXES)))


def broadcast_source(world: int) -> int:
    """The last rank broadcasts: a broadcast that leaves rank 0's values in place cannot pass."""
    return world - 1


def inputs(world: int, rank: int) -> dict[str, list[int] | list[list[int]]]:
    """What rank `rank` of `world` contributes to each op: distinct small integers per rank and position."""
    return {
        "all_reduce_sum": [(rank + 1) * (i + 3) + rank * rank for i in range(LENGTH)],
        "all_reduce_max": [(rank * 7 + i * 3) % 11 - 5 for i in range(LENGTH)],
        "broadcast": [1000 * rank + 17 * i + 1 for i in range(LENGTH)] if rank == broadcast_source(world)
        else [-1] * LENGTH,
        "all_gather": [100 * rank + i for i in range(LENGTH)],
        # chunk j goes to rank j: rank r's chunk j holds r*10 + j*1000 + i
        "reduce_scatter": [[rank * 10 + j * 1000 + i for i in range(LENGTH)] for j in range(world)],
    }


def expected(world: int, rank: int) -> dict[str, list[int]]:
    """The exact answer each op must leave on rank `rank`, computed from every rank's inputs in Python."""
    every = [inputs(world, r) for r in range(world)]
    column = range(LENGTH)
    return {
        "all_reduce_sum": [sum(e["all_reduce_sum"][i] for e in every) for i in column],
        "all_reduce_max": [max(e["all_reduce_max"][i] for e in every) for i in column],
        "broadcast": list(every[broadcast_source(world)]["broadcast"]),
        "all_gather": [v for e in every for v in e["all_gather"]],
        "reduce_scatter": [sum(e["reduce_scatter"][rank][i] for e in every) for i in column],
    }


def expected_device(device_type: str | None, local_rank: int) -> str | None:
    """The device rank `local_rank` must compute on: its own GPU under NCCL/RCCL (one rank per GPU), the CPU
    under gloo."""
    if device_type == "cpu":
        return "cpu"
    if device_type in ("cuda", "rocm"):
        return f"cuda:{local_rank}"  # torch runs ROCm under its "cuda" device type
    return None


def nccl_version_text(raw: Any) -> str | None:
    """torch.cuda.nccl.version() as text: a (major, minor, patch[, suffix]) tuple in torch 2.x, or NCCL's own
    NCCL_VERSION_CODE int (major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before)."""
    if isinstance(raw, (tuple, list)) and len(raw) >= 3 and all(isinstance(v, int) for v in raw[:3]):
        text = ".".join(str(v) for v in raw[:3])
        suffix = raw[3] if len(raw) > 3 and isinstance(raw[3], str) and raw[3] else ""
        return text + (f"-{suffix}" if suffix else "")
    if positive(raw):
        if raw >= 20900:
            return f"{raw // 10000}.{raw // 100 % 100}.{raw % 100}"
        return f"{raw // 1000}.{raw // 100 % 10}.{raw % 100}"
    return None


def ran(check: dict[str, Any]) -> bool:
    return check.get("status") != "skipped"


def _rank_problems(p: str, rank: dict[str, Any], index: int, world: int, device_type: Any) -> list[str]:
    problems = []
    wanted_device = expected_device(device_type, rank.get("local_rank") if isinstance(rank.get("local_rank"), int)
                                    else -1)
    if rank.get("rank") != index:
        problems.append(f"{p}.rank is {rank.get('rank')!r}, expected {index}")
    if rank.get("local_rank") != index:  # one box: the local rank is the rank
        problems.append(f"{p}.local_rank is {rank.get('local_rank')!r}, expected {index}")
    if rank.get("started") is not True:  # its progress file's first event (collective_record.read_rank)
        problems.append(f"{p}.started is {rank.get('started')!r}: the rank never said it started")
    if rank.get("finished") is not True:
        problems.append(f"rank {index} did not finish: it was in {rank.get('last_op')!r}"
                        + (f" ({str(rank.get('error'))[:200]})" if rank.get("error") else ""))
    elif rank.get("error"):
        problems.append(f"{p}.error is {str(rank.get('error'))[:200]!r}")
    if rank.get("device") != wanted_device:
        problems.append(f"rank {index} ran on {rank.get('device')!r}, its own device is {wanted_device!r}")
    ops = rank.get("ops") if isinstance(rank.get("ops"), dict) else {}
    answers = expected(world, index)
    for op in OPS:
        record = ops.get(op)
        if not isinstance(record, dict):
            if rank.get("finished") is True:
                problems.append(f"{p}.ops.{op} is missing")
            continue
        seconds = record.get("s")
        if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
                and seconds >= 0):
            problems.append(f"{p}.ops.{op}.s is {seconds!r}")
        if op in ANSWERING_OPS:
            if record.get("answer") != answers[op]:
                problems.append(f"rank {index} {op} answered {str(record.get('answer'))[:120]}, "
                                f"the exact answer is {str(answers[op])[:120]}")
            if record.get("devices") != [wanted_device]:
                problems.append(f"rank {index} {op} tensors on {record.get('devices')!r}, not [{wanted_device!r}]")
    return problems


def problems(check: dict[str, Any]) -> list[str]:
    """Why the recorded collective check did not pass (empty when it did): every rank of the world finished
    every op, answered exactly what `expected` computes, on its own device, with the backend of its device."""
    p = "checks.collectives"
    if not ran(check):
        # `auto` asks for one rank per GPU when there are two or more: fewer is nothing to run, not a pass of
        # anything (--require collectives still fails on it).
        gpus = check.get("visible_gpus")
        if check.get("requested") == "auto" and is_int(gpus) and gpus < 2:
            return []
        return [f"{p}.status is 'skipped' with requested {check.get('requested')!r} and visible_gpus {gpus!r}"]
    found: list[str] = []
    world = check.get("world_size")
    device_type = check.get("device_type")
    if not whole_in(world, 1, MAX_WORLD):
        why = check.get("reason") or check.get("error")
        return [f"{p}.world_size is {world!r} (status {check.get('status')!r}" + (f": {str(why)[:200]})" if why
                                                                                   else ")")]
    requested = check.get("requested")
    if requested != "auto" and requested != world:
        found.append(f"{p}.world_size is {world}, {requested!r} ranks were asked for")
    if device_type not in BACKENDS:
        found.append(f"{p}.device_type is {device_type!r}")
    elif check.get("backend") != BACKENDS[device_type]:
        found.append(f"{p}.backend is {check.get('backend')!r}, {device_type} needs {BACKENDS[device_type]!r}")
    elif check.get("library") != LIBRARIES[device_type]:
        found.append(f"{p}.library is {check.get('library')!r}, {device_type} runs {LIBRARIES[device_type]!r}")
    # What the launcher always records (collective_worker.launch), before it starts a rank.
    if check.get("launcher") != LAUNCHER:
        found.append(f"{p}.launcher is {str(check.get('launcher'))[:80]!r}, the gate launches with {LAUNCHER!r}")
    if check.get("port") not in (PORT_GIVEN, PORT_FREE):
        found.append(f"{p}.port is {str(check.get('port'))[:80]!r}, the launcher records {PORT_GIVEN!r} or "
                     f"{PORT_FREE!r}")
    if not isinstance(check.get("torch"), str) or not check["torch"]:
        found.append(f"{p}.torch is {check.get('torch')!r}: the launcher records the torch it imported")
    if device_type == "cpu" and check.get("library_version") is not None:  # gloo ships inside torch
        found.append(f"{p}.library_version is {check.get('library_version')!r}: gloo's version is torch's")
    if check.get("status") != "finished":
        found.append(f"{p}.status is {check.get('status')!r}"
                     + (f": {str(check.get('error'))[:200]}" if check.get("error") else ""))
    ranks = check.get("ranks") if isinstance(check.get("ranks"), list) else []
    if len(ranks) != world:
        found.append(f"{p}.ranks holds {len(ranks)} rank(s), the world is {world}")
    for index, rank in enumerate(ranks[:MAX_WORLD]):
        found += _rank_problems(f"{p}.ranks.{index}", rank if isinstance(rank, dict) else {}, index, world,
                                device_type)
    if device_type in ("cuda", "rocm"):
        uuids = [r.get("device_uuid") for r in ranks if isinstance(r, dict)]
        if None in uuids or len(set(uuids)) != len(uuids):
            found.append(f"{p}.ranks device_uuid {uuids!r}: each rank needs its own GPU")
    if check.get("unfinished"):
        found.append(f"{p}.unfinished is {check.get('unfinished')!r}")
    return found


def requirement(check: Any) -> tuple[bool, str]:
    """`--require collectives`: every rank of a world of two or more answered exactly on its own device."""
    if not isinstance(check, dict):
        return False, "the collective check did not run (give --collectives N or auto)"
    if not ran(check):
        return False, f"the collective check was skipped: {check.get('reason') or 'nothing to run'}"
    found = problems(check)
    if found:
        return False, "; ".join(found[:3])
    if check["world_size"] < 2:
        return False, f"a world of {check['world_size']} rank proves no collective between devices"
    return True, (f"{check['world_size']} ranks on {check.get('backend')} answered every op exactly, "
                  "each on its own device")


def get_text(record: dict[str, Any], key: str, field: str) -> str | None:
    """record[key][field] when it is text, else None (a worker that never reported records none)."""
    value = record.get(key).get(field) if isinstance(record.get(key), dict) else None
    return value if isinstance(value, str) else None


def device_problems(check: dict[str, Any], device: dict[str, Any]) -> list[str]:
    """Why the collective check's device facts disagree with the result's own (`device`: the device worker's
    record of the same box and environment): visible_gpus no more than the GPUs the worker counted
    (device.cuda.device_count), and a GPU world only on a torch build for that GPU (torch_build.cuda, or .hip
    for rocm) where the worker saw at least one GPU per rank, or ran on that GPU itself. Each rank's device is
    its device type's (rules.collectives.problems: cuda:r under NCCL, cpu under gloo)."""
    if not isinstance(check, dict) or not ran(check):
        return []
    p = "checks.collectives"
    cuda = device.get("cuda") if isinstance(device.get("cuda"), dict) else {}
    build = device.get("torch_build") if isinstance(device.get("torch_build"), dict) else {}
    counted, gpus, world = count_or_none(cuda.get("device_count")), check.get("visible_gpus"), check.get("world_size")
    found = []
    if gpus is not None and (count_or_none(gpus) is None or gpus > (counted or 0)):
        found.append(f"{p}.visible_gpus is {gpus!r}, the device worker counted {cuda.get('device_count')!r} GPU(s) "
                     "(device.cuda.device_count)")
    torch = get_text(device, "torch", "version")
    if torch is not None and check.get("torch") != torch:  # one installed torch: both import it from one directory
        found.append(f"{p}.torch is {str(check.get('torch'))[:60]!r}, the device worker imported torch {torch!r} "
                     "(device.torch.version)")
    device_type = check.get("device_type")
    if device_type in ("cuda", "rocm"):
        key = "hip" if device_type == "rocm" else "cuda"
        if not build.get(key):
            found.append(f"{p}.device_type is {device_type!r}, but device.torch_build.{key} is {build.get(key)!r}: "
                         f"the installed torch has no {device_type} backend")
        enough = count_or_none(world) is not None and counted is not None and counted >= world
        if device.get("type") != device_type and not enough:
            found.append(f"{p}.device_type is {device_type!r} with world_size {world!r}, but device.type is "
                         f"{device.get('type')!r} and device.cuda.device_count {cuda.get('device_count')!r}")
    elif device_type == "cpu" and check.get("backend") not in (None, BACKENDS["cpu"]):
        found.append(f"{p}.backend is {check.get('backend')!r}: on the cpu only {BACKENDS['cpu']!r}")
    return found
