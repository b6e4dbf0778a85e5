"""Contradictions a reader finds in the knowledge base, found mechanically for ``validate``.

An outside check (December 2026) found the wrong rules of the sample where clerks least expect
them: in titles, key-value lines and the titles other entries quote. Five checks, each one
issue per place as ``file:line: message``:

1. **Limit words** – one entry writes the same limit both inclusively ("ab 3 Stunden",
   "mindestens", "unter 3 Stunden kein …") and exclusively ("mehr als 3 Stunden", "länger
   als", "über"). A trip of exactly 3:00 h is then both in and out. And a title names an
   amount or a percentage that the entry's text does not give.
2. **Absolute words** – a title says "nichts", "nie", "der ganze …", "immer" while the entry's
   own text names an exception or leaves it open about the same thing ("Ausnahme …",
   "… zahlt der Dienstgeber weiter", "offen").
3. **Stale references** – a "Verweise" line quotes a figure or such a word for another entry
   that the other entry's title no longer says.
4. **Same fact, two values** – two entries give a table row or a "Label: Wert" line of the same
   label and year different values, and neither is marked ⚠ as a conflict of sources.

Quoted text („…“, "…") is left out: entries quote what an old version or a source said.
Entries marked ⚠ (a conflict kept on purpose) are not checked for 1, 2 and 4. What cannot be
checked this way (a wrong rule written consistently, a condition missing in every entry) is
listed in docs/kb-checks.md.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from . import markdown as md
from ..types import Entry, LoadIssue

VERWEISE = "## Verweise"
KEY_VALUES = "## Kernwerte"
_QUOTED = re.compile(r"„[^“\n]*“|\"[^\"\n]*\"|»[^«\n]*«")

# 1. Limit words around "<number> <unit>"; the unit decides what is compared.
_NUM = r"(?P<num>\d+(?:,\d+)?)"
_UNIT = (r"(?P<unit>Stunden|Stunde|Std\.?|Kalendertagen|Kalendertage|Arbeitstagen|Arbeitstage|Tagen|Tage|Tag"
         r"|Wochen|Woche|Monaten|Monate|Monat|Dienstjahren|Dienstjahre|Jahren|Jahre|Jahr|Kilometern|Kilometer|km)")
_INCLUSIVE = re.compile(rf"\b(?P<word>ab|mindestens|unter|weniger als)\s+{_NUM}\s+{_UNIT}(?![\wäöüß])", re.I)
_EXCLUSIVE = re.compile(rf"\b(?P<word>mehr als|länger als|über)\s+{_NUM}\s+{_UNIT}(?![\wäöüß])", re.I)
_UNIT_STEMS = (("stunde", "h"), ("std", "h"), ("kalendertag", "Tage"), ("arbeitstag", "Tage"), ("tag", "Tage"),
               ("woche", "Wochen"), ("monat", "Monate"), ("dienstjahr", "Jahre"), ("jahr", "Jahre"),
               ("kilometer", "km"), ("km", "km"))

# 2. Absolute claims and the words that take them back.
_ABSOLUTE = re.compile(r"\b(nichts|niemals|nie|(?:der|die|das|den) (?:ganzen?|gesamten?)|zur Gänze|immer|ausnahmslos)\b",
                       re.I)
_HEDGE = re.compile(r"\b(Ausnahme|außer|ausgenommen|weiter|weiterhin|offen|nicht eindeutig|nur|jedoch)\b", re.I)
_NOUN = re.compile(r"\b[A-ZÄÖÜ][a-zäöüß]{3,}(?:-[A-ZÄÖÜa-zäöüß]+)*\b")
_NOT_SUBJECTS = frozenset({"Wissensbasis", "Quelle", "Quellen", "Eintrag", "Korrigiert", "Dezember"})

# 3. A "Verweise" line: "- [id] quoted title".
_REFERENCE = re.compile(r"^-\s*\[(?P<id>[a-z0-9-]+)\]\s*(?P<title>.+?)\s*$")

# 4. Labels too generic to name a fact on their own.
_LABEL_STOP = frozenset("der die das und oder für von mit bei im in am an auf aus je pro zum zur den dem des ein eine "
                        "einer eines ist sind wird werden als laut wie so zu".split())


def consistency_issues(kb_dir: str | Path, entries: list[Entry]) -> list[LoadIssue]:
    """Every contradiction of the four kinds, as issues with the file line to look at."""
    kb_dir = Path(kb_dir)
    lines_of = {e.id: _LineFinder(kb_dir, e) for e in entries}
    by_id = {e.id: e for e in entries}
    issues: list[LoadIssue] = []
    for entry in entries:
        find = lines_of[entry.id]
        if not _marked_conflict(entry):
            issues += _limit_word_issues(entry, find)
            issues += _absolute_word_issues(entry, find)
            issues += _title_figure_issues(entry, find)
        issues += _stale_reference_issues(entry, by_id, find)
    issues += _same_fact_issues(entries, lines_of)
    return sorted(issues, key=lambda i: (i.file, i.line, i.message))


# 1 -------------------------------------------------------------------------------------------
def _limit_word_issues(entry: Entry, find: "_LineFinder") -> list[LoadIssue]:
    uses: dict[tuple, dict[str, list]] = defaultdict(lambda: {"inclusive": [], "exclusive": []})
    for where, text in _checked_lines(entry):
        plain = _unquoted(text)
        for kind, pattern in (("inclusive", _INCLUSIVE), ("exclusive", _EXCLUSIVE)):
            for m in pattern.finditer(plain):
                key = (m["num"], _unit(m["unit"]))
                uses[key][kind].append((where, text, m.group(0)))
    issues = []
    for (num, unit), kinds in uses.items():
        if not (kinds["inclusive"] and kinds["exclusive"]):
            continue
        summary_kinds = {k for k, hits in kinds.items() if any(w == "summary" for w, _, _ in hits)}
        # Report the lines that disagree with the summary; without a summary word, every line.
        reported = [k for k in kinds if k not in summary_kinds] if len(summary_kinds) == 1 else list(kinds)
        other = {"inclusive": "exclusive", "exclusive": "inclusive"}
        for kind in reported:
            said_elsewhere = kinds[other[kind]][0][2]
            for where, text, said in kinds[kind]:
                issues.append(LoadIssue(entry.path, find.line(where, text),
                                        f"Grenze widersprüchlich: „{said}“ hier, „{said_elsewhere}“ an anderer Stelle "
                                        f"desselben Eintrags ({num} {unit}: ist der Grenzwert selbst dabei?) – "
                                        "vereinheitlichen oder als ⚠-Konflikt kennzeichnen"))
    return issues


def _unit(word: str) -> str:
    low = word.lower().rstrip(".")
    return next(name for stem, name in _UNIT_STEMS if low.startswith(stem))


def _title_figure_issues(entry: Entry, find: "_LineFinder") -> list[LoadIssue]:
    """Amounts and percentages of the title that the entry's text does not give."""
    from ..figures import extract, same_value  # the figure vocabulary, read-only

    text = _unquoted("\n".join(line for _, line in _checked_lines(entry, with_title=False)))
    given = extract(text)
    missing = [f.text for f in extract(_unquoted(entry.title)) if f.kind in ("money", "percent")
               and not any(same_value(f, g) for g in given)]
    if not missing:
        return []
    return [LoadIssue(entry.path, find.line("title", entry.title),
                      f"Titel nennt {', '.join(missing)}, der Text des Eintrags nicht – Titel oder Text korrigieren")]


# 2 -------------------------------------------------------------------------------------------
def _absolute_word_issues(entry: Entry, find: "_LineFinder") -> list[LoadIssue]:
    issues = []
    for part in re.split(r"\s[–—-]\s", entry.title):
        claim = _unquoted(part)
        word = _ABSOLUTE.search(claim)
        subjects = set(_NOUN.findall(claim)) - _NOT_SUBJECTS
        hedge = _hedging_sentence(entry, subjects) if word and subjects else None
        if hedge:
            issues.append(LoadIssue(entry.path, find.line("title", entry.title),
                                    f"Titel sagt „{word.group(0)}“ („{part.strip()}“), der eigene Text schränkt ein: "
                                    f"„{_short(hedge.lstrip('- '))}“ – Titel an den Text anpassen oder als ⚠-Konflikt kennzeichnen"))
    return issues


def _hedging_sentence(entry: Entry, subjects: set) -> str | None:
    """The first sentence of the entry's text that names one of ``subjects`` with an exception
    or a reservation ("Ausnahme", "weiter", "nur", "offen" …)."""
    for _, text in _checked_lines(entry, with_title=False):
        for sentence in md.sentences(md.plain(_unquoted(text))):
            if _HEDGE.search(sentence) and subjects & set(_NOUN.findall(sentence)):
                return sentence
    return None


# 3 -------------------------------------------------------------------------------------------
def _stale_reference_issues(entry: Entry, by_id: dict[str, Entry], find: "_LineFinder") -> list[LoadIssue]:
    from ..figures import extract, same_value  # the figure vocabulary, read-only

    _, _, references = entry.body.partition(VERWEISE)
    issues = []
    for text in references.split("\n"):
        m = _REFERENCE.match(text.strip())
        if not m or m["id"] not in by_id:
            continue
        quoted, target = m["title"], by_id[m["id"]].title
        target_figures = [f for f in extract(target)]
        stale = [f.text for f in extract(quoted) if f.kind not in ("year", "date", "number")
                 and not any(same_value(f, g) for g in target_figures)]
        stale += [w.group(0) for w in _ABSOLUTE.finditer(quoted) if w.group(0).lower() not in target.lower()]
        stale += [w.group(0) for p in (_INCLUSIVE, _EXCLUSIVE) for w in p.finditer(quoted)
                  if w.group(0).lower() not in target.lower()]
        if stale:
            issues.append(LoadIssue(entry.path, find.line("references", text),
                                    f"Verweis auf '{m['id']}' zitiert „{', '.join(dict.fromkeys(stale))}“, der Titel von "
                                    f"'{m['id']}' sagt das nicht (mehr): „{target}“ – Verweis aktualisieren"))
    return issues


# 4 -------------------------------------------------------------------------------------------
def _same_fact_issues(entries: list[Entry], lines_of: dict[str, "_LineFinder"]) -> list[LoadIssue]:
    from ..figures import extract

    values: dict[tuple, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    where: dict[tuple, dict[str, str]] = defaultdict(dict)
    marked = {e.id for e in entries if _marked_conflict(e) or "⚠" in e.body}
    for entry in entries:
        for key, value, text in _labelled_values(entry, extract):
            values[key][entry.id].add(value)
            where[key].setdefault(entry.id, text)
    issues = []
    by_id = {e.id: e for e in entries}
    for key, per_entry in values.items():
        ids = sorted(per_entry)
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if per_entry[a] & per_entry[b] or a in marked or b in marked:
                    continue
                label, column, year, _ = key
                for own, other in ((a, b), (b, a)):
                    issues.append(LoadIssue(by_id[own].path, lines_of[own].line("body", where[key][own]),
                                            f"„{label}“ ({column or year}) hat hier einen anderen Wert als in "
                                            f"'{other}' – angleichen oder beide als ⚠-Konflikt kennzeichnen"))
    return issues


def _labelled_values(entry: Entry, extract):
    """(label, column, year, kind) → value for table rows and "Label: value" lines, where the
    label alone (two words or more, no figure) names the fact."""
    title_years = _years(entry.title, extract)
    body, _, _ = entry.body.partition(VERWEISE)
    for node in md.parse(body):
        if node.kind == "table":
            header = list(node.header)
            for row in node.rows:
                label_cell = md.plain(row[0])
                label = _label(label_cell)
                if not label or extract(label_cell):
                    continue
                for ci, cell in enumerate(row[1:], start=1):
                    column = md.plain(header[ci]) if ci < len(header) else ""
                    years = _years(column, extract) or _years(md.plain(header[0]) if header else "", extract) \
                        or title_years
                    if len(years) != 1:
                        continue
                    column_key = "" if _years(column, extract) else _label(column) or ""
                    for fig in extract(md.plain(cell)):
                        if fig.kind not in ("year", "date", "number"):
                            yield (label, column_key, next(iter(years)), fig.kind), fig.value, _row_text(row)
        elif node.kind == "item":
            text = md.plain(node.text)
            head, sep, rest = text.partition(": ")
            label = _label(head) if sep and len(head) <= 60 and not extract(head) else None
            if not label or _QUOTED.search(rest):
                continue
            figs = [f for f in extract(rest) if f.kind not in ("date", "number")]
            years = frozenset(f.value for f in figs if f.kind == "year") or title_years
            if len(years) != 1:
                continue
            for fig in figs:
                if fig.kind != "year":
                    yield (label, "", next(iter(years)), fig.kind), fig.value, node.text


def _label(text: str) -> str | None:
    words = [w for w in re.findall(r"[a-zäöüß%€-]+", re.sub(r"\([^)]*\)", "", text.lower())) if w not in _LABEL_STOP]
    return " ".join(words) if len(words) >= 2 else None


def _years(text: str, extract) -> frozenset:
    return frozenset(f.value for f in extract(text) if f.kind == "year")


def _row_text(row) -> str:
    return "| " + " | ".join(row) + " |"


# shared ----------------------------------------------------------------------------------------
def _marked_conflict(entry: Entry) -> bool:
    return "⚠" in entry.title


def _checked_lines(entry: Entry, with_title: bool = True):
    """(section, line) of the title and the body up to "Verweise"; section is "summary" for the
    Zusammenfassung (the entry's own text), else "title" or "body"."""
    if with_title:
        yield "title", entry.title
    section = "body"
    for text in entry.body.split("\n"):
        if text.startswith("## "):
            if text.startswith(VERWEISE):
                return
            section = "summary" if text.startswith("## Zusammenfassung") else "body"
            continue
        if text.strip():
            yield section, text


def _unquoted(text: str) -> str:
    return _QUOTED.sub(" ", text)


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class _LineFinder:
    """File line numbers of an entry's title and body lines (the body is the file after the
    frontmatter, so a body line is found by its text, searching forward)."""

    def __init__(self, kb_dir: Path, entry: Entry):
        try:
            self.lines = (kb_dir / entry.path).read_text(encoding="utf-8-sig").replace("\r\n", "\n").split("\n")
        except (OSError, UnicodeDecodeError):
            self.lines = []

    def line(self, where: str, text: str) -> int:
        if where == "title":
            return next((i for i, l in enumerate(self.lines, 1) if l.startswith("title:")), 1)
        stripped = text.strip()
        closing = next((i for i, l in enumerate(self.lines[1:], 1) if l.strip() == "---"), 0)
        for i in range(closing + 1, len(self.lines)):
            if self.lines[i].strip() == stripped:
                return i + 1
        return closing + 1 or 1
