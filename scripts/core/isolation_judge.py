"""Whether a gate result's `isolation` record is the one its own raw facts give: the judge's half of issue
19's rule (the gate writes the record in platform_runtime.startup; core.trust judges what it says).

- A result of a gate that records `isolation.allowed` is recognised by every field that gate writes beside
  it (CURRENT_MARKERS, and the sources it hashes): such a result with `isolation` or `isolation.allowed`
  deleted is not an older result to exempt, it is refused.
- `isolation.present` (the vectors, by name) is recomputed from the facts recorded next to it: each finding
  sentence names its vector, a code-running .pth named in `executing_pth_files` is the `.pth` vector, a
  start-up module the device worker had loaded (`device_worker_loaded`) is that module's.
- `isolation.allowed` is what the arguments asked (`arguments.allow_injection_vectors`).
Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

from core import interpreter_rules, process_views, start_up_rules

START_UP_MODULES = ("sitecustomize", "usercustomize")
# Fields only a gate that records `isolation.allowed` writes (platform_runtime.gate, .startup, .device_views).
CURRENT_MARKERS = ("arguments.allow_injection_vectors", "isolation.allowed", "isolation.findings",
                   "isolation.parent_flags", "isolation.accepted_pth_files", "isolation.worker_environment",
                   "device.views")
# Sources only such a gate hashes (source.files names them).
CURRENT_SOURCES = ("scripts/platform_runtime/startup.py", "scripts/core/trust.py",
                   "scripts/platform_runtime/device_views.py", "scripts/platform_runtime/torch_record.py")
# Each finding the gate writes (platform_runtime.startup, .device_views, .gate), and the vector it names: the
# name is the finding's first word, or (for a file) the kind the sentence says. A finding added to the gate
# is added here too (tests/gate/test_startup.py counts them), or the judge refuses the gate's own results.
_FINDINGS = (
    (re.compile(r"^([A-Z][A-Z0-9_]*) is set: "), None),  # the loader's and the libraries' own variables
    (re.compile(r"^(PYTHON[A-Z]+) is set and the gate's own process was started without -I or -E$"), None),
    (re.compile(r"^a warning filter \(PYTHONWARNINGS or -W\) names a category in a module"), "PYTHONWARNINGS"),
    (re.compile(r"^/etc/ld\.so\.preload names a library"), "ld.so.preload"),
    (re.compile(r"^\S+ is mapped into the (gate's own process|device worker|[a-z_ -]+ worker) from an "
                r"LD_LIBRARY_PATH directory$"), "LD_LIBRARY_PATH"),
    (re.compile(r"^the (gate's own process|[a-z_ -]+ worker) is traced \(TracerPid is not 0\)"), "tracer"),
    (re.compile(r"^the (gate's own process (runs under|has) a seccomp filter|[a-z_ -]+ worker has a seccomp filter "
                r"count other than)"), "seccomp filter"),
    (re.compile(r"^\S+ is an importable entry in the gate's own folder \(scripts/\) that is not one of its "
                r"sources"), "unlisted script"),
    (re.compile(r"^\S+ on a sys\.path entry ahead of the standard library shadows its module"), "stdlib shadow"),
    (re.compile(r"^an LD_LIBRARY_PATH entry holds a dynamic string token"), "LD_LIBRARY_PATH"),
    (re.compile(r"^a \S+ file beside the interpreter replaces its start-up path"), "._pth"),
    (re.compile(r"^\S+\.pth (in a site directory runs code at every start-up|imported _distutils_hack into)"), ".pth"),
    (re.compile(r"^\S+ is a module in a site directory that no installed distribution lists"), "unlisted module"),
    (re.compile(r"^sys\.executable is not the interpreter file the kernel runs"), interpreter_rules.EXECUTABLE_VECTOR),
    (re.compile(r"^the .+ worker was not started as the gate starts it: "), interpreter_rules.WORKER_VECTOR),
    (re.compile(r"^a (sitecustomize|usercustomize) (in .+ runs at every start-up|was imported into the gate's "
                r"own process at start-up|was loaded into the device worker at start-up)$"), None),
)

# A gate hashing this source records `isolation.interpreter` and `isolation.worker_startup` for each check a
# worker of its own ran (platform_runtime.interpreter_state, .gate).
INTERPRETER_SOURCE = "scripts/platform_runtime/interpreter_state.py"
START_UP_SOURCE = "scripts/core/start_up_rules.py"  # a gate hashing it records isolation.accepted_start_up
WORKER_CHECKS = ("device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "collectives", "compile",
                 "autocast", "dataloader")


WORKER_LOADED = re.compile(r"^a (sitecustomize|usercustomize) was loaded into the device worker at start-up$")


def _get(document: Any, path: str) -> tuple[bool, Any]:
    for key in path.split("."):
        if not isinstance(document, dict) or key not in document:
            return False, None
        document = document[key]
    return True, document


def current_markers(result: dict[str, Any]) -> list[str]:
    """What shows this result was written by a gate that records `isolation.allowed` (empty for an older one)."""
    found = [path for path in CURRENT_MARKERS if _get(result, path)[0]]
    files = _get(result, "source.files")[1]
    found += [f"source.files names {path}" for path in CURRENT_SOURCES if isinstance(files, dict) and path in files]
    return found


def vector_of(finding: str) -> str | None:
    """The vector a finding sentence names; None for a sentence the gate does not write."""
    for pattern, vector in _FINDINGS:
        match = pattern.match(finding)
        if match:
            return vector or match.group(1)
    return None


def derived_vectors(isolation: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the vectors the raw facts name, in order; problems with those facts)."""
    vectors: list[str] = []
    problems: list[str] = []
    findings = isolation.get("findings")
    for index, finding in enumerate(findings if isinstance(findings, list) else []):
        vector = vector_of(str(finding))
        if vector is None:
            problems.append(f"isolation.findings[{index}] {str(finding)[:120]!r} is not a finding the gate writes")
        elif vector not in vectors:
            vectors.append(vector)
    pth = isolation.get("executing_pth_files")
    if isinstance(pth, list) and pth and ".pth" not in vectors:
        vectors.append(".pth")
    # A tracer or an added seccomp filter, from the /proc status the gate recorded of itself and its workers:
    # deleting the finding and the vector while leaving the facts is seen (core.process_views).
    for vector, _ in process_views.vectors(isolation.get("processes")):
        if vector not in vectors:
            vectors.append(vector)
    loaded = isolation.get("device_worker_loaded")
    # A start-up module the platform's owner installed unchanged is not a vector where a worker loads it (Debian's
    # sitecustomize runs under -I too): core.start_up_rules re-derives that from the accepted entries themselves.
    accepted = start_up_rules.accepted_modules(isolation)
    for name in loaded if isinstance(loaded, list) else []:
        if name in START_UP_MODULES and name not in vectors and name not in accepted:
            vectors.append(str(name))
    # The interpreters' own start-up facts (core.interpreter_rules): each vector they give, whatever the findings say.
    for vector, _ in (interpreter_rules.interpreter_vectors(isolation.get("interpreter"))
                      + interpreter_rules.worker_vectors(isolation.get("worker_startup"), accepted)):
        if vector not in vectors:
            vectors.append(vector)
    # The gate writes this finding from the worker's own list (platform_runtime.result_records): the module
    # it names was in device_worker_loaded, so a list cut down under the finding is an edit.
    for finding in findings if isinstance(findings, list) else []:
        match = WORKER_LOADED.match(str(finding))
        if match and not (isinstance(loaded, list) and match.group(1) in loaded):
            problems.append(f"isolation.findings says {str(finding)!r}, but isolation.device_worker_loaded is "
                            f"{loaded!r}")
    for field in ("findings", "executing_pth_files"):
        if not isinstance(isolation.get(field), list):
            problems.append(f"isolation.{field} is {isolation.get(field)!r}, not a list")
    if "device_worker_loaded" in isolation and not isinstance(loaded, (list, type(None))):
        problems.append(f"isolation.device_worker_loaded is {loaded!r}, not a list")
    return vectors, problems


def isolation_forgeries(result: dict[str, Any]) -> list[str]:
    """The recorded isolation facts that disagree with each other or with the arguments (not authentic);
    nothing for a result of a gate before issue 19's rule (no marker of one)."""
    markers = current_markers(result)
    if not markers:
        return []
    isolation = result.get("isolation")
    why = f"a result of a gate that records it ({', '.join(markers[:3])})"
    device = result.get("device") if isinstance(result.get("device"), dict) else {}
    # The gate records the views beside whatever the device worker reported (its phases): deleting them
    # must not turn the device claim into an older result's, which core.verdicts judges without views.
    views_deleted = ["device.views is missing beside the device worker's phases on a result of a gate that "
                     "records them: a current result is never exempt as an older one"] \
        if "phases" in device and "views" not in device else []
    if not isinstance(isolation, dict):
        return [f"isolation is {isolation!r} on {why}: a current result is never exempt as an older one",
                *views_deleted]
    problems = list(views_deleted)
    files = _get(result, "source.files")[1]
    if isinstance(files, dict) and INTERPRETER_SOURCE in files and not isinstance(isolation.get("interpreter"), dict):
        problems.append(f"isolation.interpreter is {isolation.get('interpreter')!r} on a result of a gate that hashes "
                        f"{INTERPRETER_SOURCE}, which records it: its facts cannot be deleted to hide a vector")
    if isinstance(files, dict) and INTERPRETER_SOURCE in files:
        problems += worker_startup_missing(result, isolation)
    # Start-up code accepted as the platform's own (core.start_up_rules): each entry must be its owner's bytes, and a
    # gate that hashes the rule records the list (empty or not), so deleting it cannot pass for an older result.
    accepted = isolation.get("accepted_start_up")
    if isinstance(files, dict) and START_UP_SOURCE in files and not isinstance(accepted, list):
        problems.append(f"isolation.accepted_start_up is {accepted!r} on a result of a gate that hashes "
                        f"{START_UP_SOURCE}, which records it")
    problems += start_up_rules.forged_entries(isolation)
    allowed = isolation.get("allowed")
    if not isinstance(allowed, bool):
        problems.append(f"isolation.allowed is {allowed!r} on {why}: a current result is never exempt as an older one")
    asked = _get(result, "arguments.allow_injection_vectors")[1]
    if not isinstance(asked, bool):
        problems.append(f"arguments.allow_injection_vectors is {asked!r} on {why}")
    elif isinstance(allowed, bool) and allowed is not asked:
        problems.append(f"isolation.allowed is recorded {allowed!r}, arguments.allow_injection_vectors is {asked!r}")
    derived, fact_problems = derived_vectors(isolation)
    problems += fact_problems
    present = isolation.get("present")
    if not isinstance(present, list) or len(set(map(str, present))) != len(present):
        problems.append(f"isolation.present is {present!r}, not a list of distinct vector names")
    elif set(map(str, present)) != set(derived):
        problems.append(f"isolation.present is recorded {present!r}, its findings, executing_pth_files and "
                        f"device_worker_loaded say {derived!r}")
    return problems


def worker_startup_missing(result: dict[str, Any], isolation: dict[str, Any]) -> list[str]:
    """A gate that hashes INTERPRETER_SOURCE records every worker check's start-up facts (null for one that
    reported none): an entry deleted, with the finding it gave, would hide that worker's vector."""
    checks = result.get("checks") if isinstance(result.get("checks"), dict) else {}
    ran = [name for name in WORKER_CHECKS if name in checks]
    recorded = isolation.get("worker_startup")
    if not ran:
        return []
    if not isinstance(recorded, dict):
        return [f"isolation.worker_startup is {recorded!r} beside the checks {ran}: the gate records each worker's "
                "own start-up"]
    return [f"isolation.worker_startup has no entry for {name}, which ran: the gate records each worker's own "
            "start-up" for name in ran if name not in recorded]


def is_current(result: dict[str, Any]) -> bool:
    return bool(current_markers(result))
