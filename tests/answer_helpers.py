"""Hand-built hits and a small knowledge base for the answer tests (figures from the knowledge base's public sources)."""
from __future__ import annotations

from pv_agent.engine.config import Settings
from pv_agent.engine.answer.context import build_context
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
        "Freigrenze für sonstige Bezüge 2024 laut Kanzlei Huemer", "2024-01", "sonderzahlungen", "briefing", True, ("pv-sz-04",),
        "⚠ Quellen widersprechen: Für 2024 nennt Kanzlei Huemer eine Freigrenze von 2.100 €, LexisNexis dagegen 2.447 €.\n"
        "- Freigrenze 2024 laut Kanzlei Huemer: 2.100 €",
    ),
    "pv-sz-04": (
        "Freigrenze für sonstige Bezüge 2024 laut LexisNexis", "2024-01", "sonderzahlungen", "briefing", False, ("pv-sz-03",),
        "⚠ Quellen widersprechen: LexisNexis nennt für 2024 nachträglich 2.447 € statt 2.100 €.\n"
        "- Freigrenze 2024 laut LexisNexis: 2.447 €",
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


# -- a small knowledge base on disk, for the end-to-end tests ---------------------------------
KB_ENTRIES = {
    "pv-sv-01": dict(
        title="Höchstbeitragsgrundlage 2025", stand="2025-01", topic="sozialversicherung",
        tags=["HBGL", "Höchstbeitragsgrundlage", "Beitragsgrundlage", "2025"], cross_refs=["pv-sv-02"],
        summary="Die Höchstbeitragsgrundlage (HBGL) deckelt die Beitragsgrundlage der Sozialversicherung für 2025.",
        key_values="| HBGL 2025 | Betrag |\n|---|---|\n| monatlich | 6.450 € |\n| täglich | 215 € |",
    ),
    "pv-sv-02": dict(
        title="Höchstbeitragsgrundlage 2026", stand="2026-01", topic="sozialversicherung",
        tags=["HBGL", "Höchstbeitragsgrundlage", "Beitragsgrundlage", "2026"], cross_refs=["pv-sv-01"],
        summary="Die Höchstbeitragsgrundlage (HBGL) deckelt die Beitragsgrundlage der Sozialversicherung für 2026.",
        key_values="| HBGL 2026 | Betrag |\n|---|---|\n| monatlich | 6.930 € |\n| täglich | 231 € |",
    ),
    "pv-sz-03": dict(
        title="Freigrenze sonstige Bezüge 2024 laut Kanzlei Huemer", stand="2024-01", topic="sonderzahlungen",
        tags=["Freigrenze", "SZ", "Sonderzahlungen", "Jahressechstel", "2024"], cross_refs=["pv-sz-04"],
        summary="⚠ Quellen widersprechen: Für 2024 nennt Kanzlei Huemer als Freigrenze der Sonderzahlungen 2.100 €, "
        "LexisNexis dagegen 2.447 €.",
        key_values="- Freigrenze Sonderzahlungen 2024 laut Kanzlei Huemer: 2.100 €\n- ⚠ abweichend LexisNexis: 2.447 €",
    ),
    "pv-sz-04": dict(
        title="Freigrenze sonstige Bezüge 2024 laut LexisNexis (nachträglich)", stand="2024-01", topic="sonderzahlungen",
        tags=["Freigrenze", "SZ", "Sonderzahlungen", "Jahressechstel", "2024"], cross_refs=["pv-sz-03"],
        official=False,
        summary="⚠ Quellen widersprechen: LexisNexis nennt für 2024 nachträglich eine Freigrenze der Sonderzahlungen "
        "von 2.447 € statt 2.100 €.",
        key_values="- Freigrenze Sonderzahlungen 2024 laut LexisNexis: 2.447 €\n- ⚠ abweichend Kanzlei Huemer: 2.100 €",
    ),
    "pv-ur-01": dict(
        title="Urlaubsanspruch nach Urlaubsgesetz", stand="2025-01", topic="urlaub",
        tags=["Urlaub", "Urlaubsanspruch", "Werktage", "Arbeitstage"], cross_refs=[],
        summary="Der Urlaubsanspruch beträgt 30 Werktage, nach 25 Dienstjahren 36 Werktage.",
        key_values="- Urlaub: 30 Werktage = 25 Arbeitstage (5-Tage-Woche)\n"
        "- nach 25 Dienstjahren: 36 Werktage = 30 Arbeitstage",
    ),
}


def entry_markdown(entry_id: str, *, title, stand, topic, tags, cross_refs, summary, key_values,
                   official: bool = True, source: str = "briefing") -> str:
    refs = "\n".join(f"- [{r}] {KB_ENTRIES[r]['title']}" for r in cross_refs) or "- keine"
    return (
        f"---\nid: {entry_id}\ntitle: \"{title}\"\nstand: \"{stand}\"\ntopic: {topic}\n"
        f"tags: [{', '.join(tags)}]\nlegal_bases: []\ncross_refs: [{', '.join(cross_refs)}]\n"
        f"source: {source}\nofficial: {'true' if official else 'false'}\n---\n\n"
        f"## Zusammenfassung\n{summary}\n\n## Kernwerte & Fristen\n{key_values}\n\n"
        f"## Rechtsgrundlagen\n- Die Quellen nennen keinen Paragraphen.\n\n"
        f"## Payroll-Relevanz (Odoo)\nAls Parameter der Lohnart pflegen und jährlich zum 1. Jänner prüfen.\n\n"
        f"## Verweise\n{refs}\n"
    )


def write_kb(kb_dir) -> None:
    docs = kb_dir / "dokumente"
    docs.mkdir(parents=True, exist_ok=True)
    for entry_id, fields in KB_ENTRIES.items():
        (docs / f"{entry_id}.md").write_text(entry_markdown(entry_id, **fields), encoding="utf-8")


def build_test_index(root) -> str:
    """Write the small knowledge base under ``root`` and index it over a throwaway test server."""
    from pv_agent.engine.index.indexer import build_index
    from pv_agent.engine.kb.loader import load_knowledge_base
    from pv_agent.engine.ollama import OllamaClient
    from pv_agent.tests.ollama_api_server import OllamaAPIServer

    write_kb(root / "wissensbasis")
    loaded = load_knowledge_base(root / "wissensbasis")
    assert not loaded.errors, loaded.errors
    path = str(root / "index.db")
    with OllamaAPIServer() as srv:
        settings = Settings(ollama_url=srv.url)
        build_index(loaded.entries, path, settings, embedder=OllamaClient(settings))
    return path
