"""The training-stack checks' facts, written once: what each check runs (steps, tolerance, the loader's shape), the
bytes every sample of the loader must arrive as, the low-precision type each device must use, and the verdict of
each check (`compile_problems`, `autocast_problems`, `dataloader_problems`) computed from its recorded
measurements alone, never from its `ok`.

Stdlib only: the workers (scripts/platform_runtime/training_*.py) take their parameters and the samples' bytes from
here, the gate sets each check's `ok` from these rules (core.verdicts.GATE_CHECK_RULES), and the judge recomputes
them on the recorded bytes.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
from typing import Any

from core.device_verdicts import STEPS
from core.facts import count, get, number, obj

CHECKS = ("compile", "autocast", "dataloader")
DEFAULT_TIMEOUT_S = 300.0  # each check's own deadline (--training-stack-timeout), capped by the gate's budget

# compile: the gate's model (platform_runtime.device_training) trained STEPS steps eagerly and under torch.compile
# from the same initial weights; every output of every step must agree within this, relative to 1 + |eager|.
COMPILE_TOLERANCE = 1e-4
BACKEND = "inductor"
# The files a compiler leaves in the fresh cache the check gives inductor: C++ shared objects on the CPU, Triton's
# GPU binaries on CUDA (cubin) and ROCm (hsaco).
BUILT_SUFFIXES = {"cpu": (".so", ".dll", ".pyd", ".dylib"), "cuda": (".cubin",), "rocm": (".hsaco",)}

# autocast: the same model and data, STEPS steps under torch.autocast in the device's low-precision type.
LOW_PRECISION = ("bfloat16", "float16")
FULL_PRECISION = "float32"

# dataloader: SAMPLES samples of SAMPLE_ELEMENTS float32 values each (1 MiB), BATCH to a batch (2 MiB), through
# WORKERS worker processes; each sample is PATTERN values repeated, distinct per sample.
WORKERS = 3
SAMPLES = 24
BATCH = 2
PATTERN = 1024
SAMPLE_ELEMENTS = 256 * PATTERN
SAMPLE_BYTES = 4 * SAMPLE_ELEMENTS
START_METHODS = ("fork", "spawn", "forkserver")
# Why a loader failed, as the worker names it (platform_runtime.training_loader.cause_of): the words a reader gets.
CAUSES = {
    "shared-memory": "shared memory: a worker could not put its batch into shared memory",
    "deadline": "its deadline: no batch arrived in time",
    "pickle": "the dataset cannot be pickled for workers the start method spawns",
    "worker-exited": "a worker process exited",
    "other": "the loader raised",
}
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DEVICE_TYPES = ("cpu", "cuda", "rocm", "mps")

# The fields two honest runs of one commit on one machine record differently (core.noise): clock readings. What the
# checks computed (losses, output errors, every sample's hash, which worker made it) and what they found the runner
# to be (the compiler, the start method, /dev/shm's size, whether the precompiled header was built) are compared.
MEASUREMENT_NOISE = (
    ("checks.compile.duration_s", "timing", "the compile worker's wall time, start to answer"),
    ("checks.autocast.duration_s", "timing", "the autocast worker's wall time, start to answer"),
    ("checks.dataloader.duration_s", "timing", "the loader worker's wall time, start to answer"),
    ("checks.compile.deadline_s", "timing", "the check's own deadline, cut to what the run's timeout had left"),
    ("checks.autocast.deadline_s", "timing", "the check's own deadline, cut to what the run's timeout had left"),
    ("checks.dataloader.deadline_s", "timing", "the check's own deadline, cut to what the run's timeout had left"),
    ("checks.compile.run_s", "timing", "the worker's time from its start to its report"),
    ("checks.autocast.run_s", "timing", "the worker's time from its start to its report"),
    ("checks.dataloader.run_s", "timing", "the worker's time from its start to its report"),
    ("checks.compile.first_step_s", "timing", "the first compiled step: inductor's compile, on a loaded machine"),
    ("checks.compile.later_steps_s", "timing", "the 11 compiled steps after the first"),
    ("checks.compile.eager_steps_s", "timing", "the 12 eager steps"),
    ("checks.autocast.steps_s", "timing", "the 12 autocast steps"),
    ("checks.dataloader.iterate_s", "timing", "the loader's iteration, its workers started and every batch received"),
    ("checks.dataloader.loader_deadline_s", "timing", "what the check's deadline had left when the loader started"),
)


def pattern(index: int) -> list[float]:
    """Sample `index`'s repeating values: small integers, exact in float32, different for every sample."""
    return [float((index * 1031 + j * 7) % 65521) for j in range(PATTERN)]


def sample_bytes(index: int) -> bytes:
    """The exact bytes sample `index` holds: float32, little-endian (every platform torch ships for)."""
    return struct.pack(f"<{PATTERN}f", *pattern(index)) * (SAMPLE_ELEMENTS // PATTERN)


@functools.lru_cache(maxsize=SAMPLES)
def sample_sha256(index: int) -> str:
    return hashlib.sha256(sample_bytes(index)).hexdigest()


def low_precision(device_type: str | None, bf16_supported: Any) -> str | None:
    """The type autocast must run in: bfloat16 where the device supports it (always on the CPU), float16 with a
    GradScaler otherwise; None for a device type the gate does not know."""
    if device_type == "cpu":
        return "bfloat16"
    if device_type in ("cuda", "rocm", "mps"):
        return "bfloat16" if bf16_supported is True else "float16"
    return None


def native_bf16(device_type: str | None, capability: Any) -> bool | None:
    """Whether a CUDA GPU computes bfloat16 natively: compute capability 8.0 (Ampere) and later, which is what
    torch.cuda.is_bf16_supported(including_emulation=False) asks. None where the capability says nothing (ROCm,
    MPS, a capability not recorded)."""
    if device_type != "cuda" or not isinstance(capability, str):
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)", capability)
    return int(match.group(1)) >= 8 if match else None


# --- the verdicts ---------------------------------------------------------------------------------------------

def _numbers(value: Any, length: int) -> bool:
    return isinstance(value, list) and len(value) == length and all(number(v) for v in value)


def _ran(p: str, check: dict[str, Any]) -> list[str]:
    """A check that did not finish its work fails first by what stopped it (its error, or the kill)."""
    if check.get("stage") == "done" and check.get("error") is None:
        return []
    error = check.get("error") if isinstance(check.get("error"), dict) else {}
    where = f" at stage {check.get('stage')!r}" if check.get("stage") else ""
    if check.get("status") == "killed-at-deadline":
        by = check.get("killed_by") or f"its deadline ({check.get('deadline_s')!r} s)"
        hung = check.get("hung") if isinstance(check.get("hung"), list) else []
        named = "".join(f"; worker {h.get('worker')!r} was in sample {h.get('sample')!r}" for h in hung[:WORKERS]
                        if isinstance(h, dict))
        return [f"{p} was killed at {by}{where}{named}"]
    if error:
        return [f"{p} failed{where}: {str(error.get('type'))[:60]}: {str(error.get('message'))[:300]}"]
    if check.get("error") is not None:
        return [f"{p}.error is {str(check.get('error'))[:200]!r}"]
    return [f"{p}.stage is {check.get('stage')!r}, a pass needs 'done'"]


def _device(p: str, check: dict[str, Any]) -> list[str]:
    device_type = check.get("device_type")
    if device_type not in DEVICE_TYPES:
        return [f"{p}.device_type is {device_type!r}"]
    device = check.get("device")
    wanted = "cpu" if device_type == "cpu" else "mps" if device_type == "mps" else None
    if (wanted is not None and device != wanted) or (wanted is None and not (
            isinstance(device, str) and re.fullmatch(r"cuda:\d{1,2}", device))):
        return [f"{p}.device is {device!r} on device type {device_type!r}"]
    if not isinstance(check.get("torch"), str) or not check["torch"]:
        return [f"{p}.torch is {check.get('torch')!r}: the worker records the torch it imported"]
    return []


def compiler_problems(p: str, check: dict[str, Any]) -> list[str]:
    """The compiler inductor used on this device: a C++ compiler found and answering --version on the CPU; Triton
    on CUDA and ROCm; and that compiler's output in the fresh cache."""
    device_type = check.get("device_type")
    compiler = obj(check, "compiler")
    found = []
    if device_type == "cpu":
        name = compiler.get("name")
        if compiler.get("found") is not True:
            found.append(f"no C++ compiler: inductor's {name!r} (torch._inductor.config.cpp.cxx; CXX names another) "
                         "is not on PATH, and torch.compile on the CPU compiles C++")
        elif not isinstance(compiler.get("version"), str) or not compiler["version"].strip():
            found.append(f"{p}.compiler.version is {compiler.get('version')!r}: the compiler answered no version")
    elif device_type in ("cuda", "rocm"):
        if not isinstance(check.get("triton"), str) or not check["triton"]:
            found.append(f"no Triton: {p}.triton is {check.get('triton')!r}, and torch.compile on {device_type} "
                         "generates its kernels with Triton")
    built = check.get("kernels_built")
    if device_type in BUILT_SUFFIXES and not (count(built) and built >= 1):
        found.append(f"{p}.kernels_built is {built!r}: the compiler left no {'/'.join(BUILT_SUFFIXES[device_type])} "
                     "in the fresh cache, so nothing was compiled")
    return found


def compile_problems(check: dict[str, Any]) -> list[str]:
    """torch.compile trained the gate's model STEPS steps, every output within COMPILE_TOLERANCE of eager's, with
    the compiler this device needs, into a cache that held nothing before."""
    p = "checks.compile"
    if check.get("device_type") == "cpu" and obj(check, "compiler").get("found") is False:  # what is missing first
        return compiler_problems(p, check)[:1] + _ran(p, check)
    found = _ran(p, check)
    if found:
        return found
    found += _device(p, check)
    for key, wanted in (("backend", BACKEND), ("fullgraph", True), ("cache", "fresh"), ("steps", STEPS),
                        ("tolerance", COMPILE_TOLERANCE)):
        if check.get(key) != wanted or type(check.get(key)) is not type(wanted):
            found.append(f"{p}.{key} is {check.get(key)!r}, the check runs with {wanted!r}")
    found += compiler_problems(p, check)
    graphs = check.get("graphs")
    if not (count(graphs) and graphs >= 1):
        found.append(f"{p}.graphs is {graphs!r}: dynamo compiled no graph")
    eager, compiled, errors = check.get("eager_losses"), check.get("compiled_losses"), check.get("output_errors")
    for key, value in (("eager_losses", eager), ("compiled_losses", compiled), ("output_errors", errors)):
        if not _numbers(value, STEPS):
            found.append(f"{p}.{key} is not {STEPS} finite numbers")
    if found:
        return found
    for step, (e, c) in enumerate(zip(eager, compiled)):
        if abs(c - e) > COMPILE_TOLERANCE * (1 + abs(e)):
            found.append(f"step {step}: the compiled loss {c!r} differs from eager's {e!r} by more than "
                         f"{COMPILE_TOLERANCE} (relative to 1 + |eager|)")
    for step, error in enumerate(errors):
        if not 0 <= error <= COMPILE_TOLERANCE:
            found.append(f"step {step}: an output of the compiled model differs from eager's by {error!r} "
                         f"(relative to 1 + |eager|), more than {COMPILE_TOLERANCE}")
    if not compiled[-1] < compiled[0]:
        found.append(f"{p}.compiled_losses go from {compiled[0]!r} to {compiled[-1]!r}: the loss did not decrease")
    return found


def autocast_problems(check: dict[str, Any]) -> list[str]:
    """STEPS steps of forward and backward under torch.autocast in the device's low-precision type: the model's
    output in that type, its parameters and gradients in float32, every loss finite, the last below the first;
    float16 only with a GradScaler that did not skip every step."""
    p = "checks.autocast"
    found = _ran(p, check)
    if found:
        return found
    found += _device(p, check)
    device_type = check.get("device_type")
    supported = check.get("bf16_supported")
    if device_type == "cpu" and supported is not True:
        found.append(f"{p}.bf16_supported is {supported!r}: CPU autocast runs bfloat16")
    wanted = low_precision(device_type, supported)
    dtype = check.get("dtype")
    if dtype != wanted:
        found.append(f"{p}.dtype is {dtype!r}; on {device_type} with bf16_supported {supported!r} autocast must "
                     f"run {wanted!r}")
    if check.get("output_dtype") != dtype:
        found.append(f"autocast did not run in {dtype}: the model's output under autocast is "
                     f"{check.get('output_dtype')!r}")
    for key in ("loss_dtype", "parameter_dtype", "gradient_dtype"):
        if check.get(key) != FULL_PRECISION:
            found.append(f"{p}.{key} is {check.get(key)!r}, a pass needs {FULL_PRECISION!r} (autocast keeps the "
                         "weights, their gradients and the loss in full precision)")
    scaler = check.get("grad_scaler")
    if dtype == "float16":
        skipped = get(scaler, "skipped_steps") if isinstance(scaler, dict) else None
        if not isinstance(scaler, dict) or scaler.get("enabled") is not True:
            found.append(f"{p}.grad_scaler is {scaler!r}: float16 autocast trains with an enabled GradScaler")
        elif not (count(skipped) and skipped < STEPS):
            found.append(f"{p}.grad_scaler.skipped_steps is {skipped!r}: the scaler skipped every step")
    elif scaler is not None:
        found.append(f"{p}.grad_scaler is {scaler!r}: {dtype} autocast runs without one")
    if check.get("steps") != STEPS:
        found.append(f"{p}.steps is {check.get('steps')!r}, the check runs {STEPS}")
    losses = check.get("losses")
    if not _numbers(losses, STEPS):
        found.append(f"{p}.losses is not {STEPS} finite numbers: {str(losses)[:120]}")
    elif not losses[-1] < losses[0]:
        found.append(f"{p}.losses go from {losses[0]!r} to {losses[-1]!r}: the loss did not decrease")
    return found


def _loader_error(p: str, check: dict[str, Any]) -> list[str]:
    error = check.get("error")
    if not isinstance(error, dict):
        return _ran(p, check)
    cause = error.get("cause")
    lead = CAUSES.get(cause) if isinstance(cause, str) else None
    if lead is None:
        return _ran(p, check)
    detail = []
    if cause == "shared-memory":
        shm = obj(check, "shared_memory")
        if count(shm.get("total_bytes")):
            detail.append(f"{shm.get('path')} holds {shm['total_bytes'] / 2 ** 20:.1f} MiB, a batch is "
                          f"{BATCH * SAMPLE_BYTES / 2 ** 20:.0f} MiB")
    if cause == "pickle":
        detail.append(f"start method {check.get('start_method')!r}")
    if cause == "deadline":
        detail.append(f"the loader's deadline {check.get('loader_deadline_s')!r} s")
        hung = check.get("hung") if isinstance(check.get("hung"), list) else []
        detail += [f"worker {h.get('worker')!r} hung in sample {h.get('sample')!r}" for h in hung[:WORKERS]
                   if isinstance(h, dict)]
    if check.get("missing"):
        missing = check["missing"] if isinstance(check["missing"], list) else []
        detail.append(f"{len(missing)} of {SAMPLES} samples never arrived")
    text = f"{p} failed ({lead}"
    text += f"; {'; '.join(detail)})" if detail else ")"
    return [f"{text}: {str(error.get('type'))[:60]}: {str(error.get('message'))[:300]}"]


def dataloader_problems(check: dict[str, Any]) -> list[str]:
    """Every sample received exactly once, byte for byte the one core.training_stack makes, from WORKERS worker
    processes, each batch in shared memory (pinned memory on CUDA, pin_memory on), within the loader's deadline."""
    p = "checks.dataloader"
    if check.get("stage") != "done" or check.get("error") is not None:
        return _loader_error(p, check)
    found = _device(p, check)
    for key, wanted in (("num_workers", WORKERS), ("samples", SAMPLES), ("batch_size", BATCH),
                        ("sample_bytes", SAMPLE_BYTES)):
        if check.get(key) != wanted or type(check.get(key)) is not type(wanted):
            found.append(f"{p}.{key} is {check.get(key)!r}, the check runs with {wanted!r}")
    if check.get("start_method") not in START_METHODS:
        found.append(f"{p}.start_method is {check.get('start_method')!r}, not one of {', '.join(START_METHODS)}")
    received = check.get("received") if isinstance(check.get("received"), list) else None
    if received is None:
        return found + [f"{p}.received is {check.get('received')!r}: no samples recorded"]
    indices = [r.get("index") if isinstance(r, dict) else None for r in received]
    seen: dict[Any, int] = {}
    for index in indices:
        seen[index] = seen.get(index, 0) + 1
    missing = [i for i in range(SAMPLES) if i not in seen]
    twice = sorted(i for i, n in seen.items() if n > 1 and count(i))
    strange = [i for i in seen if not (count(i) and i < SAMPLES)]
    if missing:
        found.append(f"samples {missing[:12]} never arrived ({len(missing)} of {SAMPLES})")
    if twice:
        found.append(f"samples {twice[:12]} arrived more than once")
    if strange:
        found.append(f"{p}.received names samples {strange[:6]!r}, the dataset has 0..{SAMPLES - 1}")
    for at, record in enumerate(received):
        index = record.get("index") if isinstance(record, dict) else None
        if count(index) and index < SAMPLES and record.get("sha256") != sample_sha256(index):
            found.append(f"sample {index} arrived altered: its bytes hash to {str(record.get('sha256'))[:16]}..., "
                         f"the sample's to {sample_sha256(index)[:16]}...")
        worker = record.get("worker") if isinstance(record, dict) else None
        if not (count(worker) and worker < WORKERS):
            found.append(f"{p}.received[{at}].worker is {worker!r}: every sample comes from worker 0..{WORKERS - 1}")
    delivered = {r.get("worker") for r in received if isinstance(r, dict)}
    idle = [w for w in range(WORKERS) if w not in delivered]
    if idle:
        found.append(f"worker(s) {idle} delivered no sample: the loader did not use {WORKERS} workers")
    batches = check.get("batches")
    wanted_batches = SAMPLES // BATCH
    if batches != wanted_batches or not count(batches):
        found.append(f"{p}.batches is {batches!r}, {SAMPLES} samples make {wanted_batches} batches of {BATCH}")
    pinned = check.get("device_type") == "cuda" or check.get("device_type") == "rocm"
    if check.get("pin_memory") is not pinned:
        found.append(f"{p}.pin_memory is {check.get('pin_memory')!r} on {check.get('device_type')!r}: the loader pins "
                     f"{'on a GPU' if pinned else 'only for a GPU'}")
    key = "batches_pinned" if pinned else "batches_in_shared_memory"
    if check.get(key) != batches:
        found.append(f"{p}.{key} is {check.get(key)!r} of {batches!r} batches: "
                     + ("each batch must arrive pinned" if pinned else "each batch must arrive in shared memory"))
    took, deadline = check.get("iterate_s"), check.get("loader_deadline_s")
    if not (number(took) and number(deadline) and 0 <= took <= deadline):
        found.append(f"{p}.iterate_s is {took!r}, the loader's deadline {deadline!r} s")
    return found


RULES = {"compile": compile_problems, "autocast": autocast_problems, "dataloader": dataloader_problems}


# --- the result-level rules -----------------------------------------------------------------------------------

def asked_problems(result: dict[str, Any]) -> list[str]:
    """`--training-stack` asked for (`arguments.training_stack`) records all three checks; without it none."""
    asked = get(result, "arguments.training_stack")
    checks = obj(result, "checks")
    present = [name for name in CHECKS if name in checks]
    if asked is True:
        return [f"checks.{name} is missing, but arguments.training_stack asked for it: what was asked did not run"
                for name in CHECKS if name not in checks]
    if present:
        return [f"checks.{', checks.'.join(present)} recorded, but arguments.training_stack is {asked!r}"]
    return []


def device_problems(result: dict[str, Any]) -> list[str]:
    """Each training-stack check ran on the device the device worker resolved (both resolve --device with
    platform_runtime.device_resolve); autocast's bf16_supported on CUDA agrees with the GPU's recorded compute
    capability."""
    checks = obj(result, "checks")
    device = obj(result, "device")
    found = []
    for name in CHECKS:
        check = checks.get(name)
        if not isinstance(check, dict) or "device" not in check:
            continue
        resolved = device.get("resolved")
        if resolved is not None and (check.get("device") != resolved or check.get("device_type") != device.get("type")):
            found.append(f"checks.{name} ran on {check.get('device')!r} ({check.get('device_type')!r}), the device "
                         f"worker on {resolved!r} ({device.get('type')!r})")
        torch = get(device, "torch.version")
        if isinstance(torch, str) and check.get("torch") != torch:
            found.append(f"checks.{name}.torch is {str(check.get('torch'))[:60]!r}, the device worker imported "
                         f"torch {torch!r} (device.torch.version)")
    autocast = checks.get("autocast")
    if isinstance(autocast, dict) and "bf16_supported" in autocast:
        native = native_bf16(autocast.get("device_type"), get(device, "cuda.capability"))
        if native is not None and autocast.get("bf16_supported") is not native:
            found.append(f"checks.autocast.bf16_supported is {autocast.get('bf16_supported')!r}, but compute "
                         f"capability {get(device, 'cuda.capability')} {'has' if native else 'lacks'} native bfloat16")
    return found
