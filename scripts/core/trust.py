"""Whether the gate's own view could have been rewritten, judged from what it recorded: the injection vectors
present for it and its workers (`isolation`), and the views of the torch build a worker cannot forge
(`device.views`). Pure functions of recorded fields, so the gate (setting `ok`) and the judge (recomputing
it) apply the same rule. Stdlib only. docs/gate.md#threat-model says what these views do not cover.
"""

from __future__ import annotations

from typing import Any

from core.driver_views import driver_access_problems, driver_list_problems

# Requirements a vector does not fail: a CPU is every machine's, so no injection can make a machine claim
# one it lacks; refusing them would only fail every developer's run that sets PYTHONPATH.
INJECTION_EXEMPT = ("device=cpu",)
ALLOW_FLAG = "--allow-injection-vectors"
# The backend libraries a device type's torch must have mapped into the device worker, seen by the parent.
# libtorch_cuda.so needs libc10_cuda.so (its ELF NEEDED list; every CUDA wheel's torch/lib ships both), so a
# CUDA worker maps both. ROCm's libc10_hip.so is not required: no ROCm wheel's contents were checked.
BACKEND_LIBRARIES = {"cpu": ("libtorch_cpu.so",), "cuda": ("libtorch_cpu.so", "libtorch_cuda.so", "libc10_cuda.so"),
                     "rocm": ("libtorch_cpu.so", "libtorch_hip.so")}
# Measurement noise: the fields of the device's views that differ between two honest runs on one machine (core.noise;
# `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it varies among]).
# Any field not listed is compared.
MEASUREMENT_NOISE = (
    ("device.views.record.duration_s", "timing", "the time to hash every file torch's RECORD lists"),
    ("device.views.distributions.duration_s", "timing", "the time to hash the distributions the worker loaded"),
    ("device.views.distributions.after_report_s", "timing",
     "the time to match the loaded files, after the device worker's report"),
)


def _isolation(document: Any) -> dict[str, Any]:
    isolation = document.get("isolation") if isinstance(document, dict) else None
    return isolation if isinstance(isolation, dict) else {}


def vectors_present(document: Any) -> list[str]:
    present = _isolation(document).get("present")
    return [str(name) for name in present] if isinstance(present, list) else []


def injection_refusal(document: Any) -> str | None:
    """Why a requirement of this gate result cannot hold: vectors present and not allowed; None otherwise."""
    present = vectors_present(document)
    if not present or _isolation(document).get("allowed") is True:
        return None
    findings = _isolation(document).get("findings") or []
    detail = "; ".join(str(f) for f in findings[:4]) if isinstance(findings, list) else ""
    return (f"injection vector(s) present: {', '.join(present)}" + (f" ({detail})" if detail else "")
            + f": they can change what the gate or its workers read ({ALLOW_FLAG} runs anyway, and the "
              "evidence index then holds the claim unproven)")


def injection_problems(document: Any) -> list[str]:
    """Why the evidence index must not take this gate result as proof of a platform: any vector present,
    allowed or not. Results from gates before this rule (no `isolation.allowed`) recorded `present` as
    information only, flagging setuptools' own .pth among others, and are judged by their other fields."""
    present = vectors_present(document)
    if not present or not isinstance(_isolation(document).get("allowed"), bool):
        return []
    how = f"the run was allowed with {ALLOW_FLAG}" if _isolation(document).get("allowed") is True else \
        "the run was refused"
    return [f"injection vector(s) present in the gate's run ({', '.join(present)}; {how}): what it read may have "
            "been rewritten"]


def unproven_requirements(document: Any) -> list[str]:
    """The platform requirements a gate run under ALLOW_FLAG recorded as held while vectors were present:
    the gate ran them anyway, as asked, and the evidence index reports each UNPROVEN (not held), naming the
    vectors. Reads `requirements` and `isolation` as the result records them (the index's claims keep both)."""
    isolation = _isolation(document)
    present = vectors_present(document)
    if not present or isolation.get("allowed") is not True:
        return []
    requirements = document.get("requirements") if isinstance(document, dict) else None
    held = [r["name"] for r in requirements or [] if isinstance(r, dict) and r.get("ok") is True
            and isinstance(r.get("name"), str) and r["name"] not in INJECTION_EXEMPT]
    return [f"requirement {name!r} is UNPROVEN: injection vector(s) {', '.join(present)} were present and the run "
            f"was allowed with {ALLOW_FLAG}, so what the gate read may have been rewritten" for name in held]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def record_problems(record: dict[str, Any]) -> list[str]:
    """Why torch's files were not verified against its RECORD, recomputed from what the check measured
    (platform_runtime.torch_record.verify): verified means files were hashed (a count and their bytes above
    0), no problem was found (a mismatch, a missing or an unlisted file is one), and the bytecode counted
    beside listed sources is a count no larger than the files hashed. A recorded `verified` that disagrees is
    named with both values."""
    listed = record.get("problems")
    problems = [str(p) for p in listed][:3] if isinstance(listed, list) else [
        f"device.views.record.problems is {listed!r}, not a list"]
    files, size = _count(record.get("files")), _count(record.get("bytes"))
    if not problems and (not files or not size):
        problems.append(f"device.views.record hashed {record.get('files')!r} file(s) of {record.get('bytes')!r} "
                        "bytes: torch's files were not verified against its RECORD")
    if "bytecode_unlisted" in record:  # counted since issue 19's bytecode rule; older records lack it
        bytecode = _count(record.get("bytecode_unlisted"))
        if bytecode is None or (files is not None and bytecode > files):
            problems.append(f"device.views.record.bytecode_unlisted is {record.get('bytecode_unlisted')!r}: not a "
                            f"count of bytecode beside the {record.get('files')!r} listed file(s)")
    verified = not problems
    if record.get("verified") is not verified:
        problems.append(f"device.views.record.verified is recorded {record.get('verified')!r}, its measurements "
                        f"say {verified}")
    return problems


def distribution_problems(view: dict[str, Any]) -> list[str]:
    """Why the code the device worker ran from site directories besides torch is not verified, recomputed from
    what the check measured (platform_runtime.dependencies, loaded_files): verified means no problem was found
    (a file that differs from its distribution's RECORD, a forged .pyc, a loaded file no RECORD lists) and
    loaded files were matched (the worker always loads torch's). A recorded `verified` that disagrees is named
    with both values. Distributions without a RECORD (`not_checked`) are named there, not refused."""
    listed = view.get("problems")
    problems = [str(p) for p in listed][:3] if isinstance(listed, list) else [
        f"device.views.distributions.problems is {listed!r}, not a list"]
    counts = {key: _count(view.get(key)) for key in ("files", "bytes", "loaded_files", "bytecode_compared")}
    for key, value in counts.items():
        if value is None:
            problems.append(f"device.views.distributions.{key} is {view.get(key)!r}: not a count")
    if not problems and not counts["loaded_files"]:
        problems.append("device.views.distributions matched 0 loaded files: the files the device worker loaded "
                        "were not checked against their distributions' RECORDs")
    if not isinstance(view.get("distributions"), list) or not isinstance(view.get("not_checked"), list):
        problems.append("device.views.distributions names no list of the distributions checked and not checked")
    verified = not problems
    if view.get("verified") is not verified:
        problems.append(f"device.views.distributions.verified is recorded {view.get('verified')!r}, its measurements "
                        f"say {verified}")
    return problems


def device_view_problems(device: Any) -> list[str]:
    """Why the device claim is not backed by views the worker cannot forge: torch's files against its RECORD,
    the backend libraries the parent saw mapped into the worker (Linux), and on CUDA the worker's device UUID
    on the kernel driver's list. Empty when every view that applies agrees."""
    device = device if isinstance(device, dict) else {}
    views = device.get("views") if isinstance(device.get("views"), dict) else {}
    kind = device.get("type")
    problems: list[str] = []
    record = views.get("record") if isinstance(views.get("record"), dict) else {}
    problems += record_problems(record)
    if "distributions" in views:  # recorded since issue 28's rule; older results lack it
        distributions = views["distributions"] if isinstance(views["distributions"], dict) else {}
        problems += distribution_problems(distributions)
    mapped = views.get("mapped") if isinstance(views.get("mapped"), dict) else {}
    if mapped.get("observed") == "linux-proc-maps":
        torch_lib = mapped.get("torch_lib") if isinstance(mapped.get("torch_lib"), list) else []
        missing = [name for name in BACKEND_LIBRARIES.get(str(kind), ()) if name not in torch_lib]
        if missing:
            problems.append(f"the device worker did not map {', '.join(missing)} from the verified torch "
                            f"(seen from /proc/<pid>/maps): its {kind} claim is not backed by torch's library")
    elif mapped.get("observed") != "not-linux" and kind is not None:
        problems.append("the device worker's mapped libraries could not be read before it exited: its claim is "
                        "not backed by what it loaded")
    if kind == "cuda":
        driver = views.get("driver") if isinstance(views.get("driver"), dict) else {}
        cuda = device.get("cuda") if isinstance(device.get("cuda"), dict) else {}
        problems += driver_list_problems(driver, cuda.get("uuid"))
    return problems + driver_access_problems(kind, views)
