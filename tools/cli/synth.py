"""``pv-agent synth``: write a synthetic knowledge base with precomputed vectors for the benchmark."""
from __future__ import annotations

from tools.synthcorpus import DIM, QUERIES, REAL_ENTRIES, generate

from ._common import ROOT, ProgressBar, fail, print_json

NAME = "synth"
HELP = "Synthetischen Korpus für den Benchmark erzeugen (1× = 1.622 Einträge ≈ 16.500 Abschnitte, 10×), mit Vektoren"


def add_arguments(parser) -> None:
    parser.add_argument("--scale", type=int, choices=(1, 10), default=1, help="Größe relativ zum echten System (Standard: 1)")
    parser.add_argument("--entries", type=int, default=None, help="genaue Anzahl der Einträge (statt --scale, z. B. für Tests)")
    parser.add_argument("--out", default=None, help=f"Zielordner (Standard: {ROOT / 'synthetic'}/scale-N bzw. …/entries-N)")
    parser.add_argument("--seed", type=int, default=1, help="Zufallskeim; gleicher Keim → gleiche Dateien (Standard: 1)")
    parser.add_argument("--dim", type=int, default=DIM, help=f"Dimension der Vektoren (Standard: {DIM})")
    parser.add_argument("--queries", type=int, default=QUERIES, help=f"Anzahl der Benchmark-Fragen (Standard: {QUERIES})")
    parser.add_argument("--json", action="store_true", help="Manifest als JSON ausgeben")


def run(args) -> int:
    entries = args.entries or REAL_ENTRIES * args.scale
    if entries < 1:
        return fail("--entries muss mindestens 1 sein", 2)
    out = args.out or str(ROOT / "synthetic" / (f"entries-{args.entries}" if args.entries else f"scale-{args.scale}"))
    try:
        manifest = generate(out, entries=entries, seed=args.seed, dim=args.dim, queries=args.queries, progress=ProgressBar())
    except FileExistsError as exc:
        return fail(str(exc), 2)
    if args.json:
        print_json(manifest | {"out": out})
    else:
        print(
            f"{out}: {manifest['entries']} Einträge, {manifest['chunks']} Abschnitte ({manifest['chunks'] / manifest['entries']:.1f} je Eintrag), "
            f"{manifest['clusters']} Cluster, Vektoren {manifest['chunks']}×{manifest['dim']}, {manifest['queries']} Fragen, "
            f"{len(manifest['load_errors'])} Ladefehler, {manifest['seconds']} s"
        )
        print(f"  Quellenarten: {', '.join(f'{k} {v}' for k, v in manifest['families'].items())}")
    return 1 if manifest["load_errors"] else 0
