"""A fleet of self-hosted CUDA boxes in one run: the `cuda-runners` input read into boxes, each with a name that
names its matrix job (`cuda (<box>)`) and its artifact (`<prefix>-cuda-<box>-attempt-<n>`). Stdlib only; the
plan step parses, the evidence index reads a box back from its job's name.

An entry is a JSON array of runner labels (one box, or one class of boxes) or an object
`{"name": "a100-1", "labels": [...]}`. A bare label array is named by its labels without the generic ones
(self-hosted, linux, x64, ...); names are unique in a fleet, a repeated one gets `-2`, `-3`.

A box whose labels name one of GitHub's own hosted images (`ubuntu-latest`, `windows-2025`, ...) and not
`self-hosted` is refused here: GitHub sends that job to a fresh hosted VM, which has no NVIDIA GPU, and the run
would only fail there, far from the input that caused it. Labels that name no hosted image are accepted, with
or without `self-hosted`: an Actions Runner Controller scale set is addressed by its name alone, a runner made
with `--no-default-labels` carries only its custom labels, and a GitHub-hosted larger runner with a GPU is
addressed by the name its owner gave it.
"""

from __future__ import annotations

import json
import re
from typing import Any

GENERIC_LABELS = ("self-hosted", "linux", "windows", "macos", "x64", "arm64", "x86_64", "gpu", "cuda")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
MAX_BOXES = 64  # a GitHub matrix runs at most 256 jobs; a fleet this large is split by classes of boxes
JOB_NAME = re.compile(r"^cuda \((?P<box>[a-z0-9][a-z0-9._-]{0,39})\)$")
# The workflow labels of GitHub's standard hosted images (docs.github.com, "GitHub-hosted runners reference";
# actions/runner-images README): ubuntu-latest, ubuntu-24.04, ubuntu-24.04-arm, ubuntu-slim, windows-latest,
# windows-2025, windows-11-arm, macos-latest, macos-15, macos-15-intel, macos-14-large, macos-latest-xlarge, and
# the retired ones of the same shape. Labels are case-insensitive on GitHub.
HOSTED_IMAGE = re.compile(r"(ubuntu|windows|macos)-(latest|slim|\d+(\.\d+)?)(-(arm|intel|large|xlarge))?",
                          re.IGNORECASE)
SELF_HOSTED = "self-hosted"
EXAMPLE = '["self-hosted","linux","gpu"]'


class FleetError(ValueError):
    pass


def _labels(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) and x.strip() for x in value):
        raise FleetError(f"{where}: runner labels must be a non-empty JSON array of non-empty strings")
    return [x.strip() for x in value]


def hosted_images(labels: list[str]) -> list[str]:
    """The labels that send a job to one of GitHub's hosted images, where `self-hosted` is not among them."""
    if any(label.lower() == SELF_HOSTED for label in labels):
        return []
    return [label for label in labels if HOSTED_IMAGE.fullmatch(label)]


def check_self_hosted(labels: list[str], where: str) -> None:
    """FleetError when a CUDA box's labels send its job to a GitHub-hosted image (no GPU there)."""
    hosted = hosted_images(labels)
    if hosted:
        raise FleetError(f"{where} {json.dumps(labels, separators=(',', ':'))} names GitHub's hosted image "
                         f"{hosted[0]}, which has no NVIDIA GPU: give your GPU runner's labels, e.g. {EXAMPLE}, "
                         "or its scale set's name")


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
        check_self_hosted(labels, where)
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
    `<prefix>-cuda-attempt-<n>`, as before fleets. FleetError where its labels name a GitHub-hosted image."""
    check_self_hosted(labels, "cuda-runner")
    return {"name": "", "labels": labels}


def artifact_parts(box: str) -> list[str]:
    return ["cuda", box] if box else ["cuda"]


def box_of(job_name: str) -> str | None:
    """The box a cuda job ran for, from its name's last segment (`cuda (a100-1)`); None for the plain `cuda`."""
    match = JOB_NAME.match(job_name.rsplit(" / ", 1)[-1].strip())
    return match.group("box") if match else None
