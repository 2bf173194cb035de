"""What changed between two runs: every difference that matters, as {platform, kind, path, old, new}.

Pure functions over documents already read and verified (scripts/evidence_index/diffload.py reads them):
`diff_documents` compares two results of one kind field by field, `diff_sides` two whole runs platform by
platform. Each changed leaf is one record; `path` is its dotted path in the result (list items of
dicts with a unique `name` or `id` are keyed by it, lists of scalars compare whole). Its kind says what
it is about:

    environment  torch build, device, OS and runner image, Python, file system, arguments, installer; the
                 compiler, Triton, start method and shared memory the training-stack checks found
    source       a source file's SHA-256, the Git commit, the workflow ref
    check        a check's measurements (counts, errors, durations beyond the tolerance)
    verdict      ok / exit code / failures / requirements, a platform's or the index's verdict

Noise is not a difference: timestamps, run/job ids and attempts, process ids, kernel mount ids and random
workspace names, absent against null, and durations within the tolerance (both more than `seconds`
apart and more than `ratio` of the old value apart to count). Measurement noise is not a difference either:
the fields a result kind's rule modules declare as varying between two honest runs (seeds, timings, what the
scheduler decided: core.noise, read here, never listed here). Its changes are kept apart, each marked with its
class, so they are counted and can be listed; every field not declared is compared.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from core.noise import BY_KIND, Noise, noise_of

KINDS = ("environment", "source", "check", "verdict")  # the order a summary reads: likely cause first
ABSENT = None

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
# Identifiers of one run, never of what ran: a new run always has new ones.
_NOISE_LEAVES = {"run_id", "run_attempt", "job_id", "check_run_id", "mount_id", "workspace", "pid", "built_at",
                 "started_at", "finished_at", "completed_at", "created_at", "updated_at", "timestamp"}
_NOISE_SUFFIXES = ("_pid", "_at")
_CONFIG_SECONDS = ("timeout", "deadline", "grace", "patience")
_VERDICT_TOP = {"ok", "exit_code", "status", "code", "message", "failures", "problems", "reasons", "errors",
                "all_checks_passed", "completed", "positive", "passed", "requirements", "verdict"}
_SOURCE_TOP = {"source", "script_version"}
_SOURCE_PATHS = ("github.sha", "github.workflow_ref", "run.head_sha", "run.workflow_path")
_ENVIRONMENT_TOP = {"device", "platform", "filesystem", "isolation", "arguments", "github", "runtime", "pytorch",
                    "environment", "host", "protocol", "requested_device", "installer", "install", "python",
                    "runner", "indexer", "torch", "nfs_version"}
# Under `device`, what the device compute measured is the check's, not the environment's; under a reprise
# verification's `protocol`, what its processes did.
_DEVICE_MEASURED = ("device.phases", "device.ran_on", "device.peak_allocated_bytes", "device.build_cross_check",
                    "protocol.processes")
# Where a kind records where it ran below a measuring top-level field: the GPU and driver a diagnostic ran on,
# the NFS mount and server an NFS harness set up.
_ENVIRONMENT_PATHS = ("execution.gpu_model", "execution.capability", "execution.total_memory_bytes",
                      "execution.arch_support", "execution.backend", "execution.device", "host_check.gpus",
                      "setup.mount", "setup.nfsd_versions", "setup.nfsd_threads", "setup.package",
                      # what the training-stack checks found the runner to be: its compiler, Triton, start method,
                      # shared memory, whether its GPU computes bfloat16 (core.training_stack)
                      "checks.compile.compiler", "checks.compile.triton", "checks.compile.precompiled_header",
                      "checks.dataloader.start_method",
                      "checks.dataloader.sharing_strategy", "checks.dataloader.shared_memory",
                      "checks.autocast.bf16_supported")


@dataclass(frozen=True)
class Tolerance:
    """Durations differ only when both more than `seconds` and more than `ratio` of the old value apart."""

    seconds: float = 0.5
    ratio: float = 0.5

    def as_dict(self) -> dict[str, float]:
        return {"duration_seconds": self.seconds, "duration_ratio": self.ratio}


@dataclass
class Change:
    platform: str | None  # None: the index as a whole
    kind: str
    path: str
    old: Any
    new: Any
    result: str | None = None  # which result of the platform (its name), when it has one
    noise: str | None = None  # a change of declared measurement noise: its class (core.noise.CLASSES)

    def as_dict(self) -> dict[str, Any]:
        record = {"platform": self.platform, "kind": self.kind, "path": self.path, "old": self.old, "new": self.new}
        if self.result is not None and self.result != self.platform:
            record["result"] = self.result
        if self.noise is not None:
            record["noise"] = self.noise
        return record


class Leaf(NamedTuple):
    """One changed leaf: its dotted path, both values, and the declaration that makes it noise (None: compared)."""

    path: str
    old: Any
    new: Any
    noise: Noise | None = None


@dataclass
class PlatformSide:
    """One platform of one run: its verdict, its results {name: (kind, document)}, where it ran."""

    verdict: dict[str, Any] | None = None
    results: dict[str, tuple[str, Any]] = field(default_factory=dict)
    runner: dict[str, Any] | None = None


@dataclass
class Side:
    """One run as diff reads it: an index (verified) or one result file."""

    kind: str  # "index" or the result's kind
    sha256: str
    verdict: dict[str, Any] | None = None  # the index's recomputed verdict
    platforms: dict[str, PlatformSide] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)  # index-wide: a run's head commit and workflow
    pair_by_kind: bool = False  # platforms are result names (a local index): pair a renamed one by its kind


def is_duration(key: str) -> bool:
    return key.endswith("_s") and not any(word in key for word in _CONFIG_SECONDS)


def is_noise_key(key: str) -> bool:
    return key in _NOISE_LEAVES or key.endswith(_NOISE_SUFFIXES)


def kind_of(path: str) -> str:
    """Which kind of difference a changed field is, from its dotted path in the result."""
    top = path.split(".", 1)[0]
    if top in _SOURCE_TOP or any(path == p or path.startswith(p + ".") for p in _SOURCE_PATHS):
        return "source"
    if top in _VERDICT_TOP:
        return "verdict"
    if any(path == p or path.startswith(p + ".") for p in _DEVICE_MEASURED):
        return "check"
    if top in _ENVIRONMENT_TOP or any(path == p or path.startswith(p + ".") for p in _ENVIRONMENT_PATHS):
        return "environment"
    return "check"


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    """A list of dicts as {name or id: item} when every item has a unique one; None otherwise."""
    for key in ("name", "id"):
        names = [item.get(key) for item in items if isinstance(item, dict)]
        if len(names) == len(items) and all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names):
            return {name: item for name, item in zip(names, items)}
    return None


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, str) and bool(_TIMESTAMP.match(value))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _within(old: Any, new: Any, tolerance: Tolerance) -> bool:
    if not (_number(old) and _number(new)):
        return False
    apart = abs(new - old)
    return apart <= tolerance.seconds or apart <= tolerance.ratio * abs(old)


def leaf_changes(old: Any, new: Any, path: str, tolerance: Tolerance,
                 declared: Sequence[Noise] = ()) -> list[Leaf]:
    """Every changed leaf below `path`; identifiers of a run and durations within the tolerance left out. A
    field `declared` measurement noise is one leaf marked with its declaration (a whole list or object when the
    declaration names one), whatever its values."""
    key = path.rsplit(".", 1)[-1]
    if path and is_noise_key(key):
        return []
    if path and declared:
        noise = noise_of(declared, path, old, new)
        if noise is not None:
            return [] if old == new else [Leaf(path, old, new, noise)]
    if isinstance(old, dict) or isinstance(new, dict):
        left = old if isinstance(old, dict) else {}
        right = new if isinstance(new, dict) else {}
        if not isinstance(old, (dict, type(None))) or not isinstance(new, (dict, type(None))):
            return [Leaf(path, old, new)]  # a dict became a scalar (or the reverse): one change, whole
        found = []
        for name in sorted(set(left) | set(right), key=str):
            found += leaf_changes(left.get(name), right.get(name), f"{path}.{name}" if path else str(name), tolerance,
                                  declared)
        return found
    if isinstance(old, list) and isinstance(new, list):
        left_keyed, right_keyed = _keyed(old), _keyed(new)
        if left_keyed is not None and right_keyed is not None:
            found = []
            for name in sorted(set(left_keyed) | set(right_keyed)):
                where = f"{path}.{name}"
                if name in left_keyed and name in right_keyed:
                    found += leaf_changes(left_keyed[name], right_keyed[name], where, tolerance, declared)
                else:  # an item (a requirement, say) only one run has: one record, the item whole
                    found.append(Leaf(where, left_keyed.get(name), right_keyed.get(name)))
            return found
        if any(isinstance(item, (dict, list)) for item in old + new) and len(old) == len(new):
            found = []
            for index, (left_item, right_item) in enumerate(zip(old, new)):
                found += leaf_changes(left_item, right_item, f"{path}.{index}", tolerance, declared)
            return found
    if old == new and (type(old) is type(new) or _number(old) and _number(new)):
        return []  # 600 and 600.0 are one number (jq prints one as the other); true is never 1
    if _is_timestamp(old) and _is_timestamp(new):
        return []
    if is_duration(key) and _within(old, new, tolerance):
        return []
    return [Leaf(path, old, new)]


def diff_documents(old: Any, new: Any, tolerance: Tolerance, platform: str | None,
                   result: str | None = None, result_kind: str | None = None) -> list[Change]:
    """Every change between two results of one kind (`result_kind`, core.contract.kind_of's name: its declared
    measurement noise is marked), each with its kind."""
    return [Change(platform, kind_of(leaf.path), leaf.path, leaf.old, leaf.new, result,
                   leaf.noise.kind if leaf.noise else None)
            for leaf in leaf_changes(old, new, "", tolerance, BY_KIND.get(result_kind or "", ()))]


def _pair(old: dict[str, Any], new: dict[str, Any], kind_of_item: Any) -> list[tuple[str | None, str | None]]:
    """Names paired across two runs: the same name, else the one item of a kind on each side (a reprise
    folder is named after its start time, so its verification has a new name in every run)."""
    pairs: list[tuple[str | None, str | None]] = [(name, name) for name in old if name in new]
    left = [name for name in old if name not in new]
    right = [name for name in new if name not in old]
    for name in list(left):
        kind = kind_of_item(old[name])
        same_left = [n for n in left if kind_of_item(old[n]) == kind]
        same_right = [n for n in right if kind_of_item(new[n]) == kind]
        if kind is not None and len(same_left) == 1 and len(same_right) == 1:
            pairs.append((name, same_right[0]))
            left.remove(name)
            right.remove(same_right[0])
    return pairs + [(name, None) for name in left] + [(None, name) for name in right]


def _platform_changes(name: str, old: PlatformSide | None, new: PlatformSide | None,
                      tolerance: Tolerance) -> list[Change]:
    changes: list[Change] = []
    if old is None or new is None:
        return [Change(name, "verdict", "selected", old is not None or ABSENT, new is not None or ABSENT)]
    for path, left, right, _ in leaf_changes(old.verdict or {}, new.verdict or {}, "verdict", tolerance):
        changes.append(Change(name, "verdict", path, left, right))
    for path, left, right, _ in leaf_changes(old.runner or {}, new.runner or {}, "runner", tolerance):
        changes.append(Change(name, "environment", path, left, right))
    for left_name, right_name in _pair(old.results, new.results, lambda item: item[0]):
        if left_name is None or right_name is None:
            present = right_name or left_name
            kind = (new.results if right_name else old.results)[present][0]
            changes.append(Change(name, "verdict", f"results.{present}", kind if left_name else ABSENT,
                                  kind if right_name else ABSENT, present))
            continue
        left_kind, left_doc = old.results[left_name]
        right_kind, right_doc = new.results[right_name]
        if left_kind != right_kind:
            changes.append(Change(name, "verdict", "kind", left_kind, right_kind, right_name))
            continue
        changes += diff_documents(left_doc, right_doc, tolerance, name, right_name, left_kind)
    return changes


def _order(change: Change) -> tuple:
    return (change.platform is not None, change.platform or "", KINDS.index(change.kind), change.result or "",
            change.path)


def diff_sides(old: Side, new: Side, tolerance: Tolerance) -> list[Change]:
    """Every difference between two runs (measurement noise left out: compare_sides keeps it)."""
    return compare_sides(old, new, tolerance)[0]


def compare_sides(old: Side, new: Side, tolerance: Tolerance) -> tuple[list[Change], list[Change]]:
    """(differences, measurement noise) between two runs: the index's own (platform None), then platform by
    platform, each in the order environment, source, check, verdict."""
    changes: list[Change] = []
    for path, left, right, _ in leaf_changes(old.verdict or {}, new.verdict or {}, "verdict", tolerance):
        if not path.startswith("verdict.platforms"):  # each platform's own verdict is that platform's
            changes.append(Change(None, "verdict", path, left, right))
    for path, left, right, _ in leaf_changes(old.context, new.context, "", tolerance):
        changes.append(Change(None, kind_of(path), path, left, right))
    def single_kind(side: PlatformSide) -> str | None:
        kinds = {kind for kind, _ in side.results.values()}
        return kinds.pop() if len(kinds) == 1 and old.pair_by_kind and new.pair_by_kind else None

    pairs = _pair(old.platforms, new.platforms, single_kind)
    for left_name, right_name in pairs:
        name = right_name or left_name
        assert name is not None
        changes += _platform_changes(name, old.platforms.get(left_name or ""), new.platforms.get(right_name or ""),
                                     tolerance)
    ordered = sorted(changes, key=_order)
    return [c for c in ordered if c.noise is None], [c for c in ordered if c.noise is not None]


def noise_counts(noise: Sequence[Change]) -> dict[str, int]:
    """{class: how many changes}, by class name."""
    return dict(sorted(Counter(c.noise for c in noise if c.noise is not None).items()))


def noise_words(noise: Sequence[Change]) -> str:
    """`N measurement(s) varied within noise (schedule 3, timing 40)`, or "" when none did."""
    if not noise:
        return ""
    classes = ", ".join(f"{name} {count}" for name, count in noise_counts(noise).items())
    return f"{len(noise)} measurement(s) varied within noise ({classes})"


def show_value(value: Any, limit: int = 40) -> str:
    text = "absent" if value is None else value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def summary_line(platform: str | None, changes: list[Change], max_listed: int = 3,
                 noise: Sequence[Change] = ()) -> str:
    """One line: the verdict's move if any, then the kinds in the order environment, source, check, then how
    many measurements varied within noise."""
    mine = [c for c in changes if c.platform == platform]
    label = platform or "index"
    varied = noise_words([c for c in noise if c.platform == platform])
    if not mine:
        return f"{label}: no differences" + (f"; {varied}" if varied else "")
    parts = []
    moved = [c for c in mine if c.kind == "verdict" and c.path in ("verdict.ok", "verdict.pass", "selected")]
    for change in moved:
        if change.path == "selected":
            parts.append("not in the old run" if change.old is None else "not in the new run")
        else:
            parts.append(f"verdict {_word(change.old)} -> {_word(change.new)}")
    for kind in KINDS:
        of_kind = [c for c in mine if c.kind == kind and c not in moved]
        if not of_kind:
            continue
        listed = "; ".join(f"{c.path} {show_value(c.old)} -> {show_value(c.new)}" for c in of_kind[:max_listed])
        more = f" (+{len(of_kind) - max_listed} more)" if len(of_kind) > max_listed else ""
        parts.append(f"{kind}: {listed}{more}")
    return f"{label}: " + " | ".join(parts + ([varied] if varied else []))


def _word(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return {True: "PASS", False: "FAIL", None: "absent"}[value]
    return str(value)


def summaries(changes: list[Change], old: Side, new: Side, noise: Sequence[Change] = ()) -> dict[str, str]:
    """{platform or "index": its one line}, for every platform either run has."""
    # A platform of the old run only is named by its records ("selected"); one paired under a new name is not
    # listed twice.
    names: list[str | None] = ([None] if old.kind == "index" else []) + sorted(
        set(new.platforms) | {c.platform for c in changes if c.platform is not None})
    return {name or "index": summary_line(name, changes, noise=noise) for name in dict.fromkeys(names)}
