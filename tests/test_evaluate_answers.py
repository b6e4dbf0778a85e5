"""Answer evaluation: metrics over a scripted run, JSON and HTML reports, bake-off page."""
from __future__ import annotations

import json

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluate_answers import bakeoff_html, evaluate_answers, load_goldset, write_reports
from pv_agent.engine.store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer

GOLDSET = """
- id: q-a-001
  question: "Wie hoch is die HBGL 2026 fürs Monat?"
  expected_ids: [pv-sv-02]
  kind: answer
- id: q-c-001
  question: "Freigrenze SZ 2024 – was stimmt?"
  expected_ids: [pv-sz-03, pv-sz-04]
  kind: conflict
- id: q-r-001
  question: "Wie mache ich die Umsatzsteuervoranmeldung?"
  expected_ids: []
  kind: refuse
- id: q-r-002
  question: "Wie hoch ist die Kurzarbeitsbeihilfe?"
  expected_ids: []
  kind: refuse
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    idx = SidecarIndex.open(build_test_index(tmp_path_factory.mktemp("kb")))
    yield idx
    idx.close()


def test_metrics_reports_and_bakeoff(tmp_path, index):
    (tmp_path / "goldset.yaml").write_text(GOLDSET, encoding="utf-8")
    goldset = load_goldset(tmp_path / "goldset.yaml")
    with OllamaAPIServer() as srv:
        srv.script(
            "Die HBGL 2026 beträgt 6.930 € (Stand 2026-01) [pv-sv-02].",
            "⚠ 2.100 € laut [pv-sz-03], ⚠ 2.447 € laut [pv-sz-04] (Stand 2024-01).",
        )
        report = evaluate_answers(goldset, index, Settings(ollama_url=srv.url, chat_timeout=5))
    m = report["metrics"]
    assert [i["state"] for i in report["items"]] == ["answered", "answered", "refused", "refused"]
    assert m["citation_precision"] == 1.0
    assert m["refusal_correctness"] == 1.0
    assert m["expected_source_rate"] == 1.0
    assert m["conflict_rate"] == 1.0
    assert m["figure_support_rate"] == 1.0
    assert m["clarify_rate"] is None
    assert m["latency_mean_ms"] > 0 and m["latency_p95_ms"] >= m["latency_mean_ms"] * 0.5
    json_path, html_path = write_reports(report, tmp_path / "reports", name="run1")
    assert json.loads(json_path.read_text(encoding="utf-8"))["metrics"] == m
    page = html_path.read_text(encoding="utf-8")
    assert page.count("<svg") >= 9 and "Zitier-Präzision" in page
    other = dict(report, model="gemma4:26b")
    bake = bakeoff_html([report, other])
    assert "qwen3.8:27b (v1)" in bake and "gemma4:26b (v1)" in bake and bake.count("<svg") == 9
