"""Kernodeck reprise v1, the training itself: model, three RNGs, steps, checkpoint save and safe load.

Float64 on one CPU thread, so two processes running the same steps agree bit for bit.
Three random sources feed the work and must all be carried across an interruption:
Python ``random`` (input gain), a NumPy PCG64 ``Generator`` (target noise and the permutation),
torch's CPU generator (dropout).
"""

from __future__ import annotations

import copy
import io
import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import reprise_common as common
import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

# The 33 parameters of build_model(), by state_dict name.
PARAMETER_SHAPES = {"0.weight": (8, 2), "0.bias": (8,), "3.weight": (1, 8), "3.bias": (1,)}
REQUIRED_KEYS = ("schema", "version", "project", "code_sha256", "data_sha256", "model", "optimizer",
                 "scheduler", "progress", "rng", "history")


@dataclass
class Progress:
    permutation: list[int] | None = None
    epoch: int = 0
    cursor: int = 0
    rows_consumed: int = 0
    steps_done: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"permutation": self.permutation, "epoch": self.epoch, "cursor": self.cursor,
                "rows_consumed": self.rows_consumed, "steps_done": self.steps_done}


@dataclass
class History:
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"losses": list(self.losses), "lrs": list(self.lrs), "rows": [list(r) for r in self.rows]}


@dataclass
class Outcome:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.StepLR
    np_rng: np.random.Generator
    progress: Progress
    history: History
    next_draws_at_start: dict[str, float]
    next_draws_after_step: dict[str, dict[str, float]]
    final_mse_eval: float = math.nan
    next_draws_at_end: dict[str, float] = field(default_factory=dict)


def build_model() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(common.FEATURES, common.HIDDEN),
        torch.nn.Tanh(),
        torch.nn.Dropout(common.DROPOUT),
        torch.nn.Linear(common.HIDDEN, 1),
    ).to(dtype=torch.float64)


def build(seed: int = common.SEED) -> tuple[torch.nn.Module, torch.optim.Optimizer, Any, np.random.Generator]:
    """A fresh process's state: seeded RNGs, then model, optimizer and scheduler (init consumes torch RNG)."""
    random.seed(seed)
    np_rng = np.random.Generator(np.random.PCG64(seed))
    torch.manual_seed(seed)
    model = build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=common.LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=common.STEP_SIZE, gamma=common.GAMMA)
    return model, optimizer, scheduler, np_rng


# --- RNG state as plain types -------------------------------------------------------------------

def capture_rng(np_rng: np.random.Generator) -> dict[str, Any]:
    version, internal, gauss_next = random.getstate()
    return {
        "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
        # PCG64's state is a dict of ints and strings: no ndarray is ever serialised.
        "numpy": np_rng.bit_generator.state,
        "torch": torch.get_rng_state().clone(),
    }


def restore_rng(state: dict[str, Any], np_rng: np.random.Generator, omit: frozenset[str]) -> None:
    if "python" not in omit:
        py = state["python"]
        random.setstate((py["version"], tuple(py["internal"]), py["gauss_next"]))
    if "numpy" not in omit:
        np_rng.bit_generator.state = state["numpy"]
    if "torch" not in omit:
        torch.set_rng_state(state["torch"])


def peek_next_draws(np_rng: np.random.Generator) -> dict[str, float]:
    """The next draw of each RNG, taken from copies: the live states are left exactly as they were."""
    saved = random.getstate()
    python_draw = random.random()
    random.setstate(saved)
    probe = np.random.Generator(np.random.PCG64())
    probe.bit_generator.state = np_rng.bit_generator.state
    numpy_draw = float(probe.random())
    torch_state = torch.get_rng_state()
    torch_draw = float(torch.rand(1, dtype=torch.float64).item())
    torch.set_rng_state(torch_state)
    return {"python": python_draw, "numpy": numpy_draw, "torch": torch_draw}


def draws_of(rng: dict[str, Any]) -> dict[str, float]:
    """The next draw of each RNG from saved states (as capture_rng writes them), on copies: what a run whose
    checkpoint holds `rng` draws next (next_draws.at_end). The process's own RNGs are not touched."""
    python = random.Random()
    py = rng["python"]
    python.setstate((py["version"], tuple(py["internal"]), py["gauss_next"]))
    probe = np.random.Generator(np.random.PCG64())
    probe.bit_generator.state = rng["numpy"]
    generator = torch.Generator()
    generator.set_state(rng["torch"])
    return {"python": python.random(), "numpy": float(probe.random()),
            "torch": float(torch.rand(1, dtype=torch.float64, generator=generator).item())}


def seeded_draws(seed: int) -> dict[str, float]:
    """The first draws of a run from scratch (next_draws.at_start): build(seed), then peek, with the process's
    Python and torch RNG states put back after."""
    saved = random.getstate()
    with torch.random.fork_rng(devices=[]):
        *_, np_rng = build(seed)
        draws = peek_next_draws(np_rng)
    random.setstate(saved)
    return draws


# --- training -----------------------------------------------------------------------------------

def training_step(model, optimizer, scheduler, np_rng, data: torch.Tensor, progress: Progress,
                  history: History) -> None:
    if progress.permutation is None or progress.cursor >= common.ROWS:
        if progress.permutation is not None:
            progress.epoch += 1
        progress.permutation = [int(i) for i in np_rng.permutation(common.ROWS)]
        progress.cursor = 0
    rows = progress.permutation[progress.cursor:progress.cursor + common.BATCH]
    progress.cursor += common.BATCH
    progress.rows_consumed += common.BATCH
    gain = 1.0 + random.uniform(-common.GAIN_SPREAD, common.GAIN_SPREAD)
    noise = torch.from_numpy(np_rng.normal(0.0, common.NOISE_STD, size=(common.BATCH, 1)))
    batch = data[rows]
    inputs = batch[:, :2] * gain
    targets = batch[:, 2:] + noise
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    lr = float(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
    progress.steps_done += 1
    history.losses.append(float(loss.item()))
    history.lrs.append(lr)
    history.rows.append([int(r) for r in rows])


def eval_mse(model: torch.nn.Module, data: torch.Tensor) -> float:
    """MSE over all rows in eval(): dropout off, so no RNG is consumed."""
    model.eval()
    with torch.no_grad():
        value = float(torch.nn.functional.mse_loss(model(data[:, :2]), data[:, 2:]).item())
    model.train()
    return value


def data_tensor(rows: list[tuple[float, float, float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def train(rows: list[tuple[float, float, float]], steps: int, checkpoint: dict | None = None,
          omit: frozenset[str] = frozenset()) -> Outcome:
    """``steps`` extra steps, from scratch or from a validated checkpoint, as a fresh process would."""
    model, optimizer, scheduler, np_rng = build()
    progress, history = Progress(), History()
    if checkpoint is not None:
        # A private copy: optimizer.load_state_dict keeps references to same-dtype tensors and Adam
        # then updates them in place, which would alter the caller's checkpoint for the next run.
        checkpoint = copy.deepcopy(checkpoint)
        # Order from the specification: weights, scheduler, optimizer; RNGs last, after every
        # construction step that consumed randomness.
        model.load_state_dict(checkpoint["model"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        progress = Progress(**checkpoint["progress"])
        saved = checkpoint["history"]
        history = History(list(saved["losses"]), list(saved["lrs"]), [list(r) for r in saved["rows"]])
        restore_rng(checkpoint["rng"], np_rng, omit)
    model.train()
    data = data_tensor(rows)
    outcome = Outcome(model, optimizer, scheduler, np_rng, progress, history, peek_next_draws(np_rng), {})
    for _ in range(steps):
        training_step(model, optimizer, scheduler, np_rng, data, progress, history)
        if not math.isfinite(history.losses[-1]):
            raise common.RepriseError(f"loss became non-finite at step {progress.steps_done}")
        outcome.next_draws_after_step[str(progress.steps_done)] = peek_next_draws(np_rng)
    outcome.final_mse_eval = eval_mse(model, data)
    outcome.next_draws_at_end = peek_next_draws(np_rng)
    return outcome


# --- checkpoint ---------------------------------------------------------------------------------

def checkpoint_dict(outcome: Outcome, code_sha256: str, data_sha256: str) -> dict[str, Any]:
    # RNG states are captured after training and before eval; eval consumes no randomness.
    return {
        "schema": common.CHECKPOINT_SCHEMA,
        "version": common.VERSION,
        "project": common.PROJECT,
        "code_sha256": code_sha256,
        "data_sha256": data_sha256,
        "model": outcome.model.state_dict(),
        "optimizer": outcome.optimizer.state_dict(),
        "scheduler": outcome.scheduler.state_dict(),
        "progress": outcome.progress.as_dict(),
        "rng": capture_rng(outcome.np_rng),
        "history": outcome.history.as_dict(),
    }


def serialise(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def export_state(state: dict[str, Any]) -> dict[str, Any]:
    """Every weight and Adam tensor of a checkpoint as exact floats (JSON keeps float64 exactly)."""
    tensors: dict[str, torch.Tensor] = {f"model.{name}": value for name, value in state["model"].items()}
    for index, entry in state["optimizer"]["state"].items():
        for key, value in entry.items():
            tensors[f"optimizer.{index}.{key}"] = value
    return {name: {"shape": list(tensor.shape),
                   "values": [float(v) for v in tensor.detach().to(torch.float64).reshape(-1).tolist()]}
            for name, tensor in sorted(tensors.items())}


def param_group(state: dict[str, Any]) -> dict[str, Any]:
    """Adam's hyper-parameters and current learning rate, as JSON values."""
    group = state["optimizer"]["param_groups"][0]
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in sorted(group.items()) if key != "params"}


def load_checkpoint(data: bytes, code_sha256: str, data_sha256: str) -> dict[str, Any]:
    """Unpickle verified bytes with weights_only=True (no fallback), then refuse anything not ours."""
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # the restricted unpickler's refusal; never retried unsafely
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise common.CheckpointError(
            f"refused: the checkpoint does not load with torch.load(weights_only=True) ({first[:300]})") from None
    validate_checkpoint(state, code_sha256, data_sha256)
    return state


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise common.CheckpointError(f"refused checkpoint: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_checkpoint(state: Any, code_sha256: str, data_sha256: str) -> None:
    """Every part a resume needs, with the right shapes; an incomplete state is never patched up."""
    _check_envelope(state, code_sha256, data_sha256)
    _check_model(state["model"])
    steps = _check_progress(state["progress"])
    _check_optimizer(state["optimizer"])
    _check_scheduler(state["scheduler"], steps)
    _check_rng(state["rng"])
    _check_history(state["history"], steps)


def _check_envelope(state: Any, code_sha256: str, data_sha256: str) -> None:
    """Exactly the expected keys, and written by this code for this data.csv."""
    _require(isinstance(state, dict), "not a dictionary")
    for key in REQUIRED_KEYS:
        _require(key in state, f"missing key {key!r}")
    extra = sorted(set(state) - set(REQUIRED_KEYS))
    _require(not extra, f"unexpected keys {extra}")
    _require(state["schema"] == common.CHECKPOINT_SCHEMA and state["project"] == common.PROJECT,
             f"foreign schema {state['schema']!r} / project {state['project']!r}")
    _require(state["version"] == common.VERSION, f"version {state['version']!r}, this code reads {common.VERSION}")
    _require(state["code_sha256"] == code_sha256,
             "written by different code (code SHA-256 differs from train.py and its modules now)")
    _require(state["data_sha256"] == data_sha256, "written for a different data.csv (SHA-256 differs)")


def _check_model(model: Any) -> None:
    _require(isinstance(model, dict), "model state is not a dictionary")
    for name, shape in PARAMETER_SHAPES.items():
        _require(name in model, f"missing key 'model.{name}'")
        value = model[name]
        _require(isinstance(value, torch.Tensor) and tuple(value.shape) == shape and value.dtype == torch.float64,
                 f"model tensor {name!r} has the wrong type, shape or dtype")
    _require(set(model) == set(PARAMETER_SHAPES), f"unexpected model keys {sorted(set(model) - set(PARAMETER_SHAPES))}")


def _check_progress(progress: Any) -> int:
    """The data position (permutation, epoch, cursor) agrees with the step count; returns that count."""
    _require(isinstance(progress, dict), "progress is not a dictionary")
    for key in ("permutation", "epoch", "cursor", "rows_consumed", "steps_done"):
        _require(key in progress, f"missing key 'progress.{key}'")
    steps = progress["steps_done"]
    _require(_is_int(steps) and steps >= 1, "progress.steps_done must be a positive integer")
    _require(isinstance(progress["permutation"], list) and sorted(progress["permutation"]) == list(range(common.ROWS)),
             f"progress.permutation is not a permutation of the {common.ROWS} rows")
    _require(all(_is_int(progress[k]) for k in ("epoch", "cursor", "rows_consumed")), "progress values must be ints")
    _require(progress["rows_consumed"] == steps * common.BATCH == progress["epoch"] * common.ROWS + progress["cursor"]
             and 0 < progress["cursor"] <= common.ROWS, "progress counters are inconsistent")
    return steps


def _check_optimizer(optimizer: Any) -> None:
    """Adam's state for each of the four parameter tensors, in one parameter group."""
    _require(isinstance(optimizer, dict) and set(optimizer) == {"state", "param_groups"},
             "optimizer state must hold exactly 'state' and 'param_groups'")
    groups = optimizer["param_groups"]
    _require(isinstance(groups, list) and len(groups) == 1 and groups[0].get("params") == [0, 1, 2, 3],
             "optimizer.param_groups must be one group over the 4 parameter tensors")
    _require(isinstance(optimizer["state"], dict) and sorted(optimizer["state"]) == [0, 1, 2, 3],
             "optimizer.state must hold Adam's state for each of the 4 parameter tensors")
    for index, shape in enumerate(PARAMETER_SHAPES.values()):
        entry = optimizer["state"][index]
        for key in ("step", "exp_avg", "exp_avg_sq"):
            _require(isinstance(entry, dict) and isinstance(entry.get(key), torch.Tensor),
                     f"missing key 'optimizer.state.{index}.{key}'")
        _require(tuple(entry["exp_avg"].shape) == shape and tuple(entry["exp_avg_sq"].shape) == shape,
                 f"optimizer.state.{index} has the wrong shape")


def _check_scheduler(scheduler: Any, steps: int) -> None:
    _require(isinstance(scheduler, dict), "scheduler state is not a dictionary")
    for key in ("step_size", "gamma", "base_lrs", "last_epoch", "_last_lr"):
        _require(key in scheduler, f"missing key 'scheduler.{key}'")
    _require(scheduler["step_size"] == common.STEP_SIZE and scheduler["gamma"] == common.GAMMA
             and scheduler["base_lrs"] == [common.LR] and scheduler["last_epoch"] == steps,
             "scheduler state is not StepLR(step_size=3, gamma=0.5) at the checkpoint's step")


def _check_rng(rng: Any) -> None:
    """The three generators' states as plain types (Python, NumPy PCG64) and a CPU byte tensor (torch)."""
    _require(isinstance(rng, dict), "rng is not a dictionary")
    for name in common.RNG_NAMES:
        _require(name in rng, f"missing key 'rng.{name}'")
    py = rng["python"]
    _require(isinstance(py, dict) and set(py) == {"version", "internal", "gauss_next"}
             and isinstance(py["internal"], list) and len(py["internal"]) == 625
             and all(_is_int(v) for v in py["internal"]), "rng.python is not a Python random state")
    nps = rng["numpy"]
    _require(isinstance(nps, dict) and nps.get("bit_generator") == "PCG64" and isinstance(nps.get("state"), dict)
             and all(_is_int(nps["state"].get(k)) for k in ("state", "inc")), "rng.numpy is not a PCG64 state")
    _require(isinstance(rng["torch"], torch.Tensor) and rng["torch"].dtype == torch.uint8 and rng["torch"].dim() == 1,
             "rng.torch is not a CPU generator state (uint8 tensor)")


def _check_history(history: Any, steps: int) -> None:
    _require(isinstance(history, dict), "history is not a dictionary")
    for key in ("losses", "lrs", "rows"):
        _require(key in history, f"missing key 'history.{key}'")
        _require(isinstance(history[key], list) and len(history[key]) == steps,
                 f"history.{key} must hold one entry per step ({steps})")
    _require(all(isinstance(v, float) and math.isfinite(v) for v in history["losses"] + history["lrs"]),
             "history holds a non-finite or non-float value")
