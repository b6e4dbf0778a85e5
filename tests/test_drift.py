"""Source drift: exactly the answers whose cited sections changed are flagged, with a diff."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

from pv_agent.engine.drift import CHANGED, REMOVED, UNCHANGED, check_answers, fingerprint_of_hit
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex

from conftest import ROOT


def _answer(index, settings, question, answer_id, section=None):
    hits = retrieve(index, question, settings).hits
    hit = next(h for h in hits if section is None or h.section == section)
    return {"id": answer_id, "question": question, "fingerprints": [fingerprint_of_hit(hit).as_dict()]}


def _setup(kb_dir, tmp_path, settings):
    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, None)
    return path, SidecarIndex.open(path)


def test_changed_figure_flags_exactly_the_answers_citing_it(kb_dir, tmp_path, dead_settings):
    path, index = _setup(kb_dir, tmp_path, dead_settings)
    on_figure = _answer(index, dead_settings, "Überstunden Höchstbetrag 200 €", "a1")
    assert on_figure["fingerprints"][0]["section"] == "Kernwerte & Fristen"
    on_other = _answer(index, dead_settings, "Kommunalsteuer Gemeinde", "a2")
    old_copy = str(tmp_path / "old.db")
    shutil.copy(path, old_copy)

    doc = kb_dir / "dokumente" / "pv-ues-01.md"
    doc.write_text(doc.read_text().replace("| Höchstbetrag | 200 € |", "| Höchstbetrag | 170 € |"))
    build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, None)

    results = {r.answer_id: r for r in check_answers([on_figure, on_other], SidecarIndex.open(path))}
    assert results["a1"].status == CHANGED
    diff = results["a1"].verdicts[0].diff
    assert "-| Höchstbetrag | 200 € |" in diff and "+| Höchstbetrag | 170 € |" in diff
    assert results["a1"].verdicts[0].label == "Quelle geändert"
    assert results["a2"].status == UNCHANGED


def test_unrelated_edit_in_the_same_entry_flags_nothing(kb_dir, tmp_path, dead_settings):
    path, index = _setup(kb_dir, tmp_path, dead_settings)
    answer = _answer(index, dead_settings, "Überstunden Höchstbetrag 200 €", "a1")
    doc = kb_dir / "dokumente" / "pv-ues-01.md"
    doc.write_text(doc.read_text().replace("Als Parameter der Lohnart pflegen.", "Als Parameter der Lohnart pflegen; jährlich prüfen."))
    report = build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, None)
    assert report.updated == 1
    assert check_answers([answer], SidecarIndex.open(path))[0].status == UNCHANGED


def test_removed_entry_is_flagged_removed(kb_dir, tmp_path, dead_settings):
    path, index = _setup(kb_dir, tmp_path, dead_settings)
    answer = _answer(index, dead_settings, "Kommunalsteuer Gemeinde", "a2")
    (kb_dir / "dokumente" / "pv-dg-01.md").unlink()
    build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, None)
    result = check_answers([answer], SidecarIndex.open(path))[0]
    assert result.status == REMOVED and result.verdicts[0].label == "Quelle entfernt"
    assert "-" in result.verdicts[0].diff  # the old text is shown as removed


def test_drift_command(kb_dir, tmp_path, dead_settings):
    path, index = _setup(kb_dir, tmp_path, dead_settings)
    answers = [_answer(index, dead_settings, "Überstunden Höchstbetrag 200 €", "a1"),
               _answer(index, dead_settings, "Kommunalsteuer Gemeinde", "a2")]
    for a in answers:  # the command must work from hashes alone, with --old giving the old text
        for fp in a["fingerprints"]:
            fp["text"] = ""
    old = str(tmp_path / "old.db")
    shutil.copy(path, old)
    doc = kb_dir / "dokumente" / "pv-ues-01.md"
    doc.write_text(doc.read_text().replace("| Höchstbetrag | 200 € |", "| Höchstbetrag | 170 € |"))
    build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, None)
    jsonl = tmp_path / "answers.jsonl"
    jsonl.write_text("\n".join(json.dumps(a) for a in answers) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "tools.cli", "drift", "--old", old, "--new", path, "--answers", str(jsonl), "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    data = json.loads(out.stdout)
    assert data["answers"] == 2 and data["drifted"] == 1
    assert data["results"][0]["answer_id"] == "a1" and "+| Höchstbetrag | 170 € |" in data["results"][0]["citations"][0]["diff"]
