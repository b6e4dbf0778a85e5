"""Load the knowledge base: markdown files with YAML frontmatter → ``Entry`` objects.

A malformed file is reported as ``file:line: message`` and skipped; the others load.
A ``cross_refs`` target that does not exist is reported too, but only the dangling
reference is dropped: one typo in a link must not take an entry out of the answers.
Entry text that points to internal material instead of a named public source ("S24",
"Faktenblatt") is reported as well; the entry still loads, ``validate`` fails.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import yaml

from . import frontmatter_yaml, markdown, safe_files
from ..types import BRIEFING_SECTIONS, SECTION_SUMMARY, SOURCE_FAMILIES, Entry, LoadIssue, LoadResult

ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
STAND_PATTERN = re.compile(r"^(\d{4})-(\d{2})$")
TOPIC_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_FILE_BYTES = 2 * 1024 * 1024
LIST_FIELDS = ("tags", "legal_bases", "cross_refs")
# A clerk cannot look up "S24" or "the fact sheet": entries must name the publication itself.
INTERNAL_SOURCE_PATTERNS = (
    (re.compile(r"\bS\d+\b"), "interne Quellennummer '{}' – Quelle mit Herausgeber, Titel und Datum nennen"),
    (re.compile(r"faktenblatt", re.IGNORECASE), "Verweis auf internes Material '{}' – öffentliche Quelle nennen"),
)


def entry_files(kb_dir: Path) -> list[Path]:
    """The entry files: ``<kb>/dokumente/**/*.md`` (or ``<kb>/*.md`` for a flat folder).

    Subfolders (e.g. one per cluster) are allowed, which is how two files can claim one id.
    """
    kb_dir = Path(kb_dir)
    docs = kb_dir / "dokumente"
    files = docs.rglob("*.md") if docs.is_dir() else kb_dir.glob("*.md")
    return sorted((p for p in files if p.name.upper() not in ("INDEX.MD", "README.MD")), key=lambda p: str(p))


def load_knowledge_base(kb_dir: str | Path) -> LoadResult:
    """Every entry file below ``kb_dir``; a symlink (file or ``dokumente/`` itself) is reported and
    never followed, so no file from outside the folder becomes an entry."""
    kb_dir = Path(kb_dir)
    if not kb_dir.is_dir():
        return LoadResult([], [LoadIssue(str(kb_dir), 0, "Ordner der Wissensbasis nicht gefunden")])
    if (kb_dir / "dokumente").is_symlink():
        return LoadResult([], [LoadIssue("dokumente", 0, safe_files.UnsafePath("dokumente", safe_files.SYMLINK).reason)])
    result = LoadResult([])
    first_file_of: dict[str, str] = {}
    for path in entry_files(kb_dir):
        rel = str(path.relative_to(kb_dir))
        entry, issues = parse_entry_file(path, rel, kb_dir=kb_dir)
        result.errors.extend(issues)
        if entry is None:
            continue
        if entry.id in first_file_of:
            result.errors.append(
                LoadIssue(rel, _key_line(kb_dir, rel, "id"), f"doppelte id '{entry.id}' (schon in {first_file_of[entry.id]})")
            )
            continue
        first_file_of[entry.id] = rel
        result.entries.append(entry)
    result.entries = _drop_dangling_refs(result, kb_dir)
    return result


def parse_entry_file(path: Path, rel: str, kb_dir: Path | None = None) -> tuple[Entry | None, list[LoadIssue]]:
    """Parse one file; returns the entry (or None) and the problems found. With ``kb_dir`` the
    file is read only if ``rel`` stays inside it without a symlink."""
    try:
        raw = safe_files.read_bytes(kb_dir, rel, MAX_FILE_BYTES) if kb_dir is not None else path.read_bytes()
    except safe_files.UnsafePath as exc:
        return None, [LoadIssue(rel, 0, exc.reason)]
    except OSError as exc:
        return None, [LoadIssue(rel, 0, f"nicht lesbar: {exc.strerror}")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [LoadIssue(rel, 0, f"Datei zu groß (mehr als {MAX_FILE_BYTES // 1024} KiB)")]
    if b"\x00" in raw:
        return None, [LoadIssue(rel, 0, "keine Textdatei (enthält Null-Bytes)")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [LoadIssue(rel, line, "kein gültiges UTF-8")]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    entry, issues = parse_entry_text(text, rel, expected_id=Path(rel).stem)
    if entry is not None:
        issues = issues + internal_source_issues(text, rel)
    return entry, issues


def internal_source_issues(text: str, rel: str) -> list[LoadIssue]:
    """Every reference to internal material (``S24``, "Faktenblatt"), one issue per hit with its line."""
    issues = []
    for number, line in enumerate(text.split("\n"), start=1):
        for pattern, message in INTERNAL_SOURCE_PATTERNS:
            for match in pattern.finditer(line):
                issues.append(LoadIssue(rel, number, message.format(match.group(0))))
    return issues


def parse_entry_text(text: str, rel: str, expected_id: str | None = None) -> tuple[Entry | None, list[LoadIssue]]:
    if not text.startswith("---\n"):
        return None, [LoadIssue(rel, 1, "Frontmatter fehlt (die Datei muss mit '---' beginnen)")]
    if "\n---\n" not in text[3:] and not text.rstrip().endswith("\n---"):
        return None, [LoadIssue(rel, 1, "Frontmatter wird nicht mit '---' geschlossen")]
    try:
        meta, content = frontmatter_yaml.split(text)
    except frontmatter_yaml.FrontmatterRefused as exc:
        return None, [LoadIssue(rel, exc.line, exc.message)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1  # frontmatter text starts after the opening "---"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context_mark", None)
        if context is not None and context.line + 1 != line:
            problem += f" ({getattr(exc, 'context', 'begonnen')} in Zeile {context.line + 1})"
        return None, [LoadIssue(rel, line, f"YAML-Fehler im Frontmatter: {problem}")]
    except ValueError as exc:
        return None, [LoadIssue(rel, 1, f"Frontmatter nicht lesbar: {exc}")]
    if not isinstance(meta, dict):
        return None, [LoadIssue(rel, 2, "Frontmatter muss aus Feldern 'name: Wert' bestehen")]
    lines = text.split("\n")

    def at(key: str) -> int:
        return _line_of_key(lines, key)

    issues: list[LoadIssue] = []
    for key in ("id", "title", "stand", "topic", "source"):
        value = meta.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            issues.append(LoadIssue(rel, at(key) or 1, f"Pflichtfeld '{key}' fehlt"))
        elif not isinstance(value, str):
            issues.append(LoadIssue(rel, at(key), f"'{key}' muss Text sein, nicht {type(value).__name__}"))
    if issues:
        return None, issues

    entry_id, stand = meta["id"].strip(), meta["stand"].strip()
    if not ID_PATTERN.match(entry_id):
        issues.append(LoadIssue(rel, at("id"), f"ungültige id '{entry_id}' (erlaubt: a-z, 0-9, Bindestriche)"))
    elif expected_id is not None and entry_id != expected_id:
        issues.append(LoadIssue(rel, at("id"), f"id '{entry_id}' passt nicht zum Dateinamen '{expected_id}.md'"))
    m = STAND_PATTERN.match(stand)
    if not m or not 1 <= int(m.group(2)) <= 12:
        issues.append(LoadIssue(rel, at("stand"), f"ungültiger stand '{stand}' (erwartet JJJJ-MM, Monat 01–12)"))
    if not TOPIC_PATTERN.match(meta["topic"].strip()):
        issues.append(LoadIssue(rel, at("topic"), f"ungültiges topic '{meta['topic']}' (Kleinbuchstaben und Bindestriche)"))
    if meta["source"] not in SOURCE_FAMILIES:
        issues.append(
            LoadIssue(rel, at("source"), f"unbekannte source '{meta['source']}' (erlaubt: {', '.join(SOURCE_FAMILIES)})")
        )
    lists: dict[str, tuple[str, ...]] = {}
    for key in LIST_FIELDS:
        value = meta.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                  for v in value):
            issues.append(LoadIssue(rel, at(key), f"'{key}' muss eine Liste von Texten sein"))
            continue
        lists[key] = tuple(str(v).strip() for v in value if str(v).strip())
    official = meta.get("official", True)
    if not isinstance(official, bool):
        issues.append(LoadIssue(rel, at("official"), "'official' muss true oder false sein"))
    source_ref = meta.get("source_ref")
    if source_ref is not None and not isinstance(source_ref, str):
        issues.append(LoadIssue(rel, at("source_ref"), f"'source_ref' muss Text sein, nicht {type(source_ref).__name__}"))

    body = content.strip("\n")
    body_offset = len(text.split("\n")) - len(content.split("\n"))
    issues.extend(_check_body(body, meta["source"], rel, body_offset))
    if issues:
        return None, issues

    return (
        Entry(
            id=entry_id,
            title=meta["title"].strip(),
            stand=stand,
            topic=meta["topic"].strip(),
            source=meta["source"],
            body=body,
            official=official,
            tags=lists["tags"],
            legal_bases=lists["legal_bases"],
            cross_refs=lists["cross_refs"],
            source_ref=(source_ref or "").strip(),
            path=rel,
            content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        ),
        [],
    )


def h2_headings(body: str) -> list[tuple[int, str]]:
    """(0-based line, heading) of every H2 outside fenced code: the engine's one markdown parse."""
    return markdown.h2_headings(body)


def _check_body(body: str, source: str, rel: str, offset: int) -> list[LoadIssue]:
    if not body.strip():
        return [LoadIssue(rel, offset + 1, "Text fehlt (kein Inhalt nach dem Frontmatter)")]
    headings = h2_headings(body)
    names = [h for _, h in headings]
    if not headings:
        return [LoadIssue(rel, offset + 1, "keine H2-Abschnitte ('## …')")]
    if names[0] != SECTION_SUMMARY:
        return [LoadIssue(rel, offset + headings[0][0] + 1, f"erster Abschnitt muss '## {SECTION_SUMMARY}' sein")]
    if source == "briefing" and names != list(BRIEFING_SECTIONS):
        missing = [s for s in BRIEFING_SECTIONS if s not in names]
        what = f"fehlt: {', '.join(missing)}" if missing else f"Reihenfolge/Zusatz: {', '.join(names)}"
        return [LoadIssue(rel, offset + 1, f"Abschnitte eines briefing-Eintrags weichen ab ({what})")]
    return []


def _drop_dangling_refs(result: LoadResult, kb_dir: Path) -> list[Entry]:
    known = {e.id for e in result.entries}
    kept = []
    for entry in result.entries:
        dangling = [r for r in entry.cross_refs if r not in known]
        if dangling:
            line = _key_line(kb_dir, entry.path, "cross_refs")
            for ref in dangling:
                result.errors.append(LoadIssue(entry.path, line, f"cross_ref '{ref}' verweist auf keinen Eintrag"))
            entry = dataclasses.replace(entry, cross_refs=tuple(r for r in entry.cross_refs if r in known))
        kept.append(entry)
    return kept


def _line_of_key(lines: list[str], key: str) -> int:
    for i, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            break
        if line.startswith(f"{key}:"):
            return i
    return 0


def _key_line(kb_dir: Path, rel: str, key: str) -> int:
    try:
        lines = safe_files.read_text(kb_dir, rel).split("\n")
    except (OSError, UnicodeDecodeError):
        return 0
    return _line_of_key(lines, key) or 1
