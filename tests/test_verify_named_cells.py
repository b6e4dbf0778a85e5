"""Figures whose citation names their cell (system prompt v3, rule 4; named_cells.py), on the
shipped knowledge base: the named cell is compared, a name that finds no cell falls back to the
sentence's words, the clerk's figures are marked "(laut Frage)"."""
from __future__ import annotations

import pytest
from kb_context import kb_context

from pv_agent.engine.answer.verification import citations_in, verify
from pv_agent.engine.answer.verification.units import cited_cells

GFB = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"

CASES = [
    # (blocks, question, draft, passes, reason of the first unsupported figure or None)
    (("pv-gfb-02",), GFB,
     "Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € (Stand 2026-01) [pv-gfb-02 · Betrag · 2026].", True, None),
    # the other cell's value under the right cell's name
    (("pv-gfb-02",), GFB,
     "Die Geringfügigkeitsgrenze 2026 beträgt 826,65 € (Stand 2026-01) [pv-gfb-02 · Betrag · 2026].", False, "cell"),
    # the name alone decides where the sentence's words say little: "die 826,65 €" of the DG-Abgabe
    (("pv-gfb-02",), GFB,
     "Daneben bleiben die 826,65 € (Stand 2026-01) [pv-gfb-02 · Grenzwert pauschale DG-Abgabe 2026] unverändert.",
     True, None),
    # a name the block does not know ("Tabelle oben") falls back to the sentence's words
    (("pv-gfb-02",), GFB,
     "Die Geringfügigkeitsgrenze 2026 beträgt 826,65 € monatlich (Stand 2026-01) [pv-gfb-02 · Tabelle oben].",
     False, "cell"),
    # a row named by its own figure: "40 % · 2026"
    (("pv-lst-02",), "Bis wohin geht 2026 die 40-%-Stufe?",
     "2026 reicht die Stufe bis 70.365 € (Stand 2026-01) [pv-lst-02 · 40 % · 2026].", True, None),
    (("pv-lst-02",), "Bis wohin geht 2026 die 40-%-Stufe?",
     "2026 reicht die Stufe bis 69.166 € (Stand 2026-01) [pv-lst-02 · 40 % · 2026].", False, "cell"),
    # a name writing the row's figures names that row: 21.614 € is the normal PAB's
    (("pv-ab-03",), "Einschleifung erhöhter PAB 2026?",
     "Der erhöhte PAB sinkt ab 21.614 € (Stand 2026-01) [pv-ab-03 · Einschleifung 2026: zwischen 24.616 € und "
     "31.494 €].", False, None),
    # two figures naming one cell of two values keep the block's order
    (("pv-ab-03",), "Einschleifung erhöhter PAB 2026?",
     "Der erhöhte PAB sinkt 2026 zwischen 24.616 € (Stand 2026-01) [pv-ab-03 · Einschleifung 2026 · erhöhter PAB] "
     "und 31.494 € (Stand 2026-01) [pv-ab-03 · Einschleifung 2026 · erhöhter PAB] auf 0 €.", True, None),
    (("pv-ab-03",), "Einschleifung erhöhter PAB 2026?",
     "Der erhöhte PAB sinkt 2026 zwischen 31.494 € (Stand 2026-01) [pv-ab-03 · Einschleifung 2026 · erhöhter PAB] "
     "und 24.616 € (Stand 2026-01) [pv-ab-03 · Einschleifung 2026 · erhöhter PAB] auf 0 €.", False, "row"),
    # the clerk's figure, marked: needs no source – but must be the question's
    (("pv-zs-01",), "Wir zahlen 600 € Zukunftssicherung im Jahr – alles steuerfrei?",
     "Von den 600 € (laut Frage) sind nur 300 € (Stand 2024-02) [pv-zs-01 · Freibetrag] steuerfrei.", True, None),
    (("pv-zs-01",), "Wir zahlen 600 € Zukunftssicherung im Jahr – alles steuerfrei?",
     "Von den 650 € (laut Frage) sind nur 300 € (Stand 2024-02) [pv-zs-01 · Freibetrag] steuerfrei.", False,
     "not_in_question"),
    # … also where a block holds that value: the answer says the clerk wrote it
    (("pv-zs-01",), "Wir zahlen 600 € Zukunftssicherung im Jahr – alles steuerfrei?",
     "Von den 300 € (laut Frage) ist alles steuerfrei [pv-zs-01].", False, "not_in_question"),
    # an English question's "€2,500," (comma after the number) is the answer's "2.500 € (laut Frage)"
    (("pv-zs-01",), "We pay list price €2,500, so a discount of €750 – is the premium of €300 tax-free?",
     "Neben den 2.500 € (laut Frage) gilt für die Prämie der Freibetrag von 300 € (Stand 2024-02) "
     "[pv-zs-01 · Freibetrag].", True, None),
    # a year in a sentence saying what the blocks leave open: one the question or a block names
    (("pv-zs-01",), "Die Prämie 2025 wurde erst im Jänner 2026 abgebucht – zählt sie für 2025?",
     "Ob die im Jänner 2026 (laut Frage) abgebuchte Prämie noch dem Jahr 2025 zuzurechnen ist, sagen die Blöcke "
     "nicht [pv-zs-01].", True, None),
    (("pv-zs-01",), "Die Prämie 2025 wurde erst im Jänner 2026 abgebucht – zählt sie für 2025?",
     "Ob die im Jänner 2026 (laut Frage) abgebuchte Prämie noch dem Jahr 2029 zuzurechnen ist, sagen die Blöcke "
     "nicht [pv-zs-01].", False, "not_in_block"),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", CASES)
def test_named_cell(blocks, question, draft, passes, reason):
    v = verify(draft, kb_context(*blocks), question=question)
    issues = [(i.figure, i.reason, i.detail) for i in v.unsupported_figures]
    assert v.ok == passes, issues
    if reason:
        assert issues and issues[0][1] == reason, issues


def test_a_wrong_cell_says_which_cell_the_name_gives():
    v = verify("Die Geringfügigkeitsgrenze 2026 beträgt 826,65 € (Stand 2026-01) [pv-gfb-02 · Betrag · 2026].",
               kb_context("pv-gfb-02"), question=GFB)
    [issue] = v.unsupported_figures
    assert issue.detail == "[pv-gfb-02] nennt für „Betrag · 2026“ 551,10 €; 826,65 € steht dort nicht"


def test_a_citation_may_name_a_cell_and_still_counts_as_a_citation():
    text = ("551,10 € [pv-gfb-02 · Geringfügigkeitsgrenze monatlich · 2026] und [pv-a-01, ⚠ pv-b-02] "
            "[⚠ pv-sz-01 · Freigrenze; pv-sz-04 · Freigrenze 2025] [Link](x)")
    assert citations_in(text) == ["pv-gfb-02", "pv-a-01", "pv-b-02", "pv-sz-01", "pv-sz-04"]
    assert [(cid, cell) for _, cid, cell in cited_cells(text)] == [
        ("pv-gfb-02", "Geringfügigkeitsgrenze monatlich · 2026"), ("pv-sz-01", "Freigrenze"),
        ("pv-sz-04", "Freigrenze 2025")]


def test_a_table_header_row_states_nothing():
    draft = ("| Reisedauer | steuerfreies Tagesgeld |\n|---|---|\n"
             "| mehr als 11 Stunden | 30,00 € (Stand 2025-01) [pv-rk-06 · Voller Tagessatz Inland ab 2025] |")
    v = verify(draft, kb_context("pv-rk-06"), question="Tagesgeld bei 12 Stunden?")
    assert not [c for c in v.claims if c.sentence.startswith("| Reisedauer")]
