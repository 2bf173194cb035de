"""A diagnostic report whose status outlives its measurements is not authentic.

Each row starts from a real committed diagnostic (the CPU report of evidence/local/run-local, the H200's of
evidence/cuda/run), edits ONE `pytorch.*`, `execution.*` or stage fact with its `status`, `code` and `exit_code`
left passing, and judges the bytes as the index judges each result it binds: refused as not authentic, naming
the field. A GPU pass rests on the report's own torch facts; a CPU pass on the CPU it ran on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    CPU_DIAGNOSTIC,
    GPU_DIAGNOSTIC,
    Edit,
    assert_forged,
    assert_passes,
    assert_refused,
    committed,
    edited,
    indexed_alone,
    judged,
    row,
    updating,
)

FAILED = "status is recorded 'passed', its measurements say it failed ("


def gpu(says: str, edit: Edit, named: str) -> Any:
    return row(says, GPU_DIAGNOSTIC, edit, (FAILED + named,))


DIAGNOSTICS = [
    gpu("a GPU pass on a CPU wheel", updating("pytorch", version="2.13.0+cpu"),
        "pytorch.version is '2.13.0+cpu', a CPU wheel"),
    gpu("a GPU pass with no GPU available", updating("pytorch", gpu_available=False),
        "pytorch.gpu_available is False, a GPU pass needs true"),
    gpu("a GPU pass with no GPU counted", updating("pytorch", gpu_count=0), "pytorch.gpu_count is 0"),
    gpu("a GPU pass on a device beyond the count", updating("execution", device="cuda:3"),
        "execution.device is 'cuda:3', not one of the 1 GPU(s) pytorch.gpu_count counts"),
    gpu("a GPU pass on a build of no backend", updating("pytorch", backend="none", cuda=None),
        "pytorch.backend is 'none'"),
    gpu("a GPU pass that ran on another backend", updating("execution", backend="cpu"),
        "execution.backend is 'cpu', the build's pytorch.backend is 'cuda'"),
    gpu("a GPU pass on a CUDA backend of no CUDA version", updating("pytorch", cuda=None),
        "pytorch.backend is 'cuda', its pytorch.cuda None and pytorch.hip None declare 'none'"),
    gpu("a GPU pass on a build that also names HIP", updating("pytorch", hip="x"),
        "pytorch.backend is 'cuda', its pytorch.cuda '13.0' and pytorch.hip 'x' declare 'rocm'"),
    gpu("a GPU pass of no GPU model", updating("execution", gpu_model=None), "execution.gpu_model is None"),
    gpu("a GPU pass of no capability", updating("execution", capability=None), "execution.capability is None"),
    gpu("a GPU pass that stopped before the compute", updating("", stage="import"),
        "code is 'GPU_CHECK_PASSED' but stage is 'import'"),
    gpu("a GPU pass whose version tag names another CUDA", updating("pytorch", version="2.11.0+cu128"),
        "pytorch.version: the installed build's version 2.11.0+cu128 names CUDA 12.8"),
    row("a ROCm pass whose version tag names another HIP than its version.py", GPU_DIAGNOSTIC,
        lambda d: (d["pytorch"].update(version="2.11.0+rocm6.4", cuda=None, hip="6.2.1", backend="rocm"),
                   d["execution"].update(backend="rocm", capability="gfx942")),
        ("names ROCm 6.4, its version.py HIP 6.2.1",)),
    row("a CPU pass that ran on a GPU backend", CPU_DIAGNOSTIC, updating("execution", backend="cuda"),
        ("code is 'CPU_CHECK_PASSED' but execution.backend is 'cuda'",)),
    row("a CPU pass that stopped at the import", CPU_DIAGNOSTIC, updating("", stage="import"),
        ("code is 'CPU_CHECK_PASSED' but stage is 'import'",)),
    row("a CPU pass whose loss check outlives its loss", CPU_DIAGNOSTIC, updating("execution", loss=195.0),
        ("execution.checks.loss is recorded True, execution.loss 195.0",)),
    row("a CPU pass whose gradient check failed", CPU_DIAGNOSTIC,
        lambda d: d["execution"]["checks"].update(gradient=False), ("status is recorded 'passed', its measurements",)),
    row("a CPU pass on a GPU device", CPU_DIAGNOSTIC, updating("execution", device="cuda:0"),
        ("code is 'CPU_CHECK_PASSED' but execution.device is",)),
    row("a CPU pass with only its product checked", CPU_DIAGNOSTIC, updating("execution", checks={"product": True}),
        ("the product, gradient and loss were not all",)),
]


@pytest.mark.parametrize(("start", "edit", "named"), DIAGNOSTICS)
def test_a_diagnostic_whose_status_outlives_its_measurements_is_not_authentic(start: str, edit: Edit,
                                                                              named: tuple[str, ...]) -> None:
    document = edited(start, edit)
    assert document["status"] == "passed"
    assert_forged(judged(document), *named)


# The promises the index holds of a diagnostic beyond its kind's rules: it is indexed alone and verified.
INDEXED = [
    row("a GPU report's message that is not the sentence of its code", GPU_DIAGNOSTIC,
        lambda d: d.update(message=d["message"] + " Twice."), ("message is '",)),
    row("torch counting more GPUs than nvidia-smi lists", GPU_DIAGNOSTIC, updating("pytorch", gpu_count=2),
        ("pytorch.gpu_count is 2, more than the 1 GPU(s) nvidia-smi lists",)),
]


@pytest.mark.parametrize(("start", "edit", "named"), INDEXED)
def test_a_diagnostic_with_a_fact_only_the_index_holds_forged_is_not_authentic(tmp_path, start: str, edit: Edit,
                                                                               named: tuple[str, ...]) -> None:
    assert_refused(indexed_alone(tmp_path, edited(start, edit), start), *named)


# --- the controls -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("start", [CPU_DIAGNOSTIC, GPU_DIAGNOSTIC])
def test_a_real_diagnostic_passes_by_its_measurements(start: str) -> None:
    assert_passes(judged(committed(start)))


def test_a_rocm_pass_is_judged_by_its_hip_build() -> None:
    report = committed(GPU_DIAGNOSTIC)
    report["pytorch"].update(version="2.11.0+rocm6.4", cuda=None, hip="6.4.43482", backend="rocm")
    report["execution"].update(backend="rocm", capability="gfx942")
    assert_passes(judged(report))


def test_the_committed_gpu_diagnostic_indexed_alone_passes(tmp_path) -> None:
    report = indexed_alone(tmp_path, committed(GPU_DIAGNOSTIC), GPU_DIAGNOSTIC)
    assert (report.outcome, report.problems) == ("pass", []), report.verdict
