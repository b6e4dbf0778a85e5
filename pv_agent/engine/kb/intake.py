"""Intake of raw sources: statutes, collective agreements and court decisions an admin brings
as plain text, markdown or HTML, turned into knowledge-base entries (design.md §1).

Per source file one entry: the id in the family's id space (``ris-`` for statutes, ``kv-``
for collective agreements, ``rj-`` for decisions) with a slug of the file name; the title from
the first heading, ``<title>`` or first line; the text split at paragraph boundaries into H2
sections — ``## Zusammenfassung`` first (the text before the first heading, else the first
paragraph(s)), then the source's own headings or, without any, ``## Abschnitt N – <first
words>`` sections of bounded length. ``stand`` and ``topic`` are given by the admin, never
guessed. The source URL (HTML canonical link, or a ``Quelle: <url>`` line) or the file name is
kept in ``source_ref``.

Rendering is deterministic, so a re-run writes nothing that did not change; an existing file
that came from another source (other ``source_ref``) is never overwritten.

Over 400 lines because three input formats (text, markdown, HTML) each need their own
reader before the shared rendering; they are small functions, kept in the one intake stage.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from .loader import STAND_PATTERN, TOPIC_PATTERN, parse_entry_text
from ..types import SECTION_SUMMARY

FAMILY_PREFIX = {"gesetz": "ris", "kv": "kv", "rechtsprechung": "rj"}
# Statutes and decisions taken from their official publication are official texts; a collective
# agreement is usually a reproduction (association or chamber website), so it defaults to false.
OFFICIAL_BY_DEFAULT = {"gesetz": True, "kv": False, "rechtsprechung": True}
SOURCE_SUFFIXES = {".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
SECTION_CHARS = 2000  # below the chunker's 2,400, so a generated section stays one chunk
SUMMARY_MIN_CHARS = 200  # the summary takes paragraphs until it has at least this much text …
SUMMARY_MAX_PARAGRAPHS = 3  # … but never more than this many
HEADING_WORDS = 6
MAX_SLUG = 60

_URL_LINE = re.compile(r"^\s*(?:quelle|source|url|fundstelle)\s*:\s*(https?://\S+)\s*$", re.IGNORECASE)
_LEGAL_BASIS = re.compile(r"§+\s*\d+[a-z]?(?:\s+(?:Abs\.|Z)\s*\d+[a-z]?)*\s+[A-ZÄÖÜ][A-Za-zÄÖÜäöüß-]*[A-ZÄÖÜG]\b")
# A plain-text line that heads a paragraph of a statute: "§ 2. Ausmaß des Urlaubs", "Artikel 3".
_TEXT_HEADING = re.compile(r"^(?:§+\s*\d+[a-z]?\.?|Art(?:ikel|\.)\s*\d+[a-z]?\.?)(?:\s+\S.*)?$")
_TEXT_MARKER_ONLY = re.compile(r"^(?:§+\s*\d+[a-z]?|Art(?:ikel|\.)\s*\d+[a-z]?)\.$")


class IntakeError(ValueError):
    """Options that cannot produce a valid entry (bad family, stand or topic)."""


@dataclass
class Block:
    """A unit of source text: a heading (``level`` ≥ 1) or a paragraph (``level`` 0) in markdown."""

    level: int
    text: str


@dataclass
class Source:
    path: Path
    title: str
    blocks: list[Block]
    url: str = ""


@dataclass
class IntakeReport:
    kb: str
    family: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)  # {"file", "message"}

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# -- reading -----------------------------------------------------------------------------
def source_files(src_dir: Path) -> list[Path]:
    return sorted(p for p in Path(src_dir).rglob("*") if p.is_file() and p.suffix.lower() in SOURCE_SUFFIXES)


def read_source(path: Path) -> Source:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")  # older Austrian files are often Windows-1252
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kind = SOURCE_SUFFIXES[path.suffix.lower()]
    if kind == "html":
        return _read_html(path, text)
    return _read_markdown(path, text) if kind == "markdown" else _read_text(path, text)


def _read_text(path: Path, text: str) -> Source:
    url, text = _take_url_line(text)
    paragraphs = [_clean_paragraph(p) for p in re.split(r"\n\s*\n", text)]
    paragraphs = [p for p in paragraphs if p]
    if not paragraphs:
        return Source(path, "", [], url)
    first_line, _, rest = paragraphs[0].partition("\n")
    title = first_line.strip()
    blocks = [Block(0, rest.strip())] if rest.strip() else []
    for para in paragraphs[1:]:
        if _is_text_heading(para):
            blocks.append(Block(2, para))
        else:
            blocks.append(Block(0, _escape_markdown(para)))
    return Source(path, title, blocks, url)


def _is_text_heading(para: str) -> bool:
    """A short single line such as "§ 2. Ausmaß des Urlaubs" or "Artikel 3" (not a sentence about a §)."""
    if "\n" in para or len(para) > 100 or not _TEXT_HEADING.match(para):
        return False
    return not para.endswith((".", ";", ",", ":")) or bool(_TEXT_MARKER_ONLY.match(para))


def _read_markdown(path: Path, text: str) -> Source:
    if text.startswith("---\n"):  # a frontmatter of the source itself is not text
        end = text.find("\n---", 4)
        if end != -1:
            text = text[end + 4 :]
    url, text = _take_url_line(text)
    blocks: list[Block] = []
    paragraph: list[str] = []
    fenced = False

    def flush() -> None:
        para = _clean_paragraph("\n".join(paragraph))
        if para:
            blocks.append(Block(0, para))
        paragraph.clear()

    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            paragraph.append(line)
            continue
        m = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            flush()
            blocks.append(Block(len(m.group(1)), m.group(2)))
        elif not fenced and not line.strip():
            flush()
        else:
            paragraph.append(line)
    flush()
    return _with_title(path, blocks, "", url)


def _read_html(path: Path, text: str) -> Source:
    parser = _HTMLToBlocks()
    parser.feed(text)
    parser.close()
    return _with_title(path, parser.blocks, parser.title, parser.url)


def _with_title(path: Path, blocks: list[Block], fallback_title: str, url: str) -> Source:
    """Title: a heading that opens the text (taken out of the blocks), else ``fallback_title``
    (the HTML ``<title>``), else the first line of the text."""
    title = ""
    if blocks and blocks[0].level:
        title = blocks.pop(0).text
    elif fallback_title:
        title = fallback_title
    elif blocks:
        first_line, _, rest = blocks[0].text.partition("\n")
        title = first_line
        if rest.strip():
            blocks[0] = Block(0, rest.strip())
        else:
            blocks.pop(0)
    return Source(path, _plain(title), blocks, url)


class _HTMLToBlocks(HTMLParser):
    """Markdown blocks from HTML: headings, paragraphs, list items, tables; no scripts or styles."""

    SKIP = {"script", "style", "noscript", "template", "nav", "footer", "svg", "iframe"}
    BLOCK = {"p", "div", "section", "article", "main", "blockquote", "pre", "dd", "dt", "address", "figure", "figcaption", "body", "header", "footer", "aside", "form", "ul", "ol", "dl"}
    HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title = ""
        self.url = ""
        self._skip = 0
        self._in_title = False
        self._text: list[str] = []
        self._heading = 0
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "link" and (attrs.get("rel") or "").lower() == "canonical" and attrs.get("href"):
            self.url = self.url or attrs["href"].strip()
        elif tag == "meta" and attrs.get("property") == "og:url" and attrs.get("content"):
            self.url = self.url or attrs["content"].strip()
        if self._skip:
            return
        if tag in self.HEADINGS:
            self._flush()
            self._heading = self.HEADINGS[tag]
        elif tag == "table":
            self._flush()
            self._table = []
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "li":
            self._flush()
            self._text.append("- ")
        elif tag == "br":
            (self._cell if self._cell is not None else self._text).append(" " if self._cell is not None else "\n")
        elif tag in self.BLOCK:
            self._flush()

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "title":
            self._in_title = False
            return
        if self._skip:
            return
        if tag in self.HEADINGS:
            self._flush()
        elif tag in ("td", "th") and self._table is not None and self._cell is not None:
            if not self._table:
                self._table.append([])
            self._table[-1].append(_plain("".join(self._cell)).replace("|", "/"))
            self._cell = None
        elif tag == "table" and self._table is not None:
            rows = [r for r in self._table if any(c for c in r)]
            self._table = None
            if rows:
                width = max(len(r) for r in rows)
                rows = [r + [""] * (width - len(r)) for r in rows]
                lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
                lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
                self.blocks.append(Block(0, "\n".join(lines)))
        elif tag == "li" or tag in self.BLOCK:
            self._flush()

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif self._skip:
            return
        elif self._cell is not None:
            self._cell.append(data)
        elif self._table is None:
            self._text.append(data)

    def close(self):
        super().close()
        self._flush()
        self.title = _plain(self.title)
        merged: list[Block] = []  # the items of one list stay one paragraph
        for block in self.blocks:
            if merged and block.level == 0 and merged[-1].level == 0 and block.text.startswith("- ") and merged[-1].text.startswith("- "):
                merged[-1] = Block(0, f"{merged[-1].text}\n{block.text}")
            else:
                merged.append(block)
        self.blocks = merged

    def _flush(self) -> None:
        raw = "".join(self._text)
        self._text = []
        if self._heading:
            level, self._heading = self._heading, 0
            if _plain(raw):
                self.blocks.append(Block(level, _plain(raw)))
            return
        lines = [re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in raw.split("\n")]
        text = "\n".join(line for line in lines if line)
        if text and text != "-":
            self.blocks.append(Block(0, _escape_markdown(text)))


# -- entry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntakeOptions:
    family: str
    stand: str
    topic: str
    official: bool | None = None  # None: the family's default
    tags: tuple[str, ...] = ()
    section_chars: int = SECTION_CHARS

    def check(self) -> None:
        if self.family not in FAMILY_PREFIX:
            raise IntakeError(f"unbekannte Quellenart '{self.family}' (erlaubt: {', '.join(FAMILY_PREFIX)})")
        m = STAND_PATTERN.match(self.stand or "")
        if not m or not 1 <= int(m.group(2)) <= 12:
            raise IntakeError(f"ungültiger stand '{self.stand}' (erwartet JJJJ-MM, Monat 01–12)")
        if not TOPIC_PATTERN.match(self.topic or ""):
            raise IntakeError(f"ungültiges topic '{self.topic}' (Kleinbuchstaben, Ziffern und Bindestriche)")


def entry_id_for(family: str, path: Path, title: str = "") -> str:
    prefix = FAMILY_PREFIX[family]
    slug = slugify(path.stem) or slugify(title)
    if slug == prefix or slug.startswith(prefix + "-"):
        slug = slug[len(prefix) + 1 :]
    return f"{prefix}-{slug or 'quelle'}"


def slugify(text: str) -> str:
    text = text.replace("ß", "ss").replace("§", " ")
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(slug) > MAX_SLUG:
        slug = slug[:MAX_SLUG].rsplit("-", 1)[0] or slug[:MAX_SLUG]
    return slug


def sections_of(source: Source, section_chars: int = SECTION_CHARS) -> list[tuple[str, str]]:
    """(H2 heading, markdown) of the entry: the summary first, then the source's sections."""
    blocks = list(source.blocks)
    levels = [b.level for b in blocks if b.level]
    top = min(levels) if levels else 0
    # Group the paragraphs under the source's own top-level headings; deeper headings become bold lines.
    groups: list[tuple[str, list[str]]] = [("", [])]
    for block in blocks:
        if block.level and block.level == top:
            groups.append((block.text, []))
        elif block.level:
            groups[-1][1].append(f"**{block.text}**")
        else:
            groups[-1][1].append(block.text)

    preamble = groups.pop(0)[1]
    if preamble:
        summary, rest = preamble, []
        if sum(len(p) for p in summary) > section_chars:  # a long text without headings
            summary, rest = _take_summary(preamble)
        groups.insert(0, ("", rest))
    else:
        first = next((g for g in groups if g[1]), None)
        summary = []
        if first is not None:
            summary, remaining = _take_summary(first[1])
            if remaining:
                first[1][:] = remaining
            else:  # the first section was all summary: keep its heading as the summary's first line
                summary = [f"**{first[0]}**", *summary]
                groups.remove(first)
    if not summary:
        summary = [source.title]

    sections = [(SECTION_SUMMARY, "\n\n".join(summary))]
    numbered = 0
    for heading, paragraphs in groups:
        if not paragraphs:
            continue
        if heading:
            sections.append((_heading(heading), "\n\n".join(paragraphs)))
            continue
        for part in _pack(paragraphs, section_chars):
            numbered += 1
            sections.append((f"Abschnitt {numbered} – {_first_words(part[0])}", "\n\n".join(part)))
    return _unique_headings(sections)


def render_entry(source: Source, options: IntakeOptions, source_ref: str) -> tuple[str, str]:
    """(entry id, file text) for one source."""
    entry_id = entry_id_for(options.family, source.path, source.title)
    official = OFFICIAL_BY_DEFAULT[options.family] if options.official is None else options.official
    title = source.title or entry_id
    legal = list(dict.fromkeys(_normalise_space(m) for m in _LEGAL_BASIS.findall(title))) if options.family == "gesetz" else []
    front = [
        "---",
        f"id: {entry_id}",
        f"title: {_yaml_str(title)}",
        f"stand: {_yaml_str(options.stand)}",
        f"topic: {options.topic}",
        f"tags: [{', '.join(_yaml_str(t) for t in options.tags)}]",
        f"legal_bases: [{', '.join(_yaml_str(b) for b in legal)}]",
        "cross_refs: []",
        f"source: {options.family}",
        f"official: {'true' if official else 'false'}",
        f"source_ref: {_yaml_str(source_ref)}",
        "---",
    ]
    body = "\n\n".join(f"## {heading}\n{text}" for heading, text in sections_of(source, options.section_chars))
    return entry_id, "\n".join(front) + "\n" + body + "\n"


def intake(src_dir: str | Path, kb_dir: str | Path, options: IntakeOptions) -> IntakeReport:
    """Write one entry per source file into ``<kb>/dokumente``; report created/updated/unchanged."""
    options.check()
    src_dir, kb_dir = Path(src_dir), Path(kb_dir)
    report = IntakeReport(kb=str(kb_dir), family=options.family)
    if not src_dir.is_dir():
        raise IntakeError(f"Quellordner {src_dir} nicht gefunden")
    docs = kb_dir / "dokumente"
    docs.mkdir(parents=True, exist_ok=True)
    claimed: dict[str, str] = {}
    for path in source_files(src_dir):
        rel = f"{src_dir.name}/{path.relative_to(src_dir).as_posix()}"
        try:
            source = read_source(path)
        except OSError as exc:
            report.errors.append({"file": rel, "message": f"nicht lesbar: {exc.strerror}"})
            continue
        if not source.blocks and not source.title:
            report.errors.append({"file": rel, "message": "kein Text"})
            continue
        source_ref = source.url or rel
        entry_id, text = render_entry(source, options, source_ref)
        if entry_id in claimed:
            report.errors.append({"file": rel, "message": f"id '{entry_id}' schon vergeben an {claimed[entry_id]}"})
            continue
        claimed[entry_id] = rel
        _, issues = parse_entry_text(text, f"dokumente/{entry_id}.md", expected_id=entry_id)
        if issues:  # a bug here, not in the source: never write an entry the loader rejects
            report.errors.append({"file": rel, "message": "; ".join(str(i) for i in issues)})
            continue
        target = docs / f"{entry_id}.md"
        if target.exists():
            old = target.read_text(encoding="utf-8")
            if old == text:
                report.unchanged.append(entry_id)
                continue
            old_ref = _frontmatter_value(old, "source_ref")
            if old_ref != source_ref:
                report.errors.append(
                    {"file": rel, "message": f"{target.name} existiert schon aus anderer Quelle ({old_ref or 'ohne source_ref'}) – nicht überschrieben"}
                )
                continue
            report.updated.append(entry_id)
        else:
            report.created.append(entry_id)
        target.write_text(text, encoding="utf-8")
    return report


# -- helpers -------------------------------------------------------------------------------
def _take_summary(paragraphs: list[str]) -> tuple[list[str], list[str]]:
    taken: list[str] = []
    for para in paragraphs:
        if len(taken) >= SUMMARY_MAX_PARAGRAPHS or (taken and sum(len(p) for p in taken) >= SUMMARY_MIN_CHARS):
            break
        taken.append(para)
    return taken, paragraphs[len(taken) :]


def _pack(paragraphs: list[str], limit: int) -> list[list[str]]:
    """Consecutive paragraphs in groups of at most ``limit`` characters (a longer paragraph stays whole)."""
    parts: list[list[str]] = []
    size = 0
    for para in paragraphs:
        if parts and size + 2 + len(para) <= limit:
            parts[-1].append(para)
            size += 2 + len(para)
        else:
            parts.append([para])
            size = len(para)
    return parts


def _first_words(paragraph: str) -> str:
    paragraph = re.sub(r"^\s*(?:\(\d+[a-z]?\)|\d+[a-z]?[.)]|-)\s+", "", paragraph)  # "(1)", "2.", "- "
    words = re.sub(r"[*_`#|>\[\]]+", " ", paragraph).split()
    words = [w for w in words if w != "-"]
    text = " ".join(words[:HEADING_WORDS])
    return text + (" …" if len(words) > HEADING_WORDS else "")


def _heading(text: str) -> str:
    return _normalise_space(text)[:120] or "Abschnitt"


def _unique_headings(sections: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: dict[str, int] = {}
    out = []
    for heading, text in sections:
        seen[heading] = seen.get(heading, 0) + 1
        out.append((heading if seen[heading] == 1 else f"{heading} ({seen[heading]})", text))
    return out


def _take_url_line(text: str) -> tuple[str, str]:
    """A ``Quelle: https://…`` line among the first ten lines is the source URL, not text."""
    lines = text.split("\n")
    for i, line in enumerate(lines[:10]):
        m = _URL_LINE.match(line)
        if m:
            return m.group(1), "\n".join(lines[:i] + lines[i + 1 :])
    return "", text


def _clean_paragraph(text: str) -> str:
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    return "\n".join(lines).strip()


def _escape_markdown(text: str) -> str:
    """Plain text must not turn into markdown headings or fences."""
    return "\n".join(re.sub(r"^(\s*)(#|```)", r"\1\\\2", line) for line in text.split("\n"))


def _plain(text: str) -> str:
    return _normalise_space(text.replace("\u00a0", " "))


def _normalise_space(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _frontmatter_value(text: str, key: str) -> str:
    for line in text.split("\n")[1:]:
        if line.strip() == "---":
            break
        if line.startswith(f"{key}:"):
            raw = line[len(key) + 1 :].strip()
            try:
                return str(json.loads(raw)) if raw.startswith('"') else raw
            except ValueError:
                return raw
    return ""
