"""Small knowledge bases written on the fly, in the schema of design.md §1."""
from __future__ import annotations

import textwrap
from pathlib import Path


def entry_text(
    entry_id: str,
    title: str,
    *,
    topic: str = "sonderzahlungen",
    stand: str = "2025-01",
    source: str = "briefing",
    tags=(),
    cross_refs=(),
    summary: str = "Kurze Zusammenfassung.",
    key_values: str = "| Wert | 2025 |\n|---|---|\n| Beispiel | 1 € |",
    legal: str = "- § 67 EStG",
    payroll: str = "Als Parameter der Lohnart pflegen.",
    official: bool = True,
) -> str:
    refs = "\n".join(f"- [{r}] Verweis" for r in cross_refs) or "- keine"
    return textwrap.dedent(
        f"""\
        ---
        id: {entry_id}
        title: "{title}"
        stand: "{stand}"
        topic: {topic}
        tags: [{", ".join(tags)}]
        legal_bases: ["§ 67 EStG"]
        cross_refs: [{", ".join(cross_refs)}]
        source: {source}
        official: {"true" if official else "false"}
        ---
        """
    ) + (
        f"\n## Zusammenfassung\n{summary}\n\n## Kernwerte & Fristen\n{key_values}\n\n"
        f"## Rechtsgrundlagen\n{legal}\n\n## Payroll-Relevanz (Odoo)\n{payroll}\n\n## Verweise\n{refs}\n"
    )


SAMPLE_ENTRIES = {
    "pv-sz-01": dict(
        title="Sonstige Bezüge – begünstigte Besteuerung",
        tags=["Sonderzahlungen", "SZ", "13. Bezug"],
        summary="Sonderzahlungen wie Urlaubszuschuss und Weihnachtsremuneration werden innerhalb des "
        "Jahressechstels mit festen Steuersätzen besteuert.",
        key_values="| Stufe | Satz |\n|---|---|\n| erste 620 € | 0 % |\n| nächste 24.380 € | 6 % |",
        cross_refs=["pv-sz-02"],
    ),
    "pv-sz-02": dict(
        title="Jahressechstel",
        summary="Das Jahressechstel ist ein Sechstel der bisher zugeflossenen laufenden Bezüge.",
        key_values="- 1/6 der laufenden Bezüge, hochgerechnet aufs Jahr",
        cross_refs=["pv-sz-01"],
    ),
    "pv-url-01": dict(
        title="Urlaubsersatzleistung bei Beendigung",
        topic="urlaub",
        tags=["UEL"],
        summary="Die Urlaubsersatzleistung gebührt für nicht verbrauchten Urlaub bei Ende des Dienstverhältnisses.",
        key_values="- laufendes Urlaubsjahr: aliquot\n- Vorjahre: voll",
    ),
    "pv-ues-01": dict(
        title="Überstundenzuschläge steuerfrei 2025",
        topic="ueberstunden-zulagen",
        summary="Zuschläge für die ersten 18 Überstunden im Monat sind bis 200 € steuerfrei.",
        key_values="| Wert | 2025 |\n|---|---|\n| Überstunden | 18 |\n| Höchstbetrag | 200 € |",
    ),
    "pv-dg-01": dict(
        title="Kommunalsteuer",
        topic="dienstgeberabgaben",
        summary="Die Kommunalsteuer beträgt 3 % der Bruttolohnsumme und wird an die Gemeinde (Straße, Stadt) abgeführt.",
        key_values="- 3 %",
    ),
}


def write_kb(root: Path, entries: dict | None = None) -> Path:
    """Write a knowledge base folder (``<root>/dokumente/<id>.md``) and return ``root``."""
    docs = root / "dokumente"
    docs.mkdir(parents=True, exist_ok=True)
    for entry_id, kw in (SAMPLE_ENTRIES if entries is None else entries).items():
        (docs / f"{entry_id}.md").write_text(entry_text(entry_id, **kw), encoding="utf-8")
    return root
