"""Mutation testing of the answer verifier: per kind generated / accepted / rate, right drafts ok.

    .venv/bin/python tools/mutation_report.py [--split calibration|…|report6|adversarial|all] [--json]
    .venv/bin/python tools/mutation_report.py --pipeline      # also: right drafts through `pv-agent ask --json`
    .venv/bin/python tools/mutation_report.py --split report6 --cell-margins 0,0.5,1,2,1000  # the wrong-cell trade-off

The table goes to stdout (with --json nothing but the JSON); the escapes (draft id, kind,
mutated sentence) and false alarms (draft id, the verifier's reasons) are human lines on
stderr. ``mutation_cases.CALIBRATION`` names the drafts the verifier was tuned on, ``REPORTED`` the ones
to report (``all``: every split, each on its own and the two pools together). ``--pipeline``
sends each right draft of the reported split through the real pipeline – ``tools/pv-agent ask --json``
against the scripted Ollama-API test server returning the draft – and counts the answers that
end ``answered`` on the first attempt (slower: one process per draft).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from mutation_cases import CALIBRATION, REPORTED, SPLITS, Case, cases, excluded, measure  # noqa: E402
from mutations import KINDS  # noqa: E402


def table(name: str, m) -> list[str]:
    lines = [f"## {name}: right drafts ok {m.right_ok}/{m.drafts}"
             + (f" ({m.right_ok / m.drafts:.1%})" if m.drafts else "")
             + (f"; {m.set_aside} mutations of rejected right drafts not counted" if m.set_aside else ""),
             "| kind | generated | accepted | rate |", "|---|---|---|---|"]
    for k in KINDS:
        lines.append(f"| {k} | {m.generated[k]} | {m.accepted[k]} | {m.rate(k):.1%} |")
    return lines


def pipeline(case_list: list[Case]) -> dict:
    """First-attempt states of the right drafts through ``pv-agent ask --json``."""
    from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

    states: dict[str, str] = {}
    first: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, OllamaAPIServer() as server:
        env = dict(os.environ, OLLAMA_URL=server.url, PV_AGENT_EMBEDDER="builtin",
                   PV_AGENT_INDEX=str(Path(tmp) / "index.db"))
        build = subprocess.run([str(ROOT / "tools" / "pv-agent"), "index", "--json"], env=env,
                               capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit(f"Fehler: index: {build.stderr.strip()[-300:]}")
        for case in case_list:
            server.replies.clear()
            server.default_reply = Reply(content=case.draft)  # the first attempt and a regeneration
            run = subprocess.run([str(ROOT / "tools" / "pv-agent"), "ask", "--json", case.question], env=env,
                                 capture_output=True, text=True)
            try:
                out = json.loads(run.stdout)
            except ValueError:
                states[case.id] = f"error: {run.stderr.strip()[-120:]}"
                continue
            state = out.get("state", "")
            if state == "answered" and out.get("llm_calls", 1) == 1:
                first.append(case.id)
            cited = {c.get("id") for c in out.get("citations", [])}
            missing = sorted(b.entry_id for b in case.context.blocks if b.entry_id not in
                             {r.get("id") for r in out.get("retrieved", [])} and b.entry_id in cited)
            states[case.id] = state + (f" (retrieved context differs: {missing})" if missing else "")
    return {"answered_first_attempt": len(first), "total": len(case_list), "states": states}


def margin_sweep(splits, margins: str, seed: int, as_json: bool) -> int:
    """The frontier of the wrong-cell decision: how many right drafts pass and how many mutations
    escape when a competitor must beat the figure's own cell by more (or less). A measurement of
    the design, not a tuning step: the shipped margin stays what the calibration pool set."""
    from pv_agent.engine.answer.verification import alignment

    shipped = alignment.CELL_MARGIN
    case_list = [c for s in splits for c in cases(s)]
    rows = []
    try:
        for margin in (float(m) for m in margins.split(",")):
            alignment.CELL_MARGIN = margin
            m = measure(case_list, seed=seed)
            rows.append({"margin": margin, "right": {"ok": m.right_ok, "total": m.drafts},
                         "kinds": {k: {"generated": m.generated[k], "accepted": m.accepted[k]} for k in KINDS}})
    finally:
        alignment.CELL_MARGIN = shipped
    if as_json:
        print(json.dumps({"splits": list(splits), "shipped_margin": shipped, "rows": rows}, indent=1))
        return 0
    print(f"## CELL_MARGIN trade-off on {'+'.join(splits)} (shipped: {shipped})")
    print("| margin | right drafts ok | " + " | ".join(k for k in KINDS if k != "negation") + " |")
    print("|---|---|" + "---|" * (len(KINDS) - 1))
    for r in rows:
        ok, total = r["right"]["ok"], r["right"]["total"]
        print(f"| {r['margin']:g} | {ok}/{total} ({ok / total:.1%}) | " + " | ".join(
            f"{r['kinds'][k]['accepted']}/{r['kinds'][k]['generated']}" for k in KINDS if k != "negation") + " |")
    return 0


def originals(splits: list[str]) -> dict:
    """The drafts as the players wrote them, where the hand check fixed them: realistic wrong drafts
    (the original is the packed draft with the check's edits undone). Rejected ones, and of those the
    ones whose corrected draft passes – rejected for their error, not for a false alarm."""
    from mutation_cases import DATA
    from mutations import verifier_verdict

    checks = json.loads((DATA / "hand_checks.json").read_text(encoding="utf-8"))
    out = {}
    for split in splits:
        rows = []
        for case in cases(split):
            check = checks.get(case.id, {})
            if not check.get("result", "").startswith("fixed") or not check.get("replace"):
                continue
            original = case.draft
            for old, new in reversed(check["replace"]):
                original = original.replace(new, old)
            rejected = not verifier_verdict(original, case.context, case.question)[0]
            fixed_ok = verifier_verdict(case.draft, case.context, case.question)[0]
            rows.append({"id": case.id, "rejected": rejected, "for_its_error": rejected and fixed_ok,
                         "fix": check["result"][:140]})
        out[split] = {"originals": len(rows), "rejected": sum(r["rejected"] for r in rows),
                      "rejected_for_their_error": [r["id"] for r in rows if r["for_its_error"]], "drafts": rows}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS + ("all",), default="all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pipeline", action="store_true", help="also run the reported split through pv-agent ask")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--cell-margins", metavar="M,M,…",
                        help="instead of the report: the trade-off of alignment.CELL_MARGIN – right drafts "
                             "and accepted mutations per kind for each margin (1000: no wrong-cell check)")
    parser.add_argument("--originals", action="store_true",
                        help="instead of the report: the drafts the hand check fixed, as the players wrote "
                             "them – how many the verifier rejects, and how many for their error")
    args = parser.parse_args(argv)
    if args.originals:
        splits = [s for s in SPLITS if s != "adversarial"] if args.split == "all" else [args.split]
        found = originals(splits)
        if args.json:
            print(json.dumps(found, ensure_ascii=False, indent=1))
            return 0
        for split, r in found.items():
            if r["originals"]:
                print(f"{split}: {r['originals']} originals, {r['rejected']} rejected, "
                      f"{len(r['rejected_for_their_error'])} for their error "
                      f"({', '.join(r['rejected_for_their_error']) or '–'})")
        return 0
    if args.cell_margins:
        return margin_sweep(SPLITS if args.split == "all" else (args.split,), args.cell_margins, args.seed, args.json)

    splits = SPLITS if args.split == "all" else (args.split,)
    measured = {s: measure(cases(s), seed=args.seed) for s in splits}
    if all(s in measured for s in CALIBRATION):
        pool = measured[CALIBRATION[0]]
        for s in CALIBRATION[1:]:
            pool = pool.add(measured[s])
        measured["+".join(CALIBRATION)] = pool
    if all(s in measured for s in REPORTED + ("adversarial",)):
        measured["+".join(REPORTED) + "+adversarial"] = measured[REPORTED[0]].add(measured["adversarial"])
    result = {name: m.as_dict() for name, m in measured.items()}
    for s in splits:
        if s != "adversarial":
            result[s]["excluded"] = [{"id": i, "why": why} for i, why in excluded(s)]
    if args.pipeline:
        result["pipeline"] = pipeline([c for s in REPORTED for c in cases(s)])

    for name, m in measured.items():
        if "+" in name:
            continue
        for e in m.escapes:
            print(f"Entwischt: {e['id']} · {e['kind']} ({e['detail']}): {e['mutated']}", file=sys.stderr)
        for a in m.false_alarms:
            print(f"Fehlalarm: {a['id']}: {' | '.join(a['reasons'])}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    for name, m in measured.items():
        print("\n".join(table(name, m)) + "\n")
    if args.pipeline:
        p = result["pipeline"]
        print(f"## pipeline (pv-agent ask --json, {'+'.join(REPORTED)} split): answered on the first attempt "
              f"{p['answered_first_attempt']}/{p['total']}")
        for cid, state in sorted(p["states"].items()):
            if state != "answered":
                print(f"- {cid}: {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
