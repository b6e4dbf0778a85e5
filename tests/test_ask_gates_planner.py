"""The cheap stages before the model: off-topic gate, relevance gate, query planner, context budget."""
from __future__ import annotations

from datetime import date

import pytest
from answer_helpers import make_hit

from pv_agent.engine.config import Settings
from pv_agent.engine.answer.context import CUT_MARK, build_context
from pv_agent.engine.retrieval.gates import nothing_relevant, off_topic_reason
from pv_agent.engine.textnorm import query_terms
from pv_agent.engine.retrieval.planner import plan
from pv_agent.engine.types import RetrievalResult


@pytest.mark.parametrize("question, reason", [
    ("Hallo!", "greeting"), ("Grüß Gott", "greeting"), ("Danke dir!", "greeting"),
    ("Wer bist du eigentlich?", "chit_chat"), ("Wie wird das Wetter morgen?", "outside"),
    ("Hast du ein gutes Rezept für Gulasch?", "outside"),
])
def test_off_topic(question, reason):
    assert off_topic_reason(question) == reason


@pytest.mark.parametrize("question", [
    "Hallo, wie hoch ist die HBGL 2026?", "Wie hoch is die UEL bei Austritt?", "Servus, SZ-Freigrenze heuer?",
    "Wie mache ich die Umsatzsteuervoranmeldung?", "Was gilt beim Urlaubsersatzleistung-Anspruch?",
])
def test_payroll_questions_pass_the_off_topic_gate(question):
    assert off_topic_reason(question) is None


def test_relevance_gate_uses_coverage_and_cosine():
    def result(coverage, cosine, terms=("hbgl", "2026")):
        return RetrievalResult("q", "hybrid", [make_hit("pv-sv-02", coverage=coverage, cosine=cosine)], terms=terms)

    assert not nothing_relevant(result(1.0, 0.1))
    assert not nothing_relevant(result(0.0, 0.7))
    assert not nothing_relevant(result(0.3, 0.55))
    assert nothing_relevant(result(0.0, 0.3))
    assert nothing_relevant(RetrievalResult("q", "hybrid", []))
    # "wie hoch ist die Kurzarbeitsbeihilfe": "hoch" would match "Höchstbeitragsgrundlage" by
    # prefix, so framing words are not query terms at all
    assert query_terms("Wie hoch ist die Kurzarbeitsbeihilfe?") == ["kurzarbeitsbeihilfe"]
    assert query_terms("Wie viel beträgt die HBGL 2026?") == ["hbgl", "2026"]


def test_cross_ref_expansions_do_not_make_a_question_relevant():
    hit = make_hit("pv-sv-01", coverage=1.0, cosine=0.9, via="cross_ref")
    assert nothing_relevant(RetrievalResult("q", "hybrid", [hit], terms=("x",)))


def test_planner_simple_relative_year():
    p = plan("Wie hoch is die HBGL heuer?", now=date(2026, 3, 1))
    assert p.kind == "simple" and p.years == [2026] and p.queries[0].text.endswith("2026")


def test_planner_one_query_per_year():
    p = plan("HBGL 2025 und 2026 im Vergleich?", now=date(2026, 3, 1))
    assert p.kind == "complex" and [q.year for q in p.queries] == [2025, 2026]


def test_planner_several_questions_and_a_scope():
    p = plan("Was sagt § 67 EStG zur Freigrenze? Und wie hoch ist sie 2025?")
    assert p.kind == "complex" and len(p.queries) == 3
    assert p.queries[1].year == 2025 and p.queries[2].scopes == ("gesetz",)


def test_planner_survey():
    assert plan("Gib mir einen Überblick über alle Sonderzahlungen").kind == "survey"


def test_context_blocks_have_a_metadata_header_and_the_key_values():
    hit = make_hit("pv-sv-02", section="Zusammenfassung", text="Die HBGL deckelt die Beitragsgrundlage.",
                   key_values="| monatlich | 6.930 € |")
    ctx = build_context([hit], Settings(), system_chars=100, question="q")
    text = ctx.text()
    assert text.startswith("[1] pv-sv-02 · Höchstbeitragsgrundlage 2026 · Stand 2026-01 · Thema sozialversicherung"
                           " · Quelle briefing · amtlich")
    assert "Die HBGL deckelt die Beitragsgrundlage.\n\n### Kernwerte & Fristen\n| monatlich | 6.930 € |" in text


def test_context_is_cut_to_the_budget_at_line_boundaries_and_keeps_the_system_prompt():
    rows = "\n".join(f"| Zeile {n} | {n},00 € |" for n in range(400))
    hits = [make_hit("pv-sv-02", text=rows), make_hit("pv-sv-01", text=rows)]
    settings = Settings(max_context_chars=6000)
    ctx = build_context(hits, settings, system_chars=2000, question="Frage?")
    assert len(ctx.text()) <= ctx.budget <= 6000 - 2000
    assert ctx.blocks[0].cut and ctx.blocks[0].text.endswith(CUT_MARK)
    assert all(line.endswith("|") for line in ctx.blocks[0].text.splitlines()[:-1])
    assert ctx.dropped == ["pv-sv-01"]


def test_a_conflict_side_carries_the_mark_in_title_or_summary_not_only_in_references():
    from pv_agent.engine.answer.context import is_conflict_side
    side = "## Zusammenfassung\n⚠ Quellen widersprechen: …\n\n## Kernwerte & Fristen\n- 1 %"
    pointer = "## Zusammenfassung\nText.\n\n## Kernwerte & Fristen\n- ⚠ siehe Konfliktpaar\n\n## Verweise\n- [x] (⚠ überholt)"
    assert is_conflict_side(make_hit("pv-sv-02"), side)
    assert not is_conflict_side(make_hit("pv-sv-02"), pointer)
    assert is_conflict_side(make_hit("pv-sv-02", title="HBGL (⚠ maßgeblich)"), pointer)
