"""Issue 29, points 9 and 10: the knowledge-base folder is read and written only inside itself
(no symlink followed, every write atomic), and frontmatter YAML cannot expand (no anchors or
aliases, typed fields, a size cap). docs/reliability.md ("Files of the knowledge base") lists
each case with its test."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pv_agent.engine.kb.loader import load_knowledge_base, parse_entry_text
from pv_agent.engine.kb.registry import write_registry
from pv_agent.engine.index.sqlite_store import SidecarIndex
from tools.cli.__main__ import main

from conftest import ROOT
from kbfactory import entry_text


@pytest.fixture(autouse=True)
def no_model_server(monkeypatch):
    monkeypatch.setenv("OLLAMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PV_AGENT_CONNECT_TIMEOUT", "0.5")
    monkeypatch.delenv("PV_AGENT_STORE", raising=False)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, [line for line in err.splitlines() if line.strip()]


def errors_of(result, name):
    return [e for e in result.errors if e.file.endswith(name)]


def with_frontmatter_line(text: str, line: str) -> str:
    """The entry text with ``line`` added as the last frontmatter line."""
    head, rest = text.split("\n---\n", 1)
    return f"{head}\n{line}\n---\n{rest}"


# 10: YAML frontmatter ----------------------------------------------------------------------
# A small cousin of the "billion laughs": each level repeats the one before four times. The real
# attack has nine levels of nine (630 bytes → gigabytes once source_ref becomes text).
ALIASES = "\n".join([
    'l0: &l0 "lol"',
    "l1: &l1 [*l0, *l0, *l0, *l0]",
    "l2: &l2 [*l1, *l1, *l1, *l1]",
    "l3: &l3 [*l2, *l2, *l2, *l2]",
    "source_ref: [*l3, *l3, *l3, *l3]",
])


def test_aliases_in_frontmatter_are_refused_with_file_and_line(kb_dir):
    path = kb_dir / "dokumente" / "pv-sz-02.md"
    path.write_text(with_frontmatter_line(path.read_text(), ALIASES), encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    [issue] = errors_of(result, "pv-sz-02.md")
    assert issue.line == 11 and "YAML-Anker '&l0'" in issue.message
    assert "pv-sz-02" not in {e.id for e in result.entries}
    assert len(result.entries) == 4, "the other entries load"


def test_an_alias_without_anchor_in_this_document_and_a_merge_key_are_refused():
    good = entry_text("pv-x-01", "X")
    for extra, what in (("source_ref: *nowhere", "YAML-Alias '*nowhere'"),
                        ("base: &b {a: 1}\nmore: {<<: *b}", "YAML-Anker '&b'")):
        entry, issues = parse_entry_text(with_frontmatter_line(good, extra), "dokumente/pv-x-01.md")
        assert entry is None and what in issues[0].message, issues


@pytest.mark.parametrize("value, kind", [("[a, b]", "list"), ("42", "int"), ("{a: b}", "dict"), ("2025-01-01", "date")])
def test_source_ref_must_be_text(value, kind):
    text = with_frontmatter_line(entry_text("pv-x-01", "X"), f"source_ref: {value}")
    entry, issues = parse_entry_text(text, "dokumente/pv-x-01.md")
    assert entry is None
    assert [(i.line, i.message) for i in issues] == [(11, f"'source_ref' muss Text sein, nicht {kind}")]


def test_list_fields_take_no_booleans_and_the_frontmatter_must_be_fields():
    text = entry_text("pv-x-01", "X").replace("tags: []", "tags: [yes]")
    entry, issues = parse_entry_text(text, "dokumente/pv-x-01.md")
    assert entry is None and issues[0].line == 6 and "'tags' muss eine Liste von Texten sein" in issues[0].message
    entry, issues = parse_entry_text("---\n- a\n- b\n---\n## Zusammenfassung\nx\n", "dokumente/a.md")
    assert entry is None and issues[0].message.startswith("Frontmatter muss aus Feldern")


def test_frontmatter_has_a_size_cap():
    text = entry_text("pv-x-01", "X" * 9000)
    entry, issues = parse_entry_text(text, "dokumente/pv-x-01.md")
    assert entry is None
    assert [(i.line, i.message.split(" (")[0]) for i in issues] == [(1, "Frontmatter zu groß")]
    assert parse_entry_text(entry_text("pv-x-01", "X" * 6000), "dokumente/pv-x-01.md")[0] is not None


def test_validate_and_index_name_the_alias_and_keep_the_last_good_version(kb_dir, tmp_path, capsys):
    index = tmp_path / "i.db"
    assert run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--lexical")[0] == 0
    before = SidecarIndex.open(str(index)).entry_hashes()
    doc = kb_dir / "dokumente" / "pv-sz-02.md"
    doc.write_text(with_frontmatter_line(doc.read_text(), ALIASES), encoding="utf-8")
    code, out, err = run_cli(capsys, "validate", "--kb", kb_dir)
    assert code == 1
    assert f"Fehler: {doc}:11: YAML-Anker '&l0' im Frontmatter nicht erlaubt" in err
    code, out, err = run_cli(capsys, "index", "--kb", kb_dir, "--index", index, "--lexical")
    assert code == 3
    assert err[0] == f"Fehler: {doc}:11: YAML-Anker '&l0' im Frontmatter nicht erlaubt"
    assert SidecarIndex.open(str(index)).entry_hashes()["pv-sz-02"] == before["pv-sz-02"]


# 9: symlinks and writes ---------------------------------------------------------------------
@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def test_a_symlinked_entry_file_is_refused_not_read(kb_dir, outside):
    secret = outside / "pv-geheim-01.md"
    secret.write_text(entry_text("pv-geheim-01", "Gehälter der Geschäftsführung"), encoding="utf-8")
    (kb_dir / "dokumente" / "pv-geheim-01.md").symlink_to(secret)
    inner = kb_dir / "dokumente" / "pv-sz-01.md"
    (kb_dir / "dokumente" / "pv-zwilling-01.md").symlink_to(inner)  # inside, but a link all the same
    result = load_knowledge_base(kb_dir)
    assert "pv-geheim-01" not in {e.id for e in result.entries}
    assert "pv-zwilling-01" not in {e.id for e in result.entries}
    assert [i.message for i in errors_of(result, "pv-geheim-01.md")] == [
        "symbolischer Link – wird weder gelesen noch geschrieben"]
    assert errors_of(result, "pv-zwilling-01.md")


def test_a_symlinked_documents_folder_is_refused_as_a_whole(kb_dir, outside):
    (outside / "pv-geheim-01.md").write_text(entry_text("pv-geheim-01", "Geheim"), encoding="utf-8")
    os.rename(kb_dir / "dokumente", kb_dir / "echt")
    (kb_dir / "dokumente").symlink_to(outside)
    result = load_knowledge_base(kb_dir)
    assert result.entries == []
    assert [(i.file, i.message) for i in result.errors] == [
        ("dokumente", "symbolischer Link – wird weder gelesen noch geschrieben")]


def test_registry_is_not_written_through_a_symlink(kb_dir, outside):
    from pv_agent.engine.kb import safe_files  # new with the fix: imported here so the others run without it
    target = outside / "crontab"
    target.write_text("keep me\n", encoding="utf-8")
    (kb_dir / "kb.json").symlink_to(target)
    with pytest.raises(safe_files.UnsafePath) as refused:
        write_registry(kb_dir, load_knowledge_base(kb_dir))
    assert refused.value.kind == safe_files.SYMLINK and refused.value.rel == "kb.json"
    assert target.read_text() == "keep me\n"
    assert not (kb_dir / "INDEX.md").exists(), "nothing written when either target is refused"


def test_registry_cli_refuses_a_symlinked_index_file_in_one_line(kb_dir, outside, capsys):
    target = outside / "notes.md"
    target.write_text("keep me\n", encoding="utf-8")
    (kb_dir / "INDEX.md").symlink_to(target)
    code, out, err = run_cli(capsys, "registry", "--kb", kb_dir)
    assert code == 1 and out == ""
    assert err == [f"Fehler: {kb_dir / 'INDEX.md'}: symbolischer Link – wird weder gelesen noch geschrieben "
                   "– kb.json und INDEX.md nicht geschrieben."]
    assert target.read_text() == "keep me\n" and not (kb_dir / "kb.json").exists()


def test_registry_is_not_written_through_a_hard_link(kb_dir, outside):
    target = outside / "shared.json"
    target.write_text("keep me\n", encoding="utf-8")
    os.link(target, kb_dir / "kb.json")
    write_registry(kb_dir, load_knowledge_base(kb_dir))
    assert target.read_text() == "keep me\n"
    assert json.loads((kb_dir / "kb.json").read_text())["count"] == 5


def test_a_full_disk_leaves_the_old_registry_whole(kb_dir):
    """RLIMIT_FSIZE makes every write past 2 KB fail with EFBIG, as a full disk would."""
    (kb_dir / "kb.json").write_text('{"count": 0, "entries": []}\n', encoding="utf-8")
    script = (
        "import resource, signal, sys\n"
        "from pv_agent.engine.kb.loader import load_knowledge_base\n"
        "from pv_agent.engine.kb.registry import write_registry\n"
        "result = load_knowledge_base(sys.argv[1])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\n"
        "try:\n"
        "    write_registry(sys.argv[1], result)\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(kb_dir)], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "27", "the write failed (EFBIG)"
    assert (kb_dir / "kb.json").read_text() == '{"count": 0, "entries": []}\n'
    assert sorted(p.name for p in kb_dir.iterdir()) == ["dokumente", "kb.json"], "no temporary file left"


def test_safe_writes_stay_inside_the_folder(kb_dir, outside):
    from pv_agent.engine.kb import safe_files
    (kb_dir / "links").symlink_to(outside)
    for rel, kind in (("links/x.md", safe_files.SYMLINK), ("../outside/x.md", safe_files.OUTSIDE),
                      ("/etc/x.md", safe_files.OUTSIDE), ("dokumente", safe_files.NOT_A_FILE)):
        with pytest.raises(safe_files.UnsafePath) as refused:
            safe_files.write_text(kb_dir, rel, "x")
        assert refused.value.kind == kind, rel
    assert list(outside.iterdir()) == []
    written = safe_files.write_text(kb_dir, "dokumente/neu/pv-neu-01.md", "text\n")
    assert written == (kb_dir / "dokumente" / "neu" / "pv-neu-01.md").resolve()
    assert written.read_text() == "text\n" and oct(written.stat().st_mode & 0o777) == "0o644"
