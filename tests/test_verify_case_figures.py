"""The clerk's case in an answer (sixth round, docs/verification.md §12), on the shipped knowledge
base: figures listed under one "(laut Frage)", the question's figures in any notation, dates a
block's rule makes of the question's date, a rate naming a bracket, a count naming the row of a
named cell, a question back to the clerk. Each rule with a right sentence and a wrong one."""
from __future__ import annotations

import pytest
from kb_context import kb_context

from pv_agent.engine.answer.verification import verify
from pv_agent.engine.answer.verification.given import case_date, _question_figures
from pv_agent.engine import figures as nb

GFB3 = "Wir haben 2026 drei Geringfügige mit 320, 300 und 280 € im Monat. Fällt die DG-Abgabe an?"
BV = "Eintritt am 17.3.2026 – ab wann zahlen wir BV-Beitrag?"

CASES = [
    # (blocks, question, draft, passes, reason of the first unsupported figure or None)
    # one mark after a list marks each figure of it – each must be the question's
    (("pv-gfb-03",), GFB3,
     "320 €, 300 € und 280 € (laut Frage) zusammen übersteigen den Grenzwert 2026 von 826,65 € (Stand 2026-01) "
     "[pv-gfb-03 · 2026 · monatlich].", True, None),
    (("pv-gfb-03",), GFB3,
     "330 €, 300 € und 280 € (laut Frage) zusammen übersteigen den Grenzwert 2026 von 826,65 € (Stand 2026-01) "
     "[pv-gfb-03 · 2026 · monatlich].", False, "not_in_question"),
    # the mark inside the figure's parentheses
    (("pv-gfb-03",), GFB3,
     "Schon die erste Kraft (320 € laut Frage) liegt mit den anderen über 826,65 € (Stand 2026-01) "
     "[pv-gfb-03 · 2026 · monatlich].", True, None),
    # a date's own point before its Stand ends no sentence: the citation after it is the date's
    (("pv-sb-08",), "Welcher Richtwert gilt für den Sachbezug Dienstwohnung 2026?",
     "Maßgeblich ist der Richtwert, der am 31.10. (Stand 2024-01) [pv-sb-08 · Maßgeblich] des Vorjahres gilt.",
     True, None),
    (("pv-sb-08",), "Welcher Richtwert gilt für den Sachbezug Dienstwohnung 2026?",
     "Maßgeblich ist der Richtwert, der am 30.10. (Stand 2024-01) [pv-sb-08 · Maßgeblich] des Vorjahres gilt.",
     False, None),
    # "die 0-%-Stufe" names a bracket the cited entry has – not one it lacks
    (("pv-lst-02",), "Zahlt jemand mit 13.400 € 2026 Lohnsteuer?",
     "2026 liegt ein Einkommen von 13.400 € (laut Frage) zur Gänze in der 0-%-Stufe [pv-lst-02].", True, None),
    (("pv-lst-02",), "Zahlt jemand mit 13.400 € 2026 Lohnsteuer?",
     "2026 liegt ein Einkommen von 13.400 € (laut Frage) zur Gänze in der 15-%-Stufe [pv-lst-02].", False, None),
    # a count naming the row of the named cell beside it – the row the bracket names, not another
    (("pv-abf-03",), "Wie viele Monatsentgelte Abfertigung alt nach 26 Dienstjahren?",
     "Nach 25 Jahren stehen 12 (Stand 2025-01) [pv-abf-03 · nach 25 Jahren · Monatsentgelte] Monatsentgelte zu.",
     True, None),
    (("pv-abf-03",), "Wie viele Monatsentgelte Abfertigung alt nach 26 Dienstjahren?",
     "Nach 20 Jahren stehen 12 (Stand 2025-01) [pv-abf-03 · nach 25 Jahren · Monatsentgelte] Monatsentgelte zu.",
     False, None),
    # the sentence names another row of the table than its bracket, and nothing of the named one:
    # the model read the wrong row and copied its label
    (("pv-neu-03",), "Trinkgeldpauschale 2028?",
     "Für Lehrlinge sind es 2028 25 € (Stand 2026-01) [pv-neu-03 · … Lehrling/Pflichtpraktikant · 2028] im Monat.",
     True, None),
    (("pv-neu-03",), "Trinkgeldpauschale 2028?",
     "Für Masseure sind es 2028 25 € (Stand 2026-01) [pv-neu-03 · … Lehrling/Pflichtpraktikant · 2028] im Monat.",
     False, "row"),
    # … unless that row holds the same value ("Masseure: 100 €" is right, whichever row is named)
    (("pv-neu-03",), "Trinkgeldpauschale 2028?",
     "Für Masseure sind es 2028 100 € (Stand 2026-01) [pv-neu-03 · Friseurgewerbe, Dienstnehmer · 2028] im Monat.",
     True, None),
    # the bracket's entry must hold the figure, whatever another entry the item cites holds
    (("pv-gfb-02", "pv-zs-01"), "Wie hoch ist die Geringfügigkeitsgrenze 2026?",
     "- Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € (Stand 2026-01) [pv-gfb-02 · Betrag · 2026]. Sie gilt "
     "monatlich [pv-gfb-02].", True, None),
    (("pv-gfb-02", "pv-zs-01"), "Wie hoch ist die Geringfügigkeitsgrenze 2026?",
     "- Die Geringfügigkeitsgrenze 2026 beträgt 551,10 € (Stand 2026-01) [pv-zs-01 · Betrag · 2026]. Sie gilt "
     "monatlich [pv-gfb-02].", False, "other_block"),
    # a date a block's rule makes of the question's date (Naturalmonat): the clerk's case
    (("pv-bv-04",), BV,
     "Der erste Monat ist ein Naturalmonat [pv-bv-04]: beitragsfrei bis 16.4.2026, Beiträge ab 17.4.2026 [pv-bv-04].",
     True, None),
    (("pv-bv-04",), BV,
     "Der erste Monat ist ein Naturalmonat [pv-bv-04]: beitragsfrei bis 19.4.2026, Beiträge ab 20.4.2026 [pv-bv-04].",
     False, "not_in_block"),
    # an English question's date is the answer's "(laut Frage)" date
    (("pv-abf-03",), "One of our clerks started on 1 January 2003 exactly. Abfertigung alt or neu?",
     "Mit Beginn am 1.1.2003 (laut Frage) gilt Abfertigung alt nur für Dienstverhältnisse, die vor dem 1.1.2003 "
     "begonnen haben [pv-abf-03].", True, None),
    (("pv-abf-03",), "One of our clerks started on 1 January 2003 exactly. Abfertigung alt or neu?",
     "Mit Beginn am 2.1.2003 (laut Frage) gilt Abfertigung alt nur für Dienstverhältnisse, die vor dem 1.1.2003 "
     "begonnen haben [pv-abf-03].", False, "not_in_question"),
    # a question back to the clerk states nothing: its figures need only be the question's or a block's
    (("pv-gfb-03",), GFB3,
     "Die Summe liegt über 826,65 € (Stand 2026-01) [pv-gfb-03 · 2026 · monatlich].\n\n"
     "Rückfrage: Gilt das auch für 2025, oder nur für 2026?", True, None),
    (("pv-gfb-03",), GFB3,
     "Die Summe liegt über 826,65 € (Stand 2026-01) [pv-gfb-03 · 2026 · monatlich].\n\n"
     "Rückfrage: Zahlen Sie der dritten Kraft 777 € oder weniger?", False, "not_in_block"),
]


@pytest.mark.parametrize("blocks,question,draft,passes,reason", CASES)
def test_case_figure(blocks, question, draft, passes, reason):
    v = verify(draft, kb_context(*blocks), question=question)
    issues = [(i.figure, i.reason, i.detail) for i in v.unsupported_figures]
    assert v.ok == passes, (issues, [c.state for c in v.claims])
    if reason:
        assert issues and issues[0][1] == reason, issues


@pytest.mark.parametrize("date,expected", [
    ("16.4.2026", True),  # Naturalmonat: 17.3. to 16.4.
    ("17.4.2026", True),
    ("30.6.2026", True),  # a quarter's end
    ("15.5.2026", True),  # "bis zum 15. des Folgemonats"
    ("1.7.2026", True),  # the day after a month's end
    ("19.4.2026", False),
    ("30.6.2029", False),  # a year the question does not name
    ("1.1.", True),  # without a year: read in the question's years
    ("19.4.", False),
])
def test_case_date(date, expected):
    question = _question_figures("Eintritt am 17.3.2026, wann beginnt die Beitragspflicht?")
    [fig] = nb.extract(date)
    assert case_date(fig, question) is expected


def test_no_case_date_without_a_date_or_year_in_the_question():
    [fig] = nb.extract("30.6.2026")
    assert not case_date(fig, _question_figures("Wann endet das Dienstverhältnis?"))
