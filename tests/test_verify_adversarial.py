"""Adversarial drafts against the shipped knowledge base: each asserts the verifier's verdict.

Right and wrong drafts: wrong year column, wrong row, swapped values, figures from ids and
headers, daily vs monthly, units, number formats, ranges, the question's own figures,
exempt-looking sentences (headings, questions, gap sentences) and conflicts.
"""
from __future__ import annotations

import pytest
from kb_context import kb_context

from pv_agent.engine.answer.verification import verify

VAB = "pv-ab-01"
HBGL = "pv-bg-02"
DB = "pv-dg-01"
SECHSTEL = "pv-sz-03"
ABF = "pv-abf-01"
UES = ("pv-ues-03", "pv-ues-02")

# (blocks, question, draft, passes, reason of the first unsupported figure or None)
CASES = [
    # -- the cases of the issue -------------------------------------------------------------
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 804 € [pv-ab-01].", False, "row"),
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 487 € [pv-ab-01].", False, "year"),
    ((HBGL,), "", "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 231 € [pv-bg-02].", False, "period"),
    ((DB,), "", "Beträgt die Monats-Bemessungsgrundlage höchstens 1.095 €, werden 1.460 € abgezogen [pv-dg-01].", False, "bound"),
    ((SECHSTEL,), "", "Die nächsten 24.380 € werden mit 27 % besteuert, die nächsten 25.000 € mit 6 % [pv-sz-03].", False, "row"),
    ((ABF,), "", "Nach 25 Dienstjahren stehen 9 Monatsentgelte zu [pv-abf-01].", False, "row"),
    ((VAB,), "", "Zum Pendlereuro enthält die Wissensbasis keine Aussage, er beträgt 2 € pro km [pv-ab-01].", False, "not_in_block"),
    ((VAB,), "", "## VAB 2026: 999 €\nDer Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01].", False, "not_in_block"),
    ((VAB,), "", "Beträgt der VAB 2026 wirklich 512 €? Er beträgt 2026 jährlich 496 € [pv-ab-01].", False, "not_in_block"),
    (UES, "", "2026 sind Zuschläge für 10 Überstunden im Monat bis höchstens 120 € steuerfrei [pv-ues-03]. "
              "Siehe auch [pv-ues-02].", False, None),
    ((ABF,), "Wie viel Abfertigung alt nach 25 Dienstjahren?",
     "Nach 25 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01].", True, None),
    ((DB,), "Mein Mitarbeiter hat 1.300 € Bemessungsgrundlage im Monat. Wird der DB-Freibetrag abgezogen?",
     "Bei 1.300 € Bemessungsgrundlage werden 1.095 € abgezogen, weil die Monats-Bemessungsgrundlage höchstens "
     "1.460 € beträgt [pv-dg-01].", True, None),
    # -- the question's figures are given only in the role the question gave them -----------
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Bei 1.300 € Bemessungsgrundlage beträgt der DB 3,7 % [pv-dg-01].", True, None),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Bei 1.300 € beträgt der DB 3,7 % [pv-dg-01].", True, None),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Bei einer monatlichen Bemessungsgrundlage von 1.300 € fällt DB von 3,7 % an [pv-dg-01].", True, None),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Der Freibetrag beträgt 1.300 € [pv-dg-01].", False, "not_in_block"),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Der DB beträgt 3,7 %, der Freibetrag 1.300 € [pv-dg-01].", False, "not_in_block"),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Die Monats-Bemessungsgrundlage ist 1.300 €, der Freibetrag ist 1.300 € [pv-dg-01].", False, "not_in_block"),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Der Freibetrag wird bei 1.300 € Bemessungsgrundlage nicht abgezogen, der DB beträgt 3,7 % [pv-dg-01].",
     True, None),
    ((DB,), "Wir rechnen mit 4,5 % Kommunalsteuer, wie viel DB kommt dazu?",
     "Neben 4,5 % Kommunalsteuer fällt DB von 3,7 % an [pv-dg-01].", True, None),
    ((DB,), "Wir rechnen mit 4,5 % Kommunalsteuer, wie viel DB kommt dazu?",
     "Der DB beträgt 4,5 % [pv-dg-01].", False, "not_in_block"),
    ((DB,), "Bei 1.300 € Bemessungsgrundlage, wie viel DB?",
     "Der Zuschlag zum DB beträgt 1.300 € [pv-dg-01].", False, "not_in_block"),
    # -- VAB: year columns, Zuschlag row, formats --------------------------------------------
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01].", True, None),
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2025 jährlich 487 € [pv-ab-01].", True, None),
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2025 jährlich 496 € [pv-ab-01].", False, "year"),
    ((VAB,), "", "Der VAB 2026 beträgt 496,00 EUR [pv-ab-01].", True, None),
    ((VAB,), "", "Der VAB 2026 beträgt EUR 496 [pv-ab-01].", True, None),
    ((VAB,), "", "Der VAB 2026 beträgt 469 € [pv-ab-01].", False, "not_in_block"),
    ((VAB,), "", "Der VAB betrug 2025 jährlich 487 € (Stand: 2026-01) [pv-ab-01].", True, None),
    ((VAB,), "", "Der VAB 2026 beträgt **496 €** pro Jahr [pv-ab-01].", True, None),
    ((VAB,), "", "Der VAB 2026 beträgt 496 Euro [pv-ab-01].", True, None),
    ((VAB,), "", "Der VAB 2026 beträgt 496 % [pv-ab-01].", False, "not_in_block"),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 2026 804 € [pv-ab-01].", True, None),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 2025 790 € [pv-ab-01].", True, None),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 2026 790 € [pv-ab-01].", False, "year"),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 2026 496 € [pv-ab-01].", False, "row"),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 790 € (2025), 804 € (2026) [pv-ab-01].", True, None),
    ((VAB,), "", "Der Zuschlag zum VAB beträgt 804 € (2025), 790 € (2026) [pv-ab-01].", False, "year"),
    ((VAB,), "", "2025 waren es 487 €, 2026 sind es 496 € [pv-ab-01].", True, None),
    ((VAB,), "", "2025 waren es 496 €, 2026 sind es 487 € [pv-ab-01].", False, "year"),
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 €.", False, "other_block"),
    ((VAB,), "", "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-02].", False, None),
    ((VAB,), "", "Der Eintrag pv-ab-01 nennt für 2026 den Betrag von 496 € [pv-ab-01].", True, None),
    ((VAB,), "", "Laut [pv-ab-01] beträgt der VAB 1 €.", False, "not_in_block"),
    ((VAB,), "", "Der VAB ist eine Steuergutschrift von 1.988 € nach EStG [pv-ab-01].", False, "not_in_block"),
    ((VAB,), "", "Die Inflationsanpassung 2026 beträgt 1,733 % [pv-ab-01].", False, "not_in_block"),
    # -- HBGL: daily vs monthly, formats, refuted figure ---------------------------------
    ((HBGL,), "", "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 6.930 € und täglich 231 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6930,00 EUR monatlich [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6 930 € pro Monat [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6930 € im Monat [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6.930,00 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt täglich 6.930 € [pv-bg-02].", False, "period"),
    ((HBGL,), "", "Die HBGL 2026 beträgt täglich 231 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt täglich 215 € [pv-bg-02].", False, "year"),
    ((HBGL,), "", "Die HBGL 2025 betrug monatlich 6.450 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2025 betrug monatlich 6.930 € [pv-bg-02].", False, "year"),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6.060 € [pv-bg-02].", False, "refuted"),
    ((HBGL,), "", "Der in einer Code-Quelle geführte Wert von 6.060 € ist falsch [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt 6,930 % [pv-bg-02].", False, "not_in_block"),
    ((HBGL,), "", "Die HBGL 2026 beträgt monatlich 6.930 € [pv-bg-02]. Täglich sind es 231 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die HBGL 2026 beträgt monatlich 6.930 € [pv-bg-02]; täglich sind es 215 € [pv-bg-02].", False, "year"),
    ((HBGL,), "", "Die Sonderzahlungs-HBGL 2026 beträgt jährlich 13.860 € [pv-bg-02].", True, None),
    ((HBGL,), "", "Die Sonderzahlungs-HBGL 2026 beträgt monatlich 13.860 € [pv-bg-02].", False, "period"),
    ((HBGL,), "", "Die HBGL stieg von 6.450 € auf 6.930 € monatlich [pv-bg-02].", True, None),
    ((HBGL,), "", "| HBGL | 2026 |\n|---|---|\n| monatlich | 6.930 € |\n| täglich | 231 € |\n\nQuelle: [pv-bg-02]", True, None),
    ((HBGL,), "", "| HBGL | 2026 |\n|---|---|\n| monatlich | 6.930 € |\n| täglich | 7.777 € |\n\nQuelle: [pv-bg-02]", False, "not_in_block"),
    ((HBGL,), "", "- monatlich: 6.930 €\n- täglich: 231 €\n\nDas sind die Werte 2026 [pv-bg-02].", False, None),
    ((HBGL,), "", "Die Werte 2026 [pv-bg-02]:\n- monatlich: 6.930 €\n- täglich: 231 €", True, None),
    ((HBGL,), "", "Die Werte 2026 [pv-bg-02]:\n- monatlich: 231 €\n- täglich: 6.930 €", False, "period"),
    # -- DB Freibetrag: swapped roles, bounds ------------------------------------------------
    ((DB,), "", "Beträgt die Monats-Bemessungsgrundlage höchstens 1.460 €, werden 1.095 € abgezogen [pv-dg-01].", True, None),
    ((DB,), "", "Bis zu einer Bemessungsgrundlage von 1.460 € im Monat werden 1.095 € abgezogen [pv-dg-01].", True, None),
    ((DB,), "", "Der Freibetrag beträgt höchstens 1.460 € [pv-dg-01].", True, None),
    ((DB,), "", "Der DB beträgt 2025 3,7 % [pv-dg-01].", True, None),
    ((DB,), "", "Der DB beträgt 2025 3,9 % [pv-dg-01].", False, "year"),
    ((DB,), "", "Der DB beträgt 2025 3.7 % [pv-dg-01].", True, None),
    ((DB,), "", "Der DB beträgt 2025 3,7% der Beitragsgrundlage [pv-dg-01].", True, None),
    ((DB,), "", "Der DB beträgt 2025 3,7 Prozent [pv-dg-01].", True, None),
    ((DB,), "", "Der DB beträgt 2025 37 % [pv-dg-01].", False, "not_in_block"),
    ((DB,), "", "Der DB beträgt 2023/2024 3,9 % [pv-dg-01].", True, None),
    # -- Sechstel: bands -----------------------------------------------------------------------
    ((SECHSTEL,), "", "Die nächsten 24.380 € werden mit 6 % besteuert, die nächsten 25.000 € mit 27 % [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die ersten 620 € sind mit 0 % steuerfrei [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die ersten 620 € werden mit 6 % besteuert [pv-sz-03].", False, "row"),
    ((SECHSTEL,), "", "Die nächsten 33.333 € werden mit 35,75 % besteuert [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die nächsten 33.333 € werden mit 27 % besteuert [pv-sz-03].", False, "row"),
    ((SECHSTEL,), "", "Über 83.333 € gilt der Tarif [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die Stufen sind 0 %, 6 %, 27 % und 35,75 % [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die Stufen sind 0 %, 6 %, 27 % und 36,75 % [pv-sz-03].", False, "not_in_block"),
    ((SECHSTEL,), "", "Bei Sonderzahlungen von 25.000 € bis 50.000 € gilt 27 % [pv-sz-03].", False, None),
    ((SECHSTEL,), "", "Die Freigrenze beträgt 2025 2.570 € [pv-sz-03].", True, None),
    ((SECHSTEL,), "", "Die Freigrenze beträgt 2026 2.570 € [pv-sz-03].", False, "year"),
    # -- Abfertigung: counts with any noun, ranges ---------------------------------------
    ((ABF,), "", "Nach 25 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01].", True, None),
    ((ABF,), "", "Nach 20 Dienstjahren stehen 9 Monatsentgelte zu [pv-abf-01].", True, None),
    ((ABF,), "", "Nach 20 Jahren stehen 12 Monatsentgelte zu [pv-abf-01].", False, "row"),
    ((ABF,), "", "Nach 10 Jahren stehen 4 Monatsentgelte zu [pv-abf-01].", True, None),
    ((ABF,), "", "Nach 10 Jahren stehen 5 Monatsentgelte zu [pv-abf-01].", False, None),
    ((ABF,), "", "Nach 12 Jahren stehen 4 Monatsentgelte zu [pv-abf-01].", False, None),
    ((ABF,), "", "Die Abfertigung alt beträgt 2 bis 12 Monatsentgelte [pv-abf-01].", True, None),
    ((ABF,), "", "Die Abfertigung alt beträgt 2 bis 14 Monatsentgelte [pv-abf-01].", False, "not_in_block"),
    ((ABF,), "", "Die Abfertigung alt beträgt 1 bis 12 Monatsentgelte [pv-abf-01].", False, "not_in_block"),
    ((ABF,), "", "Sie gilt für Dienstverhältnisse, die vor dem 1.1.2003 begonnen haben [pv-abf-01].", True, None),
    ((ABF,), "", "Sie gilt für Dienstverhältnisse, die vor dem 1.1.2004 begonnen haben [pv-abf-01].", False, "not_in_block"),
    ((ABF,), "", "Ab dem 7. Dienstjahr zählt die Stufe nach 5 Jahren mit 3 Monatsentgelten [pv-abf-01].", True, None),
    ((ABF,), "", "Nach 25 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01]. Das gilt nach § 23 Abs 1 Z 3 AngG.", True, None),
    ((ABF,), "Was bekommt jemand nach 30 Dienstjahren?",
     "Nach 30 Dienstjahren nennt die Wissensbasis 12 Monatsentgelte (Stufe nach 25 Jahren) [pv-abf-01].", True, None),
    ((ABF,), "", "Nach 30 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01].", False, "not_in_block"),
    # -- Sachbezug: voll / halb columns ------------------------------------------------------
    (("pv-sb-06",), "", "Beim vollen Wert beträgt der Sachbezug 2 %, höchstens 960 € [pv-sb-06].", True, None),
    (("pv-sb-06",), "", "Beim halben Wert beträgt der Sachbezug 1 %, höchstens 480 € [pv-sb-06].", True, None),
    (("pv-sb-06",), "", "Beim halben Wert beträgt der Sachbezug höchstens 960 € [pv-sb-06].", False, "share"),
    # -- Überstunden conflict ---------------------------------------------------------------
    (UES, "", "⚠ Laut Novelle (maßgeblich) sind 2026 Zuschläge für 15 Überstunden bis 170 € steuerfrei [⚠ pv-ues-02]. "
              "⚠ Die Angabe 10 Überstunden/120 € ist überholt [⚠ pv-ues-03].", True, None),
    (UES, "", "2026 sind Zuschläge für 15 Überstunden bis 170 € steuerfrei [pv-ues-02]. "
              "Die Angabe 10 Überstunden/120 € ist überholt [pv-ues-03].", False, None),
    (UES, "", "⚠ 2026 sind Zuschläge für 15 Überstunden bis 170 € steuerfrei [⚠ pv-ues-02]. "
              "⚠ Eine Seite nennt 10 Überstunden und 120 € [⚠ pv-ues-03].", False, None),
    (UES, "", "⚠ 2026 (maßgeblich) sind Zuschläge für 15 Überstunden bis 170 € steuerfrei [⚠ pv-ues-02].", False, None),
    (UES, "", "## ⚠ Widerspruch [pv-ues-03]\n⚠ 2026 (maßgeblich) sind 15 Überstunden bis 170 € steuerfrei [⚠ pv-ues-02].", False, None),
    (UES, "", "2026 sind 10 Überstunden im Monat steuerfrei [pv-ues-02].", False, "refuted"),
    # conservative by design: citing one side of a flagged conflict without the other fails,
    # even for a figure outside the disputed year
    (UES, "", "2025 waren 18 Überstunden bis 200 € im Monat steuerfrei [pv-ues-02].", False, None),
    (UES, "", "⚠ 2025 waren 18 Überstunden bis 200 € im Monat steuerfrei [⚠ pv-ues-02]; ⚠ für 2026 ist die Angabe "
              "10 Überstunden/120 € überholt [⚠ pv-ues-03].", True, None),
    (UES, "", "2025 waren 18 Überstunden bis 170 € im Monat steuerfrei [pv-ues-02].", False, None),
]


@pytest.mark.parametrize("blocks, question, draft, passes, reason", CASES,
                         ids=[f"{n:03d}" for n in range(len(CASES))])
def test_adversarial_draft(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.flags()
    if reason:
        assert result.unsupported_figures and result.unsupported_figures[0].reason == reason, result.flags()


def test_there_are_at_least_80_drafts_right_and_wrong():
    assert len(CASES) >= 80
    assert 25 <= sum(1 for c in CASES if c[3]) <= len(CASES) - 25
