"""The composite actions as GitHub reads them: every one that installs torch names the cache first, restores
it with actions/cache (pinned, Node 24) only where the key step says so, installs, then saves a new key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = [ROOT / "action.yml", *sorted(ROOT.glob("actions/*/action.yml"))]
CACHE_SHA = "27d5ce7f107fe9357f9df03efb73ab90386fccae"  # actions/cache v5.0.5 (node24), read from its tag


def steps(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["runs"]["steps"]


def by_id(path: Path) -> dict[str, tuple[int, dict]]:
    return {step["id"]: (index, step) for index, step in enumerate(steps(path)) if "id" in step}


@pytest.mark.parametrize("path", ACTIONS, ids=[p.relative_to(ROOT).as_posix() for p in ACTIONS])
def test_an_action_restores_installs_and_saves_in_that_order(path):
    found = by_id(path)
    order = [found[name][0] for name in ("cache-key", "cache", "python")]
    assert order == sorted(order), order
    key_step, restore, prepare = (found[name][1] for name in ("cache-key", "cache", "python"))
    assert "--cache-key" in key_step["run"]
    assert restore["uses"] == f"actions/cache/restore@{CACHE_SHA}"
    assert restore["if"] == "steps.cache-key.outputs.restore == 'true'"
    assert restore["with"] == {"path": "${{ steps.cache-key.outputs.cache-paths }}",
                               "key": "${{ steps.cache-key.outputs.cache-key }}",
                               "restore-keys": "${{ steps.cache-key.outputs.cache-restore-prefix }}"}
    assert '--cache-hit "$CACHE_HIT"' in prepare["run"] and "CACHE_HIT" in prepare["env"]
    saves = [(index, step) for index, step in enumerate(steps(path))
             if step.get("uses", "").startswith("actions/cache/save@")]
    assert len(saves) == 1 and saves[0][0] > found["python"][0]
    save = saves[0][1]
    assert save["uses"] == f"actions/cache/save@{CACHE_SHA}"
    assert "steps.cache.outputs.cache-hit != 'true'" in save["if"] and "installer == 'uv'" in save["if"]
    assert save["with"] == {"path": "${{ steps.cache-key.outputs.cache-paths }}",
                            "key": "${{ steps.cache-key.outputs.cache-key }}"}


@pytest.mark.parametrize("path", ACTIONS, ids=[p.relative_to(ROOT).as_posix() for p in ACTIONS])
def test_the_key_step_gets_the_same_torch_and_device_as_the_install(path):
    found = by_id(path)
    key_step, prepare = found["cache-key"][1], found["python"][1]
    assert key_step["env"]["TORCH_SPEC"] == prepare["env"]["TORCH_SPEC"] == "${{ inputs.torch }}"
    key_device = key_step["run"].split("--device", 1)[1].split()[0]
    prepare_device = prepare["run"].split("--device", 1)[1].split()[0]
    assert key_device == prepare_device


def test_the_pinned_cache_action_is_node24_in_the_stand_in_too():
    for part in ("restore", "save"):
        action = yaml.safe_load((ROOT / "tests/act/standins/cache" / part / "action.yml").read_text())
        assert action["runs"]["using"] == "node24"
