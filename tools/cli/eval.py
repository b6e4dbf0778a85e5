"""``pv-agent eval``: measure retrieval (and, with --answers, the answers) on a goldset."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pv_agent.engine.evaluation.retrieval import (
    GOLDSET_TODAY, K_VALUES, SPLITS, calibrate_relevance, evaluate_retrieval, load_goldset, question_split, refusal_report,
    relevance_rows,
)
from pv_agent.engine.evaluation.answers import METRICS, evaluate_answers
from pv_agent.engine.evaluation.report import bakeoff_html, write_reports
from pv_agent.engine.index.embedders import query_embedder
from pv_agent.engine.llm_clients import ModelClient, make_client
from pv_agent.engine.index.target import open_index
from pv_agent.engine.index.base import IndexError_

from pv_agent.engine.ollama import OllamaError

from ._common import DEFAULT_KB, EXIT_USAGE, ROOT, add_index_argument, fail, index_target, print_json, settings

DEFAULT_GOLDSET = str(Path(DEFAULT_KB) / "goldset.yaml")
DEFAULT_REPORTS = str(ROOT / "reports")

NAME = "eval"
HELP = "Goldset auswerten: Recall@k, MRR, Trefferquote (mit --answers auch die Antworten)"


def add_arguments(parser) -> None:
    parser.add_argument("--goldset", default=DEFAULT_GOLDSET, help=f"Goldset (YAML; Standard: {DEFAULT_GOLDSET})")
    add_index_argument(parser)
    parser.add_argument("--answers", action="store_true", help="auch die Antworten auswerten (braucht Ollama)")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="mit --answers: nur N Fragen, gleichmäßig über das Goldset verteilt (für ein langsames Modell)")
    parser.add_argument("--reports", default=DEFAULT_REPORTS,
                        help=f"Ordner für JSON- und HTML-Berichte (mit --answers; Standard: {DEFAULT_REPORTS})")
    parser.add_argument("--bakeoff", nargs="+", metavar="REPORT.json", help="Modellvergleich aus mehreren JSON-Berichten")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")
    parser.add_argument("--misses", action="store_true",
                        help="verfehlte Fragen der Kalibrierungshälfte auflisten (die zurückgehaltenen nie einzeln)")
    parser.add_argument("--half", choices=SPLITS,
                        help="nur eine Hälfte auswerten (zum Abstimmen: calibration, ohne die zurückgehaltenen Zahlen)")
    parser.add_argument("--refusals", action="store_true",
                        help="Relevanzprüfung ohne Sprachmodell: Ablehnungen je Hälfte (Kalibrierung/zurückgehalten)")
    parser.add_argument("--calibrate", action="store_true",
                        help="mit --refusals: Schwellen auf der Kalibrierungshälfte bestimmen und damit berichten")


def run(args) -> int:
    if args.bakeoff:
        reports = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.bakeoff]
        out = Path(args.reports) / "bakeoff.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(bakeoff_html(reports), encoding="utf-8")
        print(f"Modellvergleich geschrieben: {out}")
        return 0
    cfg = settings()
    if not Path(args.goldset).is_file():
        return fail(f"Goldset {args.goldset} nicht gefunden.")
    if args.sample is not None and (args.sample < 1 or not args.answers):
        return fail("--sample N braucht --answers und N ≥ 1.", EXIT_USAGE)
    client = make_client(cfg)
    if args.answers:
        problem = _chat_model_problem(client, cfg.chat_model)
        if problem:  # otherwise every question "fails" and the report measures the outage
            return fail(f"{problem} – eval --answers braucht das Sprachmodell; ohne --answers wird nur die Suche gemessen.")
    try:
        index = open_index(index_target(args))
    except IndexError_ as exc:
        return fail(str(exc))
    goldset = load_goldset(args.goldset)
    embedder, why = query_embedder(index, cfg, client)
    if why:
        print(f"Hinweis: {why}", file=sys.stderr)
    report = {"retrieval": evaluate_retrieval(index, goldset, cfg, embedder=embedder, half=args.half)}
    if args.refusals:
        # --half calibration: the held-out questions are not even retrieved (tuning stays blind to them)
        asked = [q for q in goldset if args.half is None or question_split(q) == args.half]
        rows = relevance_rows(index, asked, cfg, embedder=embedder)
        if args.calibrate:
            found = calibrate_relevance(rows, cfg)
            report["calibrated"] = found
            cfg = cfg.replace(**found)
            from pv_agent.engine.retrieval.gates import supported_by_signals

            for row in rows:
                row["supported"] = supported_by_signals(row, cfg)
        report["refusals"] = refusal_report(rows)
    if args.answers:
        def progress(n, total, item):
            print(f"\r{n}/{total} {item.id}: {item.state:<22}", end="", file=sys.stderr, flush=True)

        asked = spread_sample(goldset, args.sample) if args.sample else goldset
        answers = evaluate_answers(asked, index, cfg, client=client, now=GOLDSET_TODAY, progress=progress)
        print(file=sys.stderr)
        answers["retrieval"] = {k: v for k, v in report["retrieval"].items() if k != "rows"}
        json_path, html_path = write_reports(answers, args.reports)
        report["answers"] = answers
        report["report_files"] = [str(json_path), str(html_path)]
    if args.json:
        print_json(report)
        return 0
    _print_retrieval(report["retrieval"], args.misses)
    if args.refusals:
        _print_refusals(report["refusals"], report.get("calibrated"))
    if args.answers:
        _print_answers(report["answers"], report["report_files"])
    return 0


def spread_sample(goldset: list, n: int) -> list:
    """``n`` questions at even steps through the goldset (its order mixes topics and kinds); the
    same ``n`` always gives the same questions, so two models' reports compare."""
    if n <= 0 or n >= len(goldset):
        return list(goldset)
    return [goldset[i * len(goldset) // n] for i in range(n)]


def _chat_model_problem(client: ModelClient, model: str) -> str:
    """"" when the server answers and has the chat model, else one line saying why not."""
    try:
        names = client.list_models()
    except OllamaError as exc:
        return f"{exc.reason}: {exc}"
    if model not in names and f"{model}:latest" not in names:
        server = "Ollama-Server" if client.api == "ollama" else "Modell-Server"
        return f"Sprachmodell {model} auf dem {server} {client.base_url} nicht vorhanden (vorhanden: {', '.join(names) or 'keines'})"
    return ""


def _print_retrieval(retrieval: dict, misses: bool) -> None:
    only = f", nur Hälfte {retrieval['half']}" if retrieval.get("half") else ""
    print(f"Retrieval ({retrieval['mode']}), {retrieval['questions']} Fragen{only}")
    header = "".join(f"  R@{k:<5}" for k in K_VALUES) + "  MRR    Treffer  n"
    print(f"{'':<15}{header}")
    per_split = [(f"[{name}]", summary) for name, summary in retrieval.get("per_split", {}).items()]
    for name, summary in [("gesamt", retrieval["overall"]), *per_split, *retrieval["per_kind"].items()]:
        if not summary.get("n"):
            continue
        cells = "".join(f"  {summary[f'recall@{k}']:<6.3f}" for k in K_VALUES)
        print(f"{name:<15}{cells}  {summary['mrr']:<6.3f} {summary['hit_rate']:<7.3f}  {summary['n']}")
    lat = retrieval["latency_ms"]
    print(f"Latenz retrieve: p50 {lat['p50']} ms, p95 {lat['p95']} ms")
    if misses:
        # Only the calibration half's misses are shown one by one: whoever tunes the ranking
        # looks at those, and the held-out half stays a fair measure of the result.
        print("Verfehlt (nur Kalibrierungshälfte):")
        for row in retrieval["rows"]:
            if row.get("missing") and row.get("split") == "calibration":
                print(f"- {row['id']} ({row['kind']}): fehlt {', '.join(row['missing'])} – {row['question']}")
                print(f"    gefunden: {', '.join(row['retrieved'][:5])}")


def _print_refusals(refusals: dict, calibrated: dict | None) -> None:
    print("\nRelevanzprüfung ohne Sprachmodell (gates.supported)")
    if calibrated is not None:
        print("  kalibriert (nur Kalibrierungshälfte): " + ", ".join(f"{k}={v}" for k, v in calibrated.items()))
    for half in SPLITS:
        part = refusals[half]
        unc, cov, other = part["uncovered"], part["covered"], part["other_refuse"]
        print(f"  {half:<12} nicht abgedeckt abgelehnt: {_pct(unc['refused'])} (n={unc['n']}); "
              f"abgedeckt fälschlich abgelehnt: {_pct(cov['wrongly_refused'])} (n={cov['n']}); "
              f"übrige refuse-Fragen abgelehnt: {_pct(other['refused'])} (n={other['n']})")
        if half != "calibration":
            continue  # as with --misses: held-out questions are not shown one by one
        if cov["ids"]:
            print(f"    fälschlich abgelehnt: {', '.join(cov['ids'])}")
        if unc["ids"]:
            print(f"    nicht abgelehnt: {', '.join(unc['ids'])}")


def _pct(value) -> str:
    return "–" if value is None else f"{value * 100:.1f} %"


def _print_answers(answers: dict, files: list[str]) -> None:
    print(f"\nAntworten ({answers['model']}, Prompt {answers['prompt_version']}), {answers['questions']} Fragen")
    for key, label, kind in METRICS:
        value = answers["metrics"].get(key)
        if value is None:
            shown = "–"
        elif kind == "rate":
            shown = f"{value * 100:.1f} %"
        else:
            shown = f"{value / 1000:.1f} s"
        print(f"  {label:<42} {shown}")
    print("  Zustände: " + ", ".join(f"{k} {v}" for k, v in answers["states"].items()))
    print("Berichte: " + ", ".join(files))
