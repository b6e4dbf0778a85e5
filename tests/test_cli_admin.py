"""The command line under an admin's first-week mistakes (issue: one numbered case each).

Every test reproduces the case and checks the exit code, the one line on stderr and, where
the index is involved, its content before and after. docs/reliability.md ("Bad input at the
command line") lists the rows.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings, url_problem
from pv_agent.engine.drift import check_answers
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.target import open_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient, OllamaUnavailable
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import Reply
from tools.cli.__main__ import main

ROOT = Path(__file__).resolve().parents[1]

from conftest import ROOT
from kbfactory import entry_text

DEAD_URL = "http://127.0.0.1:9"


def notices(err: list[str]) -> list[str]:
    """The Fehler/Warnung/Hinweis lines of stderr, without ``ask``'s sources and progress steps."""
    return [line for line in err if line.startswith(("Fehler:", "Warnung:", "Hinweis:"))]


@pytest.fixture(autouse=True)
def no_model_server(monkeypatch):
    """No Ollama unless a test brings one; the defaults of the environment do not leak in."""
    monkeypatch.setenv("OLLAMA_URL", DEAD_URL)
    monkeypatch.setenv("PV_AGENT_CONNECT_TIMEOUT", "0.5")
    monkeypatch.delenv("PV_AGENT_STORE", raising=False)


def run_cli(capsys, *argv) -> tuple[int, str, list[str]]:
    """(exit code, stdout, stderr lines) of one in-process command."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, [line for line in err.splitlines() if line.strip()]


def index_rows(path) -> dict[str, str]:
    """Entry id → content hash as the index file holds them."""
    return SidecarIndex.open(str(path)).entry_hashes()


def chunk_rowids(path) -> dict[str, list[int]]:
    index = SidecarIndex.open(str(path))
    rows = index.chunks_of_entries(index.entry_ids())
    found: dict[str, list[int]] = {}
    for r in rows:
        found.setdefault(r.entry_id, []).append(r.rowid)
    return found


@pytest.fixture
def sample_kb(tmp_path) -> Path:
    """A copy of the shipped knowledge base's entries, to edit."""
    kb = tmp_path / "kb"
    shutil.copytree(ROOT / "wissensbasis" / "dokumente", kb / "dokumente")
    return kb


# 1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["notaurl", "ftp://x", "http://", "http://host:99999", " "])
def test_1_unusable_ollama_url_is_named_once_and_ask_falls_back_to_sources(url, kb_dir, tmp_path, capsys, monkeypatch):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--lexical")[0] == 0
    monkeypatch.setenv("OLLAMA_URL", url)
    code, out, err = run_cli(capsys, "ask", "Wie hoch sind die Sonderzahlungen?", "--index", index, "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["state"] == "sources_only" and "Ollama-URL" in answer["notice"]
    # the sources and the steps come first on stderr (issue 31); the warning is said once
    assert len(notices(err)) == 1 and notices(err)[0].startswith("Warnung: Ollama-URL")
    assert not any("Traceback" in line for line in err)
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--json")
    assert code == 0 and json.loads(out)["notice"].startswith("Embedding-Modell nicht erreichbar: Ollama-URL")


def test_1_url_check_lives_in_settings_and_the_client_makes_no_request():
    assert Settings(ollama_url="http://localhost:11434").ollama_url_problem == ""
    assert url_problem("https://ollama.example.org/") == ""
    for bad in ("notaurl", "ftp://x", "localhost:11434", "http://", "http://a b", ""):
        assert url_problem(bad), bad
    client = OllamaClient(Settings(ollama_url="notaurl"))
    with pytest.raises(OllamaUnavailable, match="Ollama-URL 'notaurl'"):
        client.chat([{"role": "user", "content": "x"}])
    with pytest.raises(OllamaUnavailable) as failure:
        client.embed(["x"])
    assert failure.value.reason == "Embedding-Modell nicht erreichbar"
    padded = OllamaClient(Settings(ollama_url=f" {DEAD_URL}/ ", connect_timeout=0.5))
    with pytest.raises(OllamaUnavailable, match="Verbindung zu http://127.0.0.1:9 fehlgeschlagen"):
        padded.chat([{"role": "user", "content": "x"}])  # blanks around a good URL are no traceback


# 2 ------------------------------------------------------------------------------------------
def _break_yaml(path: Path) -> None:
    path.write_text(path.read_text().replace("title:", "title: [kaputt", 1))


def test_2_broken_entry_keeps_its_last_good_version_and_exits_3(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    before = index_rows(index)
    doc = kb_dir / "dokumente" / "pv-sz-01.md"
    _break_yaml(doc)
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Pendlerpauschale"))
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index)
    assert code == 3
    assert err[0].startswith(f"Fehler: {doc}:") and "YAML-Fehler" in err[0]
    assert int(err[0].split(":")[2]) >= 1  # file:line
    assert any(line == "Warnung: [pv-sz-01] nicht ladbar – die letzte gültige Fassung bleibt im Index." for line in err)
    assert err[-1].startswith("Fehler: 1 Eintrag/Einträge nicht ladbar") and "Exit-Code 3" in err[-1]
    assert "entfernt 0" in out and "neu 1" in out
    after = index_rows(index)
    assert after["pv-sz-01"] == before["pv-sz-01"]  # the last good version, unchanged
    assert set(after) == set(before) | {"pv-new-01"}
    # a full rebuild keeps it too; --allow-broken accepts the state with exit 0
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--full", "--allow-broken")
    assert code == 0 and index_rows(index)["pv-sz-01"] == before["pv-sz-01"]
    assert "Exit-Code 3" not in " ".join(err)


def test_2_broken_entry_never_indexed_is_named(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    new = kb_dir / "dokumente" / "pv-new-01.md"
    new.write_text(entry_text("pv-new-01", "Pendlerpauschale").replace("source: briefing", "source: unbekannt"))
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--json")
    assert code == 3
    report = json.loads(out)
    assert report["broken"] == ["pv-new-01"] and report["broken_without_previous"] == ["pv-new-01"] and report["kept"] == []
    assert "Warnung: [pv-new-01] nicht ladbar und noch nicht im Index – fehlt, bis die Datei korrigiert ist." in err


def test_2_engine_keeps_broken_entries_on_both_stores(kb_dir, store_target, dead_settings):
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, store_target, dead_settings, None)
    before = open_index(store_target).entry_hashes()
    rest = [e for e in entries if e.id != "pv-sz-01"]
    report = build_index(rest, store_target, dead_settings, None, broken=["pv-sz-01"])
    assert report.removed == 0 and report.kept == ["pv-sz-01"]
    assert open_index(store_target).entry_hashes() == before
    report = build_index(rest, store_target, dead_settings, None)  # no longer broken: gone on purpose
    assert report.removed == 1 and "pv-sz-01" not in open_index(store_target).entry_hashes()


# 3 ------------------------------------------------------------------------------------------
def test_3_machine_output_on_stdout_every_human_line_on_stderr(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    refs = kb_dir / "dokumente" / "pv-sz-02.md"
    refs.write_text(refs.read_text().replace("cross_refs: [pv-sz-01]", "cross_refs: [pv-sz-01, pv-gibtsnicht]"))
    _break_yaml(kb_dir / "dokumente" / "pv-dg-01.md")
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--json")
    assert code == 3
    assert json.loads(out)["entries"] == 4  # stdout is exactly the JSON report
    assert any(line.startswith("Warnung:") and "pv-gibtsnicht" in line for line in err)
    assert all(line.startswith(("Fehler:", "Warnung:", "Hinweis:")) for line in err)
    code, out, err = run_cli(capsys, "validate", "--kb", kb_dir)
    problems = len(err)  # the two above and kb.json's absence
    assert code == 1 and out == f"4 Einträge in 3 Clustern, {problems} Fehler.\n" and problems >= 2
    assert all(line.startswith("Fehler: ") for line in err)
    code, out, err = run_cli(capsys, "validate", "--kb", kb_dir, "--json")
    assert code == 1 and len(json.loads(out)["errors"]) == problems and err == []
    code, out, err = run_cli(capsys, "retrieve", "Sonderzahlungen", "--index", index, "--json")
    assert code == 0 and json.loads(out)["mode"] == "lexical" and err == []


# 4 ------------------------------------------------------------------------------------------
def test_4_foreign_files_are_not_overwritten_without_force(kb_dir, tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("Wichtige Notizen\n")
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE kunden (name TEXT)")
    conn.execute("INSERT INTO kunden VALUES ('Muster GmbH')")
    conn.commit()
    conn.close()
    for path in (text, other):
        before = path.read_bytes()
        code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", path)
        assert code == 1 and out == ""
        assert err == [f"Fehler: {path} ist kein PV-Agent-Index (oder bis zur Unkenntlichkeit beschädigt) – "
                       "wird nicht überschrieben. Mit --force trotzdem ersetzen."]
        assert path.read_bytes() == before
    assert sqlite3.connect(other).execute("SELECT name FROM kunden").fetchall() == [("Muster GmbH",)]
    assert not [p for p in os.listdir(tmp_path) if ".building-" in p]
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", text, "--force")
    assert code == 0 and len(index_rows(text)) == 5


def test_4_paths_to_anything_but_a_regular_file_are_never_written(kb_dir, tmp_path, capsys):
    device = tmp_path / "null-link"
    device.symlink_to("/dev/null")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "ordner"
    folder.mkdir()
    for path, kind in ((device, "keine normale Datei"), (fifo, "keine normale Datei"), (folder, "ein Ordner")):
        code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", path, "--force")
        assert code == 1 and len(err) == 1 and err[0].startswith(f"Fehler: Index {path} ist {kind}"), err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and device.is_symlink()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(folder) == []


def test_4_an_existing_index_is_still_updated_and_a_damaged_one_replaced(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    index.write_bytes(index.read_bytes()[:2000])  # truncated: still marked as PV-Agent's
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index)
    assert code == 0 and "neu gebaut" in out and len(index_rows(index)) == 5


# 5 ------------------------------------------------------------------------------------------
def test_5_bad_index_paths_give_one_line_each(kb_dir, tmp_path, capsys):
    a_file = tmp_path / "datei"
    a_file.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (["index", "--kb", kb_dir, "--index", a_file / "index.db"], "ein Teil des Pfades ist eine Datei"),
        (["index", "--kb", kb_dir, "--index", a_file / "sub" / "index.db"], "ein Teil des Pfades ist eine Datei"),
        (["index", "--kb", kb_dir, "--index", "/proc/version"], "kein PV-Agent-Index"),
        (["index", "--kb", kb_dir, "--index", "/proc/version", "--force"], "lässt sich nicht schreiben"),
        (["ask", "Sonderzahlungen?", "--index", a_file / "index.db"], "fehlt"),
        (["ask", "Sonderzahlungen?", "--index", "/proc/version"], "kein PV-Agent-Index"),
        (["retrieve", "Sonderzahlungen", "--index", tmp_path], "ist keine normale Datei"),
        (["ask", "Sonderzahlungen?", "--index", fifo], "ist keine normale Datei"),  # would block in open()
        (["drift", "--new", "/proc/version", "--answers", a_file], "kein PV-Agent-Index"),
    ]
    for argv, words in cases:
        code, out, err = run_cli(capsys, *argv)
        assert code == 1 and out == "", argv
        assert len(err) == 1 and err[0].startswith("Fehler: ") and words in err[0], (argv, err)
    assert a_file.read_text() == "x"


# 6 ------------------------------------------------------------------------------------------
def test_6_eval_answers_refuses_to_start_without_the_chat_model(kb_dir, tmp_path, capsys, ollama, monkeypatch):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--lexical")[0] == 0
    goldset = tmp_path / "goldset.yaml"
    goldset.write_text("- id: q1\n  question: Sonderzahlungen?\n  expected: [pv-sz-01]\n", encoding="utf-8")
    reports = tmp_path / "reports"
    code, out, err = run_cli(capsys, "eval", "--answers", "--index", index, "--goldset", goldset, "--reports", reports)
    assert code == 1 and out == "" and len(err) == 1
    assert err[0].startswith("Fehler: Sprachmodell nicht erreichbar") and "eval --answers braucht das Sprachmodell" in err[0]
    monkeypatch.setenv("OLLAMA_URL", ollama.url)
    monkeypatch.setenv("PV_AGENT_CHAT_MODEL", "gibtsnicht:1b")
    code, out, err = run_cli(capsys, "eval", "--answers", "--index", index, "--goldset", goldset, "--reports", reports)
    assert code == 1 and len(err) == 1 and "Sprachmodell gibtsnicht:1b auf dem Ollama-Server" in err[0]
    assert not reports.exists() and ollama.requests_to("/api/chat") == []


# 7 ------------------------------------------------------------------------------------------
def test_7_defaults_come_from_the_project_root_and_help_names_them(tmp_path):
    # COLUMNS: argparse wraps help text at hyphens, which would split a checkout path like /x/ci-run.
    env = dict(os.environ, PYTHONPATH=str(ROOT), OLLAMA_URL=DEAD_URL, COLUMNS="1000")
    env.pop("PV_AGENT_KB", None)
    env.pop("PV_AGENT_INDEX", None)
    help_text = subprocess.run([sys.executable, "-m", "tools.cli", "index", "--help"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, check=True).stdout
    flat = " ".join(help_text.split())
    assert str(ROOT / "wissensbasis") in flat and str(ROOT / "data" / "index.db") in flat
    run = subprocess.run([sys.executable, "-m", "tools.cli", "validate"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    shipped = len(json.loads((ROOT / "wissensbasis" / "kb.json").read_text(encoding="utf-8"))["entries"])
    assert run.returncode == 0 and f"{shipped} Einträge" in run.stdout, run.stderr  # the project's KB, from /tmp
    run = subprocess.run([sys.executable, "-m", "tools.cli", "validate", "--kb", "fehlt"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 1 and run.stderr.splitlines() == ["Fehler: fehlt: Ordner der Wissensbasis nicht gefunden"]


# 8 ------------------------------------------------------------------------------------------
def test_8_unknown_topic_or_scope_is_named_with_the_valid_ones(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    code, out, err = run_cli(capsys, "retrieve", "Urlaub", "--index", index, "--topic", "nixda")
    assert code == 2 and out == ""
    assert err == ["Fehler: unbekanntes Thema 'nixda' – im Index: dienstgeberabgaben, sonderzahlungen, "
                   "ueberstunden-zulagen, urlaub"]
    code, out, err = run_cli(capsys, "retrieve", "Urlaub", "--index", index, "--scope", "foo")
    assert code == 2 and err == ["Fehler: unbekannte Quellenart 'foo' – möglich: briefing, gesetz, kv, rechtsprechung, wiku"]
    assert run_cli(capsys, "retrieve", "Urlaub", "--index", index, "--k", "0")[2] == ["Fehler: --k 0: mindestens 1 Treffer"]
    code, out, err = run_cli(capsys, "retrieve", "Urlaubsersatzleistung", "--index", index, "--topic", "urlaub")
    assert code == 0 and "[pv-url-01]" in out


# 9 ------------------------------------------------------------------------------------------
def test_9_plain_index_without_a_model_updates_in_place(kb_dir, store_target, dead_settings):
    entries = load_knowledge_base(kb_dir).entries
    first = build_index(entries, store_target, dead_settings, OllamaClient(dead_settings))
    assert first.full and first.mode == "lexical"
    again = build_index(entries, store_target, dead_settings, OllamaClient(dead_settings))
    assert not again.full and again.generation == first.generation and again.unchanged == 5
    assert again.notice.startswith("Embedding-Modell nicht erreichbar")


def test_9_cli_never_rebuilds_unchanged_entries(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    rowids = chunk_rowids(index)
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index)
    assert code == 0 and "aktualisiert (Generation 1" in out and "unverändert 5" in out
    doc = kb_dir / "dokumente" / "pv-dg-01.md"
    doc.write_text(doc.read_text().replace("3 %", "3,5 %"))
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index)
    assert code == 0 and "aktualisiert (Generation 2" in out and "geändert 1" in out and "unverändert 4" in out
    after = chunk_rowids(index)
    assert {k: v for k, v in after.items() if k != "pv-dg-01"} == {k: v for k, v in rowids.items() if k != "pv-dg-01"}
    assert after["pv-dg-01"] != rowids["pv-dg-01"]


def test_9_lexical_index_gets_vectors_once_the_model_is_there(kb_dir, store_target, dead_settings, settings):
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, store_target, dead_settings, OllamaClient(dead_settings))
    up = build_index(entries, store_target, settings, OllamaClient(settings))
    assert up.mode == "hybrid" and up.vectors == up.chunks == 25 and up.embedded == 25


# 10 -----------------------------------------------------------------------------------------
def test_10_drift_sees_the_key_values_a_sources_only_answer_displayed(sample_kb, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", sample_kb, "--index", index, "--allow-broken")[0] == 0
    code, out, _ = run_cli(capsys, "ask", "Wie hoch ist die Geringfügigkeitsgrenze 2026?", "--index", index, "--json")
    answer = json.loads(out)
    assert answer["state"] == "sources_only" and answer["citations"][0]["id"] == "pv-gfb-02"
    assert answer["citations"][0]["section"] == "Kernwerte & Fristen"
    shown = {(f["id"], f["section"]) for f in answer["fingerprints"]}
    assert ("pv-gfb-02", "Kernwerte & Fristen") in shown
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps(answer | {"id": "a1"}) + "\n", encoding="utf-8")
    doc = sample_kb / "dokumente" / "pv-gfb-02.md"
    doc.write_text(doc.read_text().replace("| Betrag | 551,10 € | 551,10 € |", "| Betrag | 551,10 € | 560,00 € |"))
    assert run_cli(capsys, "index", "--kb", sample_kb, "--index", index, "--allow-broken")[0] == 0
    code, out, err = run_cli(capsys, "drift", "--new", index, "--answers", answers)
    assert code == 0 and "1 betroffen" in out.splitlines()[0]
    assert "- Antwort a1: [pv-gfb-02] Kernwerte & Fristen: Quelle geändert" in out
    assert "+| Betrag | 551,10 € | 560,00 € |" in out


def test_10_an_answer_fingerprints_the_key_values_the_model_saw(sample_kb, tmp_path, settings, ollama):
    """An answered question citing an entry whose shown section is not its key values: the model
    saw the key values too (the block), so a changed figure there flags the answer."""
    path = str(tmp_path / "i.db")
    build_index(load_knowledge_base(sample_kb).entries, path, settings, OllamaClient(settings))
    index = SidecarIndex.open(path)
    question = "Rechtsgrundlagen der Geringfügigkeitsgrenze 2026: ASVG und BGBl. II 263/2025?"
    hit = next(h for h in retrieve(index, question, settings, embedder=OllamaClient(settings)).hits if h.entry_id == "pv-gfb-02")
    assert hit.section != "Kernwerte & Fristen" and "551,10" in hit.key_values  # the case of the issue
    ollama.default_reply = Reply("Die Werte stehen in der Verordnung zum ASVG [pv-gfb-02].")
    answer = ask(question, index, settings, client=OllamaClient(settings)).as_dict()
    assert answer["state"] == "answered", answer
    shown = {(f["id"], f["section"]) for f in answer["fingerprints"]}
    assert {("pv-gfb-02", hit.section), ("pv-gfb-02", "Kernwerte & Fristen")} <= shown
    doc = sample_kb / "dokumente" / "pv-gfb-02.md"
    doc.write_text(doc.read_text().replace("| Betrag | 551,10 € | 551,10 € |", "| Betrag | 551,10 € | 560,00 € |"))
    build_index(load_knowledge_base(sample_kb).entries, path, settings, OllamaClient(settings))
    drift = check_answers([answer | {"id": "a1"}], SidecarIndex.open(path))[0]
    assert drift.status == "changed"
    assert [v.fingerprint.section for v in drift.verdicts if v.status == "changed"] == ["Kernwerte & Fristen"]


# 11 -----------------------------------------------------------------------------------------
def test_11_non_utf8_question_still_gives_valid_utf8_json(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index)[0] == 0
    env = dict(os.environ, PYTHONPATH=str(ROOT), OLLAMA_URL=DEAD_URL, PV_AGENT_CONNECT_TIMEOUT="0.5")
    question = b"Sonderzahlungen \xff\xfe Urlaub \xc3"
    run = subprocess.run([sys.executable, "-m", "tools.cli", "ask", question, "--index", str(index), "--json"],
                         cwd=ROOT, env=env, capture_output=True)
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    answer = json.loads(run.stdout.decode("utf-8"))  # strict: invalid UTF-8 raises here
    assert answer["question"] == "Sonderzahlungen \ufffd\ufffd Urlaub \ufffd"
    assert answer["state"] in ("sources_only", "refused")
    code, out, err = run_cli(capsys, "ask", "Sonderzahlungen \ud800 \udcff?", "--index", index, "--json")
    assert code == 0 and json.loads(out)["question"] == "Sonderzahlungen ? ??"  # lone surrogates of any origin


# 12 -----------------------------------------------------------------------------------------
def test_12_wording_names_the_right_model_and_real_times(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index)
    assert err == [f"Hinweis: Embedding-Modell nicht erreichbar: {DEAD_URL} nicht erreichbar – Index nur lexikalisch (BM25)."]
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", tmp_path / "j.db", "--lexical")
    assert err == ["Hinweis: Ohne Embedding-Modell gebaut – Index nur lexikalisch (BM25)."]
    code, out, err = run_cli(capsys, "ask", "   ", "--index", index)
    assert code == 2 and out == "" and err == ["Fehler: leere Frage – bitte eine Frage in Anführungszeichen angeben."]
    code, out, err = run_cli(capsys, "ask", "Hallo, danke!", "--index", index)
    assert code == 0 and err == ["Hinweis: Gruß oder Dank, keine Frage"]
    code, out, err = run_cli(capsys, "ask", "Wie hoch sind die Sonderzahlungen?", "--index", index)
    timing = next(line for line in out.splitlines() if line.startswith("Zeit: "))
    # in-process the clock runs from the first import, so only the form is checked: never a bare "0.0 s"
    assert not re.search(r"(?<![\d.])0\.0 s", timing) and (" ms (" in timing or " s (" in timing)
    assert "Sprachmodell nicht erreichbar" in notices(err)[0]  # here the chat model is meant
