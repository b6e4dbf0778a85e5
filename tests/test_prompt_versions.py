"""Prompt versions: wording changes get a new version; older versions stay loadable so an
answer's recorded prompt_version still names the exact texts it was produced with."""
from __future__ import annotations

from pv_agent.engine.answer import prompts


def test_current_version_is_v2_and_v1_still_loads():
    assert prompts.PROMPT_VERSION == "v2"
    assert prompts.system_prompt("v1") and prompts.system_prompt("v2")
    assert prompts.text("refusal", "v1") and prompts.text("refusal", "v2")


def test_v2_holds_the_wording_v1_did_not_have():
    # round-one wording: the state line says what was checked, marks carry a reason
    assert "checked_figures" in prompts._texts("v2")
    assert "checked_figures" not in prompts._texts("v1")
    assert "{reason}" in prompts._texts("v2")["mark_unsupported_figure"]
    assert "{reason}" not in prompts._texts("v1")["mark_unsupported_figure"]
