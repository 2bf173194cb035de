"""Faults injected into torch from outside the project (a sitecustomize.py on PYTHONPATH, loaded by
every process of the protocol): the verification must FAIL with exit 1, never pass."""

from __future__ import annotations

import json

import pytest

from tests.conftest import validate
from tests.reprise.reprise_support import verdict, verify

pytestmark = pytest.mark.slow  # three full protocol runs

FAULTS = {
    # Every checkpoint read back gets its first floating-point tensor nudged by 1e-9.
    "torch.load perturbs a tensor": """
import torch
_load = torch.load
def _first_float(obj):
    if isinstance(obj, torch.Tensor) and obj.is_floating_point() and obj.numel():
        return obj
    items = list(obj.values()) if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else []
    for item in items:
        found = _first_float(item)
        if found is not None:
            return found
    return None
def load(*args, **kwargs):
    result = _load(*args, **kwargs)
    tensor = _first_float(result)
    if tensor is not None:
        tensor.view(-1)[0] += 1e-9
    return result
torch.load = load
""",
    # The optimizer never steps, in every process: runs agree with each other, yet nothing trained.
    "Adam.step does nothing": """
import torch
torch.optim.Adam.step = lambda self, closure=None: None
""",
    # The optimizer state loads as nothing: a resumed Adam restarts from zero moments.
    "Optimizer.load_state_dict is a no-op": """
import torch
torch.optim.Optimizer.load_state_dict = lambda self, state_dict: None
""",
    # Restoring torch's generator state does nothing: the resume continues from another dropout stream.
    "torch.set_rng_state is a no-op": """
import torch
torch.set_rng_state = lambda new_state: None
""",
    # The learning rate drifts (10% less before every step), in every process: the runs still agree with
    # each other and resume exactly; only the schedule differs from StepLR(3, 0.5).
    "Adam.step shrinks the learning rate": """
import torch
_step = torch.optim.Adam.step
def step(self, *args, **kwargs):
    for group in self.param_groups:
        group["lr"] = group["lr"] * 0.9
    return _step(self, *args, **kwargs)
torch.optim.Adam.step = step
""",
}

# A fault in the project's own restore (reached through an import hook): every RNG is restored even when
# a control asks to omit one, so no negative control can diverge any more.
RESTORE_EVERYTHING = """
import importlib.abc, importlib.machinery, sys

class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "reprise_core":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            real = module.restore_rng
            module.restore_rng = lambda state, np_rng, omit: real(state, np_rng, frozenset())

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Hook())
"""


def site_with(tmp_path, code: str):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(code, encoding="utf-8")
    return site


# CI runs one fault of the checkpoint and one of the RNG restore; the optimizer's three (a torch run each, about
# 35 s) are slower variants of the same promise that `python3 dev.py test --full` runs.
FULL_ONLY = ("Adam.step does nothing", "Optimizer.load_state_dict is a no-op", "Adam.step shrinks the learning rate")


@pytest.mark.parametrize("fault", [pytest.param(name, marks=pytest.mark.full) if name in FULL_ONLY else name
                                   for name in FAULTS])
def test_a_fault_injected_into_torch_fails_the_verification_with_exit_1(tmp_path, fault):
    output = tmp_path / "preuve"
    ran = verify(output, pythonpath=site_with(tmp_path, FAULTS[fault]))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert verdict(ran) == {"device": "cpu", "all_checks_passed": False, "positive": False,
                            "negative_divergence_detected": verdict(ran)["negative_divergence_detected"],
                            "report": "verification.json"}
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    validate(report, "reprise-verification.schema.json")
    assert report["exit_code"] == 1 and report["ok"] is False and report["completed"] is True
    assert_fault_is_named(report)
    if fault == "torch.set_rng_state is a no-op":
        assert report["resume_boundary"]["next_draws"]["draws"]["torch"]["passed"] is False


def assert_fault_is_named(report: dict) -> None:
    """The report must say what failed, not just fail."""
    if report["errors"]:
        return
    failed = [name for name, check in report["positive_resume"]["checks"].items() if not check["passed"]]
    failed += [name for name, check in report["integrity"].items() if isinstance(check, dict) and not check["passed"]]
    assert failed, "exit 1 with no failed check named"



def test_negative_controls_that_no_longer_diverge_fail_the_verification(tmp_path):
    """The resume itself stays exact (positive true), but a negative control that reproduces the
    uninterrupted run proves nothing: the verification must fail, exit 1."""
    output = tmp_path / "preuve"
    ran = verify(output, pythonpath=site_with(tmp_path, RESTORE_EVERYTHING))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert verdict(ran) == {"device": "cpu", "all_checks_passed": False, "positive": True,
                            "negative_divergence_detected": False, "report": "verification.json"}
    report = json.loads((output / "verification.json").read_text(encoding="utf-8"))
    validate(report, "reprise-verification.schema.json")
    controls = report["negative_controls"]["controls"]
    assert {name: c["divergence_detected"] for name, c in controls.items()} == {
        "all": False, "python": False, "numpy": False, "torch": False}
