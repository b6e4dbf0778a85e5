"""The rules of issue 27 on the shipped knowledge base: the cell a sentence is about, document
structure, conflict sides, question figures in any language, limit words, opposite senses."""
from __future__ import annotations

import pytest
from kb_context import kb_context

from pv_agent.engine.answer.verification import find_conflicts, verify
from pv_agent.engine import figures as nb

# (blocks, question, draft, passes, reason of the first unsupported figure or None)
WRONG_CELL = [
    # the four escapes of the issue: a value of the cited block, but of another cell
    (("pv-gfb-02",), "Wie hoch ist die Geringfügigkeitsgrenze 2026?",
     "Die Geringfügigkeitsgrenze 2026 beträgt **826,65 €** monatlich (Stand 2026-01) [pv-gfb-02].", False, "cell"),
    (("pv-bg-07",), "HBGL 2026?",
     "Für 2026 gilt die HBGL von **12.900 €** monatlich (Stand 2026-01) [pv-bg-07].", False, "cell"),
    (("pv-lst-01",), "VAB 2025?",
     "Laut Tarif gilt der Verkehrsabsetzbetrag 2025 mit **13.308 €** (Stand 2025-01) [pv-lst-01].", False, "cell"),
    (("pv-sb-04",), "Sachbezug E-Auto?",
     "Bei 0 g/km (E-Auto) ist der Sachbezug **720 €** (Stand 2025-01) [pv-sb-04].", False, "cell"),
    # … and the right cells pass
    (("pv-gfb-02",), "Wie hoch ist die Geringfügigkeitsgrenze 2026?",
     "Die Geringfügigkeitsgrenze 2026 beträgt **551,10 €** monatlich (Stand 2026-01) [pv-gfb-02].", True, None),
    (("pv-gfb-02",), "Wie hoch ist die Geringfügigkeitsgrenze 2026?",
     "Der Grenzwert der pauschalen DG-Abgabe bleibt 2026 bei 826,65 € [pv-gfb-02].", True, None),
    (("pv-bg-07",), "HBGL 2026?",
     "Für 2026 gilt die HBGL von 6.930 € monatlich (Stand 2026-01) [pv-bg-07].", True, None),
    (("pv-sb-04",), "Sachbezug E-Auto?",
     "Bei 0 g/km (E-Auto) ist der Sachbezug 0 € (Stand 2025-01) [pv-sb-04].", True, None),
]

STRUCTURE = [
    # a bold line heads the list under it: its figure is backed by the items' citations …
    (("pv-gfb-02",), "", "**Geringfügigkeitsgrenze 2026: 551,10 € monatlich**\n\n"
     "- Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € monatlich [pv-gfb-02].", True, None),
    # … and a wrong figure in it still fails
    (("pv-gfb-02",), "", "**Geringfügigkeitsgrenze 2026: 515,10 € monatlich**\n\n"
     "- Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € monatlich [pv-gfb-02].", False, "not_in_block"),
    # an answer table is read cell by cell against its row and column
    (("pv-bg-02",), "", "| HBGL 2026 | Betrag |\n|---|---|\n| monatlich | 6.930 € |\n| täglich | 231 € |\n\n"
     "Quelle: [pv-bg-02]", True, None),
    (("pv-bg-02",), "", "| HBGL 2026 | Betrag |\n|---|---|\n| monatlich | 231 € |\n| täglich | 6.930 € |\n\n"
     "Quelle: [pv-bg-02]", False, "period"),
    # a Rückfrage repeats a figure of a cited entry without a citation of its own
    (("pv-gfb-02",), "", "Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € monatlich [pv-gfb-02].\n\n"
     "Rückfrage: Verdient die Mitarbeiterin regelmäßig mehr als 551,10 € im Monat?", True, None),
]

LANGUAGE_AND_BOUNDS = [
    # "3 years" in an English question is given as "3 Dienstjahre" in the German answer
    (("pv-abf-01",), "How much Abfertigung alt after 3 years of service?",
     "Nach 3 Dienstjahren stehen 2 Monatsentgelte zu [pv-abf-01].", True, None),
    # "Ab Beitragsbeginn" does not make the rate a lower bound
    (("pv-bv-01",), "", "Ab Beitragsbeginn beträgt der BV-Beitrag 1,53 % [pv-bv-01].", True, None),
]


# The rules of the second round (docs/verification.md §2a, §4–§6), each with its wrong twin.
SECOND_ROUND = [
    # the answer's own "Label:" carries to its clauses; DN / DG / gesamt are columns of their own
    (("pv-sv-08",), "", "- AV: DN 2,95 %, DG 2,95 % (Stand 2025-01) [pv-sv-08]", True, None),
    (("pv-sv-08",), "", "- KV: DN 3,87 %, DG 3,78 % (Stand 2025-01) [pv-sv-08]", True, None),
    (("pv-sv-08",), "", "- KV: DN 3,87 %, DG 7,65 % (Stand 2025-01) [pv-sv-08]", False, "side"),
    (("pv-sv-08",), "", "- KV: DN 3,78 %, DG 3,87 % (Stand 2025-01) [pv-sv-08]", False, None),
    # a counted name stands next to no figure; a name in a block backs no value
    (("pv-url-02",), "", "Nach 25 Dienstjahren steigt der Urlaubsanspruch von 30 auf 36 Werktage, bei einer "
     "5-Tage-Woche von 25 auf 30 Arbeitstage (Stand 2025-01) [pv-url-02].", True, None),
    # "überholt" is said of its own clause
    (("pv-sz-07", "pv-sz-06"), "", "- ⚠ Ältere Werte nicht verwenden: 2.100 € ist überholt, für 2024 galt "
     "nachträglich 2.447 € (Stand 2024-01) [⚠ pv-sz-07].", True, None),
    (("pv-sz-07", "pv-sz-06"), "", "- ⚠ Ältere Werte nicht verwenden: 2.100 € ist überholt, für 2024 galt "
     "nachträglich 2.100 € (Stand 2024-01) [⚠ pv-sz-07].", False, None),
    # a paragraph calling its figure a Höchstbetrag makes it a limit
    (("pv-rk-01",), "", "Für Dienstreisen mit dem eigenen Pkw dürfen Sie seit 1.1.2025 höchstens 0,50 € je "
     "gefahrenem Kilometer (Stand 2025-10) steuerfrei ersetzen [pv-rk-01].", True, None),
    # a bare bold answer line restates the figure of its section that answers the question
    (("pv-sz-03",), "Mit welchem Satz wird der Teil über 25.000 versteuert?",
     "**27 %.** Im Sechstel gilt: erste 620 € 0 %, nächste 24.380 € 6 %, nächste 25.000 € 27 % "
     "(Stand 2025-01) [pv-sz-03].", True, None),
    (("pv-sz-03",), "Mit welchem Satz wird der Teil über 25.000 versteuert?",
     "**0 %.** Im Sechstel gilt: erste 620 € 0 %, nächste 24.380 € 6 %, nächste 25.000 € 27 % "
     "(Stand 2025-01) [pv-sz-03].", False, "ambiguous"),
    # a bare number of the question is given with the unit the answer adds
    (("pv-pf-02",), "Kind (8) ist krank – gibts noch was?",
     "Mit 8 Jahren liegt das Kind unter der Altersgrenze von 12 Jahren [pv-pf-02].", True, None),
]


@pytest.mark.parametrize("blocks, question, draft, passes, reason",
                         WRONG_CELL + STRUCTURE + LANGUAGE_AND_BOUNDS + SECOND_ROUND)
def test_rule(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.flags()
    if reason:
        assert result.unsupported_figures[0].reason == reason, result.flags()


def test_a_wrong_cell_says_what_the_entry_gives_for_it():
    result = verify("Die Geringfügigkeitsgrenze 2026 beträgt 826,65 € monatlich [pv-gfb-02].",
                    kb_context("pv-gfb-02"), question="Geringfügigkeitsgrenze 2026?")
    detail = result.unsupported_figures[0].detail
    assert "551,10 €" in detail and "Geringfügigkeitsgrenze" in detail and "DG-Abgabe" in detail


def test_an_entry_that_agrees_with_one_side_is_no_side():
    groups = find_conflicts(kb_context("pv-ues-02", "pv-ues-03", "pv-ues-08").blocks)
    assert [sorted(g.ids) for g in groups] == [["pv-ues-02", "pv-ues-03"]]
    # pv-ues-08 cited beside the maßgebliche side, without ⚠, is not a one-sided conflict answer
    draft = ("⚠ Laut Novelle (maßgeblich) sind 2026 Zuschläge für 15 Überstunden bis 170 € steuerfrei [⚠ pv-ues-02]. "
             "⚠ Die Angabe 10 Überstunden/120 € ist überholt [⚠ pv-ues-03]. "
             "Ab 2027 gelten 10 Überstunden und 120 € [pv-ues-08].")
    assert verify(draft, kb_context("pv-ues-02", "pv-ues-03", "pv-ues-08")).ok


def test_only_agreeing_entries_are_no_conflict():
    assert find_conflicts(kb_context("pv-ues-02", "pv-ues-08").blocks) == []


def test_the_opposite_sense_is_rejected():
    right = "Bei einem neuen Dienstverhältnis ist der erste Monat beitragsfrei [pv-bv-01]."
    wrong = "Bei einem neuen Dienstverhältnis ist der erste Monat beitragspflichtig [pv-bv-01]."
    negated = "Bei einem neuen Dienstverhältnis ist der erste Monat nicht beitragsfrei [pv-bv-01]."
    context = kb_context("pv-bv-01")
    assert verify(right, context).ok
    assert not verify(wrong, context).ok and not verify(negated, context).ok
    assert any(c.state == "contradicted" for c in verify(wrong, context).claims)


def test_figures_written_the_way_models_write_them():
    kinds = {f.text: f.kind for f in nb.extract("126 g/km, der 52-Wochen-Zeitraum, die 45-%-Stufe, 8 h, 3 years")}
    assert kinds == {"126 g/km": "count:g/km", "52-Wochen": "count:woch", "45-%": "percent",
                     "8 h": "count:stunde", "3 years": "count:jahr"}
    assert nb.same_unit("leut", "beschäftigt") and not nb.same_unit("tag", "beschäftigt")


# Found on the second report set (report2, tuning data since): each rule with a case it must
# pass and the wrong draft it must reject.
REPORT2_RULES = [
    # "Monteur 12 Überstunden" is a count, not "EUR 12": the clerk's 12 Überstunden are given
    (("pv-ues-02",), "Im Februar 2026 hatte ein Monteur 12 Überstunden – sind die Zuschläge steuerfrei?",
     "Die 12 Überstunden des Monteurs liegen innerhalb der 15 Überstunden im Monat (Stand 2026-01) [pv-ues-02].",
     True, None),
    # a column that says "keine abweichenden Sätze" holds the other year's values for its year …
    (("pv-sz-01",), "Steuersatz 13. Gehalt 2026?",
     "2026 gelten im Sechstel die ersten 620 € mit 0 %, die nächsten 24.380 € mit 6 % (Stand 2026-01) [pv-sz-01].",
     True, None),
    # … but a value of another row stays wrong
    (("pv-sz-01",), "Steuersatz 13. Gehalt 2026?",
     "2026 gelten im Sechstel die ersten 620 € mit 0 %, die nächsten 24.380 € mit 27 % (Stand 2026-01) [pv-sz-01].",
     False, None),
    # one value, one period: the table's "14,53 €" is the text's "14,53 € monatlich"
    (("pv-zw-05",), "Parkplatz Sachbezug?",
     "Für den Parkplatz in der Kurzparkzone sind 14,53 € monatlich anzusetzen (Stand 2026-01) [pv-zw-05].", True, None),
    (("pv-zw-05",), "Parkplatz Sachbezug?",
     "Für den Parkplatz in der Kurzparkzone sind 14,53 € jährlich anzusetzen (Stand 2026-01) [pv-zw-05].",
     False, "period"),
    # "old → new" reads the year columns left to right
    (("pv-lst-05",), "VAB 2026?", "- Verkehrsabsetzbetrag: 487 € → 496 € (Stand 2026-01) [pv-lst-05]", True, None),
    (("pv-lst-05",), "VAB 2026?", "- Verkehrsabsetzbetrag: 496 € → 487 € (Stand 2026-01) [pv-lst-05]", False, "year"),
    # an answer table's header row names columns: "20 bis 40 km" is a label of the cited table
    (("pv-pp-01",), "Kleines Pendlerpauschale 25 km?",
     "Das kleine Pendlerpauschale (Stand 2025-01) [pv-pp-01]:\n\n"
     "| 20 bis 40 km | monatlich | jährlich |\n|---|---|---|\n| kleines PP | 58 € | 696 € |", True, None),
    (("pv-pp-01",), "Kleines Pendlerpauschale 25 km?",
     "Das kleine Pendlerpauschale (Stand 2025-01) [pv-pp-01]:\n\n"
     "| 20 bis 45 km | monatlich | jährlich |\n|---|---|---|\n| kleines PP | 58 € | 696 € |", False, "not_in_block"),
    # an item of two sentences with a citation each: each sentence is backed by its own only
    (("pv-sz-01", "pv-bg-08"), "Weihnachtsgeld 2026 steuerfrei?",
     "- Das Jahressechstel entspricht 1/6 der laufenden Bezüge (Stand 2026-01) [pv-sz-01]. "
     "Die Freigrenze 2026 beträgt 2.615 € (Stand 2026-01) [pv-sz-01].", True, None),
    (("pv-sz-01", "pv-bg-08"), "Weihnachtsgeld 2026 steuerfrei?",
     "- Das Jahressechstel entspricht 1/6 der laufenden Bezüge (Stand 2026-01) [pv-sz-01]. "
     "Die Freigrenze 2026 beträgt 2.615 € (Stand 2026-01) [pv-bg-08].", False, None),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", REPORT2_RULES)
def test_report2_rule(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.unsupported_figures
    if reason:
        assert result.unsupported_figures[0].reason == reason


def test_eur_is_a_word_of_its_own():
    assert [f.kind for f in nb.extract("ein Monteur 12 Überstunden, EUR 12")] == ["count:überstund", "money"]


# Found on the third report set (report3, tuning data since the fourth round).
REPORT3_RULES = [
    # parts joined by ";" that each cite their own entry are backed by that entry alone
    (("pv-gfb-07", "pv-gfb-02"), "Ab wann DG-Abgabe?",
     "- Der Grenzwert ist 2026 826,65 € (Stand 2026-01) [pv-gfb-07]; die Geringfügigkeitsgrenze selbst "
     "liegt 2026 bei 551,10 € (Stand 2026-01) [pv-gfb-02].", True, None),
    (("pv-gfb-07", "pv-gfb-02"), "Ab wann DG-Abgabe?",
     "- Der Grenzwert ist 2026 826,65 € (Stand 2026-01) [pv-gfb-07]; die Geringfügigkeitsgrenze selbst "
     "liegt 2026 bei 826,65 € (Stand 2026-01) [pv-gfb-02].", False, "cell"),
    # a bold line with a citation of its own is a sentence backed by that citation
    (("pv-bv-02", "pv-sv-14"), "BV-Beitrag 2026?",
     "**Der BV-Beitrag beträgt 2026 1,53 % (Stand 2026-01) [pv-bv-02].**", True, None),
    (("pv-bv-02", "pv-sv-14"), "BV-Beitrag 2026?",
     "**Der BV-Beitrag beträgt 2026 1,53 % (Stand 2026-01) [pv-sv-14].**", False, None),
    # "mindestens A und höchstens B" with A above B: two figures swapped
    (("pv-neu-01",), "Teilpension?", "Voraussetzung ist eine Reduktion der Arbeitszeit um mindestens 25 % und "
     "höchstens 75 % (Stand 2026-01) [pv-neu-01].", True, None),
    (("pv-neu-01",), "Teilpension?", "Voraussetzung ist eine Reduktion der Arbeitszeit um mindestens 75 % und "
     "höchstens 25 % (Stand 2026-01) [pv-neu-01].", False, "row"),
    # a bare number after a counted figure counts the same unit: "…, mit Betreuungspflichten 16"
    (("pv-neu-02",), "Weiterbildungszeit?", "Die Weiterbildung muss mindestens 20 Wochenstunden umfassen, mit "
     "Betreuungspflichten mindestens 16 (Stand 2026-01) [pv-neu-02].", True, None),
    (("pv-neu-02",), "Weiterbildungszeit?", "Die Weiterbildung muss mindestens 20 Wochenstunden umfassen, mit "
     "Betreuungspflichten mindestens 12 (Stand 2026-01) [pv-neu-02].", False, None),
    # the outdated side reported as what a source once said: one of the values the block calls outdated
    (("pv-ues-02",), "Überstunden 2026?", "⚠ Eine Steuerberaterseite nannte für 2026 dagegen 10 Überstunden und "
     "120 € (Stand 2026-01) [pv-ues-02].", True, None),
    (("pv-ues-02",), "Überstunden 2026?", "⚠ Eine überholte Steuerberaterseite nannte für 2026 10 Überstunden und "
     "200 € (Stand 2026-01) [pv-ues-02].", False, None),
    # another compound of one head word is another quantity: "Tages-" is not "Wochenhöchstarbeitszeit"
    (("pv-az-02",), "Höchstarbeitszeit?", "Die Tageshöchstarbeitszeit inkl. Überstunden beträgt 12 Stunden "
     "(Stand 2018-09) [pv-az-02].", True, None),
    (("pv-az-02",), "Höchstarbeitszeit?", "Die Wochenhöchstarbeitszeit inkl. Überstunden beträgt 12 Stunden "
     "(Stand 2018-09) [pv-az-02].", False, None),
    # the clerk's figure in the clerk's words ("Vergleich über 10.000 €" → "die Vergleichssumme von 10.000 €")
    (("pv-end-05",), "Vergleich vor dem Arbeitsgericht über 10.000 € – wie versteuere ich die Vergleichssumme?",
     "Nach Abzug der SV-Beiträge bleibt ein Fünftel steuerfrei [pv-end-05].\n\n"
     "Rückfrage: Wofür ist die Vergleichssumme von 10.000 € gewidmet?", True, None),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", REPORT3_RULES)
def test_report3_rule(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.unsupported_figures
    if reason:
        assert result.unsupported_figures[0].reason == reason


def test_both_figures_of_bzw_count_the_unit():
    assert [f.kind for f in nb.extract("die Werte 8 bzw. 4 Wochen")] == ["count:woche", "count:woche"]


# Found on the fourth report set (report4, tuning data since the fifth).
REPORT4_RULES = [
    # "A statt B": B is the other cell, named to compare – it needs only to stand in the block
    (("pv-sv-11",), "DN-Satz Sonderzahlungen 2025?",
     "Auf Sonderzahlungen beträgt der DN-Satz 2025 17,07 % statt 18,07 % (Stand 2025-01) [pv-sv-11].", True, None),
    (("pv-sv-11",), "DN-Satz Sonderzahlungen 2025?",
     "Auf Sonderzahlungen beträgt der DN-Satz 2025 17,07 % statt 18,70 % (Stand 2025-01) [pv-sv-11].", False, None),
    # a week is a period of its own: "40 Stunden am Tag" is the weekly figure in the daily place
    (("pv-az-07",), "Ab wann Überstunde?", "Eine Überstunde liegt vor, wenn 8 Stunden am Tag oder 40 Stunden "
     "pro Woche überschritten werden (Stand 2016-05) [pv-az-07].", True, None),
    (("pv-az-07",), "Ab wann Überstunde?", "Eine Überstunde liegt vor, wenn 40 Stunden am Tag oder 8 Stunden "
     "pro Woche überschritten werden (Stand 2016-05) [pv-az-07].", False, None),
    # the article points back to the clerk's figure: "die 15.000 €"
    (("pv-end-05",), "Vergleich über 15.000 € – wie abrechnen?",
     "Nach Abzug der SV-Beiträge bleibt ein Fünftel steuerfrei [pv-end-05]. Wie sich die 15.000 € auf "
     "Zeiträume aufteilen, geht aus der Frage nicht hervor.", True, None),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", REPORT4_RULES)
def test_report4_rule(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.unsupported_figures
    if reason:
        assert result.unsupported_figures[0].reason == reason


def test_the_block_title_backs_a_figure_only_it_holds():
    """The block's head line shows its title to the model: "Teilpension ab 1.1.2026 – …"."""
    from kb_context import block
    from pv_agent.engine.answer.context import Context
    from pv_agent.engine.types import SECTION_KEY_VALUES

    context = Context(blocks=[block("pv-neu-01", 1, SECTION_KEY_VALUES)], budget=100_000)
    assert "1.1.2026" not in context.blocks[0].text
    assert verify("Die Teilpension gibt es ab 1.1.2026 [pv-neu-01].", context).ok
    assert not verify("Die Teilpension gibt es ab 1.1.2025 [pv-neu-01].", context).ok


def test_a_cell_another_figure_of_the_sentence_names_clearly_is_taken():
    """"420 € Prämie → 300 € frei, 120 € lohnsteuerpflichtig": the example's 120-€ cell belongs to
    120 €, whose words name it clearly – 300 € is read among the other cells (the context ``ask``
    sent for report4's q-c-036, a false alarm before)."""
    import json
    from pathlib import Path
    from mutation_cases import context_of

    record = json.loads((Path(__file__).parent / "data" / "realistic_drafts" / "report4" / "q-c-036.json")
                        .read_text(encoding="utf-8"))
    context = context_of(record["context"])
    right = ("Wird mehr gezahlt, bleiben die ersten 300 € (Stand 2014-12) frei und nur der übersteigende Teil ist "
             "Arbeitslohn mit Lohnsteuerabzug und DB-pflichtig; Beispiel: 420 € (Stand 2014-12) Prämie im Jahr → "
             "300 € frei, 120 € lohnsteuerpflichtig [pv-zs-03].")
    assert right in record["draft"]
    assert verify(right, context).ok, verify(right, context).unsupported_figures
    assert not verify(right.replace("→ 300 € frei", "→ 330 € frei"), context).ok


# Found on the tuning splits in the fifth round (report3/report4 and older, read).
ROUND5_RULES = [
    # "| 2 % | bis 2.630 € |" then "| 2,95 % | darüber |": above the one row's upper limit is the next row
    (("pv-sv-14",), "Ab wann voller AV-Beitrag 2026?", "Den vollen AV-Beitrag von 2,95 % zahlt ein Dienstnehmer "
     "2026 erst über 2.630 € monatlicher Beitragsgrundlage (Stand 2026-01) [pv-sv-14].", True, None),
    (("pv-sv-14",), "Ab wann voller AV-Beitrag 2026?", "Den AV-Beitrag von 2 % zahlt ein Dienstnehmer 2026 über "
     "2.630 € monatlicher Beitragsgrundlage (Stand 2026-01) [pv-sv-14].", False, "row"),
    (("pv-sv-14",), "Ab wann voller AV-Beitrag 2026?", "Den vollen AV-Beitrag von 2,95 % zahlt ein Dienstnehmer "
     "2026 bis 2.630 € monatlicher Beitragsgrundlage (Stand 2026-01) [pv-sv-14].", False, None),
    (("pv-sv-14",), "AV-Beitrag 2026 bei 2.500 €?", "Den AV-Beitrag von 2 % zahlt ein Dienstnehmer 2026 bis "
     "2.630 € monatlicher Beitragsgrundlage (Stand 2026-01) [pv-sv-14].", True, None),
    # "A statt B": the limit beside A is A's row, not B's
    (("pv-sv-15",), "AV Lehrling 2026?", "Über 2.427 € gelten für Lehrlinge 2026 nur 1,15 % statt 2,95 % "
     "(Stand 2026-01) [pv-sv-15].", True, None),
    (("pv-sv-15",), "AV Lehrling 2026?", "Über 2.427 € gelten für Lehrlinge 2026 nur 1,15 % statt 2,59 % "
     "(Stand 2026-01) [pv-sv-15].", False, None),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", ROUND5_RULES)
def test_round5_rule(blocks, question, draft, passes, reason):
    result = verify(draft, kb_context(*blocks), question=question)
    assert result.ok is passes, result.unsupported_figures
    if reason:
        assert result.unsupported_figures[0].reason == reason


CONFLICT_ROUND5 = [
    # a value the other side never names, stated by an entry outside the dispute too, is no side
    ("Die 48-%-Stufe reicht 2025 bis 103.072 € (Stand 2025-01) [pv-lst-01]; auch [pv-lst-03] nennt für 2025 "
     "den Wert 103.072 € (Stand 2026-01).", False),
    # … what the sides dispute is one
    ("Die 55-%-Stufe gilt auch 2026 weiter (Stand 2026-01) [pv-lst-03].", True),
    # related topics after the refusal, or under "Verwandte Themen:", name no side
    ("Dazu enthält die Wissensbasis keine Aussage.\n\nVerwandte Themen:\n- Der Spitzensteuersatz für "
     "Einkommensmillionäre [pv-lst-03].\n- Der Lohnsteuertarif [pv-lst-01].", False),
    ("Die Blöcke behandeln das nicht. Verwandte Themen:\n\n- Der Spitzensteuersatz für Einkommensmillionäre "
     "[pv-lst-03].", False),
    ("Der Spitzensteuersatz für Einkommensmillionäre bleibt [pv-lst-03].", True),
]


@pytest.mark.parametrize("draft,one_sided", CONFLICT_ROUND5)
def test_conflict_sides_round5(draft, one_sided):
    result = verify(draft, kb_context("pv-lst-01", "pv-lst-03", "pv-lst-04"))
    assert [g.failing for g in result.conflicts] == [one_sided], result.conflicts


def test_the_part_above_a_limit_is_no_opposite():
    """"steuerfrei min(Wert, 8 €), Rest als Sachbezug" and "der übersteigende Wert ist ein
    steuerpflichtiger Sachbezug" say the same (the context ``ask`` sent for report's q-c-017); "ist
    steuerpflichtig" alone says the opposite."""
    import json
    from pathlib import Path
    from mutation_cases import context_of

    record = json.loads((Path(__file__).parent / "data" / "realistic_drafts" / "report" / "q-c-017.json")
                        .read_text(encoding="utf-8"))
    context = context_of(record["context"])
    right = ("Der übersteigende Wert ist ein steuerpflichtiger Sachbezug [pv-ess-01]; es zählen nur Arbeitstage, "
             "nicht Urlaub oder Krankenstand [pv-ess-01].")
    assert right in record["draft"]
    assert [c.state for c in verify(right, context).claims] == ["paraphrase"]
    assert verify(record["draft"], context, question=record["question"]).ok
    wrong = verify("Gutscheine je Arbeitstag sind steuerpflichtig, es zählen nur Arbeitstage [pv-ess-01].", context)
    assert any(c.state == "contradicted" for c in wrong.claims), wrong.claims


def test_the_end_of_a_range_is_no_limit():
    """"von 2 bis 12 Monatsentgelten" (the context ``ask`` sent for report4's q-b-030): 12 is the
    range's end, not a limit the block would have to call one."""
    import json
    from pathlib import Path
    from mutation_cases import context_of

    record = json.loads((Path(__file__).parent / "data" / "realistic_drafts" / "report4" / "q-b-030.json")
                        .read_text(encoding="utf-8"))
    context = context_of(record["context"])
    right = "- Die Staffel von 2 bis 12 Monatsentgelten (Stand 2025-01) gilt nur für die Abfertigung alt [pv-abf-01]."
    assert right in record["draft"]
    assert verify(right, context).ok, verify(right, context).unsupported_figures
    assert not verify(right.replace("bis 12", "bis 14"), context).ok


def test_two_years_joined_by_und_are_one_clause():
    """"der Satz beträgt 2025 und 2026 1,53 %" against "Satz: 1,53 % (2025 und 2026)": both years
    belong to the figure."""
    assert [c for _, c in nb.segments("der Satz beträgt 2025 und 2026 1,53 %")] == ["der Satz beträgt 2025 und 2026 1,53 %"]
    assert [c for _, c in nb.segments("bis 2025 und 500 € ab 2026")] == ["bis 2025", "500 € ab 2026"]
    context = kb_context("pv-bv-03")
    assert verify("Der Satz beträgt 2025 und 2026 1,53 % (Stand 2026-01) [pv-bv-03].", context).ok
    assert not verify("Der Satz beträgt 2025 und 2026 1,35 % (Stand 2026-01) [pv-bv-03].", context).ok


def test_gap_sentences_and_the_head_line_are_no_unsupported_claims():
    """What the blocks leave open ("Die Blöcke regeln Hochzeit und Umzug nicht …") is no claim to find
    in a block; "Der Eintrag ist als nicht amtlich gekennzeichnet" is said of the block's head line."""
    import json
    from pathlib import Path
    from mutation_cases import context_of

    record = json.loads((Path(__file__).parent / "data" / "realistic_drafts" / "report4" / "q-r-048.json")
                        .read_text(encoding="utf-8"))
    context = context_of(record["context"])
    result = verify(record["draft"], context, question=record["question"])
    assert result.ok, [c for c in result.claims if c.state != "quote"]
    assert not any("regeln Hochzeit" in c.sentence for c in result.claims)
    header = [c for c in result.claims if "nicht amtlich gekennzeichnet" in c.sentence]
    assert header and header[0].measure == "header"
    official = verify("Der Eintrag ist als amtlich gekennzeichnet [pv-efz-11].", context)
    assert [c.state for c in official.claims] == ["unsupported"]


# -- the fourth round (tuned on report5's false alarms; docs/verification.md §10) ------------

def test_a_sentence_citing_both_sides_with_a_warning_marks_both():
    """report5 q-s-130: "⚠ maßgeblich ist … die Novelle mit 15 Überstunden / 170 € [pv-ues-02]
    [pv-ues-03]" marks both sides; a value only other entries state made it count as no side."""
    context = kb_context("pv-ues-02", "pv-ues-03", "pv-ues-09")
    draft = ("Für 2026 gelten Zuschläge für höchstens 15 Überstunden, höchstens 170 € im Monat (Stand 2026-01) "
             "[pv-ues-09] [pv-ues-02].\n\n"
             "- ⚠ Eine Steuerberaterseite nannte für 2026 nur 10 Überstunden / 120 € (Stand 2026-01) [pv-ues-03];\n"
             "⚠ maßgeblich ist laut den Einträgen die Novelle mit 15 Überstunden / 170 € (Stand 2026-01) "
             "[pv-ues-02] [pv-ues-03].\n")
    groups = [g for g in verify(draft, context).conflicts if "pv-ues-02" in g.ids]
    assert groups and not any(g.failing for g in groups), [g.as_dict() for g in groups]
    unmarked = draft.replace("⚠ maßgeblich", "maßgeblich")
    groups = [g for g in verify(unmarked, context).conflicts if "pv-ues-02" in g.ids]
    assert any(g.failing for g in groups)


def test_the_blocks_holding_a_wrong_figure_are_found_in_every_notation():
    """``BlockFacts.holding`` parses only blocks whose text shows the value's digits; it must
    find each block a full parse finds ("6 930 €", "6930,00 EUR", "2025 126 g/km", "08")."""
    from pv_agent.engine.answer.context import ContextBlock
    from pv_agent.engine.answer.verification.fact_index import BlockFacts

    texts = {"a": "| HBGL | 2026 |\n|---|---|\n| monatlich | 6 930 € |", "b": "Der Wert beträgt 6930,00 EUR.",
             "c": "WLTP: 2024 129, ab 2025 126 g/km.", "d": "Laut VwGH 2001/08/0154 gilt das.",
             "e": "Der Satz beträgt 1,53 % vom Entgelt.", "f": "Nichts davon."}
    blocks = {i: ContextBlock(number=n, entry_id=i, title="T", stand="2026-01", topic="t", source="s",
                              official=True, section="Kernwerte & Fristen", text=t)
              for n, (i, t) in enumerate(texts.items(), 1)}
    for written in ("6.930 €", "126 g/km", "08", "1,530 %"):
        fig = nb.extract(written)[0]
        parsed = [i for i, fs in BlockFacts(blocks).all() if any(nb.matches(fig, f.figure) for f in fs)]
        assert parsed and BlockFacts(blocks).holding(fig) == parsed, (written, parsed)
