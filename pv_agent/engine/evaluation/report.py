"""The answer evaluation's reports: the JSON report, an HTML page with one inline-SVG bar chart
per metric (``report_html``), and several reports (models or prompts) side by side
(``bakeoff_html``). Hand-drawn SVG keeps the report a single file with no chart library.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from .answers import METRICS


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
        + ("<p>{} Fragen ohne geprüfte Antwort: das Modell gab keine belegte Antwort, die Wissensbasis deckt "
           "die Frage ab; gezeigt wurden die passenden Einträge, ungeprüft.</p>"
           .format(m["unanswered"]) if m.get("unanswered") else "")
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
