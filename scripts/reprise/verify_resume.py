"""Kernodeck reprise v1: prove that a resume in another process continues the training bit for bit.

    python -B verify_resume.py --output runs/preuve-cpu

Runs train.py with this same interpreter, independent processes side by side:
  1. continu             --steps 10                                  } together
  2. coupure             --steps 5 (interrupted at cursor 20 of 24)  }
  3. reprise             --steps 5 --resume coupure/checkpoint.pt    } together, after 2
  4. reprise-incomplete  --steps 5 --resume ... --omit-rng-restore   }
     (process 4 also runs one control per RNG, omitting only that RNG's restore, into controles/)
then compares, with atol 1e-12 and rtol 0, and writes <output>/verification.json.

Exit codes: 0 the resume is exact AND every negative control diverged; 1 a comparison failed;
2 the verification could not complete (output folder exists, a process failed). The last stdout
line is always the JSON verdict when a report was written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import reprise_common as common  # noqa: E402
import reprise_compare as rc  # noqa: E402  (no torch: the verifier only reads files)

HERE = common.HERE
REPORT = "verification.json"
CONTINUOUS, CUT, RESUMED, INCOMPLETE, CONTROLS = "continu", "coupure", "reprise", "reprise-incomplete", "controles"
VERIFY_FILES = ("verify_resume.py", "reprise_compare.py", "training_run_facts.py")  # the verifier and its rules
# The negative controls: the resume without any RNG restore, then one per RNG (run inside its process).
NEGATIVE = (INCOMPLETE, *(f"{CONTROLS}/omit-{rng}" for rng in common.RNG_NAMES))


class CannotComplete(Exception):
    """Exit 2: the protocol could not run to a verdict."""


class ComparisonFailed(Exception):
    """Exit 1: the protocol ran, and its evidence does not hold."""


def plan() -> list[dict[str, Any]]:
    """The processes, their arguments (relative to the output folder, their working directory) and phase."""
    resume = ["--resume", f"{CUT}/{common.CHECKPOINT_NAME}"]
    return [
        {"name": CONTINUOUS, "phase": 1, "args": ["--steps", "10", "--output", CONTINUOUS]},
        {"name": CUT, "phase": 1, "args": ["--steps", "5", "--output", CUT]},
        {"name": RESUMED, "phase": 2, "args": ["--steps", "5", *resume, "--output", RESUMED]},
        {"name": INCOMPLETE, "phase": 2, "args": ["--steps", "5", *resume, "--omit-rng-restore",
                                                  "--output", INCOMPLETE, "--per-rng-controls", CONTROLS]},
    ]


class Process:
    def __init__(self, spec: dict[str, Any], out: Path, timeout: float) -> None:
        self.spec, self.timeout = spec, timeout
        self.log_path = out / "logs" / f"{spec['name']}.log"
        self.started = time.monotonic()
        self.log = open(self.log_path, "wb")
        # The same interpreter, a new process; the output folder is the working directory so every
        # path in the command (and in its log) is relative.
        self.popen = subprocess.Popen([sys.executable, "-B", str(HERE / "train.py"), *spec["args"]], cwd=out,
                                      stdout=self.log, stderr=subprocess.STDOUT)
        self.exit_code: int | None = None
        self.wall_s: float | None = None

    def wait(self) -> int:
        if self.exit_code is None:
            remaining = max(1.0, self.timeout - (time.monotonic() - self.started))
            try:
                self.exit_code = self.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
                self.exit_code = -9
            self.wall_s = round(time.monotonic() - self.started, 3)
            self.log.close()
        return self.exit_code

    def record(self) -> dict[str, Any]:
        return {"name": self.spec["name"], "phase": self.spec["phase"],
                "argv": ["python", "-B", "train.py", *self.spec["args"]], "cwd": "<output>",
                "exit_code": self.exit_code, "wall_s": self.wall_s, "log": f"logs/{self.spec['name']}.log"}


def run_processes(out: Path, timeout: float, records: list[dict[str, Any]], check_cut) -> None:
    """Phase 1: continu and coupure side by side; phase 2, once coupure's checkpoint reads back: the resumes."""
    steps = {spec["name"]: spec for spec in plan()}
    (out / "logs").mkdir()
    running = {name: Process(steps[name], out, timeout) for name in (CONTINUOUS, CUT)}
    try:
        failure(running[CUT])
        check_cut()  # coupure's files must be bound to its summary before anything resumes from them
        for name in (RESUMED, INCOMPLETE):
            running[name] = Process(steps[name], out, timeout)
        for process in running.values():
            failure(process)
    finally:
        for process in running.values():
            if process.exit_code is None:
                process.popen.kill()
                process.wait()
        records.extend(process.record() for process in running.values())


def failure(process: Process) -> None:
    """Raise what a process's exit code means for the verification; return if it exited 0."""
    code, name = process.wait(), process.spec["name"]
    if code == 0:
        return
    why = f"process {name} exited {code}: {last_line(process.log_path)} (see logs/{name}.log)"
    # 1: the checkpoint it just wrote does not read back. 2 in phase 2: it refused the checkpoint that
    # coupure just wrote with the same code. Either way the resume is broken: a failed verification.
    if code == 1 or (code == 2 and process.spec["phase"] == 2):
        raise ComparisonFailed(why)
    raise CannotComplete(why)


def last_line(path: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def verdict(report: dict[str, Any]) -> str:
    return json.dumps({"device": "cpu", "all_checks_passed": report["all_checks_passed"],
                       "positive": report["positive"], "negative_divergence_detected":
                       report["negative_divergence_detected"], "report": REPORT}, separators=(",", ":"))


def load(out: Path, name: str):
    try:
        return rc.load_run(out / name, name)
    except common.RepriseError as error:
        # A process exited 0 but its evidence does not read back: that is a failed check, not a crash.
        raise ComparisonFailed(f"{name}: {error}") from None


def compare(out: Path, source: dict[str, Any]) -> dict[str, Any]:
    runs = {name: load(out, name) for name in (CONTINUOUS, CUT, RESUMED)}
    controls = {"all": INCOMPLETE, **{rng: f"{CONTROLS}/omit-{rng}" for rng in common.RNG_NAMES}}
    control_runs = {key: load(out, name) for key, name in controls.items()}

    positive = rc.compare_training(runs[CONTINUOUS], runs[RESUMED])
    boundary = rc.boundary_checks(runs[CONTINUOUS], runs[CUT], runs[RESUMED])
    integrity = rc.integrity_checks({**runs, **{run.name: run for run in control_runs.values()}},
                                    {CONTINUOUS: 10, CUT: 5, RESUMED: 10}, runs[CUT], runs[RESUMED], source)
    negatives: dict[str, Any] = {}
    for key, run in control_runs.items():
        checks = rc.compare_training(runs[CONTINUOUS], run)
        omitted = sorted(run.summary["command"]["omit_rng_restore"])
        expected = rc.omitted_by(key)
        negatives[key] = {
            "omitted": omitted,
            "folder": run.name,
            "passed": all(check["passed"] for check in checks.values()),
            # Only a control that omitted exactly its own RNG (and resumed from coupure) proves anything.
            # ...and whose next draws show it: the omitted RNGs diverged, the restored ones did not.
            "divergence_detected": rc.training_diverged(checks) and omitted == expected
            and not rc.draws_problems(checks, expected)
            and run.summary["resumed_from"] == runs[RESUMED].summary["resumed_from"],
            "checks": checks,
        }
    positive_passed = all(check["passed"] for check in positive.values())
    return {
        "resume_boundary": boundary,
        "positive_resume": {"passed": positive_passed, "compared": [CONTINUOUS, RESUMED], "checks": positive},
        "integrity": integrity,
        "negative_controls": {"all_detected": all(n["divergence_detected"] for n in negatives.values()),
                              "controls": negatives},
        "positive": positive_passed and boundary["passed"] and integrity["passed"],
    }


def new_report() -> dict[str, Any]:
    """The report before anything ran: a failure (exit 2) until the protocol proves otherwise."""
    return {
        "schema": common.VERIFICATION_SCHEMA, "version": common.VERSION, "project": common.PROJECT,
        "ok": False, "exit_code": 2, "completed": False, "device": "cpu",
        "all_checks_passed": False, "positive": False, "negative_divergence_detected": False,
        "source": {}, "environment": {"python": platform.python_version()},
        "protocol": {"dtype": "float64", "threads": 1, "atol": common.ATOL, "rtol": common.RTOL,
                     "interrupt_after_steps": 5, "total_steps": 10, "rows": common.ROWS, "batch": common.BATCH,
                     "side_by_side": [[CONTINUOUS, CUT], [RESUMED, INCOMPLETE]], "processes": []},
        "errors": [],
    }


def run_protocol(out: Path, timeout: float, report: dict[str, Any]) -> None:
    """Fingerprint the sources, run the four processes, compare; every outcome lands in report."""
    try:
        data_sha256, _ = common.load_data()
        fingerprint = common.code_fingerprint()
        files = {**fingerprint["files"], **{name: common.sha256_file(HERE / name) for name in VERIFY_FILES},
                 "data.csv": data_sha256}
        source = {"code_sha256": fingerprint["code_sha256"], "data_sha256": data_sha256, "files": files}
        report["source"] = source
        run_processes(out, timeout, report["protocol"]["processes"], lambda: load(out, CUT))
        environment = load(out, CONTINUOUS).summary.get("environment", {})
        report["environment"].update({key: str(environment.get(key)) for key in ("torch", "numpy")})
        try:
            report.update(compare(out, source))
            runs = {name: load(out, name) for name in (CONTINUOUS, CUT, RESUMED, *NEGATIVE)}
            # The bytes as the evidence index reads them (no newline translation: a stray "\r" is refused).
            logs = {spec["name"]: (out / "logs" / f"{spec['name']}.log").read_bytes().decode("utf-8", "replace")
                    for spec in plan()}
            recorded = rc.protocol_problems(report, plan(), runs, (CONTINUOUS, RESUMED), list(NEGATIVE), logs)
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            # Evidence shaped unlike what train.py writes (a faulted process, an edited summary): a failure.
            raise ComparisonFailed(f"the runs' evidence is malformed: {type(error).__name__}: {error}") from None
        if recorded:  # the same rule the evidence index applies to this report (reprise_compare)
            raise ComparisonFailed("the verification's own record: " + "; ".join(recorded))
        report["completed"] = True
    except (CannotComplete, common.RepriseError, OSError) as error:
        report["errors"].append(str(error))
    except ComparisonFailed as error:
        report["completed"] = True
        report["errors"].append(str(error))


def conclude(report: dict[str, Any]) -> None:
    """The verdict: both the exact resume and the detected divergence of every negative control."""
    report["negative_divergence_detected"] = bool(report.get("negative_controls", {}).get("all_detected"))
    report["positive"] = bool(report.get("positive"))
    # An error recorded after the comparisons (the report's own record refused) fails it too.
    report["all_checks_passed"] = (report["completed"] and report["positive"] and report["negative_divergence_detected"]
                                   and not report["errors"])
    report["ok"] = report["all_checks_passed"]
    report["exit_code"] = 0 if report["all_checks_passed"] else (1 if report["completed"] else 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="verify_resume.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, required=True, help="new folder for the runs and verification.json")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to each process")
    args = parser.parse_args(argv)
    out: Path = args.output
    try:
        common.claim_output_dir(out)
    except (common.RepriseError, OSError) as error:
        print(f"verify_resume.py: error: {error}", file=sys.stderr)
        return 2
    started = time.monotonic()
    report = new_report()
    run_protocol(out, args.timeout, report)
    conclude(report)
    report["timing"] = {"wall_s": round(time.monotonic() - started, 3)}
    common.write_json(out / REPORT, report)
    print(f"positive resume: {'passed' if report['positive'] else 'FAILED'}; negative controls diverged: "
          f"{report['negative_divergence_detected']}; errors: {report['errors'] or 'none'}; "
          f"{report['timing']['wall_s']:.1f} s")
    print(verdict(report))
    return report["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
