"""What a reprise run's config.json may say, and the other files that say it again (a config edited alone, or
with one of its echoes, must not pass): training_run_records.agreement_problems applies these to a folder
train.py wrote.

A config.json is held first to its own rule: exactly the keys train.py writes, each a value train.py can run
with (a batch of at least one row and at most the data's, a dropout in [0, 1), a StepLR step size of at least
one, ...), and the values kernodeck reprise v1 fixes (reprise_common.run_config). Then each fact it states is
compared with every other file of the folder that records it again:

* ``hidden``      -- the summary's exported weights (``state``: model.0.bias holds one value per hidden unit),
                     whose sizes add up to the summary's ``parameters``; the checkpoint holds that state
                     (reprise_compare.summary_checkpoint_problems);
* ``lr``, ``step_size``, ``gamma`` -- every metrics line's ``lr`` is StepLR's ``lr * gamma ** ((step - 1) //
                     step_size)``, computed as StepLR does (one multiplication per step_size steps); the
                     summary's scheduler state, ``next_lr`` and the optimizer's ``initial_lr`` say the same;
* ``rows``        -- the rows of data.csv (the file the summary names by SHA-256), the summary's permutation
                     (of that many rows) and every row index a metrics line names;
* ``batch``       -- the rows each metrics line trained on, and the summary's ``rows_consumed``;
* ``seed``        -- the next draw of each RNG the run did not restore from a checkpoint (all three for a run
                     from scratch): Python's and NumPy's re-derived here, torch's where torch is loaded.

A summary's ``next_draws`` are uniform draws, so each lies in [0, 1); one is recorded after each step the run
made and none other; ``at_end`` (taken after the final evaluation, which draws nothing) is the draw after the
last step; and, where torch is loaded, it is what the checkpoint's saved RNG states draw next. Across the runs
of a verification (trajectory_problems, which reprise_compare.protocol_problems applies for verify_resume.py
and the evidence index alike): every step's draws two exact runs both recorded are one, and so are first draws.
"""

from __future__ import annotations

import hashlib
import math
import random
import sys
from pathlib import Path
from typing import Any

CONFIG, SUMMARY, METRICS = "config.json", "summary.json", "metrics.jsonl"
DATA = Path(__file__).resolve().parent / "data.csv"
RNG_NAMES = ("python", "numpy", "torch")  # reprise_common.RNG_NAMES (that module imports the contract)
ATOL = 1e-12  # reprise_common.ATOL, the verification's tolerance on learning rates


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _common() -> Any:
    """reprise_common, imported late (it imports the contract, which imports the module that imports this one)
    and by name from this folder, however this module was loaded (a test loads it by path)."""
    if str(DATA.parent) not in sys.path:
        sys.path.append(str(DATA.parent))
    import reprise_common

    return reprise_common


def config_problems(config: dict, problem) -> None:
    """config.json's own rule: train.py's keys, runnable values, and the values reprise v1 fixes."""
    common = _common()
    expected = common.run_config(1, None, [])
    for key in sorted(set(expected) - set(config)):
        if key != "steps":  # named missing already, with the metrics it is compared with
            problem("missing", CONFIG, f"{CONFIG} does not record {key}")
    for key in sorted(set(config) - set(expected)):
        problem("disagrees", CONFIG, f"{CONFIG} holds {key!r}, which train.py never writes")
    rows = config.get("rows")
    rules = {"seed": (_int, lambda v: v >= 0, "a non-negative integer"),
             "rows": (_int, lambda v: v >= 1, "a positive integer"),
             "batch": (_int, lambda v: v >= 1 and (not _int(rows) or v <= rows),
                       "an integer from 1 to the rows (a step trains on at least one row)"),
             "hidden": (_int, lambda v: v >= 1, "a positive integer"),
             "dropout": (_number, lambda v: 0 <= v < 1, "a probability in [0, 1) (a dropout of 1 zeros every "
                         "hidden unit)"),
             "lr": (_number, lambda v: v > 0, "a positive number"),
             "step_size": (_int, lambda v: v >= 1, "an integer of at least 1 (StepLR's period in steps)"),
             "gamma": (_number, lambda v: v > 0, "a positive number (StepLR's factor)"),
             "threads": (_int, lambda v: v >= 1, "a positive integer"),
             "steps": (_int, lambda v: v >= 1, "a positive integer")}
    for key, (kind, within, what) in rules.items():
        if key in config and not (kind(config[key]) and within(config[key])):
            problem("out_of_range", CONFIG, f"{CONFIG} {key} is {config[key]!r}, not {what}")
    omit = config.get("omit_rng_restore")
    if "omit_rng_restore" in config and (not isinstance(omit, list) or not all(isinstance(r, str) for r in omit)
                                         or omit != sorted(set(omit) & set(RNG_NAMES))):
        problem("out_of_range", CONFIG, f"{CONFIG} omit_rng_restore is {omit!r}, not a sorted list of {RNG_NAMES}")
    elif omit and config.get("resume") is None:
        problem("disagrees", CONFIG, f"{CONFIG} omit_rng_restore is {omit!r} for a run that did not resume")
    for key in ("version", "project", "seed", "rows", "batch", "hidden", "dropout", "lr", "step_size", "gamma",
                "dtype", "threads"):
        if key in config and (config[key] != expected[key] or type(config[key]) is not type(expected[key])):
            problem("disagrees", CONFIG, f"{CONFIG} {key} is {config[key]!r}, kernodeck reprise v1 trains with "
                    f"{expected[key]!r} (train.py writes it)")


def _hidden_of(state: dict) -> tuple[Any, Any]:
    """(hidden units, parameter count) of the summary's exported weights: model.0.bias's length, the sizes."""
    model = {name: value for name, value in state.items() if name.startswith("model.") and isinstance(value, dict)}
    bias = (model.get("model.0.bias") or {}).get("shape")
    hidden = bias[0] if isinstance(bias, list) and len(bias) == 1 else None
    sizes = [math.prod(value["shape"]) for value in model.values() if isinstance(value.get("shape"), list)
             and all(_int(n) for n in value["shape"])]
    return hidden, (sum(sizes) if model and len(sizes) == len(model) else None)


def step_lrs(lr: float, gamma: float, step_size: int, last: int) -> list[float]:
    """The learning rate of steps 1..last under StepLR, as torch computes it: multiplied by gamma once every
    step_size steps (never a closed-form power, whose last bit may differ)."""
    rates, value = [], lr
    for index in range(last):
        if index and index % step_size == 0:
            value = value * gamma
        rates.append(value)
    return rates


def _data_rows(summary: dict) -> tuple[int | None, str]:
    source = summary.get("source") if isinstance(summary.get("source"), dict) else {}
    try:
        raw = DATA.read_bytes()
    except OSError:
        return None, f"{DATA.name} is not beside the checker"
    if hashlib.sha256(raw).hexdigest() != source.get("data_sha256"):
        return None, f"{DATA.name} here is not the data the run names (source.data_sha256)"
    return len([line for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]) - 1, ""


def second_view_problems(config: dict, summary: dict, steps: list[tuple[int, dict]], problem) -> None:
    """Each fact config.json states, against the other files that record it (see the module's docstring)."""
    state = summary.get("state") if isinstance(summary.get("state"), dict) else {}
    hidden, parameters = _hidden_of(state)
    if "hidden" in config and config["hidden"] != hidden:
        problem("disagrees", CONFIG, f"{CONFIG} hidden is {config['hidden']!r}, the run's weights ({SUMMARY} "
                f"state model.0.bias) hold {hidden!r} hidden unit(s)")
    if summary.get("parameters") != parameters:
        problem("disagrees", SUMMARY, f"{SUMMARY} parameters is {summary.get('parameters')!r}, its weights "
                f"(state model.*) hold {parameters!r}")
    lr, gamma, period = config.get("lr"), config.get("gamma"), config.get("step_size")
    if _number(lr) and _number(gamma) and _int(period) and period >= 1 and steps:
        rates = step_lrs(lr, gamma, period, steps[-1][1]["step"] + 1)
        for number, record in steps:
            want = rates[record["step"] - 1]
            if not _number(record.get("lr")) or abs(record["lr"] - want) > ATOL:
                problem("disagrees", f"{METRICS}:{number}", f"{METRICS}:{number}: lr {record.get('lr')!r} at step "
                        f"{record['step']}, StepLR from {CONFIG} (lr {lr!r}, gamma {gamma!r}, step_size {period!r}) "
                        f"gives {want!r}")
        scheduler = summary.get("scheduler") if isinstance(summary.get("scheduler"), dict) else {}
        group = summary.get("optimizer_param_group") if isinstance(summary.get("optimizer_param_group"), dict) else {}
        views = {"scheduler.step_size": (scheduler.get("step_size"), period),
                 "scheduler.gamma": (scheduler.get("gamma"), gamma),
                 "scheduler.base_lrs": (scheduler.get("base_lrs"), [lr]),
                 "optimizer_param_group.initial_lr": (group.get("initial_lr"), lr)}
        for field, (held, want) in views.items():
            if held != want:
                problem("disagrees", SUMMARY, f"{SUMMARY} {field} is {held!r}, {CONFIG} says {want!r}")
        next_lr = summary.get("next_lr")
        if not _number(next_lr) or abs(next_lr - rates[-1]) > ATOL:
            problem("disagrees", SUMMARY, f"{SUMMARY} next_lr is {next_lr!r}, StepLR from {CONFIG} gives "
                    f"{rates[-1]!r} for step {len(rates)}")
    _data_problems(config, summary, steps, problem)


def _data_problems(config: dict, summary: dict, steps: list[tuple[int, dict]], problem) -> None:
    rows, batch = config.get("rows"), config.get("batch")
    counted, why = _data_rows(summary)
    if counted is None:
        problem("disagrees", CONFIG, f"{CONFIG} rows cannot be compared with the data: {why}")
    elif "rows" in config and rows != counted:
        problem("disagrees", CONFIG, f"{CONFIG} rows is {rows!r}, {DATA.name} ({summary['source']['data_sha256'][:16]}"
                f"...) holds {counted} row(s)")
    progress = summary.get("progress") if isinstance(summary.get("progress"), dict) else {}
    permutation = progress.get("permutation")
    if _int(rows) and not (isinstance(permutation, list) and all(_int(i) for i in permutation)
                           and sorted(permutation) == list(range(rows))):
        problem("disagrees", SUMMARY, f"{SUMMARY} progress.permutation is not a permutation of the {rows!r} rows "
                f"{CONFIG} names")
    for number, record in steps:
        held = record.get("rows")
        if "rows" in record and _int(rows) and _int(batch) and (not isinstance(held, list) or len(held) != batch
                                                               or not all(_int(r) and 0 <= r < rows for r in held)):
            problem("disagrees", f"{METRICS}:{number}", f"{METRICS}:{number}: rows {held!r}, not {batch!r} row(s) of "
                    f"the {rows!r} {CONFIG} names")
    done = summary.get("steps_done")
    if _int(batch) and _int(done) and progress.get("rows_consumed") != done * batch:
        problem("disagrees", SUMMARY, f"{SUMMARY} progress.rows_consumed is {progress.get('rows_consumed')!r}, "
                f"{done} step(s) of {batch} row(s) ({CONFIG} batch) consume {done * batch}")


def draws_problems(summary: dict, first: Any, last: Any) -> list[str]:
    """A summary's next_draws: three uniform draws in [0, 1) each, one set after each step from `first` to
    `last` and none other, at_end the one after the last step. Each line names the field."""
    draws = summary.get("next_draws") if isinstance(summary.get("next_draws"), dict) else {}
    after = draws.get("after_step") if isinstance(draws.get("after_step"), dict) else {}
    problems = []
    named = {"at_start": draws.get("at_start"), "at_end": draws.get("at_end"),
             **{f"after_step.{key}": value for key, value in after.items()}}
    for field, value in named.items():
        value = value if isinstance(value, dict) else {}
        if sorted(value) != sorted(RNG_NAMES) or not all(
                isinstance(v, float) and 0.0 <= v < 1.0 for v in value.values()):
            problems.append(f"next_draws.{field} is {value!r}: a uniform draw of each of {RNG_NAMES}, in [0, 1)")
    if _int(first) and _int(last):
        expected = [str(step) for step in range(first, last + 1)]
        if list(after) != expected:
            problems.append(f"next_draws.after_step records steps {list(after)[:12]!r}, the run made steps "
                            f"{expected[:12]!r}")
        if draws.get("at_end") != after.get(str(last)):
            problems.append(f"next_draws.at_end is {draws.get('at_end')!r}, the draw after the last step "
                            f"(after_step.{last}) is {after.get(str(last))!r}: the final evaluation draws nothing")
    return problems


def _fresh(config: Any, summary: dict) -> tuple[Any, list[str]]:
    """(the seed, the RNGs the run did not restore: all three from scratch, else those it omitted)."""
    command = summary.get("command") if isinstance(summary.get("command"), dict) else {}
    config = config if isinstance(config, dict) else {}
    omitted = command.get("omit_rng_restore") if isinstance(command.get("omit_rng_restore"), list) else []
    fresh = list(RNG_NAMES) if command.get("resumed") is False else [r for r in RNG_NAMES if r in omitted]
    return config.get("seed"), fresh


def seed_draws_problems(config: dict, summary: dict, problem) -> None:
    """The first draw of each RNG the run seeded itself, re-derived from config.json's seed (Python's; NumPy's
    where numpy imports; torch's is checkpoint_draws_problems', with torch loaded)."""
    seed, fresh = _fresh(config, summary)
    if not (_int(seed) and seed >= 0):
        return  # refused by the config's own rule
    start = ((summary.get("next_draws") or {}).get("at_start") or {}) if isinstance(summary.get("next_draws"),
                                                                                  dict) else {}
    derived = {"python": lambda: random.Random(seed).random()}
    try:
        import numpy
        derived["numpy"] = lambda: float(numpy.random.Generator(numpy.random.PCG64(seed)).random())
    except ImportError:
        pass
    for rng in fresh:
        if rng in derived and (not isinstance(start, dict) or start.get(rng) != derived[rng]()):
            problem("disagrees", SUMMARY, f"{SUMMARY} next_draws.at_start.{rng} is {start.get(rng)!r}, the {rng} "
                    f"RNG seeded with {seed} ({CONFIG} seed) draws {derived[rng]()!r} first")


def checkpoint_draws_problems(config: Any, summary: dict, loaded: Any, core: Any) -> list[str]:
    """With torch: next_draws.at_end against the next draws of the checkpoint's saved RNG states, and torch's
    first draw of a run that seeded it against config.json's seed (reprise_core's own functions)."""
    draws = summary.get("next_draws") if isinstance(summary.get("next_draws"), dict) else {}
    problems = []
    try:
        held = core.draws_of(loaded["rng"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        return [f"the checkpoint's RNG states do not draw ({type(error).__name__}: {str(error)[:80]})"]
    if draws.get("at_end") != held:
        problems.append(f"next_draws.at_end is {draws.get('at_end')!r}, the checkpoint's RNG states draw {held!r}")
    seed, fresh = _fresh(config, summary)
    if "torch" in fresh and _int(seed) and seed >= 0:
        first = core.seeded_draws(seed)["torch"]
        start = draws.get("at_start") if isinstance(draws.get("at_start"), dict) else {}
        if start.get("torch") != first:
            problems.append(f"next_draws.at_start.torch is {start.get('torch')!r}, torch seeded with {seed} "
                            f"({CONFIG} seed) draws {first!r} first once the model is built")
    return problems


def trajectory_problems(plan: list[dict[str, Any]], runs: dict[str, Any], positive: tuple[str, str]) -> list[str]:
    """The RNG draws every run recorded, across runs (a resume whose draws wander and come back must not pass):
    each run's own next_draws rule (draws_problems); every step's draws that the continuous run and another
    exact run (the cut, the resume) both recorded are the same; the runs from scratch start from one seed, so
    their first draws are one; and a resumed run's first draw of each RNG is the cut's last where it restored
    that RNG, the seed's first where it omitted it. Only the boundary and the end were compared before: a resume
    whose draws wandered after steps 6-9 and came back passed."""
    def draws(run: Any) -> dict[str, Any]:
        value = run.summary.get("next_draws")
        return value if isinstance(value, dict) else {}

    def after(run: Any) -> dict[str, Any]:
        value = draws(run).get("after_step")
        return value if isinstance(value, dict) else {}

    problems = []
    for name, run in runs.items():  # reprise_compare.Run: its name and summary
        resumed_from = run.summary.get("resumed_from") if isinstance(run.summary.get("resumed_from"), dict) else {}
        first = resumed_from.get("steps_done", 0) + 1 if isinstance(resumed_from.get("steps_done", 0), int) else None
        problems += [f"{name}/{SUMMARY} {line}"
                     for line in draws_problems(run.summary, first, run.summary.get("steps_done"))]
    reference, resumed = (runs[name] for name in positive)
    resumes = [spec for spec in plan if "--resume" in spec["args"]]
    cut_name = resumes[0]["args"][resumes[0]["args"].index("--resume") + 1].split("/")[0] if resumes else None
    cut = runs.get(cut_name)
    for run in (cut, resumed):
        if run is None:
            continue
        for step in sorted(set(after(run)) & set(after(reference)), key=lambda key: (len(key), key)):
            if after(run)[step] != after(reference)[step]:
                problems.append(f"{run.name}/{SUMMARY} next_draws.after_step.{step} is "
                                f"{after(run)[step]!r}, {reference.name}'s is {after(reference)[step]!r}: the "
                                "runs make the same steps, every draw after each is the same")
    if cut is None:
        return problems
    for name, run in runs.items():
        if name == reference.name:
            continue
        omitted = (run.summary.get("command") or {}).get("omit_rng_restore") if isinstance(
            run.summary.get("command"), dict) else None
        resumed_run = run.summary.get("resumed_from") is not None
        start = draws(run).get("at_start") if isinstance(draws(run).get("at_start"), dict) else {}
        for rng in RNG_NAMES:
            seeded = not resumed_run or (isinstance(omitted, list) and rng in omitted)
            source, field = (reference, "at_start") if seeded else (cut, "at_end")
            want = (draws(source).get(field) or {}).get(rng) if isinstance(draws(source).get(field), dict) else None
            if start.get(rng) != want:
                problems.append(f"{name}/{SUMMARY} next_draws.at_start.{rng} is {start.get(rng)!r}, "
                                f"{source.name}'s next_draws.{field}.{rng} is {want!r}: "
                                + ("both seeded it with one seed" if seeded else f"it restored it from {cut.name}"))
    return problems
