"""What runs on the Windows Python under Wine: the project's own commands, as a Windows user types them.

Each job is the command line a user runs on a Windows runner (paths through Wine's Z: drive), its working
directory, and how its outcome is read. Pure: tools/wine/cli.py runs them, tests/wine/ too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wine.session import windows_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
REPRISE = SCRIPTS / "reprise"
NAMES = ("gate", "diagnostic", "reprise", "training-run")
GATE_TIMEOUT_S = 600  # the gate's own default --timeout; Wine's process start-ups make it the slowest job here
DIAGNOSTIC_TIMEOUT_S = 120  # the diagnostic's largest --timeout: `import torch` alone takes 8-40 s under Wine


@dataclass(frozen=True)
class Job:
    name: str
    arguments: list[str]  # after python.exe
    cwd: Path
    timeout_s: float
    output: Path  # what it writes, a Linux path


def gate(out: Path) -> Job:
    return Job("gate", ["scripts\\platform_runtime_check.py", "--device", "cpu", "--require-device", "cpu",
                        "--work-dir", windows_path(out), "--output", windows_path(out / "gate.json")],
               ROOT, GATE_TIMEOUT_S + 60, out / "gate.json")


def diagnostic(out: Path) -> Job:
    return Job("diagnostic", ["scripts\\kernodeck_diagnostic.py", "--device", "cpu", "--timeout",
                              str(DIAGNOSTIC_TIMEOUT_S), "--output", windows_path(out / "diagnostic.json")],
               ROOT, DIAGNOSTIC_TIMEOUT_S + 60, out / "diagnostic.json")


def reprise(out: Path) -> Job:
    """docs/checkpoint-resume.md: `cd scripts/reprise && python -B verify_resume.py --output DIR`."""
    return Job("reprise", ["-B", "verify_resume.py", "--output", windows_path(out / "reprise")], REPRISE, 1200,
               out / "reprise" / "verification.json")


def training_run(out: Path) -> Job:
    """The training-run check on the folder the reprise's resumed run left (docs/checkpoint-resume.md)."""
    return Job("training-run", ["scripts\\check_training_run.py", windows_path(out / "reprise" / "reprise"),
                                "--output", windows_path(out / "training-run.json")],
               ROOT, 300, out / "training-run.json")


def plan(out: Path, names: tuple[str, ...] = NAMES) -> list[Job]:
    """The jobs in the order they must run (the training-run check reads what the reprise left)."""
    made = {"gate": gate, "diagnostic": diagnostic, "reprise": reprise, "training-run": training_run}
    wanted = set(names) | ({"reprise"} if "training-run" in names else set())
    return [made[name](out) for name in NAMES if name in wanted]
