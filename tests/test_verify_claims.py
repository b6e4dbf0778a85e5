"""Support state per claim sentence (quote / paraphrase / unsupported) and the shared markdown parse."""
from __future__ import annotations

import numpy as np
from kb_context import kb_context

from pv_agent.engine.kb import markdown as md
from pv_agent.engine.answer.verification import mark_unsupported, verify

VAB = "pv-ab-01"


def states(result):
    return [c.state for c in result.claims]


def test_a_sentence_of_the_block_is_a_quote():
    r = verify("Der VAB ist vom Pendlerpauschale und vom Pendlereuro zu unterscheiden [pv-ab-01].", kb_context(VAB))
    assert states(r) == ["quote"] and r.ok


def test_a_sentence_about_something_else_is_unsupported_and_marked():
    draft = ("Gewerkschaften erhalten diesen Betrag quartalsweise überwiesen [pv-ab-01]. "
             "Arbeitnehmer müssen ihn jedes Quartal beim Finanzamt beantragen [pv-ab-01].")
    r = verify(draft, kb_context(VAB))
    assert states(r) == ["unsupported", "unsupported"]
    assert r.claims_mostly_unsupported and not r.ok
    marked = mark_unsupported(draft, r, figure_mark="{figure}!", citation_mark="[{id}?]", claim_mark=" ⟨X⟩")
    assert marked.count("⟨X⟩") == 2


def test_one_unsupported_sentence_among_supported_ones_is_marked_but_does_not_fail_the_answer():
    draft = ("Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01]. "
             "Der VAB ist vom Pendlerpauschale und vom Pendlereuro zu unterscheiden [pv-ab-01]. "
             "Arbeitnehmer müssen ihn jedes Quartal beim Finanzamt beantragen [pv-ab-01].")
    r = verify(draft, kb_context(VAB))
    assert states(r)[1:] == ["quote", "unsupported"]
    assert r.claims[0].figures_backed and r.ok


def test_a_claim_without_any_cited_block_is_unsupported():
    r = verify("Der Verkehrsabsetzbetrag steht allen Arbeitnehmern zu.", kb_context(VAB))
    assert states(r) == ["unsupported"] and r.missing_citations


def test_the_similarity_function_decides_paraphrases_when_given():
    draft = "Arbeitnehmer müssen ihn jedes Quartal beim Finanzamt beantragen [pv-ab-01]."
    calls = []

    def same(texts):
        calls.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0  # every text the same direction

    def orthogonal(texts):
        out = np.zeros((len(texts), len(texts)), dtype=np.float32)
        np.fill_diagonal(out, 1.0)
        return out

    assert verify(draft, kb_context(VAB), similarity=same).claims[0].state == "paraphrase"
    assert calls and calls[0] > 1
    check = verify(draft, kb_context(VAB), similarity=orthogonal).claims[0]
    assert (check.state, check.measure) == ("unsupported", "embedding")


def test_headings_questions_and_gap_sentences_without_figures_are_no_claims():
    draft = "## Verkehrsabsetzbetrag\nWas gilt? Zum Pendlereuro enthält die Wissensbasis keine Aussage."
    assert verify(draft, kb_context(VAB)).claims == []


def test_claims_and_what_was_checked_are_in_the_flags():
    r = verify("Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01].", kb_context(VAB),
               question="Wie hoch ist der VAB 2026?")
    flags = r.flags()
    assert flags["claims"][0]["state"] in ("quote", "paraphrase")
    assert flags["checked"]["figures_checked"] == 1 and flags["checked"]["figures_given"] == 1  # 2026 is given


# -- the shared markdown parse --------------------------------------------------------------
def test_sections_ignore_headings_inside_code_fences():
    body = "## Zusammenfassung\nText\n```\n## kein Abschnitt\n```\n## Kernwerte & Fristen\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert list(md.sections(body)) == ["Zusammenfassung", "Kernwerte & Fristen"]
    assert "## kein Abschnitt" in md.section_text(body, "Zusammenfassung")


def test_a_line_of_dashes_under_text_is_no_section():
    assert md.h2_headings("Text\n---\n## Echt\nx") == [(2, "Echt")]


def test_blocks_tables_items_and_sentences():
    nodes = md.parse("Absatz eins. Satz zwei z. B. mit Abs. 3 am 1. Jänner.\n\n- Punkt: 5 €\n  - innen\n\n"
                     "| Wert | 2026 |\n|---|---|\n| HBGL | 6.930 € |")
    assert [n.kind for n in nodes] == ["paragraph", "item", "item", "table"]
    assert nodes[3].header == ["Wert", "2026"] and nodes[3].rows == [["HBGL", "6.930 €"]]
    assert md.sentences(nodes[0].text) == ["Absatz eins.", "Satz zwei z. B. mit Abs. 3 am 1. Jänner."]


def test_the_answer_is_split_by_the_same_parse_code_fences_included():
    from pv_agent.engine.answer.verification import split_units

    units = split_units("Der VAB 2026 beträgt 496 € [pv-ab-01].\n\n```\n## kein Titel 777 €\n```\n"
                        "| Jahr | VAB |\n|---|---|\n| 2026 | 496 € |\n\nQuelle: [pv-ab-01]")
    assert [u.kind for u in units] == ["prose", "code", "row", "row", "prose"]
    assert units[3].citations == ["pv-ab-01"]  # the table takes the "Quelle:" line below it
    result = verify("Der VAB 2026 beträgt 496 € [pv-ab-01].\n\n```\nVAB 777 €\n```", kb_context(VAB))
    assert [i.figure for i in result.unsupported_figures] == ["777 €"]  # no free pass inside code
