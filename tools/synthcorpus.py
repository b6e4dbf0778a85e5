"""Synthetic knowledge bases for the benchmark: the schema of design.md §1 at the real system's
size (1×: 1,622 entries, ≈ 16.5k chunks) or ten times that, deterministic by seed.

The text is generated German payroll prose — compounds such as Urlaubsersatzleistung or
Sonderzahlungen, tables with € and %, paragraphs of statutes, collective-agreement pay tables,
court decisions — in topic clusters, so BM25 sees a realistic vocabulary. Nothing in it is a
fact: every figure is random.

The vectors are precomputed, not embedded: 1024-dim float32, L2-normalised, clustered like
real sentence embeddings (a shared direction every vector leans to, a per-topic centroid, a
per-entry offset, a per-section-kind direction and per-chunk noise). They are written to
``vectors.npy`` in chunk order with ``vectors.hashes`` (the chunk content hash of each row,
one per line), so a benchmark can index the corpus hybrid without an embedding server: its
vector source looks a chunk's text up by hash. ``queries.json`` / ``queries.npy`` hold
questions aimed at known entries, with their precomputed vectors.

Output folder (default ``synthetic/scale-<n>``, git-ignored)::

    dokumente/*.md  kb.json  INDEX.md  vectors.npy  vectors.hashes  queries.json  queries.npy  manifest.json
"""
from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pv_agent.engine.kb.chunker import chunk_entry
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import write_registry

GENERATOR = "pv-agent synth"
VERSION = 1
REAL_ENTRIES = 1622  # the real system (design.md §6): 1,622 entries, 16,480 chunks
DIM = 1024
QUERIES = 200
CHUNK_MAX_CHARS = 2400  # the engine's default; the vectors' hashes are only valid for it

# Share of the squared norm of each vector part: same entry ≈ 0.75 cosine, same topic ≈ 0.5,
# different topics ≈ 0.3 — the spread bge-m3 shows between related and unrelated passages.
W_GLOBAL, W_TOPIC, W_ENTRY, W_KIND, W_NOISE = 0.28, 0.2, 0.22, 0.05, 0.25
QUERY_W_NOISE = 0.35  # a question is further from its passage than two passages of one entry

# Family mix and sections per entry, tuned so that chunks/entry ≈ 10.2 as in the real system.
FAMILY_SHARE = (("briefing", 0.55), ("gesetz", 0.22), ("kv", 0.13), ("rechtsprechung", 0.10))
SECTIONS = {"gesetz": (10, 25), "kv": (12, 29), "rechtsprechung": (5, 12)}


@dataclass(frozen=True)
class Topic:
    slug: str
    short: str
    laws: tuple[str, ...]  # statutes, for legal_bases and gesetz ids
    terms: tuple[str, ...]  # nouns and compounds of the cluster
    parts: tuple[str, ...]  # first parts of compounds built on the fly
    abbreviations: tuple[str, ...] = ()


TOPICS = (
    Topic("sozialversicherung", "sv", ("ASVG", "AlVG", "AMPFG"),
          ("Beitragssatz", "Dienstnehmeranteil", "Dienstgeberanteil", "Krankenversicherung", "Pensionsversicherung",
           "Arbeitslosenversicherung", "Unfallversicherung", "Beitragsgruppe", "Arbeiterkammerumlage",
           "Wohnbauförderungsbeitrag", "Insolvenz-Entgeltsicherungszuschlag", "Beitragsabrechnung", "mBGM",
           "Versicherungspflicht", "Pflichtversicherung", "Beitragsschuld"),
          ("Beitrags", "Versicherungs", "Melde", "Kranken", "Pensions"), ("SV", "DN-Anteil", "DG-Anteil", "AV", "KV", "PV", "UV")),
    Topic("beitragsgrundlage", "bg", ("ASVG",),
          ("Höchstbeitragsgrundlage", "Beitragsgrundlage", "Sonderzahlungshöchstbeitragsgrundlage", "Tageshöchstbeitragsgrundlage",
           "Bemessungsgrundlage", "Aliquotierung", "Beitragszeitraum", "Entgeltbegriff", "Anspruchsprinzip"),
          ("Beitrags", "Höchst", "Bemessungs", "Entgelt"), ("HBGL", "BGL")),
    Topic("geringfuegigkeit", "gfb", ("ASVG",),
          ("Geringfügigkeitsgrenze", "Dienstgeberabgabe", "Selbstversicherung", "Mehrfachbeschäftigung", "Unfallversicherungsbeitrag",
           "Geringfügigkeitsmeldung", "Monatsgrenze", "Pauschbetrag"),
          ("Geringfügigkeits", "Neben", "Aushilfs"), ("GFB", "DAG")),
    Topic("lohnsteuer", "lst", ("EStG",),
          ("Lohnsteuertarif", "Tarifstufe", "Grenzsteuersatz", "Bemessungsgrundlage", "Jahreslohnzettel", "Aufrollung",
           "Veranlagung", "Werbungskosten", "Sonderausgaben", "Lohnkonto", "Steuerabzug", "Progressionsvorbehalt"),
          ("Lohn", "Steuer", "Tarif", "Jahres"), ("LSt", "L16", "ANV")),
    Topic("absetzbetraege", "ab", ("EStG",),
          ("Verkehrsabsetzbetrag", "Alleinverdienerabsetzbetrag", "Alleinerzieherabsetzbetrag", "Pensionistenabsetzbetrag",
           "Unterhaltsabsetzbetrag", "Sozialversicherungsrückerstattung", "Negativsteuer", "Zuschlag zum Verkehrsabsetzbetrag"),
          ("Absetz", "Verkehrs", "Alleinverdiener", "Erstattungs"), ("AVAB", "AEAB", "VAB")),
    Topic("familienbonus", "fb", ("EStG",),
          ("Familienbonus Plus", "Kindermehrbetrag", "Familienbeihilfe", "Aufteilung", "Antragstellung", "Kinderabsetzbetrag",
           "Unterhaltspflicht", "Formular E30"),
          ("Familien", "Kinder", "Unterhalts"), ("FaBo", "FBP", "E30")),
    Topic("sonderzahlungen", "sz", ("EStG", "ASVG"),
          ("Urlaubszuschuss", "Weihnachtsremuneration", "Jahressechstel", "Kontrollsechstel", "Freigrenze", "Freibetrag",
           "sonstige Bezüge", "Sonderzahlungen", "Sonderzahlungsanspruch", "Aliquotierung", "Urlaubsbeihilfe", "Weihnachtsgeld"),
          ("Sonder", "Sechstel", "Urlaubs", "Weihnachts"), ("SZ", "UZ", "WR", "13.", "14.")),
    Topic("ueberstunden-zulagen", "ues", ("EStG", "AZG"),
          ("Überstundenzuschlag", "Schmutzzulage", "Erschwerniszulage", "Gefahrenzulage", "Nachtarbeitszuschlag",
           "Sonntagszuschlag", "Feiertagsarbeitsentgelt", "Überstundenpauschale", "Grundlohn", "Überstundenteiler",
           "Normalarbeitszeit", "Mehrarbeit"),
          ("Überstunden", "Zuschlags", "Zulagen", "Nacht"), ("ÜSt", "SEG", "SFN")),
    Topic("sachbezuege", "sb", ("EStG", "Sachbezugswerteverordnung"),
          ("Dienstwagen", "Sachbezugswert", "CO2-Emissionswert", "Privatnutzung", "Dienstwohnung", "Zinsersparnis",
           "Arbeitgeberdarlehen", "Elektrofahrzeug", "Garagenplatz", "Anschaffungskosten", "Fahrtenbuch"),
          ("Sachbezugs", "Dienst", "Firmen", "Privat"), ("SB", "PKW", "E-Auto")),
    Topic("pendlerpauschale", "pp", ("EStG", "Pendlerverordnung"),
          ("Pendlerpauschale", "Pendlereuro", "Pendlerrechner", "Wegstrecke", "Zumutbarkeit", "Arbeitsstätte",
           "Formular L34", "Familienheimfahrt", "Werkverkehr"),
          ("Pendler", "Fahrt", "Weg"), ("PP", "L34")),
    Topic("dienstgeberabgaben", "dg", ("FLAG", "KommStG", "WKG"),
          ("Dienstgeberbeitrag", "Zuschlag zum Dienstgeberbeitrag", "Kommunalsteuer", "Lohnsummensteuer",
           "Beitragsgrundlage", "Landeskammer", "Familienlastenausgleichsfonds", "Kommunalsteuererklärung", "Betriebsstätte"),
          ("Dienstgeber", "Kommunal", "Lohnsummen", "Kammer"), ("DB", "DZ", "KommSt", "FLAF")),
    Topic("betriebliche-vorsorge", "bv", ("BMSVG",),
          ("Mitarbeitervorsorgekasse", "Vorsorgekasse", "Abfertigung neu", "Beitragszeitraum", "Verfügungsanspruch",
           "Beitragsleistung", "Kassenwechsel", "Übertrittsvereinbarung"),
          ("Vorsorge", "Kassen", "Abfertigungs"), ("BV", "MVK", "BMSVG")),
    Topic("abfertigung", "abf", ("AngG", "ArbAbfG"),
          ("Abfertigung alt", "Abfertigungsanspruch", "Monatsentgelte", "Dienstjahre", "Selbstkündigung", "Entlassung",
           "Viertelabgeltung", "Abfertigungsrückstellung", "Sechstelbegünstigung"),
          ("Abfertigungs", "Dienst", "Beendigungs"), ("Abf", "AbfA")),
    Topic("urlaub", "url", ("UrlG",),
          ("Urlaubsanspruch", "Urlaubsersatzleistung", "Urlaubsentgelt", "Urlaubsjahr", "Werktage", "Arbeitstage",
           "Urlaubsverbrauch", "Verjährung", "Resturlaub", "Urlaubsaliquotierung", "Urlaubsvereinbarung"),
          ("Urlaubs", "Ersatz", "Rest"), ("UEL", "UrlG", "UE")),
    Topic("entgeltfortzahlung", "efz", ("EFZG", "AngG"),
          ("Krankenstand", "Entgeltfortzahlung", "Arbeitsunfall", "Wiedererkrankung", "Arbeitsjahr", "Anspruchsdauer",
           "Krankenstandsbestätigung", "Dienstverhinderung", "Berufskrankheit", "Kur- und Erholungsaufenthalt"),
          ("Kranken", "Fortzahlungs", "Verhinderungs"), ("EFZ", "EFZG", "KSt")),
    Topic("kuendigung", "kue", ("AngG", "ABGB", "ArbVG"),
          ("Kündigungsfrist", "Kündigungstermin", "einvernehmliche Auflösung", "Entlassung", "Austritt",
           "Kündigungsentschädigung", "Postensuchtage", "Frühwarnsystem", "Kündigungsanfechtung"),
          ("Kündigungs", "Auflösungs", "Beendigungs"), ("KüFr", "EA")),
    Topic("altersteilzeit", "atz", ("AlVG",),
          ("Altersteilzeit", "Altersteilzeitgeld", "Lohnausgleich", "Blockvariante", "kontinuierliche Variante",
           "Ersatzkraft", "Teilpension", "Arbeitszeitreduktion", "Beitragsgrundlage vor Herabsetzung"),
          ("Altersteilzeit", "Teilzeit", "Ersatz"), ("ATZ", "ATZG")),
    Topic("reisekosten", "rk", ("EStG", "RGV"),
          ("Tagesgeld", "Nächtigungsgeld", "Kilometergeld", "Dienstreise", "Reisekostenersatz", "Diäten",
           "Auslandsreise", "Mittelpunkt der Tätigkeit", "Reiserechnung"),
          ("Reise", "Tages", "Kilometer"), ("KM-Geld", "RKE")),
    Topic("arbeitszeit", "az", ("AZG", "ARG"),
          ("Normalarbeitszeit", "Gleitzeit", "Durchrechnungszeitraum", "Ruhezeit", "Arbeitszeitaufzeichnung",
           "Wochenendruhe", "Rufbereitschaft", "Zeitausgleich", "Höchstarbeitszeit"),
          ("Arbeitszeit", "Gleit", "Ruhe"), ("AZG", "ARG", "ZA")),
    Topic("lohnpfaendung", "lp", ("EO",),
          ("Existenzminimum", "Drittschuldner", "Lohnpfändung", "Unterhaltsexekution", "Drittschuldnererklärung",
           "Unterhaltsgrundbetrag", "Exekutionsbewilligung", "Pfändungstabelle"),
          ("Pfändungs", "Exekutions", "Unterhalts"), ("EO", "ExMin")),
    Topic("mutterschutz-karenz", "mk", ("MSchG", "VKG"),
          ("Wochengeld", "Karenz", "Elternteilzeit", "Kinderbetreuungsgeld", "Papamonat", "Beschäftigungsverbot",
           "Kündigungsschutz", "Familienzeitbonus"),
          ("Karenz", "Mutterschutz", "Eltern"), ("MSchG", "VKG", "KBG")),
)
HEADS = ("anspruch", "betrag", "grenze", "satz", "zeitraum", "regelung", "pflicht", "meldung", "berechnung",
         "frist", "grundlage", "höhe", "nachweis", "abrechnung", "zuschlag", "pauschale", "verordnung", "ausnahme")
ADJECTIVES = ("laufende", "monatliche", "jährliche", "beitragspflichtige", "steuerfreie", "begünstigte", "aliquote",
              "kollektivvertragliche", "gesetzliche", "vereinbarte", "tatsächliche", "volle", "anteilige")
EMPLOYEES = ("Arbeitnehmer", "Angestellte", "Arbeiter", "Lehrlinge", "Teilzeitkräfte", "geringfügig Beschäftigte",
             "Dienstnehmer", "freie Dienstnehmer", "Grenzgänger", "Saisonarbeitskräfte")
EVENTS = ("Eintritt", "Austritt", "Karenz", "Krankenstand", "Jahreswechsel", "Kündigung", "Wiedereintritt",
          "Elternteilzeit", "Präsenzdienst", "Bildungskarenz", "Kurzarbeit", "Dienstgeberwechsel")
MONTHS = ("Jänner", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember")
BRANCHES = ("handel", "metall", "bau", "gastro", "elektro", "chemie", "holz", "druck", "transport", "bank",
            "versicherung", "gesundheit", "sozialwirtschaft", "it", "tourismus", "reinigung", "bewachung", "textil")
COURTS = (("ogh", "ObA"), ("vwgh", "Ra"), ("bfg", "RV"), ("eugh", "C"))
SENTENCES = (
    "{T} beträgt im Jahr {year} {pct} der {adj} Bemessungsgrundlage.",
    "Für {T} gilt ab 1. {month} {year} ein Betrag von {eur} monatlich.",
    "{T} ist nach {law} gesondert im Lohnkonto auszuweisen; {abbr} wird dabei nicht gekürzt.",
    "Wird {t2} überschritten, entfällt die Begünstigung für {T} zur Gänze.",
    "In der Lohnverrechnung ist {T} als eigene Lohnart mit dem Schlüssel {code} zu führen.",
    "Nach Ansicht der Finanzverwaltung (LStR Rz {rz}) ist {T} bei {ev} nicht zu aliquotieren.",
    "Strittig ist, ob {T} auch {emp} zusteht; die Literatur bejaht dies überwiegend.",
    "Bei {ev} während des Kalenderjahres ist {T} anteilig zu berechnen, höchstens aber mit {eur}.",
    "Die {compound} richtet sich nach {law} und ist bis zum {day}. des Folgemonats zu melden.",
    "{emp} erhalten {T} in Höhe von {pct}, sofern der Kollektivvertrag nichts anderes bestimmt.",
    "Praxishinweis: {T} und {t2} werden in der Abrechnung häufig verwechselt ({abbr}).",
    "Die {compound} beträgt {eur} pro Jahr; darüber hinausgehende Beträge sind voll steuerpflichtig.",
    "Maßgeblich ist der Stand zum {day}. {month} {year}; spätere Änderungen wirken nicht zurück.",
    "Für {emp} mit {n} Dienstjahren erhöht sich {T} auf {pct}.",
    "{T}: {eur} bis {eur2}, abhängig von der {compound} ({abbr}).",
    "Eine Aufrollung ist nur innerhalb des laufenden Kalenderjahres zulässig; {T} wird dabei neu berechnet.",
    "Die {compound} ist zwingend und kann durch Einzelvertrag nicht zum Nachteil der {emp} abbedungen werden.",
    "Übersteigt {T} den Betrag von {eur}, ist der übersteigende Teil nach dem Tarif zu versteuern.",
)
LAW_SENTENCES = (
    "({n}) {T} gebührt {emp} nach Maßgabe der folgenden Bestimmungen; {t2} bleibt unberührt.",
    "({n}) Abweichend von Abs. {n2} ist {T} mit {pct} der {adj} Bezüge anzusetzen.",
    "({n}) Der Bundesminister für Finanzen kann die {compound} durch Verordnung näher bestimmen.",
    "({n}) {T} ist nicht anzuwenden, wenn {t2} bereits nach § {para} berücksichtigt wurde.",
    "({n}) Die {compound} tritt mit 1. {month} {year} in Kraft und gilt für Lohnzahlungszeiträume ab diesem Zeitpunkt.",
)
RJ_SENTENCES = (
    "Die Klägerin begehrte {T} für den Zeitraum ab {month} {year} in Höhe von {eur}.",
    "Das Berufungsgericht verneinte einen Anspruch auf {T}, weil {t2} bereits abgegolten gewesen sei.",
    "Der Oberste Gerichtshof hielt fest, dass die {compound} auch bei {ev} maßgeblich bleibt.",
    "Nach ständiger Rechtsprechung ist {T} nach dem Ausfallsprinzip zu berechnen.",
    "Eine Vereinbarung, die {T} zum Nachteil der {emp} ausschließt, ist nach {law} teilnichtig.",
    "Die Revision ist zulässig, weil zur Frage der {compound} keine Rechtsprechung vorliegt.",
)


@dataclass
class PlannedEntry:
    id: str
    family: str
    topic: Topic
    title: str
    stand: str
    n_sections: int
    tags: list[str] = field(default_factory=list)
    legal_bases: list[str] = field(default_factory=list)
    cross_refs: list[str] = field(default_factory=list)


class _Writer:
    """Random German payroll text for one topic, from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def fill(self, template: str, topic: Topic) -> str:
        r = self.rng
        year = r.choice((2023, 2024, 2025, 2026))
        eur = r.uniform(50, 9000)
        # Wage-type codes never start with "S": "S123" reads as an internal source number, which validate rejects.
        values = {
            "T": r.choice(topic.terms), "t2": r.choice(topic.terms), "adj": r.choice(ADJECTIVES),
            "year": year, "month": r.choice(MONTHS), "day": r.randint(1, 28), "n": r.randint(1, 9), "n2": r.randint(1, 9),
            "pct": _pct(r), "eur": _eur(eur), "eur2": _eur(eur * r.uniform(1.2, 3)), "law": _law(r, topic),
            "abbr": r.choice(topic.abbreviations or ("LV",)), "code": f"{r.choice('ABLT')}{r.randint(100, 999)}",
            "rz": r.randint(100, 1400), "ev": r.choice(EVENTS), "emp": r.choice(EMPLOYEES),
            "compound": self.compound(topic), "para": r.randint(1, 130),
        }
        text = template.format(**values)
        return text[0].upper() + text[1:]

    def compound(self, topic: Topic) -> str:
        return self.rng.choice(topic.parts) + self.rng.choice(HEADS)

    def paragraph(self, topic: Topic, sentences=SENTENCES, n: tuple[int, int] = (3, 7)) -> str:
        return " ".join(self.fill(self.rng.choice(sentences), topic) for _ in range(self.rng.randint(*n)))

    def table(self, topic: Topic, rows: tuple[int, int] = (3, 8)) -> str:
        r = self.rng
        lines = ["| Wert | 2025 | 2026 |", "|---|---|---|"]
        for _ in range(r.randint(*rows)):
            label = r.choice(topic.terms) if r.random() < 0.6 else self.compound(topic)
            if r.random() < 0.5:
                a = r.uniform(20, 8000)
                lines.append(f"| {label} | {_eur(a)} | {_eur(a * r.uniform(1.0, 1.06))} |")
            else:
                lines.append(f"| {label} | {_pct(r)} | {_pct(r)} |")
        return "\n".join(lines)

    def pay_table(self, topic: Topic) -> str:
        r = self.rng
        lines = ["| Beschäftigungsgruppe | Stufe | Mindestgehalt | Zulage |", "|---|---|---|---|"]
        base = r.uniform(1900, 2600)
        for group in "ABCDEFGH"[: r.randint(3, 8)]:
            for step in range(1, r.randint(2, 5)):
                base *= r.uniform(1.01, 1.06)
                lines.append(f"| {group} {step} | {step} | {_eur(base)} | {_pct(r)} |")
        return "\n".join(lines)


def _eur(x: float) -> str:
    whole, cents = f"{x:,.2f}".split(".")
    return f"{whole.replace(',', '.')},{cents} €"


def _pct(r: random.Random) -> str:
    return f"{r.uniform(0.1, 40):.2f}".replace(".", ",") + " %"


def _law(r: random.Random, topic: Topic) -> str:
    return f"§ {r.randint(1, 130)}{r.choice(('', '', '', 'a', 'b'))} {r.choice(topic.laws)}"


# -- planning --------------------------------------------------------------------------------
def plan(entries: int, rng: random.Random) -> list[PlannedEntry]:
    """Ids, families, topics and section counts of every entry, with cross_refs between them."""
    planned: list[PlannedEntry] = []
    counters: dict[str, int] = {}
    names, weights = zip(*FAMILY_SHARE)
    for n in range(entries):
        topic = TOPICS[n % len(TOPICS)] if n < len(TOPICS) else rng.choice(TOPICS)
        family = rng.choices(names, weights)[0]
        stand = f"{rng.choice((2023, 2024, 2025, 2025, 2026, 2026))}-{rng.randint(1, 12):02d}"
        writer = _Writer(rng)
        if family == "briefing":
            key = f"pv-{topic.short}"
            what = rng.choice(("im Überblick", f"bei {rng.choice(EVENTS)}", f"für {rng.choice(EMPLOYEES)}", "und Abrechnung", str(rng.randint(2023, 2026))))
            title = f"{rng.choice(topic.terms)} – {writer.compound(topic)} {what}"
            sections = 5
        elif family == "gesetz":
            law = rng.choice(topic.laws)
            para = rng.randint(1, 130)
            key = f"ris-{_slug(law)}-{para}"
            title = f"§ {para} {law} – {rng.choice(topic.terms)} (Zusammenfassung)"
            sections = rng.randint(*SECTIONS[family])
        elif family == "kv":
            branch = rng.choice(BRANCHES)
            key = f"kv-{branch}-{topic.short}"
            title = f"KV {branch.capitalize()} – {rng.choice(topic.terms)} und Lohntafel"
            sections = rng.randint(*SECTIONS[family])
        else:
            court, reg = rng.choice(COURTS)
            number = rng.randint(1, 199)
            key = f"rj-{court}-{topic.short}-{number}"
            title = f"{court.upper()} {rng.randint(1, 15)} {reg} {number}/{rng.randint(10, 25)} – {rng.choice(topic.terms)}"
            sections = rng.randint(*SECTIONS[family])
        # briefings are numbered like the real ones (pv-sz-01); the others only when their key repeats
        counters[key] = counters.get(key, 0) + 1
        entry_id = f"{key}-{counters[key]:02d}" if family == "briefing" else key if counters[key] == 1 else f"{key}-v{counters[key]}"
        tags = list(dict.fromkeys(rng.sample(topic.terms, 3) + list(rng.sample(topic.abbreviations, min(2, len(topic.abbreviations))))))
        legal = list(dict.fromkeys(_law(rng, topic) for _ in range(rng.randint(1, 3))))
        planned.append(PlannedEntry(entry_id, family, topic, title, stand, sections, tags, legal))
    assert len({p.id for p in planned}) == len(planned), "synthetic ids must be unique"
    by_topic: dict[str, list[PlannedEntry]] = {}
    for p in planned:
        by_topic.setdefault(p.topic.slug, []).append(p)
    for p in planned:
        peers = [q.id for q in by_topic[p.topic.slug] if q.id != p.id]
        p.cross_refs = rng.sample(peers, min(len(peers), rng.randint(1, 5)))
    return planned


def render(p: PlannedEntry, titles: dict[str, str], rng: random.Random) -> str:
    w = _Writer(rng)
    t = p.topic
    sections: list[tuple[str, str]] = [("Zusammenfassung", w.paragraph(t, n=(2, 5)))]
    if p.family == "briefing":
        kv = w.table(t, rows=(3, 30 if rng.random() < 0.1 else 9)) + "\n\n" + w.paragraph(t, n=(1, 2))
        sections += [
            ("Kernwerte & Fristen", kv),
            ("Rechtsgrundlagen", "\n".join(f"- {b} – {rng.choice(t.terms)}" for b in p.legal_bases)),
            ("Payroll-Relevanz (Odoo)", "\n".join(f"- {w.fill(rng.choice(SENTENCES), t)}" for _ in range(rng.randint(2, 4)))),
        ]
    elif p.family == "gesetz":
        para = p.title.split()[1]
        for n in range(1, p.n_sections):
            body = "\n\n".join(w.paragraph(t, LAW_SENTENCES, (2, 4)) for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.15:
                body += "\n\n" + w.table(t)
            sections.append((f"§ {para} Abs. {n} – {rng.choice(t.terms)}", body))
    elif p.family == "kv":
        for n in range(1, p.n_sections):
            if n % 4 == 1:
                sections.append((f"Lohntafel {2023 + n % 4} – {rng.choice(t.terms)}", w.pay_table(t)))
            else:
                sections.append((f"Abschnitt {n} – {w.compound(t)}", "\n\n".join(w.paragraph(t) for _ in range(rng.randint(1, 2)))))
    else:
        names = ("Sachverhalt", "Vorinstanzen", "Rechtliche Beurteilung", "Rechtssatz", "Begründung", "Ergebnis")
        for n in range(1, p.n_sections):
            name = names[n - 1] if n <= len(names) else f"Begründung {n - len(names) + 1}"
            sections.append((name, "\n\n".join(w.paragraph(t, RJ_SENTENCES + SENTENCES[:6]) for _ in range(rng.randint(1, 3)))))
    sections.append(("Verweise", "\n".join(f"- [{r}] {titles[r]}" for r in p.cross_refs) or "- keine"))
    front = [
        "---",
        f"id: {p.id}",
        f"title: {json.dumps(p.title, ensure_ascii=False)}",
        f'stand: "{p.stand}"',
        f"topic: {p.topic.slug}",
        f"tags: {json.dumps(p.tags, ensure_ascii=False)}",
        f"legal_bases: {json.dumps(p.legal_bases, ensure_ascii=False)}",
        f"cross_refs: [{', '.join(p.cross_refs)}]",
        f"source: {p.family}",
        f"official: {'false' if p.family == 'kv' or rng.random() < 0.05 else 'true'}",
        'source_ref: "synthetisch (tools/pv-agent synth) – keine echten Werte"',
        "---",
    ]
    return "\n".join(front) + "\n" + "\n\n".join(f"## {h}\n{b}" for h, b in sections) + "\n"


def _slug(text: str) -> str:
    return "".join(ch for ch in text.lower().replace("ä", "ae").replace("ö", "oe").replace("ü", "ue") if ch.isalnum())


# -- vectors -------------------------------------------------------------------------------
class VectorSpace:
    """Clustered unit vectors: a shared direction, topic centroids, entry offsets, section-kind
    directions and noise, mixed by the weights above."""

    KINDS = ("content", "key_values", "references")

    def __init__(self, entry_ids: list[str], seed: int, dim: int):
        self.rng = np.random.default_rng(seed)
        self.dim = dim
        self.shared = self._unit(1)[0]
        self.topics = self._unit(len(TOPICS))
        self.kinds = self._unit(len(self.KINDS))
        self.entry_row = {e: i for i, e in enumerate(entry_ids)}
        self.offsets = self._unit(len(entry_ids))

    def _unit(self, n: int) -> np.ndarray:
        m = self.rng.standard_normal((n, self.dim), dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def chunk_vectors(self, entry_ids: list[str], topic_ids: list[int], kinds: list[str]) -> np.ndarray:
        e = np.array([self.entry_row[x] for x in entry_ids])
        k = np.array([self.KINDS.index(x) for x in kinds])
        m = (np.sqrt(W_GLOBAL) * self.shared + np.sqrt(W_TOPIC) * self.topics[np.array(topic_ids)]
             + np.sqrt(W_ENTRY) * self.offsets[e] + np.sqrt(W_KIND) * self.kinds[k] + np.sqrt(W_NOISE) * self._unit(len(e)))
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    def query_vector(self, entry_id: str, topic_id: int) -> np.ndarray:
        v = (np.sqrt(W_GLOBAL) * self.shared + np.sqrt(W_TOPIC) * self.topics[topic_id]
             + np.sqrt(W_ENTRY) * self.offsets[self.entry_row[entry_id]] + np.sqrt(QUERY_W_NOISE) * self._unit(1)[0])
        return (v / np.linalg.norm(v)).astype(np.float32)


def write_vectors(out: Path, space: VectorSpace, chunks, topic_of: dict[str, int]) -> None:
    """``vectors.npy`` in chunk order and ``vectors.hashes`` (content hash per row)."""
    matrix = np.lib.format.open_memmap(out / "vectors.npy", mode="w+", dtype=np.float32, shape=(len(chunks), space.dim))
    step = 8192
    for start in range(0, len(chunks), step):
        part = chunks[start : start + step]
        matrix[start : start + len(part)] = space.chunk_vectors(
            [c.entry_id for c in part], [topic_of[c.entry_id] for c in part], [c.kind for c in part]
        )
    matrix.flush()
    del matrix
    (out / "vectors.hashes").write_text("".join(f"{c.content_hash}\n" for c in chunks), encoding="ascii")


def write_queries(out: Path, space: VectorSpace, entries, planned: dict[str, PlannedEntry], topic_of: dict[str, int], n: int, seed: int) -> None:
    """Questions aimed at known entries, with vectors near those entries (not near one chunk)."""
    pick = random.Random(seed + 1)
    rows, vectors = [], []
    for e in pick.sample(entries, min(n, len(entries))):
        p = planned[e.id]
        form = pick.choice((
            "Wie hoch ist {0} bei {2} {y}?", "{0} {1} – was gilt bei {2}?", "gilt {0} auch für {e}?",
            "{1}: Wie rechne ich {0} bei {2} ab?", "Frage zu {0} und {1} im Jahr {y}",
        ))
        question = form.format(pick.choice(p.topic.terms), pick.choice(p.tags), pick.choice(EVENTS), y=e.stand[:4], e=pick.choice(EMPLOYEES))
        vectors.append(space.query_vector(e.id, topic_of[e.id]))
        rows.append({"question": question, "expected_id": e.id, "topic": e.topic})
    np.save(out / "queries.npy", np.asarray(vectors, dtype=np.float32))
    (out / "queries.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# -- the whole corpus ------------------------------------------------------------------------
def generate(out: str | Path, *, entries: int, seed: int = 1, dim: int = DIM, queries: int = QUERIES, progress=None) -> dict:
    """Write a synthetic knowledge base with vectors to ``out``; returns the manifest."""
    out = Path(out)
    started = time.monotonic()
    _prepare(out)
    rng = random.Random(seed)
    planned = plan(entries, rng)
    titles = {p.id: p.title for p in planned}
    docs = out / "dokumente"
    docs.mkdir(parents=True)
    for n, p in enumerate(planned, start=1):
        (docs / f"{p.id}.md").write_text(render(p, titles, rng), encoding="utf-8")
        if progress and (n % 500 == 0 or n == len(planned)):
            progress("schreiben", n, len(planned))
    loaded = load_knowledge_base(out)
    write_registry(out, loaded)
    chunks = [c for e in loaded.entries for c in chunk_entry(e, CHUNK_MAX_CHARS)]
    topic_index = {t.slug: i for i, t in enumerate(TOPICS)}
    topic_of = {e.id: topic_index[e.topic] for e in loaded.entries}
    space = VectorSpace([e.id for e in loaded.entries], seed, dim)
    write_vectors(out, space, chunks, topic_of)
    write_queries(out, space, loaded.entries, {p.id: p for p in planned}, topic_of, queries, seed)
    families: dict[str, int] = {}
    for e in loaded.entries:
        families[e.source] = families.get(e.source, 0) + 1
    manifest = {
        "generator": GENERATOR, "version": VERSION, "seed": seed, "entries": len(loaded.entries),
        "chunks": len(chunks), "dim": dim, "chunk_max_chars": CHUNK_MAX_CHARS, "queries": min(queries, len(loaded.entries)),
        "families": dict(sorted(families.items())), "clusters": len(loaded.clusters),
        "load_errors": [str(i) for i in loaded.errors], "text_mb": round(sum(len(c.text) for c in chunks) / 1e6, 1),
        "seconds": round(time.monotonic() - started, 1),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return manifest


def _prepare(out: Path) -> None:
    """Empty ``out`` — but only if it is empty or a synthetic corpus written before."""
    if out.exists() and any(out.iterdir()):
        manifest = out / "manifest.json"
        try:
            ours = json.loads(manifest.read_text(encoding="utf-8")).get("generator") == GENERATOR
        except (OSError, ValueError):
            ours = False
        if not ours:
            raise FileExistsError(f"{out} ist nicht leer und kein synthetischer Korpus (manifest.json fehlt) – nicht überschrieben")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def content_hash(text: str) -> str:
    """The key of a precomputed vector: sha256 of the text the indexer embeds (header + text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PrecomputedVectors:
    """The vector source of a synthetic corpus: looks a text's vector up by its content hash in
    ``vectors.npy`` / ``vectors.hashes``. Not a model — it knows only the texts it was given
    (the chunks as generated, plus those added with ``add``) and raises ``KeyError`` for any
    other text. Has the ``embed(texts, model=…)`` signature the indexer calls, and counts the
    texts it was asked for (the re-embeds of a benchmark run) and the time spent answering."""

    def __init__(self, corpus_dir: str | Path, mmap: bool = False):
        corpus_dir = Path(corpus_dir)
        self.matrix = np.load(corpus_dir / "vectors.npy", mmap_mode="r" if mmap else None)
        hashes = (corpus_dir / "vectors.hashes").read_text(encoding="ascii").split()
        self.row = {h: i for i, h in enumerate(hashes)}
        self.extra: dict[str, np.ndarray] = {}
        self.calls = 0
        self.texts = 0
        self.seconds = 0.0

    def vector_of_hash(self, digest: str) -> np.ndarray:
        if digest in self.extra:
            return self.extra[digest]
        return np.asarray(self.matrix[self.row[digest]])

    def add(self, text: str, vector) -> None:
        """Register the vector of a text that is not in the corpus (an edited chunk)."""
        self.extra[content_hash(text)] = np.asarray(vector, dtype=np.float32)

    def embed(self, texts: list[str], model: str | None = None) -> list[list[float]]:
        started = time.perf_counter()
        self.calls += 1
        self.texts += len(texts)
        out = [self.vector_of_hash(content_hash(t)).tolist() for t in texts]
        self.seconds += time.perf_counter() - started
        return out
