"""Answer evaluation over the goldset (design.md §6): the answer half of ``pv-agent eval --answers``.

Runs ``ask`` for every goldset question and scores the model's text against the goldset's
answer keys (``expect_figures``), never against the verifier's own verdict: which expected
figures the model wrote (in any notation), whether it cited the expected entries, refused
when it should, asked back, and marked both sides of a conflict with ⚠ itself (a ⚠ the
system adds in its notices does not count). Metrics that do come from the verifier say so
in their name. Plus latency (mean, p95). Writes a JSON report and an HTML report with one inline-SVG chart per
metric; ``bakeoff_html`` puts several reports (models) side by side.
"""
from __future__ import annotations

import html
import json
import math
import re
import time
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Callable

from ..answer import figures as fg
from ..answer import prompts
from ..answer.ask import ask
from ..config import Settings
from .retrieval import GoldQuestion
from ..ollama import OllamaClient

REFUSING_STATES = ("refused", "off_topic")
ANSWERING_STATES = ("answered", "answered_after_retry", "uncertain")

# (key, German label, kind): "rate" is a share 0..1, "ms" a latency.
METRICS = (
    ("expected_figures_recall", "Erwartete Zahlen im Antworttext (Anteil der Zahlen)", "rate"),
    ("all_expected_figures_rate", "Antworten mit allen erwarteten Zahlen", "rate"),
    ("cited_ids_retrieved_rate", "Zitierte IDs unter den gefundenen Einträgen", "rate"),
    ("refusal_agreement_rate", "Verweigert genau bei refuse-Fragen", "rate"),
    ("expected_source_cited_rate", "Erwartete Quelle zitiert", "rate"),
    ("clarify_question_rate", "Rückfrage bei clarify-Fragen gestellt", "rate"),
    ("conflict_both_sides_warned_rate", "Konflikt: beide Seiten zitiert, ⚠ vom Modell", "rate"),
    ("verifier_no_unsupported_figure_rate", "Prüfer: keine Zahl beanstandet", "rate"),
    ("verifier_passed_first_draft_rate", "Prüfer: erster Entwurf bestanden", "rate"),
    ("latency_mean_ms", "Latenz Mittelwert", "ms"),
    ("latency_p95_ms", "Latenz p95", "ms"),
)


@dataclass
class ItemResult:
    id: str
    kind: str
    question: str
    state: str
    expected: list[str]
    cited: list[str]
    retrieved: list[str]
    unsupported_figures: int
    unknown_citations: int
    one_sided_conflicts: int
    has_question: bool
    has_warning: bool  # a ⚠ the model wrote (not one of the system's notices)
    total_ms: float
    llm_ms: float
    llm_calls: int
    expect_figures: list[str] = None  # the answer key
    found_figures: list[str] = None  # those of the key the model's text states

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def evaluate_answers(
    goldset: list[GoldQuestion],
    index,
    settings: Settings,
    *,
    client: OllamaClient | None = None,
    now: date | None = None,
    progress: Callable[[int, int, ItemResult], None] | None = None,
) -> dict:
    """Ask every goldset question; return the report (plain dict, JSON-ready)."""
    client = client or OllamaClient(settings)
    results: list[ItemResult] = []
    started = time.monotonic()
    for n, item in enumerate(goldset, 1):
        answer = ask(item.question, index, settings, client=client, now=now)
        d = answer.as_dict()
        flags = d["flags"]
        text = model_text(answer.answer)
        res = ItemResult(
            id=item.id,
            kind=item.kind,
            question=item.question,
            state=answer.state,
            expected=list(item.expected_ids),
            cited=[c["id"] for c in answer.citations if answer.state != "sources_only"],
            retrieved=[r["id"] for r in answer.retrieved],
            unsupported_figures=len(flags["unsupported_figures"]),
            unknown_citations=len(flags["unknown_citations"]),
            one_sided_conflicts=sum(1 for c in flags["conflicts"] if c.get("one_sided")),
            has_question="?" in text,
            has_warning="⚠" in text,
            total_ms=d["timings"]["total_ms"],
            llm_ms=d["timings"]["llm_ms"],
            llm_calls=answer.llm_calls,
            expect_figures=list(item.expect_figures),
            found_figures=figures_found(item.expect_figures, text) if answer.state in ANSWERING_STATES else [],
        )
        results.append(res)
        if progress:
            progress(n, len(goldset), res)
    return {
        "created": datetime.now().isoformat(timespec="seconds"),
        "model": settings.chat_model,
        "embed_model": settings.embed_model,
        "prompt_version": prompts.PROMPT_VERSION,
        "settings": {k: getattr(settings, k) for k in ("temperature", "num_ctx", "num_predict", "top_k", "max_context_chars")},
        "questions": len(results),
        "duration_s": round(time.monotonic() - started, 1),
        "metrics": metrics(results),
        "states": _count(r.state for r in results),
        "items": [r.as_dict() for r in results],
    }


_SYSTEM_LINES = re.compile(r"^(?:> ?⚠.*|>\s*|_Die Wissensbasis enthält dazu nur den Stand .*_)$", re.MULTILINE)
_SYSTEM_MARKS = re.compile(r"\s*\*\*⟨[^⟩]*⟩\*\*|\s*\[[a-z0-9-]+ – nicht in den Quellen\]")


def model_text(answer: str) -> str:
    """The model's own text of an answer: without the notices and marks the system adds
    (uncertain/conflict/truncated notices, the other-year line, ⟨nicht belegt⟩ marks)."""
    return _SYSTEM_MARKS.sub("", _SYSTEM_LINES.sub("", answer)).strip()


def figures_found(expected: tuple[str, ...] | list[str], text: str) -> list[str]:
    """The answer-key figures that ``text`` states, in any notation (6.930 € = 6930,00 EUR)."""
    written = fg.extract(text)
    found = []
    for key in expected:
        wanted = fg.extract(key)
        if wanted and any(fg.same_value(w, f) or (w.kind == "date" and f.kind == "date" and w.value == f.value)
                          for w in wanted[:1] for f in written):
            found.append(key)
    return found


def metrics(results: list[ItemResult]) -> dict:
    answering = [r for r in results if r.state in ANSWERING_STATES]
    cited = sum(len(r.cited) for r in answering)
    valid = sum(sum(1 for c in r.cited if c in r.retrieved) for r in answering)
    judged = [r for r in results if r.state != "sources_only"]
    refusal_ok = [(r.kind == "refuse") == (r.state in REFUSING_STATES) for r in judged]
    with_expected = [r for r in judged if r.kind != "refuse" and r.expected]
    clarify = [r for r in judged if r.kind == "clarify"]
    conflict = [r for r in judged if r.kind == "conflict"]
    latencies = sorted(r.total_ms for r in judged if r.llm_calls)
    # answer keys: every judged question with a key counts; a refusal states none of its figures
    keyed = [r for r in judged if r.expect_figures]
    return {
        "expected_figures_recall": _share(sum(len(r.found_figures or ()) for r in keyed),
                                          sum(len(r.expect_figures) for r in keyed)),
        "all_expected_figures_rate": _share(
            sum(1 for r in keyed if len(r.found_figures or ()) == len(r.expect_figures)), len(keyed)),
        "cited_ids_retrieved_rate": _share(valid, cited),
        "refusal_agreement_rate": _share(sum(refusal_ok), len(refusal_ok)),
        "expected_source_cited_rate": _share(
            sum(1 for r in with_expected if set(r.cited) & set(r.expected)), len(with_expected)),
        "clarify_question_rate": _share(
            sum(1 for r in clarify if r.state in ANSWERING_STATES and r.has_question), len(clarify)),
        "conflict_both_sides_warned_rate": _share(
            sum(1 for r in conflict if set(r.expected) <= set(r.cited) and r.has_warning), len(conflict)),
        "verifier_no_unsupported_figure_rate": _share(
            sum(1 for r in answering if not r.unsupported_figures), len(answering)),
        "verifier_passed_first_draft_rate": _share(sum(1 for r in answering if r.state == "answered"), len(answering)),
        "latency_mean_ms": round(sum(latencies) / len(latencies), 1) if latencies else None,
        "latency_p95_ms": round(_percentile(latencies, 95), 1) if latencies else None,
        "sources_only": sum(1 for r in results if r.state == "sources_only"),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentile(values: list[float], p: float) -> float:
    rank = max(0, math.ceil(p / 100 * len(values)) - 1)
    return values[rank]


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


# -- reports ---------------------------------------------------------------------------------
def write_reports(report: dict, out_dir: str | Path, name: str | None = None) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = name or f"answers-{report['model'].replace(':', '_').replace('/', '_')}-{report['created'][:10]}"
    json_path, html_path = out / f"{stem}.json", out / f"{stem}.html"
    json_path.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    html_path.write_text(report_html(report), encoding="utf-8")
    return json_path, html_path


def report_html(report: dict) -> str:
    m = report["metrics"]
    charts = []
    for key, label, kind in METRICS:
        charts.append(_chart(label, [(report["model"], m.get(key))], kind))
    latencies = [(i["id"], i["total_ms"]) for i in report["items"] if i["llm_calls"]]
    if latencies:
        charts.append(_chart("Latenz je Frage", latencies, "ms"))
    rows = "".join(
        f"<tr><td>{_e(i['id'])}</td><td>{_e(i['kind'])}</td><td>{_e(i['state'])}</td>"
        f"<td>{_e(', '.join(i['expected']))}</td><td>{_e(', '.join(i['cited']))}</td>"
        f"<td>{len(i.get('found_figures') or [])}/{len(i.get('expect_figures') or [])}</td>"
        f"<td>{i['unsupported_figures']}</td><td>{i['total_ms'] / 1000:.1f} s</td><td>{_e(i['question'])}</td></tr>"
        for i in report["items"]
    )
    states = ", ".join(f"{_e(k)}: {v}" for k, v in sorted(report["states"].items()))
    body = (
        f"<h1>Antwort-Evaluation – {_e(report['model'])}</h1>"
        f"<p>{report['questions']} Fragen · Prompt {_e(report['prompt_version'])} · {_e(report['created'])} · "
        f"Zustände: {states}</p>"
        + ("<p><b>Achtung:</b> {} Fragen nur mit Quellen beantwortet (kein Sprachmodell erreichbar).</p>"
           .format(m["sources_only"]) if m.get("sources_only") else "")
        + '<div class="charts">' + "".join(charts) + "</div>"
        + "<table><tr><th>ID</th><th>Art</th><th>Zustand</th><th>erwartet</th><th>zitiert</th>"
          "<th>erwartete Zahlen</th><th>vom Prüfer beanstandet</th><th>Zeit</th><th>Frage</th></tr>" + rows + "</table>"
    )
    return _page(f"Antwort-Evaluation {report['model']}", body)


def bakeoff_html(reports: list[dict]) -> str:
    """Several reports (one per model or prompt) side by side, one chart per metric."""
    labels = [f"{r['model']} ({r['prompt_version']})" for r in reports]
    charts = [
        _chart(label, [(lab, r["metrics"].get(key)) for lab, r in zip(labels, reports)], kind)
        for key, label, kind in METRICS
    ]
    head = "".join(f"<li>{_e(lab)}: {r['questions']} Fragen, {_e(r['created'])}</li>" for lab, r in zip(labels, reports))
    return _page("Bake-off", f"<h1>Bake-off</h1><ul>{head}</ul><div class=\"charts\">{''.join(charts)}</div>")


def _chart(title: str, bars: list[tuple[str, float | None]], kind: str) -> str:
    """A horizontal bar chart as inline SVG; rates on a 0–100 % scale, latencies in seconds."""
    width, label_w, bar_h, gap = 520, 190, 18, 6
    values = [v for _, v in bars if v is not None]
    top = 1.0 if kind == "rate" else (max(values) if values else 1.0) or 1.0
    height = 28 + len(bars) * (bar_h + gap)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
             f'<text x="0" y="16" font-weight="bold">{_e(title)}</text>']
    for n, (name, value) in enumerate(bars):
        y = 28 + n * (bar_h + gap)
        span = width - label_w - 70
        w = 0 if value is None else max(1, span * value / top)
        shown = "–" if value is None else (f"{value * 100:.1f} %" if kind == "rate" else f"{value / 1000:.1f} s")
        parts.append(f'<text x="0" y="{y + 13}">{_e(str(name)[:28])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#4a7ab5"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 13}">{shown}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="de"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        ".charts svg{display:block;margin:1em 0}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}</style></head>"
        f"<body>{body}</body></html>"
    )


def _e(text) -> str:
    return html.escape(str(text))
