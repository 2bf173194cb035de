"""Judge what one VM run wrote: every promise of the NFS job as a named check that can fail.

The rules are the registry's (rules.nfs_vm_run makes the run's checks with them), so the evidence index makes
the same checks again from a recorded run's bytes; here it reads a live run's output folder, and adds what only
that folder holds (the files the guest wrote when it or a phase raised)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the rules, when run from tools/
from common.strict_json import parse_strict  # noqa: E402
from rules import registry  # noqa: E402
from rules.nfs_vm_run import (  # noqa: E402,F401  (names tests and tools reach here)
    describe_busy_rename,
    describe_rename_race,
    describe_two_clients,
    gate_check,
    harness_check,
    install_check,
    judged_check,
    run_checks,
    takeover_check,
    vm_problems,
)
from rules.nfs_vm_run import vm_check as vm_check_of  # noqa: E402


def load(folder: Path, name: str) -> dict | None:
    try:
        value = parse_strict((folder / name).read_bytes())  # the one strict reader: no duplicate key, no NaN
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def error_files(out: Path) -> list[str]:
    """What the guest wrote when it or a phase raised: the file's name and the exception's last line."""
    found = []
    for path in sorted(out.glob("*-error.txt")):
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        found.append(f"{path.name}: {lines[-1] if lines else '(empty)'}")
    return found


def vm_check(out: Path, boot: dict) -> dict:
    """The VM ran to its own power-off, within its limit, and neither the guest nor a phase raised."""
    return vm_check_of(boot, error_files(out))


def busy_rename_check(report: dict | None) -> tuple[bool, str]:
    judge = registry.rule("nfsvm-run", "checks.busy_rename")
    return judged_check(report, None if report is None else judge(report), describe_busy_rename)


def rename_race_check(report: dict | None) -> tuple[bool, str]:
    """The experiment's record: its summaries and verdict made again from the clients' counts."""
    judge = registry.rule("nfsvm-run", "checks.rename_race")
    return judged_check(report, None if report is None else judge(report), describe_rename_race)


def judge(out: Path, boot: dict, phases: list[str]) -> list[dict]:
    return run_checks(lambda relative: load(out, relative), boot, phases, error_files(out))
