"""Kernodeck reprise v1: the comparisons behind verify_resume.py.

Every check keeps the errors it measured (zeros included) and answers ``passed`` from them.
Tolerance: absolute 1e-12, relative 0, on weights, optimizer state, losses, eval MSE and learning
rates; exact equality on row order, data progress, scheduler state and RNG draws.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reprise_common as common
import reprise_core as core
import torch
from reprise_common import contract

# Checks whose failure means the training itself went elsewhere (what a negative control must show).
TRAINING_CHECKS = ("weights", "optimizer_state", "losses", "learning_rates", "final_mse_eval", "row_order", "progress")


@dataclass
class Run:
    name: str
    summary: dict
    checkpoint: dict
    checkpoint_sha256: str
    state_sha256: str


def load_run(folder: Path, name: str, code_sha256: str, data_sha256: str) -> Run:
    """A run folder read back the only safe way: fingerprint, size, weights_only, full validation."""
    summary_path = folder / common.SUMMARY_NAME
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise common.RepriseError(f"{name}/{common.SUMMARY_NAME} is missing or not JSON ({error})") from None
    data = common.read_verified_checkpoint(folder / common.CHECKPOINT_NAME)
    checkpoint = core.load_checkpoint(data, code_sha256, data_sha256)
    return Run(name, summary, checkpoint, contract.sha256_bytes(data),
               core.state_fingerprint(checkpoint["model"], checkpoint["optimizer"]))


def _errors(reference: list[float], candidate: list[float]) -> dict[str, Any]:
    length_ok = len(reference) == len(candidate)
    errors = [abs(float(a) - float(b)) for a, b in zip(reference, candidate)]
    finite = all(math.isfinite(e) for e in errors)
    worst = max(errors) if errors and finite else (0.0 if not errors else None)
    passed = length_ok and finite and all(e <= common.ATOL for e in errors)
    return {"passed": passed, "max_abs_error": worst, "errors": [e if math.isfinite(e) else None for e in errors],
            "lengths": [len(reference), len(candidate)]}


def _tensor_error(a: torch.Tensor, b: torch.Tensor) -> float | None:
    if a.shape != b.shape:
        return None
    if a.numel() == 0:
        return 0.0
    value = float((a.double() - b.double()).abs().max().item())
    return value if math.isfinite(value) else None


def _tensor_check(pairs: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> dict[str, Any]:
    errors = {name: _tensor_error(a, b) for name, (a, b) in pairs.items()}
    known = [e for e in errors.values() if e is not None]
    passed = bool(errors) and len(known) == len(errors) and all(e <= common.ATOL for e in known)
    return {"passed": passed, "max_abs_error": max(known) if known else None, "errors": errors}


def _optimizer_pairs(reference: dict, candidate: dict) -> tuple[dict, dict[str, Any]]:
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    missing: list[str] = []
    for index in sorted(reference["state"]):
        for key in sorted(reference["state"][index]):
            other = candidate["state"].get(index, {}).get(key)
            if other is None:
                missing.append(f"{index}.{key}")
                continue
            pairs[f"{index}.{key}"] = (reference["state"][index][key], other)
    group_a, group_b = reference["param_groups"][0], candidate["param_groups"][0]
    group_errors: dict[str, Any] = {}
    for key in sorted(set(group_a) | set(group_b)):
        a, b = group_a.get(key), group_b.get(key)
        if isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, (int, float)):
            group_errors[key] = abs(float(a) - float(b))
        elif isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            group_errors[key] = max(abs(float(x) - float(y)) for x, y in zip(a, b))
        else:
            group_errors[key] = 0.0 if a == b else None
    return pairs, {"param_group_errors": group_errors, "missing": missing}


def compare_training(reference: Run, candidate: Run) -> dict[str, dict[str, Any]]:
    """``candidate`` (resumed) against ``reference`` (the uninterrupted run): one entry per promise."""
    ref_ck, cand_ck = reference.checkpoint, candidate.checkpoint
    ref_sum, cand_sum = reference.summary, candidate.summary
    checks: dict[str, dict[str, Any]] = {}
    checks["weights"] = _tensor_check({name: (ref_ck["model"][name], cand_ck["model"][name])
                                       for name in ref_ck["model"]})
    pairs, extra = _optimizer_pairs(ref_ck["optimizer"], cand_ck["optimizer"])
    optimizer = _tensor_check(pairs)
    group_values = list(extra["param_group_errors"].values())
    optimizer["param_group_errors"] = extra["param_group_errors"]
    optimizer["missing"] = extra["missing"]
    optimizer["passed"] = (optimizer["passed"] and not extra["missing"]
                           and all(e is not None and e <= common.ATOL for e in group_values))
    checks["optimizer_state"] = optimizer
    checks["losses"] = _errors(ref_ck["history"]["losses"], cand_ck["history"]["losses"])
    checks["learning_rates"] = _errors(ref_ck["history"]["lrs"], cand_ck["history"]["lrs"])
    checks["final_mse_eval"] = _errors([ref_sum["final_mse_eval"]], [cand_sum["final_mse_eval"]])
    ref_rows, cand_rows = ref_ck["history"]["rows"], cand_ck["history"]["rows"]
    first = next((i + 1 for i, (a, b) in enumerate(zip(ref_rows, cand_rows)) if a != b), None)
    checks["row_order"] = {"passed": ref_rows == cand_rows, "first_different_step": first}
    checks["progress"] = {"passed": ref_ck["progress"] == cand_ck["progress"],
                          "reference": ref_ck["progress"], "candidate": cand_ck["progress"]}
    checks["scheduler_state"] = {"passed": ref_ck["scheduler"] == cand_ck["scheduler"],
                                 "reference": ref_ck["scheduler"], "candidate": cand_ck["scheduler"]}
    checks["next_draws_at_end"] = draws_check({"reference": ref_sum["next_draws"]["at_end"],
                                               "candidate": cand_sum["next_draws"]["at_end"]})
    return checks


def draws_check(sources: dict[str, dict[str, float]]) -> dict[str, Any]:
    """RNG draws must be identical: the first source is the reference for the others."""
    names = list(sources)
    reference = sources[names[0]]
    per_rng: dict[str, Any] = {}
    passed = True
    for rng in common.RNG_NAMES:
        values = {name: sources[name].get(rng) for name in names}
        errors = {f"abs_error_{name}": (abs(values[name] - reference[rng])
                                        if isinstance(values[name], float) and isinstance(reference.get(rng), float)
                                        else None) for name in names[1:]}
        ok = all(e == 0.0 for e in errors.values())
        passed = passed and ok
        per_rng[rng] = {**values, **errors, "passed": ok}
    return {"passed": passed, "draws": per_rng}


def boundary_checks(continuous: Run, cut: Run, resumed: Run) -> dict[str, Any]:
    """At the interruption: the position in the data, each RNG's next draw, the next learning rate."""
    steps = cut.checkpoint["progress"]["steps_done"]
    progress = cut.checkpoint["progress"]
    expected = {"steps_done": 5, "epoch": 0, "cursor": 20, "rows_consumed": 20}
    position = {key: progress[key] for key in expected}
    after = continuous.summary["next_draws"]["after_step"].get(str(steps), {})
    next_lr = _errors([continuous.checkpoint["history"]["lrs"][steps]] * 2,
                      [cut.summary["next_lr"], resumed.checkpoint["history"]["lrs"][steps]])
    result = {
        "position": {"passed": position == expected, **position, "rows": common.ROWS},
        "next_draws": draws_check({"continuous_after_step": after, "cut_at_end": cut.summary["next_draws"]["at_end"],
                                   "resumed_at_start": resumed.summary["next_draws"]["at_start"]}),
        "next_lr": {**next_lr, "continuous": continuous.checkpoint["history"]["lrs"][steps],
                    "cut": cut.summary["next_lr"], "resumed": resumed.checkpoint["history"]["lrs"][steps]},
    }
    result["passed"] = all(part["passed"] for part in result.values())
    return result


def integrity_checks(runs: dict[str, Run], expected_steps: dict[str, int], cut: Run, resumed: Run,
                     source: dict) -> dict[str, Any]:
    """Guards against a protocol that agrees with itself because nothing really happened."""
    checks: dict[str, Any] = {}
    fingerprints = {}
    for name, run in runs.items():
        record = run.summary.get("checkpoint", {})
        fingerprints[name] = {
            "checkpoint_sha256_matches_summary": record.get("sha256") == run.checkpoint_sha256,
            "state_sha256_matches_summary": record.get("state_sha256") == run.state_sha256,
            "source_matches": run.summary.get("source", {}).get("code_sha256") == source["code_sha256"]
            and run.summary.get("source", {}).get("data_sha256") == source["data_sha256"],
        }
    checks["fingerprints"] = {"passed": all(all(v.values()) for v in fingerprints.values()), "runs": fingerprints}
    adam = {}
    for name, steps in expected_steps.items():
        state = runs[name].checkpoint["optimizer"]["state"]
        adam[name] = {"expected": steps, "found": sorted({float(entry["step"].item()) for entry in state.values()})}
    checks["adam_steps"] = {"passed": all(v["found"] == [float(v["expected"])] for v in adam.values()), "runs": adam}
    lrs = runs["continu"].checkpoint["history"]["lrs"]
    expected_lrs = [common.LR * common.GAMMA ** (k // common.STEP_SIZE) for k in range(len(lrs))]
    checks["lr_schedule_matches_specification"] = _errors(expected_lrs, lrs)
    moved = max(float((cut.checkpoint["model"][n] - resumed.checkpoint["model"][n]).abs().max().item())
                for n in cut.checkpoint["model"])
    checks["weights_moved_after_resume"] = {"passed": math.isfinite(moved) and moved > 1e-9,
                                            "max_abs_change": moved if math.isfinite(moved) else None}
    shape = {name: {"parameters": run.summary.get("parameters"), "threads": run.summary.get("threads"),
                    "dtype": run.summary.get("dtype")} for name, run in runs.items()}
    checks["model_and_precision"] = {"passed": all(v == {"parameters": common.PARAMETERS, "threads": 1,
                                                         "dtype": "float64"} for v in shape.values()), "runs": shape}
    checks["passed"] = all(check["passed"] for check in checks.values())
    return checks


def training_diverged(checks: dict[str, dict[str, Any]]) -> bool:
    return any(not checks[name]["passed"] for name in TRAINING_CHECKS)
