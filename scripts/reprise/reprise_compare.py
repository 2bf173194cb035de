"""Kernodeck reprise v1: the comparisons behind verify_resume.py, without torch.

Each run's summary.json carries its checkpoint's contents as read back from disk by the process
that wrote it (exact float64 values), bound to the checkpoint file by SHA-256; the verifier checks
those bindings and compares, so it never pays torch's start-up.

Every check keeps the errors it measured (zeros included) and answers ``passed`` from them.
Tolerance: absolute 1e-12, relative 0, on weights, optimizer state, losses, eval MSE and learning
rates; exact equality on row order, data progress, scheduler state and RNG draws.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reprise_common as common
import strict_json  # core/strict_json.py's copy: the folder runs copied alone
import training_run_facts  # the RNG draws across runs, and each summary's (the contract's rule too)
from reprise_common import contract

# Checks whose failure means the training itself went elsewhere (what a negative control must show).
TRAINING_CHECKS = ("weights", "optimizer_state", "losses", "learning_rates", "final_mse_eval", "row_order", "progress")
SUMMARY_KEYS = ("source", "command", "steps_done", "progress", "scheduler", "next_lr", "history", "final_mse_eval",
                "next_draws", "checkpoint", "optimizer_param_group", "state", "parameters", "threads", "dtype")


@dataclass
class Run:
    """One run folder as the verifier sees it, without torch: summary.json, and the checkpoint's bytes
    bound to it by SHA-256 (the process that wrote the checkpoint read it back into ``state``)."""

    name: str
    summary: dict
    checkpoint_sha256: str

    @property
    def state(self) -> dict[str, Any]:
        return self.summary["state"]

    def tensors(self, prefix: str) -> dict[str, dict[str, Any]]:
        return {name[len(prefix):]: value for name, value in self.state.items() if name.startswith(prefix)}


def load_run(folder: Path, name: str) -> Run:
    """summary.json, and checkpoint.pt whose size and .sha256 are checked (its bytes are not unpickled here)."""
    try:
        summary = strict_json.parse_strict((folder / common.SUMMARY_NAME).read_bytes())  # no duplicate key, NaN
    except (OSError, ValueError) as error:
        raise common.RepriseError(f"{name}/{common.SUMMARY_NAME} is missing or not JSON ({error})") from None
    missing = [key for key in SUMMARY_KEYS if key not in summary] if isinstance(summary, dict) else ["(object)"]
    if missing:
        raise common.RepriseError(f"{name}/{common.SUMMARY_NAME} lacks {missing}")
    data = common.read_verified_checkpoint(folder / common.CHECKPOINT_NAME)
    return Run(name, summary, contract.sha256_bytes(data))


def _errors(reference: list[float], candidate: list[float]) -> dict[str, Any]:
    length_ok = len(reference) == len(candidate)
    errors = [abs(float(a) - float(b)) for a, b in zip(reference, candidate)]
    finite = all(math.isfinite(e) for e in errors)
    worst = max(errors) if errors and finite else (0.0 if not errors else None)
    passed = length_ok and finite and all(e <= common.ATOL for e in errors)
    return {"passed": passed, "max_abs_error": worst, "errors": [e if math.isfinite(e) else None for e in errors],
            "lengths": [len(reference), len(candidate)]}


def _tensor_error(a: dict[str, Any], b: dict[str, Any] | None) -> float | None:
    if b is None or a["shape"] != b["shape"] or len(a["values"]) != len(b["values"]):
        return None
    value = max((abs(x - y) for x, y in zip(a["values"], b["values"])), default=0.0)
    return value if math.isfinite(value) else None


def _tensor_check(reference: dict[str, dict], candidate: dict[str, dict]) -> dict[str, Any]:
    names = sorted(set(reference) | set(candidate))
    errors = {name: (_tensor_error(reference[name], candidate.get(name)) if name in reference else None)
              for name in names}
    known = [e for e in errors.values() if e is not None]
    passed = bool(errors) and len(known) == len(errors) and all(e <= common.ATOL for e in known)
    return {"passed": passed, "max_abs_error": max(known) if known else None, "errors": errors}


def _group_errors(reference: dict[str, Any], candidate: dict[str, Any]) -> dict[str, float | None]:
    errors: dict[str, float | None] = {}
    for key in sorted(set(reference) | set(candidate)):
        a, b = reference.get(key), candidate.get(key)
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if numbers:
            errors[key] = abs(float(a) - float(b))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and a and all(
                isinstance(v, (int, float)) for v in a + b):
            errors[key] = max(abs(float(x) - float(y)) for x, y in zip(a, b))
        else:
            errors[key] = 0.0 if a == b else None
    return errors


def compare_training(reference: Run, candidate: Run) -> dict[str, dict[str, Any]]:
    """``candidate`` (resumed) against ``reference`` (the uninterrupted run): one entry per promise."""
    ref, cand = reference.summary, candidate.summary
    checks: dict[str, dict[str, Any]] = {}
    checks["weights"] = _tensor_check(reference.tensors("model."), candidate.tensors("model."))
    optimizer = _tensor_check(reference.tensors("optimizer."), candidate.tensors("optimizer."))
    groups = _group_errors(ref["optimizer_param_group"], cand["optimizer_param_group"])
    optimizer["param_group_errors"] = groups
    optimizer["passed"] = optimizer["passed"] and all(e is not None and e <= common.ATOL for e in groups.values())
    checks["optimizer_state"] = optimizer
    checks["losses"] = _errors(ref["history"]["losses"], cand["history"]["losses"])
    checks["learning_rates"] = _errors(ref["history"]["lrs"], cand["history"]["lrs"])
    checks["final_mse_eval"] = _errors([ref["final_mse_eval"]], [cand["final_mse_eval"]])
    ref_rows, cand_rows = ref["history"]["rows"], cand["history"]["rows"]
    first = next((i + 1 for i, (a, b) in enumerate(zip(ref_rows, cand_rows)) if a != b), None)
    checks["row_order"] = {"passed": ref_rows == cand_rows, "first_different_step": first}
    checks["progress"] = {"passed": ref["progress"] == cand["progress"],
                          "reference": ref["progress"], "candidate": cand["progress"]}
    checks["scheduler_state"] = {"passed": ref["scheduler"] == cand["scheduler"],
                                 "reference": ref["scheduler"], "candidate": cand["scheduler"]}
    checks["next_draws_at_end"] = draws_check({"reference": ref["next_draws"]["at_end"],
                                               "candidate": cand["next_draws"]["at_end"]})
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
    progress = cut.summary["progress"]
    steps = progress["steps_done"]
    expected = {"steps_done": 5, "epoch": 0, "cursor": 20, "rows_consumed": 20}
    position = {key: progress[key] for key in expected}
    after = continuous.summary["next_draws"]["after_step"].get(str(steps), {})
    continuous_lr = continuous.summary["history"]["lrs"][steps]
    resumed_lr = resumed.summary["history"]["lrs"][steps]
    next_lr = _errors([continuous_lr] * 2, [cut.summary["next_lr"], resumed_lr])
    result = {
        "position": {"passed": position == expected, **position, "rows": common.ROWS},
        "next_draws": draws_check({"continuous_after_step": after, "cut_at_end": cut.summary["next_draws"]["at_end"],
                                   "resumed_at_start": resumed.summary["next_draws"]["at_start"]}),
        "next_lr": {**next_lr, "continuous": continuous_lr, "cut": cut.summary["next_lr"], "resumed": resumed_lr},
    }
    result["passed"] = all(part["passed"] for part in result.values())
    return result


def integrity_checks(runs: dict[str, Run], expected_steps: dict[str, int], cut: Run, resumed: Run,
                     source: dict) -> dict[str, Any]:
    """Guards against a protocol that agrees with itself because nothing really happened."""
    checks: dict[str, Any] = {}
    fingerprints = {}
    for name, run in runs.items():
        record = run.summary["checkpoint"]
        fingerprints[name] = {
            # The file on disk is the one the process recorded (its .sha256 was checked on reading).
            "checkpoint_sha256_matches_summary": record.get("sha256") == run.checkpoint_sha256,
            # Saving then loading the checkpoint gave back exactly the state that was in memory.
            "state_round_trip_exact": record.get("state_sha256") == common.state_fingerprint(run.state),
            # ...and its code_sha256 is the fingerprint of the files it lists (what every checkpoint stores).
            "source_matches": run.summary["source"].get("code_sha256") == source["code_sha256"]
            and run.summary["source"].get("data_sha256") == source["data_sha256"]
            and not source_problems(run.summary["source"]),
        }
    checks["fingerprints"] = {"passed": all(all(v.values()) for v in fingerprints.values()), "runs": fingerprints}
    resumed_from = resumed.summary["resumed_from"] or {}
    checks["resumed_from_cut"] = {
        "passed": resumed_from.get("checkpoint_sha256") == cut.checkpoint_sha256
        and resumed_from.get("steps_done") == 5,
        "cut_checkpoint_sha256": cut.checkpoint_sha256, "resumed_from": resumed_from or None}
    adam = {}
    for name, steps in expected_steps.items():
        found = {value for key, entry in runs[name].tensors("optimizer.").items() if key.endswith(".step")
                 for value in entry["values"]}
        adam[name] = {"expected": steps, "found": sorted(found)}
    checks["adam_steps"] = {"passed": all(v["found"] == [float(v["expected"])] for v in adam.values()), "runs": adam}
    lrs = runs["continu"].summary["history"]["lrs"]
    expected_lrs = [common.LR * common.GAMMA ** (k // common.STEP_SIZE) for k in range(len(lrs))]
    checks["lr_schedule_matches_specification"] = _errors(expected_lrs, lrs)
    moved = _tensor_check(cut.tensors("model."), resumed.tensors("model."))["max_abs_error"]
    checks["weights_moved_after_resume"] = {"passed": moved is not None and moved > 1e-9, "max_abs_change": moved}
    shape = {name: {"parameters": run.summary.get("parameters"), "threads": run.summary.get("threads"),
                    "dtype": run.summary.get("dtype")} for name, run in runs.items()}
    checks["model_and_precision"] = {"passed": all(v == {"parameters": common.PARAMETERS, "threads": 1,
                                                         "dtype": "float64"} for v in shape.values()), "runs": shape}
    checks["passed"] = all(check["passed"] for check in checks.values())
    return checks


def training_diverged(checks: dict[str, dict[str, Any]]) -> bool:
    return any(not checks[name]["passed"] for name in TRAINING_CHECKS)


def omitted_by(control: str) -> list[str]:
    """The RNG restores a negative control leaves out: every one for "all", else the one it is named after."""
    return sorted(common.RNG_NAMES) if control == "all" else [control]


def draws_problems(checks: dict[str, dict[str, Any]], omitted: list[str]) -> list[str]:
    """A negative control proves the restore of the RNGs it omitted: at the end, exactly those RNGs' next draws
    differ from the uninterrupted run's, and every restored one's equals it (the RNGs feed separate draws:
    Python the input gain, NumPy the noise, torch the dropout). A control that omitted another RNG, relabelled,
    shows its own RNG diverged instead."""
    draws = ((checks.get("next_draws_at_end") or {}).get("draws") or {}) if isinstance(checks, dict) else {}
    problems = []
    for rng in common.RNG_NAMES:
        entry = draws.get(rng) if isinstance(draws.get(rng), dict) else {}
        diverged = entry.get("passed") is False
        if diverged != (rng in omitted):
            problems.append(f"next_draws_at_end.draws.{rng}.passed is {entry.get('passed')!r}: the {rng} RNG's next "
                            f"draw {'did not diverge' if rng in omitted else 'diverged'} although its restore was "
                            f"{'omitted' if rng in omitted else 'kept'} (omit_rng_restore {omitted})")
    return problems


def _fingerprint_in_some_order(code: list[tuple[str, Any]], recorded: Any) -> bool:
    """Whether `recorded` is the fingerprint of these pairs in another order: JSON object order is not part of the
    document, so a result re-serialised with sorted keys is the same result (a handful of code files: at most
    8! orders are tried)."""
    if len(code) > 8 or not isinstance(recorded, str):
        return False
    return any(common.fingerprint_of(dict(order)) == recorded for order in itertools.permutations(code))


def source_problems(source: Any, not_code: tuple[str, ...] = ()) -> list[str]:
    """A result's `source.code_sha256` is the fingerprint (reprise_common.fingerprint_of) of the code entries of
    its `source.files` (all of them but `not_code`: the verifier's own files and data.csv in a verification),
    and `data_sha256` is the data.csv entry where one is listed. Files re-hashed to other sources under a kept
    fingerprint (the one every checkpoint also stores) are refused here."""
    if not isinstance(source, dict) or not isinstance(source.get("files"), dict):
        return [f"source.files is {str((source or {}).get('files') if isinstance(source, dict) else source)[:60]}, "
                "not the files the fingerprint is over"]
    files = source["files"]
    code = [(name, digest) for name, digest in files.items() if name not in not_code]
    actual = common.fingerprint_of(dict(code))
    problems = []
    if source.get("code_sha256") != actual and not _fingerprint_in_some_order(code, source.get("code_sha256")):
        problems.append(f"source.code_sha256 is {source.get('code_sha256')!r}, the fingerprint of its source.files is "
                        f"{actual!r}")
    if "data.csv" in files and source.get("data_sha256") != files["data.csv"]:
        problems.append(f"source.data_sha256 is {source.get('data_sha256')!r}, its source.files data.csv is "
                        f"{files['data.csv']!r}")
    return problems


def _plain(value: Any) -> Any:
    """A checkpoint value as JSON holds it (tuples as lists), so a summary compares with it exactly."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def summary_checkpoint_problems(summary: dict[str, Any], loaded: Any, core: Any) -> list[str]:
    """What summary.json records about its checkpoint, against the checkpoint as torch.load(weights_only=True)
    reads it back. The summary is written from the process's own read-back, so every part must be exactly
    the checkpoint's; the verifier compares summaries only, so a checkpoint swapped under an unchanged summary
    (its SHA-256 redone) is seen here or nowhere. ``core`` is reprise_core (torch): its own export_state and
    param_group re-derive the summary's fields, passed in so this module stays torch-free for the verifier."""
    parts = ("model", "optimizer", "history", "progress", "scheduler")
    if not isinstance(loaded, dict) or any(part not in loaded for part in parts):
        return ["the checkpoint is not a reprise checkpoint (it lacks model, optimizer, history, progress or "
                "scheduler)"]
    try:
        exported, group = core.export_state(loaded), core.param_group(loaded)
        next_lr = float(loaded["optimizer"]["param_groups"][0]["lr"])
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as error:
        return [f"the checkpoint's state does not export ({type(error).__name__}: {str(error)[:80]})"]
    problems = []
    state = summary.get("state") if isinstance(summary.get("state"), dict) else {}
    differing = sorted(name for name in set(exported) | set(state) if exported.get(name) != state.get(name))
    if differing:
        more = f" and {len(differing) - 4} more" if len(differing) > 4 else ""
        problems.append(f"state: {', '.join(differing[:4])}{more} differ from the checkpoint's tensors")
    record = summary.get("checkpoint") if isinstance(summary.get("checkpoint"), dict) else {}
    actual = common.state_fingerprint(exported)
    if record.get("state_sha256") != actual:
        problems.append(f"checkpoint.state_sha256 is {str(record.get('state_sha256'))[:16]}..., the checkpoint's "
                        f"tensors give {actual[:16]}...")
    source = summary.get("source") if isinstance(summary.get("source"), dict) else {}
    facts = {"history": (summary.get("history"), _plain(loaded["history"])),
             "progress": (summary.get("progress"), _plain(loaded["progress"])),
             "scheduler": (summary.get("scheduler"), _plain(loaded["scheduler"])),
             "optimizer_param_group": (summary.get("optimizer_param_group"), _plain(group)),
             "next_lr": (summary.get("next_lr"), next_lr),
             "steps_done": (summary.get("steps_done"), _plain(loaded["progress"]).get("steps_done")
                            if isinstance(loaded["progress"], dict) else None),
             "source.code_sha256": (source.get("code_sha256"), loaded.get("code_sha256")),
             "source.data_sha256": (source.get("data_sha256"), loaded.get("data_sha256"))}
    problems += [f"{name} differs from the checkpoint's" for name, (recorded, held) in facts.items()
                 if recorded != held]
    return problems + eval_mse_problems(summary, loaded, core)


def eval_mse_problems(summary: dict[str, Any], loaded: dict[str, Any], core: Any) -> list[str]:
    """The run's headline number re-derived: the checkpoint's weights (the run's last state: eval consumes no
    randomness and changes no weight) evaluated on data.csv, the file the run trained on by SHA-256, must give
    the summary's final_mse_eval (atol 1e-12: another torch build may round its last bit otherwise)."""
    recorded = summary.get("final_mse_eval")
    source = summary.get("source") if isinstance(summary.get("source"), dict) else {}
    try:
        data_sha256, rows = common.load_data()
    except common.RepriseError as error:
        return [f"final_mse_eval cannot be recomputed: {error}"]
    if data_sha256 != source.get("data_sha256"):
        return [f"final_mse_eval cannot be recomputed: data.csv here is {data_sha256[:16]}..., the run trained on "
                f"{str(source.get('data_sha256'))[:16]}..."]
    try:
        model = core.build_model()
        model.load_state_dict(loaded["model"])
        value = core.eval_mse(model, core.data_tensor(rows))
    except Exception as error:  # the weights do not fit the model: nothing to evaluate
        return [f"final_mse_eval cannot be recomputed: the checkpoint's weights do not load into the model "
                f"({type(error).__name__}: {str(error)[:80]})"]
    if not _finite_number(recorded) or abs(value - recorded) > common.ATOL:
        return [f"final_mse_eval is {recorded!r}, the checkpoint's weights on data.csv give {value!r}"]
    return []


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def role_problems(config: Any, summary: dict[str, Any], steps: int, resumed_from: dict | None,
                  omit_rng_restore: list[str]) -> list[str]:
    """A run folder's config.json and its summary's command against the role the verification gave it: the
    steps, the checkpoint it resumed from (coupure's, by SHA-256), the RNG restores it left out, and every
    fixed hyper-parameter (lr among them) as train.py writes them."""
    expected = common.run_config(steps, resumed_from, omit_rng_restore)
    if not isinstance(config, dict):
        return ["config.json is not bound (or not one JSON object)"]
    problems = [f"config.json {key} is {config.get(key)!r}, the verification expects {value!r}"
                for key, value in expected.items() if config.get(key) != value or key not in config]
    problems += [f"config.json holds {key!r}, which train.py never writes"
                 for key in sorted(set(config) - set(expected))]
    command = {"steps": steps, "resumed": resumed_from is not None, "omit_rng_restore": omit_rng_restore}
    if summary.get("command") != command:
        problems.append(f"summary.json command is {summary.get('command')!r}, the verification expects {command!r}")
    if summary.get("resumed_from") != resumed_from:
        problems.append(f"summary.json resumed_from is {summary.get('resumed_from')!r}, the verification expects "
                        f"{resumed_from!r}")
    return problems


def process_records(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What verify_resume records for each process of `plan` that exited 0 (its wall time aside)."""
    return [{"name": spec["name"], "phase": spec["phase"], "argv": ["python", "-B", "train.py", *spec["args"]],
             "cwd": "<output>", "exit_code": 0, "log": f"logs/{spec['name']}.log"} for spec in plan]


def _side_by_side(plan: list[dict[str, Any]]) -> list[list[str]]:
    phases = sorted({spec["phase"] for spec in plan})
    return [[spec["name"] for spec in plan if spec["phase"] == phase] for phase in phases]


def process_log_lines(spec: dict[str, Any], runs: dict[str, Run]) -> list[str]:
    """The lines train.py prints for one process of the plan (stdout), from the runs it wrote."""
    args = spec["args"]
    output = args[args.index("--output") + 1]
    summary = runs[output].summary
    lines = [f"{common.LOG_PREFIX}{summary['steps_done']} steps done, final MSE (eval) "
             f"{summary['final_mse_eval']:.12g}, wrote {output}"]
    if "--per-rng-controls" in args:
        folder = args[args.index("--per-rng-controls") + 1]
        lines += [f"{common.LOG_PREFIX}control omitting the {rng} RNG restore, wrote {folder}/omit-{rng}"
                  for rng in common.RNG_NAMES]
    return lines


def log_problems(name: str, text: str, expected: list[str] | None) -> list[str]:
    """The one rule for a process log (logs/<name>.log: the process's stdout and stderr), which verify_resume
    applies before writing its report and the evidence index applies to the recorded bytes: every byte is
    something train.py wrote. Each line ends with a newline and is printable ASCII starting
    reprise_common.LOG_PREFIX (a warning raised during the run is one WARNING_PREFIX line, escaped); those that
    are not warnings are exactly `expected` (None: not known, only the lines' form is held). A line another
    library printed past train.py, or a Traceback, is refused, by its line number."""
    where = f"logs/{name}.log"
    if text and not text.endswith("\n"):
        return [f"{where} ends without a newline ({text.rsplit(chr(10), 1)[-1][:120]!r}): train.py ends every "
                "line it prints"]
    lines = text.split("\n")[:-1]
    for number, line in enumerate(lines, 1):
        if not line.startswith(common.LOG_PREFIX) or not all(" " <= char <= "~" for char in line):
            return [f"{where} line {number} is {line[:120]!r}: a train.py process prints only printable ASCII "
                    f"lines starting {common.LOG_PREFIX!r} (a warning as {common.WARNING_PREFIX!r}), so this line "
                    "is not the run's"]
    held = [line for line in lines if not line.startswith(common.WARNING_PREFIX)]
    if expected is None or held == expected:
        return []
    index = next(i for i in range(max(len(held), len(expected)))
                 if i >= len(held) or i >= len(expected) or held[i] != expected[i])
    said = held[index][:120] if index < len(held) else "(no such line)"
    want = expected[index][:120] if index < len(expected) else "(no such line)"
    return [f"{where} train.py line {index + 1} is {said!r}; the runs it wrote make train.py print {want!r}"]


def process_log_problems(plan: list[dict[str, Any]], runs: dict[str, Run], logs: dict[str, str]) -> list[str]:
    """Each process's log against what train.py prints for the runs it wrote (log_problems)."""
    problems = []
    for spec in plan:
        if spec["name"] not in logs:
            continue
        try:
            expected = process_log_lines(spec, runs)
        except (KeyError, TypeError, ValueError):
            expected = None  # the summaries it is rendered from are refused already; the lines' form still holds
        problems += log_problems(spec["name"], logs[spec["name"]], expected)
    return problems


def protocol_problems(report: dict[str, Any], plan: list[dict[str, Any]], runs: dict[str, Run],
                      positive: tuple[str, str], controls: list[str], logs: dict[str, str]) -> list[str]:
    """What a passing verification's own record must say beyond its comparisons: every process of the plan
    ran with the plan's arguments and exited 0 (none missing, none added), side by side as planned; its
    `environment` is the one every run's summary records; and the torch-free second view of "bit for bit":
    the resumed checkpoint's bytes are the continuous one's (torch.save of the same state writes the same
    bytes, as every recorded run shows), and no negative control's bytes are. Each problem names the field."""
    protocol = report.get("protocol") if isinstance(report.get("protocol"), dict) else {}
    problems = []
    processes = protocol.get("processes")
    expected = process_records(plan)
    if not isinstance(processes, list) or len(processes) != len(expected):
        count = len(processes) if isinstance(processes, list) else processes
        problems.append(f"protocol.processes holds {count!r} record(s), the protocol runs {len(expected)} "
                        f"({', '.join(spec['name'] for spec in plan)})")
        processes = processes if isinstance(processes, list) else []
    for index, (record, want) in enumerate(zip(processes, expected)):
        record = record if isinstance(record, dict) else {}
        for key, value in want.items():
            if record.get(key) != value or key not in record:
                problems.append(f"protocol.processes[{index}:{want['name']}].{key} is {record.get(key)!r}, the "
                                f"protocol's is {value!r}")
        wall = record.get("wall_s")
        if not isinstance(wall, (int, float)) or isinstance(wall, bool) or not math.isfinite(wall) or wall < 0:
            problems.append(f"protocol.processes[{index}:{want['name']}].wall_s is {wall!r}, not a duration")
    if protocol.get("side_by_side") != _side_by_side(plan):
        problems.append(f"protocol.side_by_side is {protocol.get('side_by_side')!r}, the protocol runs "
                        f"{_side_by_side(plan)!r}")
    problems += environment_problems(report.get("environment"), runs)
    problems += process_log_problems(plan, runs, logs)
    problems += training_run_facts.trajectory_problems(plan, runs, positive)
    reference, resumed = (runs[name] for name in positive)
    if resumed.checkpoint_sha256 != reference.checkpoint_sha256:
        problems.append(f"{resumed.name}/{common.CHECKPOINT_NAME} is {resumed.checkpoint_sha256[:16]}..., "
                        f"{reference.name}/{common.CHECKPOINT_NAME} is {reference.checkpoint_sha256[:16]}...: a resume "
                        "bit for bit leaves the continuous run's checkpoint bytes")
    problems += [f"{name}/{common.CHECKPOINT_NAME} is byte for byte {reference.name}'s: a negative control that "
                 "diverged cannot hold the continuous run's checkpoint" for name in controls
                 if runs[name].checkpoint_sha256 == reference.checkpoint_sha256]
    return problems


ENVIRONMENT_KEYS = ("python", "torch", "numpy")


def environment_problems(environment: Any, runs: dict[str, Run]) -> list[str]:
    """One interpreter ran every process (verify_resume starts train.py with its own): every summary's
    environment is the same, and the verification's is that one (it copies it)."""
    environment = environment if isinstance(environment, dict) else {}
    views = {name: run.summary.get("environment") if isinstance(run.summary.get("environment"), dict) else {}
             for name, run in runs.items()}
    first = next(iter(runs))
    problems = []
    for key in ENVIRONMENT_KEYS:
        held = {name: view.get(key) for name, view in views.items()}
        if len(set(map(repr, held.values()))) > 1:
            others = ", ".join(f"{name} {value!r}" for name, value in held.items() if value != held[first])
            problems.append(f"environment.{key}: the runs' summaries disagree ({first} {held[first]!r}; {others})")
        elif environment.get(key) != str(held[first]):
            problems.append(f"environment.{key} is {environment.get(key)!r}, every run's summary records "
                            f"{held[first]!r}")
    return problems

