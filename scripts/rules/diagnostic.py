"""The judge's rule for a Kernodeck diagnostic report (scripts/kernodeck_diagnostic.py): its verdict re-derived
from what it measured, never taken from `status`. The 2x2 product's loss is a number the report records and
that has one right answer (196); `product` and `gradient` are the diagnostic's exact comparisons (it records
no tensors to recompute them from). A GPU pass also rests on the build and visibility facts the report records
beside it (`pytorch.*`: a GPU build, available, the device it names among those counted), in the order the
diagnostic itself refuses them. Answers (reasons, forged). Stdlib only."""

from __future__ import annotations

import re
from typing import Any

from common.values import count, obj

from rules.build_cross_check import version_tag_problem

EXPECTED_LOSS = 196.0  # ((1,2),(3,4)) @ ((2,0),(1,2)), squared and summed: the diagnostic's known answer
PASSING_CODES = {"CPU_CHECK_PASSED": "cpu", "GPU_CHECK_PASSED": "gpu"}
LAST_STAGE = "verify"  # scripts/kernodeck_diagnostic.WORKER_STAGES: the exact comparison, after the compute


def judge_diagnostic(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Passes on `execution.loss` against the known answer (196), `execution.checks`, `code` against
    `execution.device`; a CPU pass ran on `execution.backend` cpu; a GPU pass rests on the report's own torch
    facts, in the diagnostic's own order: `pytorch.backend` is the one `pytorch.hip`/`pytorch.cuda` declare (rocm,
    else cuda, never none) and `execution.backend` is it, `pytorch.version` is no `+cpu` wheel and its tag names
    the CUDA/HIP version beside it, `pytorch.gpu_available` true, `pytorch.gpu_count` at least 1 and
    `execution.device` `cuda:N` one of them, `execution.gpu_model` named (and on CUDA `execution.capability`); a
    pass ends at `stage` verify (the diagnostic's last step); `status` and `exit_code` may not claim more (not
    authentic, naming the first fact)."""
    execution = obj(document, "execution")
    checks = obj(execution, "checks")
    loss = execution.get("loss")
    forged: list[str] = []
    if "loss" in checks and checks["loss"] != (loss == EXPECTED_LOSS):
        forged.append(f"execution.checks.loss is recorded {checks['loss']!r}, execution.loss {loss!r} says "
                      f"{loss == EXPECTED_LOSS}")
    reasons = [f"execution.checks.{name} is {value!r}" for name, value in checks.items() if value is not True]
    if loss != EXPECTED_LOSS:
        reasons.append(f"execution.loss is {loss!r}, the known answer is {EXPECTED_LOSS}")
    if not {"product", "gradient", "loss"} <= set(checks):
        reasons.append(f"execution.checks is {checks or None!r}: the product, gradient and loss were not all checked")
    code, wanted = document.get("code"), PASSING_CODES.get(str(document.get("code")))
    device = str(execution.get("device") or "")
    if wanted is None:
        reasons.append(f"code is {code!r}, not a passing one")
    elif (wanted == "cpu") != (device == "cpu") or not device:
        reasons.append(f"code is {code!r} but execution.device is {device or None!r}")
    elif wanted != document.get("requested_device") and document.get("requested_device") != "auto":
        reasons.append(f"code is {code!r} but requested_device is {document.get('requested_device')!r}")
    if wanted is not None and document.get("stage") != LAST_STAGE:  # a pass is reached only after the comparison
        reasons.append(f"code is {code!r} but stage is {document.get('stage')!r}: a pass ends at {LAST_STAGE!r}")
    if wanted == "gpu" and device:
        reasons += gpu_build_problems(document)
    elif wanted == "cpu" and execution.get("backend") != "cpu":
        reasons.append(f"code is {code!r} but execution.backend is {execution.get('backend')!r}")
    held = not reasons
    said = []  # the report's own verdict first, then why its measurements do not pass
    for key, passing in (("status", "passed"), ("exit_code", 0)):
        if (document.get(key) == passing) and not held:
            forged.append(f"{key} is recorded {document.get(key)!r}, its measurements say it failed ({reasons[0]})")
        elif document.get(key) != passing:
            said.append(f"{key} is {document.get(key)!r}, a pass needs {passing!r}")
    return said + reasons, forged


def declared_backend(pytorch: dict[str, Any]) -> str:
    """The diagnostic's own order (scripts/kernodeck_diagnostic.declared_backend): hip first, then cuda."""
    return "rocm" if pytorch.get("hip") else "cuda" if pytorch.get("cuda") else "none"


def gpu_build_problems(document: dict[str, Any]) -> list[str]:
    """Why the report's own torch facts do not allow a GPU pass on the device it names: a build that declares
    no GPU backend (or a backend other than the one it ran on, or a `+cpu` wheel), no GPU available, or a
    device index outside the count it saw."""
    pytorch, execution = obj(document, "pytorch"), obj(document, "execution")
    problems = []
    backend = pytorch.get("backend")
    if backend != declared_backend(pytorch) or backend == "none":
        problems.append(f"pytorch.backend is {backend!r}, its pytorch.cuda {pytorch.get('cuda')!r} and "
                        f"pytorch.hip {pytorch.get('hip')!r} declare {declared_backend(pytorch)!r}: a GPU pass "
                        "needs a CUDA or ROCm build")
    elif execution.get("backend") != backend:
        problems.append(f"execution.backend is {execution.get('backend')!r}, the build's pytorch.backend is "
                        f"{backend!r}")
    version = str(pytorch.get("version") or "")
    if version.partition("+")[2] == "cpu":
        problems.append(f"pytorch.version is {version!r}, a CPU wheel: a GPU pass needs a GPU build")
    tag = None if version.partition("+")[2] == "cpu" else version_tag_problem(pytorch)
    if tag:
        problems.append(f"pytorch.version: {tag}")
    if pytorch.get("gpu_available") is not True:
        problems.append(f"pytorch.gpu_available is {pytorch.get('gpu_available')!r}, a GPU pass needs true")
    if not execution.get("gpu_model"):  # the diagnostic names every device it selects (or writes its neutral word)
        problems.append(f"execution.gpu_model is {execution.get('gpu_model')!r}: a GPU pass names the device it ran on")
    if backend == "cuda" and not execution.get("capability"):  # sm_XY from torch.cuda.get_device_capability
        problems.append(f"execution.capability is {execution.get('capability')!r}: a CUDA pass records the device's")
    gpus = pytorch.get("gpu_count")
    index = re.fullmatch(r"cuda:(\d+)", str(execution.get("device") or ""))
    if not count(gpus) or gpus < 1:
        problems.append(f"pytorch.gpu_count is {gpus!r}, a GPU pass needs at least 1")
    elif index is None or int(index.group(1)) >= gpus:
        problems.append(f"execution.device is {execution.get('device')!r}, not one of the {gpus} GPU(s) "
                        "pytorch.gpu_count counts")
    return problems
