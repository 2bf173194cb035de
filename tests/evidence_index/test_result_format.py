"""What a current (schema_version 2) result must hold depends on how far each check got: a device check that
stopped before its checkpoint was loaded (its save hit a full disk) never recorded `checkpoint.load`, and that
is its own honest failure, not a field a forger deleted; a device check that finished must hold it."""

from __future__ import annotations

import copy
import json

from rules import result_format

from tests.conftest import ROOT

RESULT = json.loads((ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json").read_text("utf-8"))


def test_a_device_check_stopped_at_its_save_is_not_asked_for_its_load():
    document = copy.deepcopy(RESULT)
    check = document["checks"]["device_compute"]
    check.update(ok=False, stage="checkpoint_save", error={"type": "OSError", "errno": "ENOSPC",
                                                             "message": "No space left on device"})
    check["checkpoint"].pop("load")
    assert not [p for p in result_format.missing_fields(document) if "checkpoint.load" in p]


def test_a_device_check_that_finished_without_its_load_is_missing_it():
    document = copy.deepcopy(RESULT)
    document["checks"]["device_compute"]["checkpoint"].pop("load")
    assert any("checks.device_compute.checkpoint.load is missing" in p for p in result_format.missing_fields(document))
    assert result_format.missing_fields(RESULT) == []
