"""The training-run contract's rules across files: what config.json, metrics.jsonl, summary.json and the
checkpoint say about one run must agree (scripts/reprise/training_run_contract.check_run_dir calls these).

A folder can be well-formed file by file and still tell two stories: a config of 500 steps beside 5 metrics
lines, a loss of 1e300 the summary never saw, a summary whose losses are not the checkpoint's, a config on
cuda for a run that ran on the CPU. Each fact is compared as far as the folder records it; a folder written
by train.py (config schema kernodeck.reprise.config) must record all of them, so deleting a field does not
skip its comparison. A loss that is not a finite number (core.files writes a NaN as the string "nan") is a
failed run: the check fails, whatever else agrees.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import strict_json

REPRISE_CONFIG = "kernodeck.reprise.config"
REPRISE_SUMMARY = "kernodeck.reprise.summary"
SUMMARY_FILE = "summary.json"
CONFIG, METRICS = "config.json", "metrics.jsonl"  # training_run_contract's names (it imports this module)
CHECKPOINT = "checkpoint.pt"  # the one a reprise summary describes (reprise_common.CHECKPOINT_NAME)
NON_FINITE_TEXT = frozenset({"nan", "-nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"})
# Where and how the run ran: the config's plan, and the summary's account of the run under the same names.
PLACE_FIELDS = ("device", "dtype", "threads")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def loss_problem(value: Any, where: str) -> tuple[str, str] | None:
    """(code, message) when a recorded loss is not a finite number."""
    if _number(value):
        return None
    if isinstance(value, float) or (isinstance(value, str) and value.strip().lower() in NON_FINITE_TEXT):
        return "non_finite", f"{where}: loss is {value!r}: the loss was not finite, the run failed"
    return "not_a_number", f"{where}: loss is {value!r}, not a number"


def metrics_problems(records: list[tuple[int, dict]], problem) -> dict[str, Any]:
    """Each line's loss and step; the steps numbered one after another. Returns the steps seen and the end
    record (the last {"event": "end"}), for the comparisons with the other files."""
    steps: list[tuple[int, dict]] = []
    end = None
    for number, record in records:
        where = f"{METRICS}:{number}"
        if "loss" in record:
            found = loss_problem(record["loss"], where)
            if found:
                problem(found[0], where, found[1])
        if "step" in record:
            if not _count(record["step"]) or record["step"] < 1:
                problem("not_a_number", where, f"{where}: step is {record['step']!r}, not a positive integer")
                continue
            if steps and record["step"] != steps[-1][1]["step"] + 1:
                problem("steps_mismatch", where, f"{where}: step {record['step']} follows step "
                        f"{steps[-1][1]['step']}: the steps are not one after another")
            steps.append((number, record))
        elif record.get("event") == "end":
            end = (number, record)
    return {"steps": steps, "end": end}


def read_summary(root: Path, required: bool, problem) -> dict | None:
    path = root / SUMMARY_FILE
    if not path.is_file():
        if required:
            problem("missing", SUMMARY_FILE, f"{SUMMARY_FILE} is missing (train.py writes one beside its config)")
        return None
    try:
        value = strict_json.parse_strict(path.read_bytes())
    except (OSError, ValueError) as error:
        problem("unparsable", SUMMARY_FILE, f"{SUMMARY_FILE} is not strict JSON: {str(error)[:200]}")
        return None
    if not isinstance(value, dict):
        problem("not_object", SUMMARY_FILE, f"{SUMMARY_FILE} must hold one JSON object")
        return None
    return value


def _recorded(document: dict, key: str, required: bool, name: str, problem) -> Any:
    if key not in document and required:
        problem("missing", name, f"{name} does not record {key}")
    return document.get(key)


def agreement_problems(root: Path, config: Any, seen: dict[str, Any], problem) -> dict | None:
    """config.steps, the metrics' steps and end record, summary.json's steps, losses, rates, rows, final MSE and
    where it ran, each against the others. Returns the reprise summary (for the checkpoint comparison)."""
    config = config if isinstance(config, dict) else {}
    reprise = config.get("schema") == REPRISE_CONFIG
    summary = read_summary(root, reprise, problem)
    reprise = reprise or (summary or {}).get("schema") == REPRISE_SUMMARY
    steps, end = seen["steps"], seen["end"]
    last = steps[-1][1]["step"] if steps else None
    if reprise and not steps:
        problem("steps_mismatch", METRICS, f"{METRICS} holds no step record")
    if reprise and end is None:
        problem("missing", METRICS, f"{METRICS} holds no end record ({{\"event\": \"end\", ...}})")
    planned = _recorded(config, "steps", reprise, CONFIG, problem)
    if planned is not None and planned != len(steps):
        problem("steps_mismatch", CONFIG, f"{CONFIG} steps is {planned!r}, {METRICS} holds {len(steps)} step "
                "record(s)")
    resume = config.get("resume")
    before = resume.get("steps_done") if isinstance(resume, dict) else (0 if reprise else None)
    if _count(before) and steps and steps[0][1]["step"] != before + 1:
        problem("steps_mismatch", METRICS, f"{METRICS}:{steps[0][0]}: the first step is {steps[0][1]['step']}, "
                f"the run started after step {before} ({CONFIG} resume)")
    done = {f"{METRICS}:{end[0]} steps_done": end[1].get("steps_done")} if end else {}
    if summary is not None:
        done[f"{SUMMARY_FILE} steps_done"] = _recorded(summary, "steps_done", reprise, SUMMARY_FILE, problem)
    for name, value in done.items():
        if value is not None and value != last:
            problem("steps_mismatch", name.split(" ")[0], f"{name} is {value!r}, the last step in {METRICS} is "
                    f"{last!r}")
    if summary is None:
        return None
    _summary_agreement(config, summary, steps, end, reprise, problem)
    if reprise:
        log_problems(root, config, summary, steps, problem)
        facts = _sibling("training_run_facts")  # the config's own rule and the files that say it again
        if config:  # else config.json is missing or refused, named already
            facts.config_problems(config, problem)
            facts.second_view_problems(config, summary, steps, problem)
        first = steps[0][1]["step"] if steps else None
        for line in facts.draws_problems(summary, first, last):
            problem("disagrees", SUMMARY_FILE, f"{SUMMARY_FILE} {line}")
        facts.seed_draws_problems(config, summary, problem)
    return summary if reprise else None


def _sibling(name: str) -> Any:
    """A module of this folder, imported by name (a test or an importer may have loaded this one by path)."""
    folder = str(Path(__file__).resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    return __import__(name)


def _summary_agreement(config: dict, summary: dict, steps: list, end: Any, reprise: bool, problem) -> None:
    history = _recorded(summary, "history", reprise, SUMMARY_FILE, problem)
    history = history if isinstance(history, dict) else {}
    for key, field in (("loss", "losses"), ("lr", "lrs"), ("rows", "rows")):
        values = history.get(field)
        if not isinstance(values, list):
            if reprise:
                problem("missing", SUMMARY_FILE, f"{SUMMARY_FILE} does not record history.{field}")
            continue
        for number, record in steps:
            held = values[record["step"] - 1] if record["step"] <= len(values) else None
            if key in record and record[key] != held:
                problem("disagrees", f"{METRICS}:{number}", f"{METRICS}:{number}: {key} {record[key]!r}, "
                        f"{SUMMARY_FILE} history.{field} holds {held!r} for step {record['step']}")
    if end is not None and "final_mse_eval" in end[1]:
        recorded = _recorded(summary, "final_mse_eval", reprise, SUMMARY_FILE, problem)
        if recorded != end[1]["final_mse_eval"]:
            problem("disagrees", SUMMARY_FILE, f"{SUMMARY_FILE} final_mse_eval is {recorded!r}, {METRICS}:{end[0]} "
                    f"says {end[1]['final_mse_eval']!r}")
    _command_agreement(config, summary, reprise, problem)
    for key in PLACE_FIELDS:  # where the run ran, as the run recorded it
        if key in config and key in summary and config[key] != summary[key]:
            problem("disagrees", CONFIG, f"{CONFIG} {key} is {config[key]!r}, the run ran with {key} "
                    f"{summary[key]!r} ({SUMMARY_FILE})")
        elif reprise and key not in config:
            problem("missing", CONFIG, f"{CONFIG} does not record {key}")


LOG = "logs/train.log"  # training_run_contract.LOG_FILE
MAX_LOG_BYTES = 1 << 20
PROGRESS_KEYS = ("permutation", "epoch", "cursor", "rows_consumed", "steps_done")


def train_log_text(steps: int, resumed: bool, omit_rng_restore: list[str], step_records: list[dict],
                   final_mse_eval: float, progress: dict) -> str:
    """logs/train.log as train.py writes it: defined here once, so the log is a view the checker re-renders
    from config.json, metrics.jsonl and summary.json (any other line in it is a story nothing else tells)."""
    lines = [f"kernodeck reprise v1: {steps} extra step(s), resumed={resumed}, "
             f"omit_rng_restore={sorted(omit_rng_restore) or 'none'}"]
    lines += [f"step {r['step']:2d}  loss {r['loss']:.12f}  lr {r['lr']:.6f}  rows {r['rows']}" for r in step_records]
    lines.append(f"final MSE (eval) {final_mse_eval:.12f}; progress "
                 f"{ {key: progress.get(key) for key in PROGRESS_KEYS} }")
    return "\n".join(lines) + "\n"


def log_problems(root: Path, config: dict, summary: dict, steps: list, problem) -> None:
    """A reprise run's logs/train.log, line by line, against the one its other files make train.py write."""
    path = root / LOG
    if not path.is_file() or path.stat().st_size > MAX_LOG_BYTES:
        return  # the contract's own log check says what is wrong with it
    actual = path.read_bytes().decode("utf-8", "replace").split("\n")
    try:
        expected = train_log_text(config["steps"], config.get("resume") is not None, config["omit_rng_restore"],
                                  [record for _, record in steps], summary["final_mse_eval"],
                                  summary["progress"]).split("\n")
    except (KeyError, TypeError, ValueError, AttributeError):
        return  # the files it would be rendered from are refused already, field by field
    for number, (held, want) in enumerate(zip(actual, expected), start=1):
        if held != want:
            problem("disagrees", f"{LOG}:{number}", f"{LOG}:{number} is {held[:120]!r}, train.py writes "
                    f"{want[:120]!r} from config.json, metrics.jsonl and summary.json")
            return
    if len(actual) != len(expected):
        problem("disagrees", LOG, f"{LOG} holds {len(actual) - 1} line(s), train.py writes {len(expected) - 1} "
                "for this run")


def _command_agreement(config: dict, summary: dict, reprise: bool, problem) -> None:
    """What train.py was told (config.json) against what the run says it did (summary.json): the checkpoint it
    resumed from (`resume` and `resumed_from`, the same object or both null), whether it resumed
    (`command.resumed`), its steps and the RNG restores it left out. A config naming a resume from another run's
    checkpoint beside a summary that never resumed tells two stories."""
    if not reprise or not config:
        return  # no config.json (or not an object): named missing already
    command = summary.get("command") if isinstance(summary.get("command"), dict) else {}
    resume = config.get("resume")
    # (config key, its value, the summary's field, its value)
    facts = [("resume", resume, "resumed_from", summary.get("resumed_from")),
             ("resume", resume, "command.resumed", command.get("resumed")),
             ("steps", config.get("steps"), "command.steps", command.get("steps")),
             ("omit_rng_restore", config.get("omit_rng_restore"), "command.omit_rng_restore",
              command.get("omit_rng_restore"))]
    for key, planned, field, done in facts:
        agree = (planned is not None) is done if field == "command.resumed" else planned == done
        if not agree:
            problem("disagrees", CONFIG, f"{CONFIG} {key} is {planned!r}, {SUMMARY_FILE} {field} is {done!r}")


def checkpoint_problems(summary: dict, loaded: Any, rel: str, problem, config: Any = None) -> None:
    """The reprise summary against the checkpoint as torch.load(weights_only=True) read it (torch is loaded
    already): the reprise verifier's own comparison, with the reprise code's own export; then the RNG draws the
    summary records against the checkpoint's RNG states and the config's seed (training_run_facts)."""
    reprise_compare = _sibling("reprise_compare")  # late: reprise_core imports torch, which file-level checks never pay
    reprise_core = _sibling("reprise_core")
    found = reprise_compare.summary_checkpoint_problems(summary, loaded, reprise_core)
    found += _sibling("training_run_facts").checkpoint_draws_problems(config, summary, loaded, reprise_core)
    for line in found:
        problem("checkpoint_disagrees", rel, f"{SUMMARY_FILE} and {rel}: {line}")


def checkpoint_record_problems(summary: dict, entry: dict, problem) -> None:
    """What summary.json records of checkpoint.pt (its name, size, SHA-256) against the file itself."""
    record = summary.get("checkpoint") if isinstance(summary.get("checkpoint"), dict) else {}
    for key, actual in (("file", CHECKPOINT), ("bytes", entry.get("bytes")), ("sha256", entry.get("sha256"))):
        if record.get(key) != actual or type(record.get(key)) is not type(actual):
            problem("disagrees", SUMMARY_FILE, f"{SUMMARY_FILE} checkpoint.{key} is {record.get(key)!r}, "
                    f"{CHECKPOINT} is {actual!r}")
