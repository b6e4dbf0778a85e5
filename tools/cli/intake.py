"""``pv-agent intake``: turn raw statutes, collective agreements or decisions into entries."""
from __future__ import annotations

from pathlib import Path

from pv_agent.engine.kb.intake import FAMILY_PREFIX, SECTION_CHARS, IntakeError, IntakeOptions, intake

from ._common import add_kb_argument, fail, hint, print_json

NAME = "intake"
HELP = "Rohquellen (Text, Markdown, HTML) als Einträge übernehmen: Gesetze, Kollektivverträge, Entscheidungen"


def add_arguments(parser) -> None:
    parser.add_argument("src_dir", help="Ordner mit .txt-, .md- oder .html-Dateien (eine Datei = ein Eintrag)")
    parser.add_argument("--family", required=True, choices=sorted(FAMILY_PREFIX), help="Quellenart (bestimmt das id-Präfix)")
    parser.add_argument("--stand", required=True, help="Rechtsstand JJJJ-MM, den die Quellen wiedergeben (wird nie geraten)")
    parser.add_argument("--topic", required=True, help="Cluster, z. B. urlaub oder sonderzahlungen")
    official = parser.add_mutually_exclusive_group()
    official.add_argument("--unofficial", dest="official", action="store_false", default=None,
                          help="nicht amtliche Wiedergabe (official: false)")
    official.add_argument("--official", dest="official", action="store_true",
                          help="amtlicher Text (Standard für gesetz und rechtsprechung, nicht für kv)")
    parser.add_argument("--tag", action="append", default=[], help="Schlagwort für alle Einträge (mehrfach möglich)")
    parser.add_argument("--section-chars", type=int, default=SECTION_CHARS,
                        help=f"höchste Länge eines erzeugten Abschnitts in Zeichen (Standard: {SECTION_CHARS})")
    add_kb_argument(parser)
    parser.add_argument("--json", action="store_true", help="Bericht als JSON")


def run(args) -> int:
    options = IntakeOptions(
        family=args.family, stand=args.stand, topic=args.topic, official=args.official,
        tags=tuple(args.tag), section_chars=max(200, args.section_chars),
    )
    try:
        report = intake(Path(args.src_dir), Path(args.kb), options)
    except IntakeError as exc:
        return fail(str(exc), 2)
    if args.json:
        print_json(report.as_dict())
    else:
        for label, ids in (("neu", report.created), ("geändert", report.updated), ("unverändert", report.unchanged)):
            for entry_id in ids:
                print(f"{label:<12} {Path(args.kb) / 'dokumente' / entry_id}.md")
        for error in report.errors:
            fail(f"{error['file']}: {error['message']}")
        print(
            f"{len(report.created)} neu, {len(report.updated)} geändert, {len(report.unchanged)} unverändert, "
            f"{len(report.errors)} Fehler."
        )
        if report.created or report.updated:
            hint(f"weiter mit tools/pv-agent registry --kb {args.kb} && tools/pv-agent validate --kb {args.kb}")
    return 1 if report.errors else 0
