"""Facts that span files, re-derived from the bound bytes: a reprise summary against its checkpoint and the
checkpoint's .sha256; a reprise verification recomputed from the summaries and checkpoints of its run folders
(scripts/reprise/verify_resume.compare, the function that made it, reading the bound bytes); a training-run
check re-run on its folder (scripts/reprise/training_run_contract.check_run_dir). A recorded judgement the
bytes contradict makes its result not authentic (its `not_authentic` list, which verify turns into exit 3).

The torch load of a training-run checkpoint (`weights_only_load`) is repeated, with the check's own
`torch.load(weights_only=True)`, wherever the index runs with a torch it can import (the gate's venv). Only an
interpreter without torch takes it as recorded, and only for a checkpoint whose bytes match the recorded
SHA-256 and its .sha256.

A reprise summary records its checkpoint's contents (the weights and Adam tensors, the history, the data
progress, the scheduler), and the verification compares summaries only: wherever torch imports, each bound
reprise checkpoint is loaded with the reprise code's own loader (torch.load(weights_only=True), then its
validation) and compared with its summary (reprise_compare.summary_checkpoint_problems), so a checkpoint
swapped under an unchanged summary is not authentic. Without torch that account is taken as recorded, and
each such load is listed in `observed.taken_as_recorded` (verify then refuses to say PASS unless told).

The verification's own record (its processes, side by side, environment, process logs) and the torch-free
view of "bit for bit" (the resumed checkpoint's bytes are the continuous run's, no control's are) are judged
by reprise_compare.protocol_problems, the rule verify_resume.py applies to its report before writing it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import posixpath
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common.strict_json import parse_strict
from rules.nfs_harness import HARNESS_NAME

from . import reprise_record, vmrun
from .common import UNVERIFIABLE, index_rule
from .differences import differences
from .results import REPO_ROOT
from .zipsafe import zip_entry

# The reprise modules run copied alone, so they import each other as top-level modules from their folder.
sys.path.insert(0, str(REPO_ROOT / "scripts" / "reprise"))
import reprise_common  # noqa: E402
import reprise_compare  # noqa: E402
import training_run_contract  # noqa: E402
import verify_resume  # noqa: E402

MAX_LISTED = 12
# The run folders of a verification, as scripts/reprise/verify_resume.compare loads them.
RUN_FOLDERS = (verify_resume.CONTINUOUS, verify_resume.CUT, verify_resume.RESUMED, *verify_resume.NEGATIVE)
WEIGHTS_PROBLEM = "not_weights_only_loadable"


def check(records: list[dict[str, Any]], observed: Any) -> None:
    """Add each record's cross-file contradictions to its `not_authentic` (and fail it)."""
    rules = {"reprise-summary": summary_problems, "reprise-verification": verification_problems,
             "training-run-check": training_run_problems, "nfs-harness": harness_problems,
             "nfsvm-run": vmrun.run_problems, "nfsvm-record": vmrun.record_problems}
    covered = run_folders_judged(records, observed)
    for record in records:
        rule = rules.get(record.get("kind"))
        subject = record.get("subject")
        if rule is None or not isinstance(subject, str) or subject not in observed.json:
            continue
        data = observed.json[subject][0]
        document = _parse(data)
        if not isinstance(document, dict):
            continue
        problems = rule(subject, document, observed)
        if record.get("kind") == "reprise-summary" and posixpath.dirname(subject) not in covered:
            problems += run_folder_problems(subject, observed)
        contradicted = [p for p in problems if not p.startswith((UNVERIFIABLE, BREAKS_CONTRACT))][:MAX_LISTED]
        unverifiable = [p for p in problems if p.startswith((UNVERIFIABLE, BREAKS_CONTRACT))][:MAX_LISTED]
        if contradicted:
            record["not_authentic"] = list(record.get("not_authentic") or []) + contradicted
        if problems:  # what could not be re-derived fails it too; only a contradiction is a forgery
            record["reasons"] = list(record.get("reasons") or []) + [f"not authentic: {p}" for p in contradicted]
            record["reasons"] += unverifiable
            record["ok"] = False


NOT_REPEATED = "the torch load is not repeated by the evidence index"
BREAKS_CONTRACT = "breaks the training-run contract: "  # a failed run, not a contradicted record


def run_folders_judged(records: list[dict[str, Any]], observed: Any) -> set[str]:
    """The run folders another bound result already holds to the training-run contract: a verification's run
    folders (bindings_problems) and the folder a training-run check names (training_run_problems re-runs it)."""
    covered: set[str] = set()
    for record in records:
        subject = record.get("subject")
        if not isinstance(subject, str) or subject not in observed.json:
            continue
        base = posixpath.dirname(subject)
        if record.get("kind") == "reprise-verification":
            covered.update(f"{base}/{name}" for name in RUN_FOLDERS)
        elif record.get("kind") == "training-run-check":
            document = _parse(observed.json[subject][0])
            run_dir = document.get("run_dir") if isinstance(document, dict) else None
            if isinstance(run_dir, str) and run_dir and "/" not in run_dir and run_dir not in (".", ".."):
                covered.add(f"{base}/{run_dir}")
    return covered


def run_folder_problems(subject: str, observed: Any) -> list[str]:
    """A reprise summary no verification or training-run check covers is a training run's (train.py writes it
    beside config.json, metrics.jsonl, logs/train.log and the checkpoint): its folder is held to the training-run
    contract (check_run_dir, its torch load too where torch imports) as if a training-run check were bound
    beside it, so deleting that check does not skip the contract."""
    relative = posixpath.dirname(subject)
    where = relative.removeprefix("artifacts/")
    folder, missing = _unpacked(relative, observed)
    if folder is None:
        return [f"{UNVERIFIABLE}{where}: {line}" for line in missing]
    recomputed = _check_folder(folder, {}, observed)
    return [f"{where}: {line}" for line in missing] + [
        f"{BREAKS_CONTRACT}{where}: {p['message']} ({p['code']})" for p in recomputed["problems"]
        if NOT_REPEATED not in str(p.get("message"))]


def _not_repeated(_data: bytes) -> Any:
    raise RuntimeError(NOT_REPEATED)


@contextlib.contextmanager
def _replaced(module: Any, name: str, value: Any) -> Iterator[None]:
    """The reprise modules' own functions, run unchanged on the bound bytes: only their file reader (or the
    torch load) is swapped for the call, so the checkout's reprise sources stay the ones the runs recorded."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def _parse(data: bytes | None) -> Any:
    try:
        return parse_strict(data) if data is not None else None
    except ValueError:
        return None


def _sidecar(observed: Any, checkpoint: str) -> str | None:
    data = observed.sidecars.get(checkpoint + training_run_contract.SHA256_SUFFIX)
    if data is None:
        return None
    try:
        return training_run_contract.parse_sha256_text(data.decode("utf-8", "replace"), posixpath.basename(checkpoint))
    except training_run_contract.ContractError:
        return "unreadable"


def checkpoint_problems(folder: str, recorded: Any, observed: Any, where: str) -> list[str]:
    """The checkpoint's bytes, its .sha256 and the SHA-256 a summary records are one digest."""
    checkpoint = f"{folder}/{reprise_common.CHECKPOINT_NAME}"
    digest = observed.digests.get(checkpoint)
    if digest is None:
        return [f"{where}: {checkpoint} is not bound"]
    problems = []
    if recorded != digest:
        problems.append(f"{where}.checkpoint.sha256 is {str(recorded)[:16]}..., the bytes of {checkpoint} are "
                        f"{digest[:16]}...")
    sidecar = _sidecar(observed, checkpoint)
    if sidecar != digest:
        problems.append(f"{checkpoint}{training_run_contract.SHA256_SUFFIX} names {str(sidecar)[:16]}..., the "
                        f"bytes are {digest[:16]}...")
    return problems


def summary_problems(subject: str, document: dict[str, Any], observed: Any) -> list[str]:
    """Its checkpoint bound by digest, then (where torch imports) loaded and compared with what it records."""
    checkpoint = document.get("checkpoint") if isinstance(document.get("checkpoint"), dict) else {}
    folder, where = posixpath.dirname(subject), subject.removeprefix("artifacts/")
    problems = [f"{where}: {line}" for line in reprise_compare.source_problems(document.get("source"))]
    problems += checkpoint_problems(folder, checkpoint.get("sha256"), observed, where)
    if problems:
        return problems
    if not torch_importable():  # without torch the summary's account of the checkpoint is taken as recorded
        observed.taken_as_recorded.append(f"{where}: what it records of {folder.removeprefix('artifacts/')}/"
                                          f"{reprise_common.CHECKPOINT_NAME} (weights, history, final_mse_eval)")
        return problems
    name = f"{folder}/{reprise_common.CHECKPOINT_NAME}"
    loaded = _loaded(name, observed, document)
    if isinstance(loaded, str):
        return [f"{where}: {loaded}"]
    return [f"{where}: {problem} ({name.removeprefix('artifacts/')})"
            for problem in reprise_compare.summary_checkpoint_problems(document, loaded, _core())]


# {sha256:code:data: the checkpoint as loaded, or why not}: each bound checkpoint loads once per process
_LOADS: dict[str, Any] = {}


def _core() -> Any:
    """reprise_core, the reprise code's own export (it imports torch: once per process, and only here)."""
    import reprise_core

    return reprise_core


def _bound_bytes(name: str, observed: Any) -> bytes | None:
    """The bytes of a bound `artifacts/` file, on disk or inside its artifact's zip, if they are the bound ones."""
    if observed.root is None:
        return None
    relative = name.removeprefix("artifacts/")
    path = observed.root / relative
    data = None
    if path.is_file() and not path.is_symlink() and path.stat().st_size <= reprise_common.MAX_CHECKPOINT_BYTES:
        data = path.read_bytes()
    elif not path.exists():

        entry = zip_entry(observed.root, relative)
        if entry is not None:
            with entry as stream:
                data = stream.read(reprise_common.MAX_CHECKPOINT_BYTES + 1)
    bound = observed.digests.get(name)
    return data if data is not None and training_run_contract.sha256_bytes(data) == bound else None


def _loaded(name: str, observed: Any, summary: dict[str, Any]) -> Any:
    """The checkpoint through the reprise loader (torch.load(weights_only=True), then its own validation against
    the code and data the summary names), or a sentence saying why it is not."""
    source = summary.get("source") if isinstance(summary.get("source"), dict) else {}
    key = f"{observed.digests[name]}:{source.get('code_sha256')}:{source.get('data_sha256')}"
    if key not in _LOADS:
        data = _bound_bytes(name, observed)
        if data is None:
            return f"{UNVERIFIABLE}{name.removeprefix('artifacts/')} is not readable beside it: not loaded"
        try:
            _LOADS[key] = _core().load_checkpoint(data, source.get("code_sha256"), source.get("data_sha256"))
        except reprise_common.RepriseError as error:
            _LOADS[key] = f"{name.removeprefix('artifacts/')} does not load as its summary's checkpoint: {error}"
    return _LOADS[key]


def _run(base: str, name: str, observed: Any) -> tuple[Any, list[str]]:
    summary_subject = f"{base}/{name}/{reprise_common.SUMMARY_NAME}"
    summary = _parse((observed.json.get(summary_subject) or (None,))[0])
    if not isinstance(summary, dict):
        return None, [f"{UNVERIFIABLE}{summary_subject} is not bound (or not strict JSON)"]
    missing = [key for key in reprise_compare.SUMMARY_KEYS if key not in summary]
    if missing:
        return None, [f"{summary_subject} lacks {missing}"]
    digest = observed.digests.get(f"{base}/{name}/{reprise_common.CHECKPOINT_NAME}")
    if digest is None:
        return None, [f"{UNVERIFIABLE}{base}/{name}/{reprise_common.CHECKPOINT_NAME} is not bound"]
    return reprise_compare.Run(name, summary, digest), []


def verification_problems(subject: str, document: dict[str, Any], observed: Any) -> list[str]:
    """The verification recomputed from its run folders' bound summaries and checkpoint digests."""
    if document.get("completed") is not True or document.get("errors"):
        return []  # it failed by its own account; nothing recorded there claims a pass
    base, where = posixpath.dirname(subject), subject.removeprefix("artifacts/")
    not_code = (*verify_resume.VERIFY_FILES, "data.csv")  # what a verification fingerprints beside the code
    fingerprint = [f"{where}: {line}" for line in reprise_compare.source_problems(document.get("source"), not_code)]
    problems: list[str] = []
    runs: dict[str, Any] = {}
    for name in RUN_FOLDERS:
        run, missing = _run(base, name, observed)
        problems += missing
        runs[name] = run
    if problems:
        return fingerprint + problems
    # What binds each run's other files to its summary: listed after the re-derived verification's lines.
    bindings = [f"{UNVERIFIABLE}{where}: {line.removeprefix(UNVERIFIABLE)}" if line.startswith(UNVERIFIABLE)
                else f"{where}: {line}" for line in bindings_problems(base, runs, observed)]
    try:
        with _replaced(verify_resume, "load", lambda _out, name: runs[name]):  # its loader, on the bound bytes
            recomputed = verify_resume.compare(Path("."), document.get("source") or {})
    except (KeyError, TypeError, ValueError, AttributeError, reprise_common.RepriseError) as error:
        return fingerprint + [f"{where}: its run folders do not re-derive it ({type(error).__name__}: "
                              f"{str(error)[:120]})"] + bindings
    negative = bool(recomputed["negative_controls"]["all_detected"])
    passed = recomputed["positive"] and negative
    recomputed.update(negative_divergence_detected=negative, all_checks_passed=passed, ok=passed,
                      exit_code=0 if passed else 1)

    # The conclusions first (what a pass rests on), then the measured facts, then the sections' own flags.
    order = ["ok", "exit_code", "all_checks_passed", "positive", "negative_divergence_detected"]
    lines = [line for key in order + [k for k in recomputed if k not in order]
             for line in differences(document.get(key), recomputed[key], key)]
    sections = ("negative_controls.all_detected:", "positive_resume.passed:", "integrity.passed:",
                "resume_boundary.passed:")
    conclusions = [line for line in lines if line.split(":", 1)[0] in order or line.startswith(sections)]
    flags = [line for line in lines if line not in conclusions and (".passed: " in line or "_detected: " in line)]
    facts = [line for line in lines if line not in conclusions and line not in flags]
    # Its own record (processes, environment) and the torch-free view of "bit for bit": the program's rule.
    logs, unread = _process_logs(base, observed)
    recorded = reprise_compare.protocol_problems(document, verify_resume.plan(), runs,
                                                 (verify_resume.CONTINUOUS, verify_resume.RESUMED),
                                                 list(verify_resume.NEGATIVE), logs)
    recorded += reprise_record.wall_problems(
        document, verify_resume.CONTINUOUS, verify_resume.CUT, (verify_resume.RESUMED, verify_resume.INCOMPLETE))
    draws = _claimed_draws_problems(document, recomputed, where)
    return (fingerprint + [f"{where}: {line}" for line in conclusions + facts + flags + recorded] + draws + bindings
            + unread)


def _process_logs(base: str, observed: Any) -> tuple[dict[str, str], list[str]]:
    """{process: its bound log's text} for the verification's processes, and what could not be read."""
    logs, unread = {}, []
    for spec in verify_resume.plan():
        name = f"{base}/logs/{spec['name']}.log"
        data = _bound_bytes(name, observed) if name in observed.digests else None
        if data is None:
            unread.append(f"{UNVERIFIABLE}{name.removeprefix('artifacts/')} is not bound and readable: its lines "
                          "are not compared with the runs")
        else:
            logs[spec["name"]] = data.decode("utf-8", "replace")
    return logs, unread


def _claimed_draws_problems(document: dict[str, Any], recomputed: dict[str, Any], where: str) -> list[str]:
    """A control recorded as detected whose next draws do not show its own RNG (and only it) diverged: named even
    where the verification was re-derived with a compare() that counted any divergence."""
    recorded = ((document.get("negative_controls") or {}).get("controls") or {}) if isinstance(
        document.get("negative_controls"), dict) else {}
    problems = []
    for key, control in recomputed["negative_controls"]["controls"].items():
        claimed = recorded.get(key) if isinstance(recorded.get(key), dict) else {}
        if claimed.get("divergence_detected") is True:
            problems += [f"{where}: negative_controls.controls.{key} is recorded as detected, but {line}"
                         for line in reprise_compare.draws_problems(control["checks"], reprise_compare.omitted_by(key))]
    return problems


def roles() -> dict[str, tuple[int, bool, list[str]]]:
    """{run folder: (steps, resumed from coupure, RNG restores omitted)}, as verify_resume.plan() runs them (the
    per-RNG controls run inside reprise-incomplete's process with its steps and resume, each omitting one)."""
    found: dict[str, tuple[int, bool, list[str]]] = {}
    for spec in verify_resume.plan():
        args = spec["args"]
        steps, resumed = int(args[args.index("--steps") + 1]), "--resume" in args
        found[spec["name"]] = (steps, resumed, sorted(reprise_common.RNG_NAMES) if "--omit-rng-restore" in args else [])
        if "--per-rng-controls" in args:
            found.update({f"{verify_resume.CONTROLS}/omit-{rng}": (steps, resumed, [rng])
                          for rng in reprise_common.RNG_NAMES})
    return found


def bindings_problems(base: str, runs: dict[str, Any], observed: Any) -> list[str]:
    """Each run folder's config.json and metrics.jsonl bound to its summary: its role's config (steps, the
    checkpoint it resumed from, the RNG restores it left out, lr and the other fixed values), and the
    training-run contract's own rules across its files (metrics lines against the summary's losses and steps,
    the summary against the loaded checkpoint)."""
    problems: list[str] = []
    cut = runs[verify_resume.CUT]
    started_from = {"checkpoint_sha256": cut.checkpoint_sha256, "steps_done": roles()[verify_resume.CUT][0]}
    for name, (steps, resumed, omitted) in roles().items():
        config_subject = f"{base}/{name}/{training_run_contract.CONFIG_FILE}"
        config = _parse((observed.json.get(config_subject) or (None,))[0])
        problems += [f"{name}/{line}" for line in reprise_compare.role_problems(
            config, runs[name].summary, steps, started_from if resumed else None, omitted)]
        folder, missing = _unpacked(f"{base}/{name}", observed)
        if folder is None:
            problems += [f"{UNVERIFIABLE}{name}: {line}" for line in missing]
            continue
        problems += [f"{name}: {line}" for line in missing]
        recomputed = _check_folder(folder, {}, observed)
        problems += [f"{name}: {p['message']} (training-run contract: {p['code']})" for p in recomputed["problems"]]
    return problems


def _unpacked(relative: str, observed: Any) -> tuple[Path | None, list[str]]:
    """The folder of bound files `relative` names, on disk, and the files in it that are not bound."""
    folder = observed.root / relative.removeprefix("artifacts/") if observed.root is not None else None
    if folder is None or not folder.is_dir():
        return None, [f"the run folder {posixpath.basename(relative)} is not unpacked beside it: not re-run"]
    unbound = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*"))
               if p.is_file() and f"{relative}/{p.relative_to(folder).as_posix()}" not in observed.digests]
    return folder, ([f"the run folder holds files that are not bound: {', '.join(unbound[:3])}"] if unbound else [])


def _check_folder(folder: Path, document: dict[str, Any], observed: Any) -> dict[str, Any]:
    """The training-run check on a folder, its torch load too where torch imports (else as `document` records,
    and said so in `observed.taken_as_recorded`)."""
    if torch_importable():
        return training_run_contract.check_run_dir(folder)
    observed.taken_as_recorded.append(f"{folder.name}: the weights_only load of its checkpoint(s) and what the "
                                      "summary records of them")
    return _without_torch(folder, document)


def torch_importable() -> bool:
    """Whether this interpreter finds a torch to repeat a checkpoint's weights_only load with."""
    return importlib.util.find_spec("torch") is not None


def _without_torch(folder: Path, document: dict[str, Any]) -> dict[str, Any]:
    """The check re-run without torch: every file-level fact, and the recorded load's answer for the
    checkpoints whose bytes match the recorded SHA-256 and their .sha256."""
    with _replaced(training_run_contract, "load_weights_only", _not_repeated):
        recomputed = training_run_contract.check_run_dir(folder)
    recomputed["problems"] = [p for p in recomputed["problems"] if NOT_REPEATED not in str(p.get("message"))]
    recorded_files = {f.get("path"): f for f in ((document.get("checks") or {}).get("checkpoints") or {}).get("files")
                      or [] if isinstance(f, dict)}
    for entry in recomputed["checks"]["checkpoints"]["files"]:
        if entry["sha256_matches"]:  # the load is not repeated without torch: the recorded answer for these bytes
            entry["weights_only_load"] = (recorded_files.get(entry["path"]) or {}).get("weights_only_load")
    # What needs the load (the load's refusal, the summary against the loaded checkpoint): as recorded.
    codes = (WEIGHTS_PROBLEM, training_run_contract.DISAGREES_CHECKPOINT)
    loads = [p for p in document.get("problems") or [] if isinstance(p, dict) and p.get("code") in codes]
    recomputed["problems"] += loads
    files = recomputed["checks"]["checkpoints"]["files"]
    recomputed["checks"]["checkpoints"]["ok"] = bool(files) and all(
        f["sha256_matches"] and f["weights_only_load"] is True for f in files) and not any(
        p.get("code") == training_run_contract.DISAGREES_CHECKPOINT for p in loads)
    recomputed["ok"] = not recomputed["problems"]
    return recomputed


def training_run_problems(subject: str, document: dict[str, Any], observed: Any) -> list[str]:
    """The training-run check re-run on the bound folder it names, its torch load too where torch is importable."""
    if document.get("ok") is not True:
        return []  # a failing check fails; the re-run only guards a pass
    where = subject.removeprefix("artifacts/")
    run_dir = document.get("run_dir")
    if not isinstance(run_dir, str) or not run_dir or "/" in run_dir or "\\" in run_dir or run_dir in (".", ".."):
        return [f"{where}: run_dir {run_dir!r} is not a folder name beside it"]
    folder, missing = _unpacked(posixpath.join(posixpath.dirname(subject), run_dir), observed)
    if folder is None:
        return [f"{UNVERIFIABLE}{where}: {line}" for line in missing]
    if missing:
        return [f"{where}: {line}" for line in missing]
    recomputed = _check_folder(folder, document, observed)  # re-run whole, its torch load too where torch is

    return [f"{where} re-run on {run_dir}: {line}" for line in differences(document, recomputed, "check")]


def harness_gate(subject: str) -> str:
    """The gate result an NFS harness record belongs to, by the names the nfs job and the VM give them:
    nfs-harness.json beside platform-runtime-nfs.json, <p>nfs-harness.json beside <p>gate.json."""
    folder, name = posixpath.split(subject)
    prefix = name[:-len(HARNESS_NAME)] if name.endswith(HARNESS_NAME) else None
    gate = "platform-runtime-nfs.json" if not prefix else f"{prefix}gate.json"
    return f"{folder}/{gate}"


def harness_problems(subject: str, document: dict[str, Any], observed: Any) -> list[str]:
    """The workspace the harness deleted on the export is the one its gate retained, with the status the
    gate recorded; the scenario it names is the one its file name says (rules.nfs_harness.scenario_problems)."""
    if document.get("ok") is not True:
        return []
    where, gate_subject = subject.removeprefix("artifacts/"), harness_gate(subject)
    named = [f"{where}: {problem}" for problem in index_rule("harness.scenario")(subject, document)]
    gate = _parse((observed.json.get(gate_subject) or (None,))[0])
    if not isinstance(gate, dict):
        gate_name = gate_subject.removeprefix("artifacts/")
        return named + [f"{UNVERIFIABLE}{where}: its gate result {gate_name} is not bound"]
    return named + [f"{where}: {problem}" for problem in index_rule("harness.gate")(document, gate)]

