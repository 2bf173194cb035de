"""A fleet of self-hosted CUDA boxes in one run: the `cuda-runners` input read into boxes, each with a name that
names its matrix job (`cuda (<box>)`) and its artifact (`<prefix>-cuda-<box>-attempt-<n>`). Stdlib only; the
plan step parses, the evidence index reads a box back from its job's name.

An entry is a JSON array of runner labels (one box, or one class of boxes) or an object
`{"name": "a100-1", "labels": [...]}`. A bare label array is named by its labels without the generic ones
(self-hosted, linux, x64, ...); names are unique in a fleet, a repeated one gets `-2`, `-3`.
"""

from __future__ import annotations

import json
import re
from typing import Any

GENERIC_LABELS = ("self-hosted", "linux", "windows", "macos", "x64", "arm64", "x86_64", "gpu", "cuda")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
MAX_BOXES = 64  # a GitHub matrix runs at most 256 jobs; a fleet this large is split by classes of boxes
JOB_NAME = re.compile(r"^cuda \((?P<box>[a-z0-9][a-z0-9._-]{0,39})\)$")


class FleetError(ValueError):
    pass


def _labels(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) and x.strip() for x in value):
        raise FleetError(f"{where}: runner labels must be a non-empty JSON array of non-empty strings")
    return [x.strip() for x in value]


def _derived_name(labels: list[str], index: int) -> str:
    words = [re.sub(r"[^a-z0-9._-]+", "-", label.lower()).strip("-._") for label in labels
             if label.lower() not in GENERIC_LABELS]
    name = "-".join(w for w in words if w)[:40].strip("-._")
    return name if NAME.match(name) else f"box{index + 1}"


def parse_runners(text: str) -> list[dict[str, Any]]:
    """The boxes of a `cuda-runners` value: [{"name", "labels"}], in the given order; [] for an empty value."""
    if not text.strip():
        return []
    try:
        entries = json.loads(text)
    except ValueError as error:
        raise FleetError(f"cuda-runners is not JSON: {error}") from None
    if not isinstance(entries, list) or not entries:
        raise FleetError("cuda-runners must be a non-empty JSON list of label arrays or {name, labels} objects")
    if len(entries) > MAX_BOXES:
        raise FleetError(f"cuda-runners lists {len(entries)} boxes; at most {MAX_BOXES} in one run")
    boxes: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        where = f"cuda-runners[{index}]"
        if isinstance(entry, dict):
            unknown = sorted(set(entry) - {"name", "labels"})
            if unknown:
                raise FleetError(f"{where}: only 'name' and 'labels' are read, not {unknown}")
            labels = _labels(entry.get("labels"), where)
            name = entry.get("name")
            if not isinstance(name, str) or not NAME.match(name):
                raise FleetError(f"{where}: name {name!r}: 1-40 lower-case letters, digits, '.', '_' or '-'")
        else:
            labels = _labels(entry, where)
            name = _derived_name(labels, index)
        boxes.append({"name": name, "labels": labels})
    seen: dict[str, int] = {}
    for box in boxes:
        count = seen[box["name"]] = seen.get(box["name"], 0) + 1
        if count > 1:
            box["name"] = f"{box['name'][:37]}-{count}"
    if len({box["name"] for box in boxes}) != len(boxes):
        raise FleetError("cuda-runners: two boxes end up with one name; name them")
    return boxes


def single_box(labels: list[str]) -> dict[str, Any]:
    """The one box of the `cuda-runner` input: no name, so its job stays `cuda` and its artifact
    `<prefix>-cuda-attempt-<n>`, as before fleets."""
    return {"name": "", "labels": labels}


def artifact_parts(box: str) -> list[str]:
    return ["cuda", box] if box else ["cuda"]


def box_of(job_name: str) -> str | None:
    """The box a cuda job ran for, from its name's last segment (`cuda (a100-1)`); None for the plain `cuda`."""
    match = JOB_NAME.match(job_name.rsplit(" / ", 1)[-1].strip())
    return match.group("box") if match else None
