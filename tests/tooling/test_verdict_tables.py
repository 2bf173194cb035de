"""docs/verdicts.md's registry tables are what the registry makes (tools/verdict_tables.py): every (kind, check)
of scripts/rules/registry.py has its row, and a row edited by hand, or a rule added without its row, is found."""

from __future__ import annotations

import sys

from rules import registry

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import verdict_tables  # noqa: E402


def test_the_committed_tables_are_the_ones_the_registry_makes():
    page = verdict_tables.PAGE.read_text(encoding="utf-8")
    assert verdict_tables.rendered(page) == page, "run python3 tools/verdict_tables.py"
    assert verdict_tables.main(["--check"]) == 0


def test_every_registry_row_has_its_row_in_the_page():
    page = verdict_tables.PAGE.read_text(encoding="utf-8")
    for entry in registry.ENTRIES:
        assert f"| `{entry.check}` | {verdict_tables._where(entry.rule)} |" in page, (entry.kind, entry.check)


def test_a_row_edited_by_hand_is_found(tmp_path, monkeypatch, capsys):
    page = verdict_tables.PAGE.read_text(encoding="utf-8")
    edited = tmp_path / "verdicts.md"
    edited.write_text(page.replace("| `checks.device_compute` |", "| `checks.device_compute_by_hand` |", 1))
    monkeypatch.setattr(verdict_tables, "PAGE", edited)
    monkeypatch.setattr(verdict_tables, "ROOT", tmp_path)
    assert verdict_tables.main(["--check"]) == 1
    assert "the registry tables differ from the registry" in capsys.readouterr().err
    assert verdict_tables.main([]) == 0 and edited.read_text() == page  # and the generator writes them back
