"""The main local job: every check this machine can run, results under outputs/, a one-screen summary.

Usage (normally through `python3 dev.py check`):
    python scripts/run_local.py [--output-dir outputs/local]

Each step is a real process running one of the product's scripts, exactly as a user would; a step
that fails does not stop the others. A step passes when it exits 0 and the registry's judge (rules.registry) passes its
result. Exit 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evidence_index.documents import judge_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


@dataclass(frozen=True)
class Step:
    name: str
    # Builds the command from the output directory; the command writes the step's JSON result.
    command: Callable[[Path], list[str]]
    # Where the step's JSON result lands, relative to the output directory.
    result: str
    # One line for the summary, from the parsed result.
    describe: Callable[[dict], str]
    cwd: Path = ROOT
    # Runs before the command, given the output directory (e.g. to remove a result the command refuses to replace).
    prepare: Callable[[Path], None] | None = None


def _describe_gate(result: dict) -> str:
    checks = result.get("checks", {})
    passed = sum(1 for check in checks.values() if check.get("ok"))
    device = result.get("device", {}).get("resolved") or "?"
    fs = result.get("filesystem", {}).get("type") or "?"
    text = f"{passed}/{len(checks)} checks on {device}, file system {fs}"
    if result.get("failures"):
        text += "; " + "; ".join(result["failures"][:3])
    return text


# verify_resume.py never reuses an output folder: each local run gets its own, named by the time it started.
_REPRISE_RUN = f"reprise-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{time.time_ns() % 10_000:04d}"


def _describe_reprise(result: dict) -> str:
    if not result.get("completed"):
        return "could not complete: " + "; ".join(result.get("errors", [])[:2])
    checks = result.get("positive_resume", {}).get("checks", {})
    errors = [c["max_abs_error"] for c in checks.values() if isinstance(c.get("max_abs_error"), float)]
    worst = max(errors, default=None)
    controls = result.get("negative_controls", {}).get("controls", {})
    detected = sum(1 for control in controls.values() if control.get("divergence_detected"))
    text = (f"resume {'bit-exact' if result.get('positive') else 'NOT exact'} (max error {worst}), "
            f"{detected}/{len(controls)} negative controls diverged, report {_REPRISE_RUN}/verification.json")
    return text + ("; " + "; ".join(result["errors"][:2]) if result.get("errors") else "")


STEPS: list[Step] = [
    Step(
        name="platform runtime gate",
        command=lambda out: [
            sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"),
            "--device", "cpu", "--require-device", "cpu", "--output", str(out / "platform-runtime-cpu.json"),
        ],
        result="platform-runtime-cpu.json",
        describe=_describe_gate,
    ),
    Step(
        name="kernodeck diagnostic (cpu)",
        command=lambda out: [
            sys.executable, "-B", str(SCRIPTS / "kernodeck_diagnostic.py"),
            "--device", "cpu", "--output", str(out / "kernodeck-diagnostic-cpu.json"),
        ],
        result="kernodeck-diagnostic-cpu.json",
        describe=lambda r: f"{r.get('code')} at stage {r.get('stage')}, loss {(r.get('execution') or {}).get('loss')}",
        # --output never replaces a file: drop this step's own result of an earlier run first.
        prepare=lambda out: (out / "kernodeck-diagnostic-cpu.json").unlink(missing_ok=True),
    ),
    Step(
        name="checkpoint-resume verification",
        command=lambda out: [
            sys.executable, "-B", str(SCRIPTS / "reprise" / "verify_resume.py"), "--output", str(out / _REPRISE_RUN),
        ],
        result=f"{_REPRISE_RUN}/verification.json",
        describe=_describe_reprise,
        cwd=SCRIPTS / "reprise",
    ),
    # Keep this step LAST: it binds the result of every step above to its SHA-256 and to this checkout's sources.
    Step(
        name="evidence index",
        command=lambda out: [
            sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py"), "local", "--results", str(out),
            *[arg for step in STEPS if step.name != "evidence index" for arg in ("--result", step.result)],
            "--output", str(out / "evidence-index.json"), "--verdict-output", str(out / "evidence-verdict.json"),
        ],
        result="evidence-verdict.json",
        describe=lambda r: (f"{r.get('subjects')} results bound by SHA-256 in evidence-index.json"
                            + ("; " + "; ".join(r["reasons"][:2]) if r.get("reasons") else "")),
    ),
]


def run_step(step: Step, out: Path) -> tuple[bool, str, float]:
    started = time.monotonic()
    log = out / (Path(step.result).stem + ".log")
    if step.prepare is not None:
        step.prepare(out)
    with open(log, "wb") as handle:
        code = subprocess.run(step.command(out), cwd=step.cwd, stdout=handle, stderr=subprocess.STDOUT).returncode
    elapsed = time.monotonic() - started
    path = out / step.result
    try:
        verdict = judge_bytes(path.read_bytes())
    except OSError:
        return False, f"exit {code}, no readable result (see {log.name})", elapsed
    result = verdict.document
    if not isinstance(result, dict):
        return False, f"exit {code}, no readable result (see {log.name}): {'; '.join(verdict.reasons[:1])}", elapsed
    # The one rule for a result file (parse strictly, validate, judge) the index and the summaries apply too.
    text = f"exit {code}; " + step.describe(result)
    if not verdict.ok:
        text += "; " + "; ".join(verdict.reasons[:2])
    return code == 0 and verdict.ok, text, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", type=Path, default=ROOT / "outputs" / "local")
    args = parser.parse_args(argv)
    out = args.output_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for step in STEPS:
        print(f"running: {step.name} ...", flush=True)
        rows.append((step, *run_step(step, out)))
    width = max(len(step.name) for step in STEPS)
    print()
    print(f"Kernodeck platform runtime, local run -> {out}")
    for step, ok, text, elapsed in rows:
        print(f"  {'PASS' if ok else 'FAIL'}  {step.name:<{width}}  {elapsed:6.1f}s  {text}")
    failed = [step.name for step, ok, _, _ in rows if not ok]
    print()
    print("all checks passed" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
