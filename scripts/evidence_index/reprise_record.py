"""What a reprise verification's own record says of its processes, held to what scripts/reprise/verify_resume.py
can have produced (a record edited alone is otherwise taken as written), beyond reprise_compare.protocol_problems:

- (a process log, logs/<name>.log, is held by reprise_compare.log_problems, the reprise's own rule, which
  protocol_problems applies for verify_resume.py and for the judge alike: every line train.py's, its warnings
  as "train.py: warning: " lines, the others exactly what the runs it wrote make it print.)
- the process wall times against the order verify_resume.run_processes runs them in, and against the
  verification's own `timing.wall_s`: continu starts before coupure and is waited for after coupure ends, so
  its wall time is at least coupure's; the resumes start once coupure has ended, so the whole verification
  took at least coupure's time plus the longer resume's; no process took longer than the whole. Every time is
  rounded to a millisecond (the tolerance). A wall time with no recorded second view (all of them shrunk
  together, keeping these orders) is not refutable from the record.
"""

from __future__ import annotations

from typing import Any

ROUNDING_S = 0.003  # three times rounded to 1 ms


def _walls(document: dict[str, Any]) -> dict[str, float]:
    processes = (document.get("protocol") or {}).get("processes") if isinstance(document.get("protocol"),
                                                                                dict) else None
    walls = {}
    for record in processes if isinstance(processes, list) else []:
        if isinstance(record, dict) and isinstance(record.get("name"), str) and \
                type(record.get("wall_s")) in (int, float):
            walls[record["name"]] = float(record["wall_s"])
    return walls


def wall_problems(document: Any, continuous: str, cut: str, resumes: tuple[str, str]) -> list[str]:
    """The verification's process wall times against the protocol's order and its own timing.wall_s."""
    if not isinstance(document, dict):
        return []
    walls, problems = _walls(document), []
    total = (document.get("timing") or {}).get("wall_s") if isinstance(document.get("timing"), dict) else None
    index = {name: i for i, name in enumerate(walls)}

    def field(name: str) -> str:
        return f"protocol.processes[{index[name]}:{name}].wall_s {walls[name]}"

    if continuous in walls and cut in walls and walls[continuous] + ROUNDING_S < walls[cut]:
        problems.append(f"{field(continuous)} is less than {field(cut)}: {continuous} starts first and is waited "
                        f"for after {cut} ends")
    if type(total) in (int, float):
        problems += [f"{field(name)} is more than the whole verification's timing.wall_s {total}"
                     for name in walls if walls[name] > total + ROUNDING_S]
        later = [walls[name] for name in resumes if name in walls]
        if cut in walls and later and total + ROUNDING_S < walls[cut] + max(later):
            problems.append(f"timing.wall_s {total} is less than {field(cut)} plus the longer resume's "
                            f"{max(later)}: the resumes start once {cut} has ended")
    return problems
