"""The year a question asks about, and how it steers retrieval."""
from __future__ import annotations

from datetime import date

import pytest

from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.retrieval.timeframe import asked_year

from kbfactory import write_kb

TODAY = date(2026, 11, 30)


@pytest.mark.parametrize(
    "question,year,explicit",
    [
        ("Wie hoch ist die HBGL 2025?", 2025, True),
        ("Wie hoch ist heuer die HBGL?", 2026, True),
        ("Was galt letztes Jahr?", 2025, True),
        ("Was gilt nächstes Jahr?", 2027, True),
        ("Wie hoch ist die HBGL?", 2026, False),
        ("Freigrenze 2.615 € – stimmt das?", 2026, False),  # an amount is not a year
        ("§ 67 Abs 1 EStG", 2026, False),
        ("Vergleich 2024 und 2025", 2025, True),
    ],
)
def test_asked_year(question, year, explicit):
    found = asked_year(question, TODAY)
    assert (found.year, found.explicit) == (year, explicit)


def test_year_steers_between_entries_of_two_years(tmp_path, dead_settings):
    same = dict(topic="beitragsgrundlagen", tags=["HBGL"], summary="Die Höchstbeitragsgrundlage begrenzt die Beiträge.")
    kb = write_kb(
        tmp_path / "kb",
        {
            "pv-bg-01": dict(title="Höchstbeitragsgrundlage", stand="2025-01", **same),
            "pv-bg-02": dict(title="Höchstbeitragsgrundlage", stand="2026-01", **same),
        },
    )
    path = str(tmp_path / "i.db")
    build_index(load_knowledge_base(kb).entries, path, dead_settings, None)
    index = SidecarIndex.open(path)
    question = "Wie hoch ist die HBGL?"
    assert retrieve(index, question, dead_settings, year=2026).ids[0] == "pv-bg-02"
    assert retrieve(index, question, dead_settings, year=2025).ids[0] == "pv-bg-01"
