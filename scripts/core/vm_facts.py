"""Exit codes and counts as the NFS VM's records hold them (core.vm_judge, core.two_clients_judge,
core.vm_install_judge, core.vm_run_judge, core.rename_race). Stdlib only."""

from __future__ import annotations

from typing import Any


def is_int(value: Any, *codes: int) -> bool:
    """An exit code or a count as a program writes one: a JSON integer, never a boolean (json reads `true` as
    True, and True == 1, False == 0: r4's #19 wrote exit codes and counts as booleans), and one of `codes`
    where any are given. Every exit code or count a VM record's rule compares goes through here."""
    return type(value) is int and (not codes or value in codes)


def is_count(value: Any) -> bool:
    return is_int(value) and value >= 0
