"""Hand-built hits and a small knowledge base for the answer tests (figures from the fact sheet)."""
from __future__ import annotations

from pv_agent.engine.config import Settings
from pv_agent.engine.context import build_context
from pv_agent.engine.types import Hit

# id → (title, stand, topic, source, official, cross_refs, section text)
ENTRIES = {
    "pv-sv-02": (
        "Höchstbeitragsgrundlage 2026", "2026-01", "sozialversicherung", "briefing", True, ("pv-sv-01",),
        "| Wert | 2026 |\n|---|---|\n| HBGL monatlich | 6.930 € |\n| HBGL täglich | 231 € |",
    ),
    "pv-sv-01": (
        "Höchstbeitragsgrundlage 2025", "2025-01", "sozialversicherung", "briefing", True, ("pv-sv-02",),
        "| Wert | 2025 |\n|---|---|\n| HBGL monatlich | 6.450 € |\n| HBGL täglich | 215 € |",
    ),
    "pv-sz-03": (
        "Freigrenze für sonstige Bezüge 2024 laut S17", "2024-01", "sonderzahlungen", "briefing", True, ("pv-sz-04",),
        "⚠ Quellen widersprechen: Für 2024 nennt S17 eine Freigrenze von 2.100 €, S19 dagegen 2.447 €.\n"
        "- Freigrenze 2024 laut S17: 2.100 €",
    ),
    "pv-sz-04": (
        "Freigrenze für sonstige Bezüge 2024 laut S19", "2024-01", "sonderzahlungen", "briefing", False, ("pv-sz-03",),
        "⚠ Quellen widersprechen: S19 nennt für 2024 nachträglich 2.447 € statt 2.100 €.\n"
        "- Freigrenze 2024 laut S19: 2.447 €",
    ),
    "pv-ur-01": (
        "Urlaubsanspruch", "2025-01", "urlaub", "briefing", True, (),
        "- Urlaub: 30 Werktage = 25 Arbeitstage (5-Tage-Woche)\n"
        "- nach 25 Dienstjahren: 36 Werktage = 30 Arbeitstage",
    ),
}


def make_hit(entry_id: str, score: float = 0.5, **changes) -> Hit:
    title, stand, topic, source, official, refs, text = ENTRIES[entry_id]
    values = dict(
        entry_id=entry_id, title=title, stand=stand, topic=topic, source=source, official=official,
        section="Kernwerte & Fristen", chunk_id=f"{entry_id}#1", chunk_hash="0" * 8, text=text,
        header=f"{entry_id} · {title}", score=score, cross_refs=refs, lexical_rank=1, cosine=0.8, coverage=0.8,
    )
    values.update(changes)
    return Hit(**values)


def make_context(*ids: str, settings: Settings | None = None):
    hits = [make_hit(i, score=1.0 / (n + 1)) for n, i in enumerate(ids)]
    return build_context(hits, settings or Settings(), system_chars=2000, question="Frage?")
