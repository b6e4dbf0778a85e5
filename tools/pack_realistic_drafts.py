"""Pack drafts written by model players into tests/data/realistic_drafts/<split>/<id>.json.

Inputs: the captured prompts (tools/capture_prompts.py: question, split, kind, context) and
the drafts a helper session wrote from the prompt's messages alone (``<play>/drafts/<id>.md``,
``<play>/provenance.jsonl``). Every draft is checked by hand before it is a "right" case; the
result is kept in ``hand_checks.json`` beside the packed data ({id: {"result": "ok" | "fixed: …"
| "excluded: …", "replace": [[old, new], …]}}) and copied into each packed file.

    .venv/bin/python tools/pack_realistic_drafts.py --prompts /tmp/prompts \
        --play /tmp/play/cal /tmp/play/rep1 /tmp/play/rep2            # pack
    .venv/bin/python tools/pack_realistic_drafts.py … --review q-a-006  # the hand-check view

The review view lists every sentence with its citations (own or inherited) and, for each
figure, the lines of the cited blocks that hold its value – the help for checking by hand that
each figure stands in the row, column and year the sentence gives it. Drafts without a
hand-check record are not packed (listed on stderr).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from mutations import find_figures, segments  # noqa: E402

OUT = ROOT / "tests" / "data" / "realistic_drafts"
SPLITS = ("calibration", "heldout", "fresh")


def load_prompt(prompts: Path, draft_id: str) -> dict | None:
    for split in SPLITS:
        p = prompts / split / f"{draft_id}.json"
        if p.exists():  # the folder names the split: fresh questions carry "heldout" in their record
            return dict(json.loads(p.read_text(encoding="utf-8")), split=split)
    return None


def provenance(play: Path) -> dict[str, dict]:
    out = {}
    path = play / "provenance.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec
    return out


def review(draft_id: str, draft: str, prompt: dict, compact_years: bool = False) -> str:
    blocks = {b["entry_id"]: b for b in prompt["context"]["blocks"]}
    lines = [f"=== {draft_id} · {prompt['split']} · {prompt['kind']} · {prompt['question']}"]
    marked = [b for b, blk in blocks.items() if blk.get("conflict_marked")]
    if marked:
        lines.append(f"  ⚠ im Kontext: {', '.join(marked)}; ⚠ im Entwurf: {draft.count('⚠')}")
    for m in re.finditer(r"\[([^\]\n]*)\]", draft):
        for token in re.findall(r"[a-z]{2,4}-[\w-]+", m.group(1)):
            if token not in blocks:
                lines.append(f"  ✗ Zitat ohne Block: {token}")
    for seg in segments(draft, list(blocks)):
        text = draft[seg.start:seg.end].strip()
        inherited = "" if seg.own_ids else " (geerbt)"
        lines.append(f"  [{seg.kind}] {text}   → {', '.join(seg.cited) or '—'}{inherited}")
        for fig in find_figures(text):
            if fig.kind == "num" or (fig.kind == "year" and not compact_years):
                continue
            where = []
            for bid in seg.cited:
                header = ""
                for bl in blocks[bid]["text"].split("\n"):
                    if bl.startswith("|") and not header:
                        header = bl.strip()
                    elif not bl.startswith("|"):
                        header = ""
                    if any(f.value == fig.value for f in find_figures(bl)):
                        shown = f"{header} ⇒ {bl.strip()}" if header and bl.strip() != header else bl.strip()
                        where.append(f"{bid}: {shown[:160]}")
            mark = "    ·" if where else "    ✗"
            lines.append(f"{mark} {fig.number} {fig.kind}{'/' + fig.unit if fig.unit else ''}: "
                         + (" | ".join(where[-1:] if any("⇒" in w for w in where[-1:]) else where[:1]) if where else "in keinem zitierten Block"))
    return "\n".join(lines)


def pack(draft_id: str, draft: str, prompt: dict, check: dict, style: str) -> dict:
    for old, new in check.get("replace", []):
        if old not in draft:
            raise SystemExit(f"Fehler: {draft_id}: Ersetzung nicht gefunden: {old!r}")
        draft = draft.replace(old, new)
    seen = prompt["messages"][1]["content"].rsplit("Frage: ", 1)[-1].strip() if prompt.get("messages") else ""
    extra = {"question_as_seen": seen} if seen and seen != prompt["question"].strip() else {}
    return {"id": draft_id, "question": prompt["question"], **extra, "split": prompt["split"], "kind": prompt["kind"],
            "draft": draft, "context": {"budget": prompt["context"]["budget"], "blocks": prompt["context"]["blocks"]},
            "hand_check": check["result"], "style": style}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", default="/tmp/prompts")
    parser.add_argument("--play", nargs="+", required=True)
    parser.add_argument("--review", nargs="*", help="print the hand-check view of these ids (none: all unchecked)")
    parser.add_argument("--split", help="pack into this split instead of the prompt's folder (e.g. report)")
    args = parser.parse_args(argv)
    checks_path = OUT / "hand_checks.json"
    checks = json.loads(checks_path.read_text(encoding="utf-8")) if checks_path.exists() else {}
    packed = unchecked = 0
    for play in map(Path, args.play):
        prov = provenance(play)
        for path in sorted((play / "drafts").glob("*.md")):
            draft_id = path.stem
            prompt = load_prompt(Path(args.prompts), draft_id)
            if prompt is None:
                print(f"Warnung: {draft_id}: kein Prompt gefunden", file=sys.stderr)
                continue
            draft = path.read_text(encoding="utf-8").strip() + "\n"
            if args.review is not None:
                if (args.review and draft_id in args.review) or (not args.review and draft_id not in checks):
                    print(review(draft_id, draft, prompt))
                continue
            if draft_id not in checks:
                unchecked += 1
                print(f"Hinweis: {draft_id}: noch nicht von Hand geprüft, nicht gepackt", file=sys.stderr)
                continue
            record = pack(draft_id, draft, prompt, checks[draft_id], prov.get(draft_id, {}).get("style", ""))
            if args.split:
                record["split"] = args.split
            target = OUT / record["split"] / f"{draft_id}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
            packed += 1
    if args.review is None:
        print(json.dumps({"packed": packed, "unchecked": unchecked}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
