"""Prompt versions: wording changes get a new version; older versions stay loadable so an
answer's recorded prompt_version still names the exact texts it was produced with."""
from __future__ import annotations

from pv_agent.engine.answer import prompts


def test_current_version_is_v3_and_older_ones_still_load():
    assert prompts.PROMPT_VERSION == "v3"
    for version in ("v1", "v2", "v3"):
        assert prompts.system_prompt(version) and prompts.text("refusal", version)


def test_v2_holds_the_wording_v1_did_not_have():
    # round-one wording: the state line says what was checked, marks carry a reason
    assert "checked_figures" in prompts._texts("v2")
    assert "checked_figures" not in prompts._texts("v1")
    assert "{reason}" in prompts._texts("v2")["mark_unsupported_figure"]
    assert "{reason}" not in prompts._texts("v1")["mark_unsupported_figure"]


def test_v3_asks_for_the_cell_of_every_figure_and_marks_the_clerks_figures():
    # issue 27: the model names the cell it quotes, the verifier compares that cell
    system = prompts.system_prompt("v3")
    assert "[ID · Zeile · Spalte]" in system and "(laut Frage)" in system
    assert "[ID · Zeile · Spalte]" not in prompts.system_prompt("v2")
    assert "Fundstelle" in prompts.text("regenerate_figure_detail", "v3", detail="x")
