"""Answer evaluation: metrics over a scripted run, JSON and HTML reports, bake-off page."""
from __future__ import annotations

import json

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import load_goldset
from pv_agent.engine.evaluation.answers import METRICS, evaluate_answers
from pv_agent.engine.evaluation.report import bakeoff_html, write_reports
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer

GOLDSET = """
- id: q-a-001
  question: "Wie hoch is die HBGL 2026 fürs Monat?"
  expected_ids: [pv-sv-02]
  kind: answer
  expect_figures: ["6.930 €"]
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
    assert m["cited_ids_retrieved_rate"] == 1.0
    assert m["refusal_agreement_rate"] == 1.0
    assert m["expected_source_cited_rate"] == 1.0
    assert m["conflict_both_sides_warned_rate"] == 1.0
    assert m["verifier_no_unsupported_figure_rate"] == 1.0
    assert m["expected_figures_recall"] == 1.0 and m["all_expected_figures_rate"] == 1.0
    assert m["clarify_question_rate"] is None
    assert m["latency_mean_ms"] > 0 and m["latency_p95_ms"] >= m["latency_mean_ms"] * 0.5
    json_path, html_path = write_reports(report, tmp_path / "reports", name="run1")
    assert json.loads(json_path.read_text(encoding="utf-8"))["metrics"] == m
    page = html_path.read_text(encoding="utf-8")
    assert page.count("<svg") >= 9 and "Erwartete Zahlen im Antworttext" in page
    other = dict(report, model="gemma4:26b")
    bake = bakeoff_html([report, other])
    v = report["prompt_version"]
    assert f"qwen3.8:27b ({v})" in bake and f"gemma4:26b ({v})" in bake and bake.count("<svg") == len(METRICS)


def test_eval_command_with_answers_writes_reports(tmp_path):
    import json as _json
    import subprocess
    import sys

    from pv_agent.engine.config import Settings
    from pv_agent.engine.index.indexer import build_index
    from pv_agent.engine.kb.loader import load_knowledge_base
    from pv_agent.engine.ollama import OllamaClient
    from pv_agent.tests.ollama_api_server import OllamaAPIServer

    from conftest import ROOT
    from kbfactory import write_kb

    kb = write_kb(tmp_path / "kb")
    goldset = tmp_path / "goldset.yaml"
    goldset.write_text(
        "- {id: q1, question: 'Wie hoch sind die Überstundenzuschläge steuerfrei?', expected_ids: [pv-ues-01], kind: answer}\n"
        "- {id: q2, question: 'Wie hoch ist das Kinderbetreuungsgeld?', expected_ids: [], kind: refuse}\n",
        encoding="utf-8",
    )
    with OllamaAPIServer() as srv:
        settings = Settings(ollama_url=srv.url)
        index = str(tmp_path / "index.db")
        build_index(load_knowledge_base(kb).entries, index, settings, OllamaClient(settings))
        srv.script("Zuschläge für die ersten 18 Überstunden sind bis 200 € steuerfrei (Stand 2025-01) [pv-ues-01].",
                   "Dazu enthält die Wissensbasis keine Aussage.")
        out = subprocess.run(
            [sys.executable, "-m", "tools.cli", "eval", "--goldset", str(goldset), "--index", index,
             "--answers", "--reports", str(tmp_path / "reports"), "--json"],
            cwd=ROOT, capture_output=True, text=True, env={"OLLAMA_URL": srv.url, "PATH": "/usr/bin:/bin"},
        )
    assert out.returncode == 0, out.stderr
    report = _json.loads(out.stdout)
    assert report["retrieval"]["overall"]["recall@1"] == 1.0
    items = {i["id"]: i for i in report["answers"]["items"]}
    assert items["q1"]["state"] == "answered" and items["q1"]["cited"] == ["pv-ues-01"]
    assert items["q2"]["state"] == "refused"
    assert report["answers"]["metrics"]["cited_ids_retrieved_rate"] == 1.0
    assert all((tmp_path / "reports").joinpath(p.split("/")[-1]).exists() for p in report["report_files"])


KEYED_GOLDSET = """
- id: q-a-001
  question: "Wie hoch ist die HBGL 2026 monatlich?"
  expected_ids: [pv-sv-02]
  kind: answer
  expect_figures: ["6.930 €", "231 €"]
- id: q-a-002
  question: "Wie hoch ist die HBGL 2025 monatlich?"
  expected_ids: [pv-sv-01]
  kind: answer
  expect_figures: ["6.450 €"]
- id: q-c-001
  question: "Freigrenze SZ 2024 – was stimmt?"
  expected_ids: [pv-sz-03, pv-sz-04]
  kind: conflict
  expect_figures: ["2.100 €", "2.447 €"]
"""


def test_answers_are_scored_against_the_answer_keys_not_the_verifier(tmp_path, index):
    """A right figure in another notation counts, a figure the verifier passes but the key does not
    expect does not, and a ⚠ only the system's notice wrote is no conflict handling of the model."""
    (tmp_path / "goldset.yaml").write_text(KEYED_GOLDSET, encoding="utf-8")
    goldset = load_goldset(tmp_path / "goldset.yaml")
    assert goldset[0].expect_figures == ("6.930 €", "231 €")
    one_sided = "Die Freigrenze 2024 beträgt 2.100 € (Stand 2024-01) [pv-sz-03]."
    with OllamaAPIServer() as srv:
        srv.script(
            "Die HBGL 2026 beträgt monatlich 6930,00 EUR (Stand 2026-01) [pv-sv-02].",  # 1 of 2 key figures
            "Die HBGL 2025 beträgt täglich 215 € (Stand 2025-01) [pv-sv-01].",  # verified, but not the key
            one_sided, one_sided,  # the regeneration is one-sided again: uncertain with the system's ⚠
        )
        report = evaluate_answers(goldset, index, Settings(ollama_url=srv.url, chat_timeout=5))
    items = {i["id"]: i for i in report["items"]}
    assert items["q-a-001"]["found_figures"] == ["6.930 €"]
    assert items["q-a-002"]["state"] == "answered" and items["q-a-002"]["found_figures"] == []
    assert items["q-c-001"]["state"] == "uncertain" and not items["q-c-001"]["has_warning"]
    m = report["metrics"]
    assert m["expected_figures_recall"] == round(2 / 5, 4)  # 6.930 € and 2.100 €
    assert m["all_expected_figures_rate"] == 0.0
    assert m["conflict_both_sides_warned_rate"] == 0.0
    assert m["verifier_no_unsupported_figure_rate"] == 1.0  # the verifier alone would call this run perfect


def test_a_model_refusing_covered_questions_shows_in_the_report(tmp_path, index):
    """Issue 28: a model's refusal of a covered question ends "unanswered" (the entries, not the
    model's word); eval counts it apart, never as the model's citations, and the bake-off shows it."""
    (tmp_path / "goldset.yaml").write_text(GOLDSET, encoding="utf-8")
    goldset = [q for q in load_goldset(tmp_path / "goldset.yaml") if q.id in ("q-a-001", "q-r-001")]
    with OllamaAPIServer() as srv:
        srv.script("Dazu enthält die Wissensbasis keine Aussage.")
        report = evaluate_answers(goldset, index, Settings(ollama_url=srv.url, chat_timeout=5))
    m = report["metrics"]
    assert [i["state"] for i in report["items"]] == ["unanswered", "refused"]
    assert report["items"][0]["cited"] == [] and report["items"][0]["found_figures"] == []
    assert m["unanswered_rate"] == 1.0 and m["unanswered"] == 1
    assert m["refusal_agreement_rate"] == 1.0  # the covered question was not refused
    assert m["expected_figures_recall"] == 0.0  # nor answered
    _, html_path = write_reports(report, tmp_path / "reports", name="refusing")
    assert "1 Fragen ohne geprüfte Antwort" in html_path.read_text(encoding="utf-8")
    assert "Abgedeckte Fragen ohne belegte Antwort des Modells" in bakeoff_html([report, report])
