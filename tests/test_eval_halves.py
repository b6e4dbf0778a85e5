"""The retrieval evaluation reports per half (calibration / held-out), can evaluate one half
alone, and lists misses of the calibration half only: whoever tunes the ranking must not see
held-out questions one by one."""
from __future__ import annotations

import json

from tools.cli.__main__ import main

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import evaluate_retrieval, load_goldset, question_split
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base

# Two questions per half, one found and one missed (its expected entry is not about it).
GOLDSET = """
- {id: c-hit, question: 'Wie hoch ist die Kommunalsteuer?', expected_ids: [pv-dg-01], split: calibration}
- {id: c-miss, question: 'Wie hoch ist die Kommunalsteuer?', expected_ids: [pv-url-01], split: calibration}
- {id: h-hit, question: 'Was ist das Jahressechstel?', expected_ids: [pv-sz-02], split: heldout}
- {id: h-miss, question: 'Was ist das Jahressechstel?', expected_ids: [pv-ues-01], split: heldout}
- {id: r-1, question: 'Wie hoch ist das Kinderbetreuungsgeld?', expected_ids: [], kind: refuse, split: heldout}
"""


def _setup(tmp_path, kb_dir):
    goldset = tmp_path / "goldset.yaml"
    goldset.write_text(GOLDSET, encoding="utf-8")
    index = tmp_path / "index.db"
    build_index(load_knowledge_base(kb_dir).entries, str(index), Settings(embedder="none"), None)
    return goldset, index


def test_figures_per_half_and_one_half_alone(kb_dir, tmp_path):
    goldset, path = _setup(tmp_path, kb_dir)
    questions = load_goldset(goldset)
    assert [question_split(q) for q in questions[:4]] == ["calibration", "calibration", "heldout", "heldout"]
    index = SidecarIndex.open(str(path))
    report = evaluate_retrieval(index, questions, Settings())
    per = report["per_split"]
    assert per["calibration"]["n"] == per["heldout"]["n"] == 2  # the refusal question has no expected ids
    for half in ("calibration", "heldout"):
        assert per[half]["recall@8"] == 0.5 and per[half]["mrr"] == 0.5 and set(per[half]) >= {"recall@1", "recall@3"}
    assert report["overall"]["recall@8"] == 0.5
    alone = evaluate_retrieval(index, questions, Settings(), half="calibration")
    assert alone["questions"] == 2 and {r["id"] for r in alone["rows"]} == {"c-hit", "c-miss"}
    assert alone["per_split"]["heldout"] == {"n": 0} and alone["overall"] == per["calibration"]


def test_cli_lists_calibration_misses_only(kb_dir, tmp_path, capsys):
    goldset, index = _setup(tmp_path, kb_dir)
    assert main(["eval", "--goldset", str(goldset), "--index", str(index), "--misses"]) == 0
    out = capsys.readouterr().out
    assert "[calibration]" in out and "[heldout]" in out
    assert "- c-miss" in out and "h-miss" not in out
    assert main(["eval", "--goldset", str(goldset), "--index", str(index), "--half", "calibration", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["retrieval"]
    assert report["half"] == "calibration" and {r["split"] for r in report["rows"]} == {"calibration"}


def test_refusals_of_one_half_alone(kb_dir, tmp_path, capsys):
    """``--half calibration --refusals`` does not retrieve the held-out refusal questions at all,
    and the text output names refusal questions of the calibration half only."""
    goldset, index = _setup(tmp_path, kb_dir)
    # a held-out "refusal" the knowledge base does cover: kept, so the old output named it
    goldset.write_text(GOLDSET + "- {id: r-kept, question: 'Wie hoch ist die Kommunalsteuer?', expected_ids: [], "
                       "kind: refuse, split: heldout}\n", encoding="utf-8")
    assert main(["eval", "--goldset", str(goldset), "--index", str(index), "--half", "calibration", "--refusals",
                 "--json"]) == 0
    refusals = json.loads(capsys.readouterr().out)["refusals"]
    assert refusals["heldout"]["uncovered"]["n"] == 0 and refusals["calibration"]["covered"]["n"] == 2
    assert main(["eval", "--goldset", str(goldset), "--index", str(index), "--refusals", "--json"]) == 0
    held = json.loads(capsys.readouterr().out)["refusals"]["heldout"]["uncovered"]
    assert held["n"] == 2 and "r-kept" in held["ids"]
    assert main(["eval", "--goldset", str(goldset), "--index", str(index), "--refusals"]) == 0
    assert "r-kept" not in capsys.readouterr().out  # held-out: counted, not named
