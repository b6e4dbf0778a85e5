"""The shortcuts that keep ask() fast must give what the long way gives, on the shipped
knowledge base and on texts built to trip them."""
from __future__ import annotations

from pathlib import Path

import pytest
from answer_helpers import make_hit

from pv_agent.engine.answer.verification import roles as rl
from pv_agent.engine import figures as fg
from pv_agent.engine.answer.context import CONFLICT_MARK, is_conflict_side
from pv_agent.engine.kb import markdown as md
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.types import SECTION_SUMMARY

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def entries():
    loaded = load_knowledge_base(ROOT / "wissensbasis")
    assert loaded.entries and not loaded.errors
    return loaded.entries


def test_conflict_side_shortcut_agrees_with_the_summary_on_every_shipped_entry(entries):
    marked = 0
    for e in entries:
        expected = CONFLICT_MARK in md.section_text(e.body, SECTION_SUMMARY)
        hit = make_hit("pv-sv-02", title="Titel ohne Zeichen")
        assert is_conflict_side(hit, e.body) is expected, e.id
        assert is_conflict_side(hit, e.body) is expected, e.id  # again, from the cache
        marked += expected
    assert marked >= 2  # the shipped base has conflict pairs: the check saw both outcomes


def test_a_mark_outside_the_summary_or_inside_a_code_fence_does_not_count():
    hit = make_hit("pv-sv-02", title="Titel")
    fenced = "## Zusammenfassung\n```\n## Kernwerte & Fristen\n```\nText.\n\n## Kernwerte & Fristen\n- ⚠ Hinweis"
    assert not is_conflict_side(hit, fenced)
    assert not is_conflict_side(hit, "## Zusammenfassung\nText ohne Zeichen.")
    assert is_conflict_side(hit, "## Zusammenfassung\nText ⚠ mit Zeichen.")


TRICKY = [
    "1.1.2026", "am 1. Jänner 2026 und 31.12.", "2026-01 bis 2026-12", "€ 6.930", "EUR 1.234,56",
    "6 930 €", "6\u00a0930 EUR", "1\u202f234,5 Euro", "Euro 12", "eur12", "3–5 %", "2 bis 12 Monatsentgelte",
    "§ 67 Abs 1 Z 3 EStG", "pv-ab-01 sagt 496 €", "[pv-bg-02] 6.060 €", "x1.2.3", ",5 %", ".5",
    "Steuer 17 %", "teuer12", "٣ Tage", "１２ €", "13. Bezug", "7. Dienstjahr", "15 ÜSt", "30 Werktage",
    "1.300,00 EUR", "12,5 % (2025), 13 % (2026)", "ab 1.1.2026: 6.930 €/Monat", "-5 %", "5-10 Tage",
]


def test_figure_scan_finds_what_a_full_regex_scan_finds(entries):
    texts = TRICKY + [line for e in entries for line in e.body.splitlines() if line.strip()]
    for text in texts:
        clean = fg._NOT_FIGURES.sub(lambda m: " " * len(m.group(0)), text)
        expected = [(m.span(), m.groupdict()) for m in fg._FIGURE.finditer(clean)]
        assert [(m.span(), m.groupdict()) for m in fg._figure_matches(clean)] == expected, text


def test_cached_similarity_embeds_each_text_once_and_returns_what_the_model_returns(monkeypatch):
    import numpy as np

    from pv_agent.engine.answer.verification import CachedSimilarity

    calls = []

    def embed(texts):
        calls.append(list(texts))
        return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]

    monkeypatch.setattr(CachedSimilarity, "_vectors", {})
    monkeypatch.setattr(CachedSimilarity, "limit", 3)
    sim = CachedSimilarity(embed, "test-model")
    first = sim(["a", "bb", "a"])
    assert calls == [["a", "bb"]]
    assert np.array_equal(first, np.asarray(embed(["a", "bb", "a"]), dtype=np.float32))
    assert np.array_equal(sim(["bb", "a"]), first[[1, 0]]) and len(calls) == 2  # nothing embedded again
    sim(["ccc", "dddd"])  # over the limit: the least recently used ("bb") leaves
    assert calls[-1] == ["ccc", "dddd"] and set(CachedSimilarity._vectors) == {("test-model", t) for t in ("a", "ccc", "dddd")}
    assert CachedSimilarity(embed, "other-model")(["a"]).shape == (1, 3) and calls[-1] == ["a"]  # per model


def test_row_words_found_with_the_shortcut_are_those_the_regexes_find(entries):
    tricky = ["TÄGLICH", "Tagessatz 2026", "pro Tag", "(Monat)", "Jährlich", "Jahresbetrag", "/Jahr", "VOLLER Wert",
              "halbe Beitragsgrundlage", "Monats-Höchstbeitrag", "tag", "Kalendertag", "Vollzeit", "Halbjahr"]
    texts = tricky + [line for e in entries for line in e.body.splitlines() if line.strip()]
    for text in texts:
        marks = rl.row_marks.__wrapped__(text)
        assert marks.periods == frozenset(m.lastgroup for m in rl.PERIODS.finditer(text)), text
        assert marks.shares == frozenset(m.lastgroup for m in rl.SHARES.finditer(text)), text
