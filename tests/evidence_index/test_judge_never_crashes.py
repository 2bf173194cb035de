"""The judge answers every input with a judgement, never a traceback: each field of a real gate result replaced
by a value of another JSON type is refused by name (schema or rule), not crashed on. Two such inputs
(`arguments.require = 5`, `device.views.mapped.torch_lib = 5`) raised TypeError inside the rules."""

from __future__ import annotations

import copy
import json

import pytest
from evidence_index import documents
from rules import gate_result

from tests.conftest import ROOT

EVIDENCE = ROOT / "evidence"
RESULTS = ("local/run-local/platform-runtime-cpu.json", "local/run-local/kernodeck-diagnostic-cpu.json",
           "local/training-run/training-run-check.json", "nfs/platform-runtime-nfs.json", "nfs/nfs-harness.json")
OTHER_TYPES = (5, [5], {"x": 5}, None)


def paths(value, prefix=(), depth=5):
    if depth == 0:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value[:2]) if isinstance(value, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key), depth - 1)


def replaced(document: dict, path: tuple, value) -> dict:
    edited = copy.deepcopy(document)
    target = edited
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return edited


@pytest.mark.parametrize("name", RESULTS)
def test_every_field_of_another_type_is_judged_not_crashed_on(name):
    document = json.loads((EVIDENCE / name).read_text(encoding="utf-8"))
    gate = name.endswith(("platform-runtime-cpu.json", "platform-runtime-nfs.json"))
    tried = crashed = 0
    failures = []
    for path in paths(document):
        for value in OTHER_TYPES:
            edited = replaced(document, path, value)
            tried += 1
            try:
                documents.judge_bytes(json.dumps(edited).encode())
                if gate:
                    gate_result.result_problems(edited)
            except Exception as error:  # noqa: BLE001 - any exception is the defect this test looks for
                crashed += 1
                failures.append(f"{'.'.join(map(str, path))} = {value!r}: {type(error).__name__}: {error}")
    assert tried > 40 and not failures, f"{crashed} of {tried} edits crashed the judge:\n" + "\n".join(failures[:20])


def test_the_judge_side_rules_take_any_shape_without_a_crash():
    """Reviewer r6's rules (written_fields, diagnostic_words, the action steps' clocks) on committed records with a
    list, a text or a number where an object or a text belongs: the schema refuses those; the rule must not crash
    (a crash there made `local` exit 2 on a failing result of the wrong shape)."""
    from rules import diagnostic_message, nfs_vm_run, written_together

    gate = json.loads((ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json").read_text())
    steps = json.loads((ROOT / "evidence" / "nfs" / "action-steps.json").read_text())
    for document, paths in ((gate, [("device",), ("device", "torch_build", "dist_info"), ("isolation", "processes")]),
                            (steps, [("steps", "result_dir"), ("steps", "gate"), ("warm_up",)])):
        for path in paths:
            for value in ([], "x", 1, [1], {"a": 1}):
                forged = copy.deepcopy(document)
                holder = forged
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = value
                assert isinstance(written_together.record_problems(forged), list)
                assert isinstance(diagnostic_message.message_problems({"code": value, "message": "m"}), list)
                assert isinstance(nfs_vm_run.action_steps_problems("busybox", forged, {**gate, "arguments": value}),
                                  list)
