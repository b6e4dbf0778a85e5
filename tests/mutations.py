"""Wrong drafts from right ones, made from the facts of the blocks each sentence cites.

The measuring instrument of issue 27: a right draft (hand-checked) is turned into drafts that
are wrong in exactly one place, and the verifier must reject every one of them. The generator
knows nothing of the verifier: it has its own figure finder (€ amounts, %, counts, years, German
number formats) and its own reading of the blocks' tables, lists and sentences.

Kinds (``KINDS``), each applied to one figure, sentence or citation of the draft:

- ``other_row``  – a figure replaced by a same-unit value of another row (or column) of the same
  table or list, in a block the sentence cites;
- ``other_year`` – the value of the same row in another year (column, year row, "(2025)");
- ``period``     – the daily / monthly / yearly variant of the same quantity (its value; where the
  block has no variant, the sentence's period word changed instead: detail ``word``);
- ``swap``       – two figures of one sentence swapped;
- ``digits``     – one digit of a figure changed, its format kept;
- ``neighbour_citation`` – a citation moved to the nearest other block of the context that
  does not contain the sentence's figures;
- ``negation``   – a negation added (or an antonym put in) where the cited block states the
  positive: "ist steuerfrei" → "ist nicht steuerfrei", "steuerfrei" → "steuerpflichtig".
- ``named_row``  – a figure whose citation names its cell ("551,10 € [pv-gfb-02 · Betrag · 2026]",
  prompt v3) replaced by another row's value *and* the name by that row's labels: the model read
  the wrong row and copied its label (an ``other_row`` move keeps the name of the right cell).

Skip rule (conservative, so a mutation is wrong for certain): a replacement value is skipped
when it equals the value of the figure's own cell, or when a fact of a cited block has that
value *in the same role* as the figure's cell (its row label – and for two table cells the
column header – overlaps by half or more after years, numbers and filler are removed, its
period is the same, and its years are the same or one side has none) – e.g. the summary states the table's value again. ``digits`` only keeps a
new value that occurs nowhere in the context and not in the question; ``swap`` skips two
figures written as a bare enumeration ("0 %, 6 % und 27 %"); ``neighbour_citation`` needs a
figure of the sentence (not a year, not from the question) that the new citation set lacks;
``negation`` skips a sentence whose cited blocks contain the negated wording too.

Deterministic: every choice comes from a ``random.Random`` seeded by (seed, draft id, place).
"""
from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from pv_agent.engine.answer.context import Context
from pv_agent.engine.kb import markdown

KINDS = ("other_row", "other_year", "period", "swap", "digits", "neighbour_citation", "negation", "named_row")
WRONG_CELL_KINDS = ("other_row", "other_year", "period")


# -- the verifier, as a black box (one place, because it moves to answer.verification) ------

def verifier_verdict(answer: str, context: Context, question: str = "") -> tuple[bool, dict]:
    """(ok, flags) of the product's verifier for one draft."""
    try:
        from pv_agent.engine.answer.verification import verify
    except ImportError:  # today's module; the lead moves it into the package
        from pv_agent.engine.answer.verify import verify
    result = verify(answer, context, question=question)
    return bool(result.ok), result.flags()


# -- figures --------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.,-])(\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+\.\d{1,2}(?![\d.])|\d+(?:,\d+)?)(?![\w])")
_DATE = re.compile(r"\b\d{1,2}\.\s?\d{1,2}\.(?:\s?\d{2,4})?|\b\d{1,2}\.\s?(?:Jänner|Januar|Februar|März|April|Mai|Juni|"
                   r"Juli|August|September|Oktober|November|Dezember)(?:\s+\d{4})?|\b\d{4}-\d{2}(?:-\d{2})?\b")
_CITATION = re.compile(r"\[[^\]\n]*\]")
_LEGAL = re.compile(r"(?:§§?|(?<![\w-])(?:Abs\.?|Z|Nr\.?|lit\.?|Art\.?|Rz\.?|Ziff\.?|Pkt\.?|Tz\.?))\s*$")
_MONTHS = {"jänner", "januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september",
           "oktober", "november", "dezember", "jan", "feb", "mär", "apr", "jun", "jul", "aug", "sep", "okt", "nov", "dez"}
_NOT_UNITS = {"stand", "abs", "und", "oder", "bis", "bzw", "ab", "nach", "vor"}
_LOWER_UNITS = re.compile(r"\s?(g/km|km|kg|h|std\.?|stunden?|tage?n?|wochen?|monate?n?|jahre?n?)\b", re.I)


@dataclass(frozen=True)
class Figure:
    """A figure as written: ``kind`` eur | pct | year | count | num; ``unit`` for counts."""

    kind: str
    value: Decimal
    unit: str
    start: int  # the number's span in the text it was found in
    end: int
    number: str  # the number as written ("6.930", "551,10")


def parse_number(text: str) -> Decimal | None:
    t = text
    if re.fullmatch(r"\d+\.\d{1,2}", t):  # 3.7 – an English decimal point, not thousands
        pass
    else:
        t = t.replace(".", "").replace(",", ".")
    try:
        return Decimal(t)
    except InvalidOperation:
        return None


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower().replace("ß", "ss"))
    return "".join(c for c in text if not unicodedata.combining(c))


def unit_key(noun: str) -> str:
    word = fold(noun).strip("-.")
    return re.sub(r"(en|ern|er|e|n|s)$", "", word) if len(word) > 4 else word


def units_compatible(a: str, b: str) -> bool:
    return bool(a) and bool(b) and (a.endswith(b) or b.endswith(a))


def _masked(text: str) -> str:
    """Citations, dates and Stand months blanked (same length), so no figure is read there."""
    out = list(text)
    for rx in (_CITATION, _DATE):
        for m in rx.finditer(text):
            out[m.start():m.end()] = " " * (m.end() - m.start())
    return "".join(out)


def find_figures(text: str) -> list[Figure]:
    """The figures of ``text`` (answer sentence, block line or table cell), in order."""
    masked = _masked(text)
    out: list[Figure] = []
    for m in _NUMBER.finditer(masked):
        number, start, end = m.group(1), m.start(1), m.end(1)
        value = parse_number(number)
        if value is None:
            continue
        before, after = masked[:start], masked[end:]
        if _LEGAL.search(before[-8:]):
            continue
        prefixed = re.search(r"(€|EUR)\s?$", before) and not re.search(r"\d\s?(€|EUR)\s?$", before)
        if re.match(r"\s?(€|EUR\b|Euro\b)", after) or (prefixed and not re.match(r"\s?(%|Prozent\b)", after)):
            out.append(Figure("eur", value, "", start, end, number))
        elif re.match(r"\s?(%|Prozent\b|-%)", after):
            out.append(Figure("pct", value, "", start, end, number))
        elif re.fullmatch(r"(19[5-9]\d|20[0-4]\d)", number):
            out.append(Figure("year", value, "", start, end, number))
        elif re.match(r"\.(\s|$)", after) and len(number) <= 3 and re.match(r"\.\s+[A-ZÄÖÜa-zäöü]", after):
            continue  # an ordinal: "13. Bezug", "2. Woche"
        else:
            noun = re.match(r"\s?-?([A-ZÄÖÜ][\wäöüß]*(?:-[\wäöüß]+)*)", after)
            low = _LOWER_UNITS.match(after)
            if noun and fold(noun.group(1)) not in _MONTHS | _NOT_UNITS and not noun.group(1).isupper():
                out.append(Figure("count", value, unit_key(noun.group(1)), start, end, number))
            elif low:
                out.append(Figure("count", value, unit_key(low.group(1)), start, end, number))
            else:
                out.append(Figure("num", value, "", start, end, number))
    return out


def same_quantity_kind(a: Figure | "Fact", b: Figure | "Fact") -> bool:
    """Could the two stand for the same kind of quantity (for finding a figure's cell)?"""
    if a.kind in ("eur", "pct", "year") or b.kind in ("eur", "pct", "year"):
        return a.kind == b.kind
    return True  # counts and bare numbers (a table cell's unit is in its header)


def same_unit(a: "Fact", b: "Fact") -> bool:
    """May ``b``'s value replace ``a``'s (same unit, or the same table column)?"""
    if a.kind != b.kind and not ({a.kind, b.kind} <= {"count", "num"}):
        return False
    if a.kind in ("eur", "pct"):
        return True
    if a.container == b.container and a.col == b.col and a.col >= 0 and b.kind == a.kind:
        return True
    return a.kind == b.kind == "count" and units_compatible(a.unit, b.unit)


# -- facts of a block ------------------------------------------------------------------------

_YEAR = re.compile(r"(?<![\d.,])(19[5-9]\d|20[0-4]\d)(?![\d-])")
_AMOUNT_NOUN = r"-?(?:betr|wert|grenz|summ|bez|lohn|gehalt|höchst|frei|beitr|bemess|basis|satz|brutto|netto)\w*"
_PERIODS = (("day", re.compile(rf"\b(täglich\w*|pro tag|je tag|am tag|tages{_AMOUNT_NOUN})\b", re.I)),
            ("week", re.compile(rf"\b(wöchentlich\w*|pro woche|je woche|wochen{_AMOUNT_NOUN})\b", re.I)),
            ("month", re.compile(rf"\b(monatlich\w*|pro monat|je monat|im monat|monats{_AMOUNT_NOUN})\b", re.I)),
            ("year", re.compile(rf"\b(jährlich\w*|pro jahr|je jahr|im jahr|jahres{_AMOUNT_NOUN}|p\.\s?a\.)\b", re.I)))
_STOP = set("der die das den dem des ein eine einer eines einem einen und oder bzw mit von vom zum zur zu für im in "
            "am an auf bei bis ab nach vor über unter ist sind wird werden beträgt betragen gilt gelten je pro als "
            "auch nur noch nicht kein keine es er sie sich aus dem wie was wenn dann so the of a".split())
_CLAUSE = re.compile(r"(?<!\d)[,;]|[,;](?!\d)|\bbzw\.|\bund\b|\boder\b|\s/\s|\s[–→]\s")


def period_of(text: str) -> str | None:
    found = {name for name, rx in _PERIODS if rx.search(text)}
    return found.pop() if len(found) == 1 else None


def role_words(text: str) -> frozenset[str]:
    """Content words of a label (years, numbers, period words and filler removed)."""
    t = _CITATION.sub(" ", text)
    for _, rx in _PERIODS:
        t = rx.sub(" ", t)
    words = re.findall(r"[A-Za-zÄÖÜäöüß][\wäöüß]*", t)  # one letter counts: "Stufe A" is not "Stufe B"
    return frozenset(unit_key(w) for w in words if fold(w) not in _STOP)


def similar(a: frozenset, b: frozenset) -> bool:
    if not a and not b:
        return True
    return len(a & b) / max(1, len(a | b)) >= 0.5


@dataclass(frozen=True)
class Fact:
    block_id: str
    kind: str
    value: Decimal
    unit: str
    number: str  # as written in the block
    container: tuple  # (block id, "table"|"list"|"para", index)
    row: int
    col: int  # table column; -1 elsewhere
    label: str  # row label / clause
    header: str  # column header / list item's lead ("Label:")
    years: frozenset
    period: str | None

    @property
    def role(self) -> frozenset:
        return role_words(f"{self.label} {self.header}")


def same_role(a: Fact, b: Fact) -> bool:
    """Do two facts state the same quantity? Their row labels (a list item's or sentence's
    clause) must overlap by half; two table cells also their column headers."""
    if not similar(role_words(a.label), role_words(b.label)):
        return False
    both_cells = a.container[1] == b.container[1] == "table"
    return not both_cells or similar(role_words(a.header), role_words(b.header))


def _years(text: str, skip: Figure | None = None) -> set[int]:
    out = set()
    for m in _YEAR.finditer(_masked(text)):
        if skip is not None and skip.kind == "year" and m.start() == skip.start:
            continue
        out.add(int(m.group(1)))
    return out


def block_facts(block_id: str, text: str) -> list[Fact]:
    facts: list[Fact] = []
    list_index = -1
    previous_item = False
    row_in_list = 0
    for n, node in enumerate(markdown.parse(text)):
        if node.kind == "table":
            header = node.header
            caption = header[0] if header else ""
            for r, cells in enumerate(node.rows):
                label = cells[0] if cells else ""
                for c, cell in enumerate(cells):
                    col_head = header[c] if c < len(header) else ""
                    for fig in find_figures(cell):
                        unit = fig.unit
                        kind = fig.kind
                        if kind == "num" and col_head.split():  # a bare cell counts in its column's unit
                            kind, unit = "count", unit_key(col_head.split()[0])
                        years = _years(col_head) | (_years(label) if c else set()) | _years(cell, fig)
                        if kind == "year" and c == 0:
                            continue  # a year row's label, not a value
                        facts.append(Fact(block_id, kind, fig.value, unit, fig.number, (block_id, "table", n), r, c,
                                          label if c else caption, col_head, frozenset(years),
                                          period_of(f"{label} {col_head} {cell}")))
            previous_item = False
            continue
        if node.kind not in ("item", "paragraph"):
            previous_item = False
            continue
        if node.kind == "item":
            if not previous_item:
                list_index += 1
                row_in_list = 0
            container = (block_id, "list", list_index)
            previous_item = True
        else:
            container = (block_id, "para", n)
            previous_item = False
        body = markdown.plain(node.text)
        lead = body.split(":", 1)[0] if ":" in body[:80] else ""
        for s_index, sentence in enumerate(markdown.sentences(body)):
            row = row_in_list if node.kind == "item" else s_index
            sentence_years = _years(sentence)
            pos = 0
            for clause in _CLAUSE.split(sentence):
                for fig in find_figures(clause):
                    if fig.kind == "num":
                        continue  # a bare number in prose is no fact (a reference, a page)
                    years = _years(clause, fig) or (sentence_years - ({int(fig.value)} if fig.kind == "year" else set()))
                    if fig.kind == "year":
                        continue
                    facts.append(Fact(block_id, fig.kind, fig.value, fig.unit, fig.number, container, row, pos,
                                      clause, lead, frozenset(years), period_of(clause) or period_of(lead)))
                    pos += 1
        if node.kind == "item":
            row_in_list += 1
    return facts


def block_values(text: str) -> set[tuple[str, Decimal]]:
    """Every (kind, value) written anywhere in a block's text (for the conservative checks)."""
    return {(f.kind, f.value) for f in find_figures(text)} | {("any", f.value) for f in find_figures(text)}


# -- segments of a draft ----------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-ZÄÖÜ0-9„\"(\[*⚠])")
_ABBR = markdown.ABBREVIATIONS


@dataclass
class Segment:
    """A sentence, list item sentence, heading or table row of the draft: ``start``/``end`` in the draft."""

    start: int
    end: int
    kind: str  # heading | item | row | prose
    line: int
    own_ids: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()  # own ids, else inherited (lead-in ":", section below, table source)


def cited_ids(text: str, ids: list[str]) -> tuple[str, ...]:
    found: list[str] = []
    for m in _CITATION.finditer(text):
        for i in ids:
            if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", m.group(0)) and i not in found:
                found.append(i)
    return tuple(found)


def _split_line(line: str) -> list[tuple[int, int]]:
    cuts = [0]
    for m in _SENTENCE_END.finditer(line):
        word = re.search(r"(\S+)$", line[: m.start()])
        w = word.group(1).lower().strip("(„\"*") if word else ""
        if w.split(".")[-1] in _ABBR | {"st", "mio", "mrd"} or re.fullmatch(r"\d+|[ivxlcdm]+|bgbl|gp|\w+\.\w+", w):
            continue  # "Abs.", "13.", "XXVIII.", "BGBl.", "d.B."
        cuts.append(m.end())
    cuts.append(len(line))
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if line[a:b].strip()]


def segments(draft: str, ids: list[str]) -> list[Segment]:
    lines = draft.split("\n")
    kinds = markdown.line_kinds(draft)
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    out: list[Segment] = []
    for i, (line, kind) in enumerate(zip(lines, kinds)):
        if kind in ("blank", "code"):
            continue
        if kind == "prose" and re.fullmatch(r"\s*\*\*[^*]+\*\*:?\s*", line):
            kind = "heading"  # a bold lead line works as a heading
        parts = [(0, len(line))] if kind in ("heading", "row") else _split_line(line)
        for a, b in parts:
            text = line[a:b]
            own = cited_ids(text, ids)
            out.append(Segment(offsets[i] + a, offsets[i] + b, kind, i, own, own))
    _inherit(out, lines, kinds, ids)
    return out


def _inherit(segs: list[Segment], lines: list[str], kinds: list[str], ids: list[str]) -> None:
    for n, seg in enumerate(segs):
        if seg.cited:
            continue
        if seg.kind == "item":
            for prev in reversed(segs[:n]):
                if prev.kind == "item":
                    continue
                if lines[prev.line].rstrip().endswith(":"):
                    seg.cited = prev.own_ids or cited_ids(lines[prev.line], ids)
                break
        elif seg.kind == "heading":
            below: list[str] = []
            for nxt in segs[n + 1:]:
                if nxt.kind == "heading":
                    break
                below += [i for i in nxt.own_ids if i not in below]
            seg.cited = tuple(below)
        elif seg.kind == "row":
            first = last = seg.line
            while first > 0 and kinds[first - 1] in ("row", "blank") and lines[first - 1].strip().startswith("|"):
                first -= 1
            while last + 1 < len(lines) and lines[last + 1].strip().startswith("|"):
                last += 1
            around = "\n".join(lines[first:last + 1])
            after = next((lines[j] for j in range(last + 1, min(len(lines), last + 3)) if lines[j].strip()), "")
            before = lines[first - 1] if first > 0 else ""
            lead_in = cited_ids(before, ids) if before.rstrip().endswith(":") else ()
            seg.cited = cited_ids(around, ids) or lead_in or cited_ids(after, ids) or cited_ids(before, ids)


# -- mutations ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    kind: str
    detail: str
    draft_id: str
    sentence: str  # the right sentence
    mutated: str  # the same sentence, wrong
    old: str
    new: str
    text: str  # the whole wrong draft


def _rng(seed: int, *parts) -> random.Random:
    digest = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


@dataclass
class _Draft:
    draft_id: str
    text: str
    context: Context
    question: str
    facts: dict[str, list[Fact]] = field(default_factory=dict)
    values: dict[str, set] = field(default_factory=dict)

    def __post_init__(self):
        for b in self.context.blocks:
            self.facts[b.entry_id] = block_facts(b.entry_id, b.text)
            self.values[b.entry_id] = block_values(b.text)
        self.all_values = set().union(*self.values.values()) if self.values else set()
        self.question_values = {f.value for f in find_figures(self.question)}


def _mutation(d: _Draft, seg: Segment, kind: str, detail: str, start: int, end: int, new: str) -> Mutation:
    sentence = d.text[seg.start:seg.end]
    old = d.text[start:end]
    mutated = sentence[: start - seg.start] + new + sentence[end - seg.start:]
    return Mutation(kind, detail, d.draft_id, sentence.strip(), mutated.strip(), old, new, _replace(d.text, start, end, new))


def _cells(d: _Draft, seg: Segment, fig: Figure) -> list[Fact]:
    return [f for bid in seg.cited for f in d.facts.get(bid, ()) if f.value == fig.value and same_quantity_kind(f, fig)]


def _same_role_elsewhere(d: _Draft, seg: Segment, cells: list[Fact], value: Decimal, probe: Fact) -> bool:
    """The skip rule: ``value`` is said in a cited block in the role of one of the figure's cells."""
    for bid in seg.cited:
        for f in d.facts.get(bid, ()):
            if f.value != value or not same_quantity_kind(f, probe):
                continue
            for c in cells:
                years_ok = not f.years or not c.years or f.years == c.years
                if years_ok and f.period == c.period and same_role(f, c):
                    return True
    return False


def _classify(cell: Fact, other: Fact) -> str | None:
    if other.container != cell.container or other.value == cell.value or not same_unit(cell, other):
        return None
    if other.years and cell.years and other.years.isdisjoint(cell.years):
        structural = (other.row == cell.row) != (other.col == cell.col) if cell.col >= 0 else True
        if structural and similar(other.role, cell.role) and other.period == cell.period:
            return "other_year"
    if other.period and cell.period and other.period != cell.period and similar(other.role, cell.role):
        return "period"
    if other.container[1] in ("table", "list") and (other.row, other.col) != (cell.row, cell.col):
        if other.years and cell.years and other.years.isdisjoint(cell.years) and similar(other.role, cell.role):
            return None  # the same row in another year, but not a clean year move
        return "other_row"
    return None


_PERIOD_WORDS = {"täglich": "monatlich", "monatlich": "jährlich", "jährlich": "monatlich", "pro Monat": "pro Jahr",
                 "pro Jahr": "pro Monat", "im Monat": "im Jahr", "im Jahr": "im Monat", "pro Tag": "pro Monat",
                 "wöchentlich": "monatlich"}
_PERIOD_WORD = re.compile(r"\b(" + "|".join(re.escape(w) for w in _PERIOD_WORDS) + r")\b")


def _cell_mutations(d: _Draft, seg: Segment, figs: list[Figure], seed: int) -> list[Mutation]:
    out: list[Mutation] = []
    sentence = d.text[seg.start:seg.end]
    for k, fig in enumerate(figs):
        if fig.kind not in ("eur", "pct", "count", "num"):
            continue
        cells = _cells(d, seg, fig)
        if not cells or _in_enumeration(sentence, fig, figs):
            continue  # an enumerated value has no row of its own in the sentence
        options: dict[str, dict[tuple, tuple[Fact, str]]] = {}
        for cell in cells:
            for other in d.facts[cell.block_id]:
                kind = _classify(cell, other)
                if kind is None or other.value == fig.value:
                    continue
                if _same_role_elsewhere(d, seg, cells, other.value, other):
                    continue
                detail = ("column" if other.row == cell.row and cell.col >= 0 else "row") if kind == "other_row" else "value"
                options.setdefault(kind, {})[(other.value, other.number)] = (other, detail)
        start, end = seg.start + fig.start, seg.start + fig.end
        clause = _clause_of(sentence, fig)
        # a value another figure of the same clause already has: "von 6.450 € auf 6.450 €" has no role word
        same_clause = {f.value for f in figs if f is not fig and f.kind == fig.kind and _clause_of(sentence, f) == clause}
        year_named = bool(_years(sentence))
        for kind in WRONG_CELL_KINDS:
            choices = sorted((o for o in options.get(kind, {}).values() if o[0].value not in same_clause),
                             key=lambda o: (o[0].value, o[0].number))
            if choices:
                other, detail = _rng(seed, d.draft_id, seg.start, k, kind).choice(choices)
                if kind == "other_year":
                    detail = "year in sentence" if year_named else "year elsewhere in the draft"
                out.append(_mutation(d, seg, kind, detail, start, end, other.number))
        if "period" not in options and fig.kind == "eur":
            out += _period_word(d, seg, fig, figs, cells, sentence)
        named = _NAMED.match(d.text, end, seg.end)
        choices = sorted((o for o in options.get("other_row", {}).values() if o[0].value not in same_clause),
                         key=lambda o: (o[0].value, o[0].number))
        if named and choices:
            other, _ = _rng(seed, d.draft_id, seg.start, k, "named_row").choice(choices)
            label = " · ".join(p for p in (other.label, other.header if other.col >= 0 else "") if p.strip())
            label = " ".join(label.replace("*", "").replace("|", " ").split())
            new = f"{other.number}{named.group(1)}[{named.group(2) or ''}{named.group(3)} · {label}]"
            out.append(_mutation(d, seg, "named_row", "row", start, named.end(), new))
    return out


# a figure's citation naming its cell, right after it (its unit and Stand may stand between)
_NAMED = re.compile(r"(\s*(?:[^\s\[\]()\d]+\s*)?(?:\(Stand [^()\[\]\n]*\)\s*)?)\[\s*(⚠\s*)?([a-z0-9]+(?:-[a-z0-9]+)+)\s*·\s*[^\]\n]*\]")


def _period_word(d: _Draft, seg: Segment, fig: Figure, figs: list[Figure], cells: list[Fact], sentence: str) -> list[Mutation]:
    """No variant value in the block: the sentence's one period word changed (detail ``word``)."""
    clause_start = max([0] + [m.end() for m in _CLAUSE.finditer(sentence) if m.end() <= fig.start])
    clause_end = min([len(sentence)] + [m.start() for m in _CLAUSE.finditer(sentence) if m.start() >= fig.end])
    # never a word of a citation: "[pv-jub-02 · Höchstbetrag pro Jahr]" names a cell, it claims nothing
    words = list(_PERIOD_WORD.finditer(_blank_citations(sentence), clause_start, clause_end))
    others = [f for f in figs if f is not fig and f.kind == "eur" and clause_start <= f.start < clause_end]
    if len(words) != 1 or others:
        return []
    w = words[0]
    new_word = _PERIOD_WORDS[w.group(1)]
    new_period = period_of(new_word)
    if not any(c.period for c in cells):
        return []  # the block does not say the period: a changed word could not be checked
    for bid in seg.cited:  # the value is said for the new period too: not wrong
        if any(f.value == fig.value and f.period == new_period for f in d.facts.get(bid, ())):
            return []
    return [_mutation(d, seg, "period", "word", seg.start + w.start(), seg.start + w.end(), new_word)]


_SEPARATORS = re.compile(r"^[\s,;/*()]*(?:(?:und|oder|bzw\.|sowie)[\s,;/*()]*)?$")


def _enumerated(sentence: str, a: Figure, b: Figure, figs: list[Figure]) -> bool:
    """``a`` and ``b`` stand in a bare enumeration ("0 %, 6 % und 27 %"): only separators,
    units and figures of the same kind between them – the order carries no claim."""
    if a.kind != b.kind:
        return False
    between = list(sentence[a.end:b.start])
    for f in figs:
        if f.kind == a.kind and a.end <= f.start and f.end <= b.start:
            between[f.start - a.end:f.end - a.end] = " " * (f.end - f.start)
    rest = re.sub(r"\s?(€|EUR|Euro|%|Prozent)", " ", _CITATION.sub(" ", "".join(between)))
    if a.kind == "count":
        rest = re.sub(r"[\wäöüß]+", lambda m: "" if units_compatible(unit_key(m.group(0)), a.unit) else m.group(0), rest)
    return bool(_SEPARATORS.match(rest))


def _in_enumeration(sentence: str, fig: Figure, figs: list[Figure]) -> bool:
    return any(_enumerated(sentence, *sorted((fig, f), key=lambda x: x.start), figs) for f in figs if f is not fig)


def _clause_of(sentence: str, fig: Figure) -> int:
    return sum(1 for m in _CLAUSE.finditer(sentence) if m.end() <= fig.start)


def _swap(d: _Draft, seg: Segment, figs: list[Figure], seed: int) -> list[Mutation]:
    """Two figures of one sentence swapped (amounts, percentages, counts; years only move with
    their values, and a year in a source name is no claim) – only where the sentence gives them different roles:
    different clauses, or counts of different units ("nach 25 Dienstjahren 12 Monatsentgelte");
    never within an enumeration, never "von 6.450 € auf 6.930 €" (one clause, no role word)."""
    sentence = d.text[seg.start:seg.end]
    pairs = []
    for i, a in enumerate(figs):
        for b in figs[i + 1:]:
            if a.kind != b.kind or a.value == b.value or a.kind in ("num", "year") or _enumerated(sentence, a, b, figs):
                continue
            different_units = a.kind == "count" and not units_compatible(a.unit, b.unit)
            if different_units or _clause_of(sentence, a) != _clause_of(sentence, b):
                pairs.append((a, b))
    if not pairs:
        return []
    a, b = _rng(seed, d.draft_id, seg.start, "swap").choice(pairs)
    s = sentence
    swapped = s[:a.start] + b.number + s[a.end:b.start] + a.number + s[b.end:]
    text = d.text[:seg.start] + swapped + d.text[seg.end:]
    return [Mutation("swap", a.kind, d.draft_id, s.strip(), swapped.strip(), f"{a.number} … {b.number}",
                     f"{b.number} … {a.number}", text)]


def _digits(d: _Draft, seg: Segment, figs: list[Figure], seed: int) -> list[Mutation]:
    out = []
    for k, fig in enumerate(figs):
        if fig.kind == "num":
            continue
        rng = _rng(seed, d.draft_id, seg.start, k, "digits")
        positions = [i for i, c in enumerate(fig.number) if c.isdigit()]
        for _ in range(12):
            i = rng.choice(positions)
            digit = rng.choice([c for c in "0123456789" if c != fig.number[i] and not (c == "0" and i == 0)])
            number = fig.number[:i] + digit + fig.number[i + 1:]
            value = parse_number(number)
            if value is None or value == fig.value or ("any", value) in d.all_values or value in d.question_values:
                continue
            if fig.kind == "year" and not 1950 <= value <= 2049:
                continue
            out.append(_mutation(d, seg, "digits", fig.kind, seg.start + fig.start, seg.start + fig.end, number))
            break
    return out


def _neighbour(d: _Draft, seg: Segment, figs: list[Figure]) -> list[Mutation]:
    if not seg.own_ids:
        return []
    numbers = {b.entry_id: b.number for b in d.context.blocks}
    checked = [f for f in figs if f.kind not in ("year", "num") and f.value not in d.question_values]
    if not checked:
        return []
    sentence = d.text[seg.start:seg.end]
    target = next((i for i in seg.own_ids if i in numbers), None)
    if target is None:
        return []
    candidates = sorted((b for b in d.context.blocks if b.entry_id not in seg.own_ids),
                        key=lambda b: (abs(b.number - numbers[target]), b.number))
    for b in candidates:
        if any(("any", f.value) in d.values[b.entry_id] for f in checked):
            continue
        remaining = [i for i in seg.own_ids if i != target] + [b.entry_id]
        lacking = [f for f in checked if not any(("any", f.value) in d.values.get(i, ()) for i in remaining)]
        if not lacking:
            continue
        # every citation of ``target`` in the sentence moves, so no bracket still cites it
        moved = _CITATION.sub(lambda m: re.sub(rf"(?<![\w-]){re.escape(target)}(?![\w-])", b.entry_id, m.group(0)),
                              sentence)
        return [_mutation(d, seg, "neighbour_citation", f"{target}→{b.entry_id}", seg.start, seg.end, moved)]
    return []


_ANTONYMS = [("steuerfrei", "steuerpflichtig"), ("beitragsfrei", "beitragspflichtig"),
             ("abgabenfrei", "abgabenpflichtig"), ("sv-frei", "sv-pflichtig"), ("unzulässig", "zulässig"),
             ("unbezahlt", "bezahlt"), ("unbefristet", "befristet"), ("ohne Entgeltfortzahlung", "mit Entgeltfortzahlung")]
_VERBS = re.compile(r"\b(ist|sind|wird|werden|gilt|gelten|kann|können|muss|müssen|besteht|bestehen|zählt|zählen|"
                    r"verfällt|verfallen|bleibt|bleiben|darf|dürfen|steht|stehen|gehört|gehören)\b")
_NEGATED = re.compile(r"\b(nicht|kein\w*|nie|weder)\b", re.I)


def _words(text: str) -> set[str]:
    return {unit_key(w) for w in re.findall(r"[A-Za-zÄÖÜäöüß][\wäöüß-]+", text) if fold(w) not in _STOP and len(w) > 2}


def _blank_citations(text: str) -> str:
    return _CITATION.sub(lambda m: " " * len(m.group(0)), text)


def _negation(d: _Draft, seg: Segment) -> list[Mutation]:
    sentence = _blank_citations(d.text[seg.start:seg.end])  # a cell name claims nothing
    blocks = [b.text for b in d.context.blocks if b.entry_id in seg.cited]
    if not blocks or seg.kind in ("heading", "row"):
        return []
    joined = fold(" ".join(blocks))
    for a, b in _ANTONYMS:  # an antonym, both ways, where the block has only the sentence's word
        for word, opposite in ((a, b), (b, a)):
            m = re.search(rf"(?<![\w-]){re.escape(word)}(?:e|en|er|es|em)?(?![\w-])", sentence, re.I)
            if not m or fold(word) not in joined or re.search(rf"(?<![\w-]){re.escape(fold(opposite))}", joined):
                continue
            if _NEGATED.search(sentence[max(0, m.start() - 30):m.start()]):
                continue
            new = opposite + m.group(0)[len(word):]
            return [_mutation(d, seg, "negation", "antonym", seg.start + m.start(), seg.start + m.end(), new)]
    if _NEGATED.search(sentence):
        return []
    # "nicht" after the verb, when a cited block states the sentence without a negation
    content = _words(_CITATION.sub(" ", sentence))
    if len(content) < 3:
        return []
    for text in blocks:
        for line in markdown.sentences(markdown.plain(text.replace("\n", " "))):
            if _NEGATED.search(line):
                continue
            if len(content & _words(line)) / len(content) >= 0.6:
                # the first verb followed by a word that is not a verb too ("werden darf"), not one closing the clause
                v = next((m for m in _VERBS.finditer(sentence)
                          if re.match(r"\s+[\w*„]", sentence[m.end():]) and not _VERBS.match(sentence, m.end() + 1)), None)
                if v and not re.search(rf"\b{v.group(1)} nicht\b", " ".join(blocks)):
                    s = seg.start + v.end()
                    return [_mutation(d, seg, "negation", "nicht", s, s, " nicht")]
                return []
    return []


def mutate(draft: str, context: Context, *, question: str = "", draft_id: str = "", seed: int = 27) -> list[Mutation]:
    """Every wrong draft the generator makes from one right draft (deterministic for a seed)."""
    d = _Draft(draft_id, draft, context, question)
    ids = context.ids
    out: list[Mutation] = []
    for seg in segments(draft, ids):
        text = draft[seg.start:seg.end]
        figs = find_figures(text)
        out += _cell_mutations(d, seg, figs, seed)
        out += _swap(d, seg, figs, seed)
        out += _digits(d, seg, figs, seed)
        out += _neighbour(d, seg, figs)
        out += _negation(d, seg)
    return out
