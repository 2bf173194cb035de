"""`started_at` against the other clocks that saw the run. Second views, by how independent they are:
- the result's own `finished_at` (written by the gate at its end since this rule) must lie `duration_s` (the
  gate's monotonic clock) after `started_at`: a one-field edit of either time is refused;
- the index that binds the result was built after the run ended: `started_at + duration_s` is not after the
  index's `built_at` (local and online indexes; the indexer's clock);
- online, the GitHub job that uploaded it (its `started_at` / `completed_at` from the bound API answer, GitHub's
  clock) holds the run: the result started after the job did and ended before it completed.
Each bound allows CLOCK_SKEW_S (stamps are whole seconds; two machines' clocks differ). What stays taken as
recorded: a local result's start moved earlier by less than the gap to its index's build, with `finished_at`
moved with it (two fields), and every time of a result recorded before `finished_at` existed, inside those
bounds. Stdlib only.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from core.facts import number

CLOCK_SKEW_S = 120.0  # a bound between two clocks (runner and indexer, runner and GitHub)
# started_at and finished_at: one process's wall clock, each cut to the whole second (isoformat timespec
# "seconds" truncates), read next to the monotonic reads that make duration_s: they differ by under 1 s, plus
# the millisecond duration_s is rounded to. 2 s leaves a second for an NTP step mid-run; a larger step is a
# clock that was wrong for part of the run, and that run fails by this rule (every committed result is within 1 s).
OWN_CLOCK_SLACK_S = 2.0
# Measurement noise: the fields of the result's own times that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = (("duration_s", "timing", "the run's wall time (started_at and finished_at are timestamps)"),)


def parse(value: Any) -> dt.datetime | None:
    """An ISO 8601 time with its zone (GitHub's `Z` too); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def problems(result: dict[str, Any]) -> list[str]:
    """The gate result's own times: a start with its zone, and the end `duration_s` after it."""
    started, recorded = parse(result.get("started_at")), result.get("started_at")
    if started is None:
        return [f"started_at is {str(recorded)[:60]!r}: not a time with its zone"]
    if "finished_at" not in result:
        return []
    finished, duration = parse(result.get("finished_at")), result.get("duration_s")
    if finished is None:
        return [f"finished_at is {str(result.get('finished_at'))[:60]!r}: not a time with its zone"]
    if not number(duration):
        return []  # core.result_verdicts.durations names it
    elapsed = (finished - started).total_seconds()
    if abs(elapsed - duration) > OWN_CLOCK_SLACK_S:
        return [f"started_at is {recorded!r} and finished_at {result.get('finished_at')!r}, {elapsed:.0f} s apart, "
                f"but duration_s is {duration}"]
    return []


def window_problems(result: dict[str, Any], not_before: tuple[str, Any] | None,
                    not_after: tuple[str, Any] | None) -> list[str]:
    """The run inside a window another clock saw: `not_before` / `not_after` are (what, its recorded time)."""
    started = parse(result.get("started_at"))
    duration = result.get("duration_s")
    if started is None:
        return []  # problems() names it
    skew = dt.timedelta(seconds=CLOCK_SKEW_S)
    before, after = (parse(bound[1]) if bound else None for bound in (not_before, not_after))
    found = []
    try:
        ended = started + dt.timedelta(seconds=duration if number(duration) and duration >= 0 else 0)
        early = before is not None and started < before - skew
        late = after is not None and ended > after + skew
    except OverflowError:  # a time or duration beyond what a datetime holds: no run ends there
        return [f"started_at is {result.get('started_at')!r} and duration_s {duration!r}: beyond any clock"]
    if early and not_before is not None:
        found.append(f"started_at is {result.get('started_at')!r}, before {not_before[0]} {not_before[1]!r}")
    if late and not_after is not None:
        found.append(f"started_at is {result.get('started_at')!r} (and duration_s {duration!r}), so the run ended "
                     f"after {not_after[0]} {not_after[1]!r}")
    return found
