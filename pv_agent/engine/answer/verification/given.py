"""The question's own figures: given, not claimed – but only in the role the question gave them."""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

from ...textnorm import STOPWORDS, fold
from ... import figures as nb

# A figure the clerk wrote is given in the role the question gave it: "bei 1.300 €
# Bemessungsgrundlage" lets the answer repeat 1.300 € as the Bemessungsgrundlage, not as
# "der Freibetrag beträgt 1.300 €". The role is read from the nouns near the figure: up to
# _NEAR_BEFORE words before and _NEAR_AFTER after it, inside its clause, never past another figure.
_NEAR_BEFORE, _NEAR_AFTER = 4, 3
_WORD = re.compile(r"[A-Za-zÄÖÜäöüß][A-Za-zÄÖÜäöüß-]*")
# Capitalised words that name no quantity: sentence-initial particles and the units themselves.
_ROLELESS = frozenset(
    "eur euro prozent cent brutto netto monatlich jährlich täglich insgesamt rund genau "
    "monat monats jahr jahres tag woche "  # "bei 1.800 € brutto im Monat": a period, not a role
    "also dabei dann hier damit daher somit ja neben laut gemäß zusätzlich "
    "warum wieso weshalb was wie wann wo welche welcher welches wer".split()
)


# After one of these the words name what the sentence says next, not the figure before them.
_PREDICATE_VERBS = frozenset(
    "beträgt betragen betrug ist sind war waren liegt liegen lag fällt fallen ergibt ergeben macht "
    "machen wird werden gilt gelten steht stehen bleibt bleiben kostet kosten".split()
)


@dataclass(frozen=True)
class _GivenFigure:
    figure: nb.Figure
    nouns: frozenset  # stems of the nouns near it in the question
    words: frozenset = frozenset()  # every content word near it in the question (folded stems)


# Clearly English function words: a question with two of them writes "€68,000" for 68.000 €.
_ENGLISH = frozenset("the what which how our does is are of with when should we their his her "
                     "employee employees salary".split())
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)")  # "€2,500, so …" too


def _is_english(text: str) -> bool:
    return len({w.lower() for w in _WORD.findall(text)} & _ENGLISH) >= 2


def german_numbers(question: str) -> str:
    """An English question's "€68,000" / "1,500.50" as German numbers ("68.000", "1.500,50"),
    with the same length, so every span stays where it was."""
    if not _is_english(question):
        return question
    swap = str.maketrans(",.", ".,")
    question = _THOUSANDS.sub(lambda m: m.group(0).translate(swap), question)
    return _ENGLISH_DATE.sub(_german_date, question)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
# "1 January 2003", "1st of March 2026", "March 1, 2026"
_ENGLISH_DATE = re.compile(
    r"\b(?:(\d{1,2})(?:st|nd|rd|th)?(?: of)? (" + "|".join(_MONTHS) + r")|(" + "|".join(_MONTHS)
    + r") (\d{1,2})(?:st|nd|rd|th)?,?) (\d{4})\b", re.IGNORECASE)


def _german_date(m: re.Match) -> str:
    """"1 January 2003" as "1.1.2003", padded to the same length."""
    day = m.group(1) or m.group(4)
    month = _MONTHS.index((m.group(2) or m.group(3)).lower()) + 1
    text = f"{int(day)}.{month}.{m.group(5)}"
    return text + " " * (len(m.group(0)) - len(text))


# What an English question calls an amount, in the words a German answer uses for it
# ("€68,000 taxable income" – "bei 68.000 € Einkommen"): the role of a clerk's figure in any language.
_ENGLISH_ROLES = {
    "income": "einkommen einkünfte bezug", "salary": "gehalt bezug entgelt lohn", "wage": "lohn entgelt",
    "wages": "lohn entgelt", "pay": "entgelt bezug lohn gehalt", "bonus": "prämie bonus sonderzahlung",
    "allowance": "zulage pauschale", "car": "fahrzeug auto dienstwagen firmenauto", "rent": "miete",
    "loan": "darlehen", "voucher": "gutschein", "vouchers": "gutschein", "payroll": "lohnsumme",
    "severance": "abfertigung", "pension": "pension", "hours": "stunden", "days": "tage",
}


def _question_figures(question: str) -> list[_GivenFigure]:
    english = _is_english(question)
    question = german_numbers(question)
    out = []
    for offset, clause in nb.segments(question):
        figs = [nb.shifted(f, -offset) for f in nb.extract(question) if nb.in_clause(f, offset, clause)]
        for f in figs:  # bare numbers too: "Kind (8)", "der Teil über 25.000"
            words = _near_words(clause, f, figs, whole=True)
            if english:
                words |= {nb.stem(fold(t)) for w in _WORD.findall(clause)
                          for t in _ENGLISH_ROLES.get(w.lower(), "").split()}
            out.append(_GivenFigure(f, _near_nouns(clause, f, figs), words))
    return out


def _near_words(clause: str, fig: nb.Figure, clause_figs: list[nb.Figure], whole: bool = False) -> frozenset:
    """The content words near ``fig`` in its clause, any case ("heuer schon 8 Wochen krank");
    ``whole``: all of the clause up to the next figures (a question's figure: "Vergleich vor dem
    Arbeitsgericht über 10.000 €")."""
    left = max([f.end for f in clause_figs if f.end <= fig.start], default=0)
    right = min([f.start for f in clause_figs if f.start >= fig.end], default=len(clause))
    before, after = _WORD.findall(clause[left:fig.start]), _WORD.findall(clause[fig.end:right])
    near = before + after if whole else before[-_NEAR_BEFORE:] + after[:_NEAR_AFTER + 2]
    unit = fold(fig.text)
    return frozenset(nb.stem(fold(w)) for w in near
                     if len(w) > 3 and fold(w) not in STOPWORDS and w.lower() not in _ROLELESS and fold(w) not in unit)


def _related(a: str, b: str) -> bool:
    """One word, or a compound of the other ("Vergleich" ~ "Vergleichssumme", "krank" ~ "Krankenstand")."""
    return a == b or min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a))


def echoes_question(clause: str, fig: nb.Figure, clause_figs: list[nb.Figure],
                    question_figures: list[_GivenFigure]) -> bool:
    """The answer says the clerk's figure in the clerk's words ("die 12 Überstunden des Monteurs"
    for "ein Monteur 12 Überstunden", "die Vergleichssumme von 10.000 €" for "Vergleich über
    10.000 €"): it repeats the question, and claims no cell of a block that holds the same value."""
    mine = _near_words(clause, fig, clause_figs)
    return any(any(_related(a, b) for a in mine for b in q.words)
               for q in question_figures if nb.matches(fig, q.figure) or _unit_added(fig, q.figure))


def _all_nouns(text: str) -> frozenset:
    """Stems of the capitalised words of ``text`` that could name a quantity."""
    return frozenset(nb.stem(w) for w in _WORD.findall(text)
                     if w[0].isupper() and fold(w) not in STOPWORDS and w.lower() not in _ROLELESS)


def _near_nouns(clause: str, fig: nb.Figure, clause_figs: list[nb.Figure]) -> frozenset:
    """Stems of the capitalised words near ``fig`` in its clause (German nouns and
    abbreviations such as DB), stopping at any other figure."""
    left = max([f.end for f in clause_figs if f.end <= fig.start], default=0)
    right = min([f.start for f in clause_figs if f.start >= fig.end], default=len(clause))
    before = _WORD.findall(clause[left:fig.start])[-_NEAR_BEFORE:]
    after = []
    for w in _WORD.findall(clause[fig.end:right])[:_NEAR_AFTER]:
        if w.lower() in _PREDICATE_VERBS:  # "bei 1.300 € beträgt der DB …": DB is the next figure's role
            break
        after.append(w)
    return _all_nouns(" ".join(before + after))


def _given(fig: nb.Figure, clause: str, clause_figs: list[nb.Figure], question_figures: list[_GivenFigure]) -> bool:
    """``fig`` repeats a figure of the question in the role the question gave it. Counts,
    years and dates carry their role in themselves ("25 Dienstjahre", "2026"); an amount or
    a percentage is given when the answer names no noun near it ("bei 1.300 € beträgt der
    DB …") or shares one with the question's figure ("1.300 € Bemessungsgrundlage")."""
    same = [q for q in question_figures if nb.matches(fig, q.figure) and (
                q.figure.kind != "number" or nb.is_answer_figure(q.figure))
            or _unit_added(fig, q.figure)]
    if not same:
        return False
    if fig.kind not in ("money", "percent", "number"):
        return True
    if _REFERS_BACK.search(clause[max(0, fig.start - 12):fig.start]):
        return True  # "wie sich die 15.000 € aufteilen": the article points back to the question's figure
    nouns = _near_nouns(clause, fig, clause_figs)
    if not nouns:
        return True
    return any(_related(a, b) for q in same for a in nouns for b in q.nouns | q.words)


_REFERS_BACK = re.compile(r"\b(?:die|der|den|dem|des|diese[mnrs]?|Ihre[mnrs]?|Ihr)\s+$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b(?:Ihre[mnrs]?|Ihr|your)\s+(?:\S+\s+)?$")


def possessed(clause: str, fig: nb.Figure) -> bool:
    """"Ihre 2 € pro Tag", "Ihr 12-Stunden-…": the answer says the figure is the clerk's own –
    it repeats the question and claims no cell of a block."""
    return bool(_POSSESSIVE.search(clause[max(0, fig.start - 24):fig.start]))


def _unit_added(fig: nb.Figure, asked: nb.Figure) -> bool:
    """The clerk wrote a bare number the answer gives with its unit: "Kind (8)" → "8 Jahre",
    "der Teil über 25.000" → "25.000 €" (a small number only as a count)."""
    if asked.kind != "number" or fig.value != asked.value:
        return False
    if fig.kind.startswith("count:"):
        return True
    return fig.kind in ("money", "percent") and nb.is_answer_figure(asked)


# System prompt v3, rule 4: the model marks the clerk's own figures "(laut Frage)".
_MARKED_GIVEN = re.compile(r"^[^\d\[\]]{0,24}?\(\s*(?:laut|lt\.|gemäß|aus) (?:der |Ihrer )?(?:Frage|Anfrage|Angabe)",
                           re.IGNORECASE)


# "(3.000 € laut Frage)": the mark inside the figure's own parentheses
_MARKED_INSIDE = re.compile(r"\s*(?:laut|lt\.|gemäß) (?:der |Ihrer )?(?:Frage|Anfrage|Angabe)\)", re.IGNORECASE)
# "320 €, 300 € und 280 € (laut Frage)": figures listed before one mark share it
_LISTED = re.compile(r"\s*(?:,|und|bzw\.|oder|sowie|plus|×|x|/)\s*", re.IGNORECASE)


def marks_question(text: str, fig: nb.Figure) -> bool:
    """The answer marks ``fig`` as the question's: "70.000 € (laut Frage)", "(3.000 € laut
    Frage)", or a list of figures ending in the mark."""
    end = fig.end
    following = nb.extract(text[end:end + 160])  # spans from fig.end
    while True:
        if _MARKED_GIVEN.search(text[end:end + 60]) or _MARKED_INSIDE.match(text, end):
            return True
        nxt = next((f for f in following if f.start + fig.end >= end), None)
        if nxt is None or not _LISTED.fullmatch(text[end:nxt.start + fig.end]):
            return False
        end = nxt.end + fig.end


def of_question(fig: nb.Figure, question_figures: list[_GivenFigure]) -> list[_GivenFigure]:
    """The question's figures of ``fig``'s value (written with or without its unit)."""
    return [q for q in question_figures if nb.matches(fig, q.figure) or _unit_added(fig, q.figure)
            or _unit_compounded(fig, q.figure)]


def _unit_compounded(fig: nb.Figure, asked: nb.Figure) -> bool:
    """"12 Überstundenzuschläge (laut Frage)" for the clerk's "12 ÜSt": a count of a compound
    that begins with the question's unit."""
    return fig.kind.startswith("count:") and asked.kind.startswith("count:") and fig.value == asked.value \
        and len(asked.kind) > 9 and fig.kind.startswith(asked.kind)


def marked_elsewhere(clause: str, fig: nb.Figure, clause_figs: list[nb.Figure],
                     question_figures: list[_GivenFigure]) -> bool:
    """A figure marked as the question's stands with the words of another of the question's
    figures and none of its own: "bei 200 € (laut Frage) pro Tag" for "€5 per telework day …
    €200 in total" – the clerk's figures swapped."""
    near = _near_words(clause, fig, clause_figs)
    own = of_question(fig, question_figures)
    others = [q for q in question_figures if q not in own and nb._same_class(q.figure, fig)]

    def said_of(qs):  # one word, or one a compound of the other ("Sechstel" ~ "Jahressechstel")
        return any(_related(a, b) or min(len(a), len(b)) >= 5 and (a in b or b in a)
                   for q in qs for a in near for b in q.nouns | q.words)

    # (a figure of the question with no words of its own near it cannot be told apart)
    return said_of(others) and all(q.nouns | q.words for q in own) and not said_of(own)


# -- dates of the clerk's case ------------------------------------------------------------------
# "Eintritt am 17.3.2026 (laut Frage) … frei bis 16.4.2026, Beiträge ab 17.4.2026": a block states
# the rule (Naturalmonat, Quartalsende, "bis zum 15. des Folgemonats"), the question the date it
# applies to; the answer's date follows from the two. It is accepted when it is one such a rule
# gives from one of the question's dates – a month's end or first day, its 15th, or the same day
# up to three months on (less a day) – in a year the question names (or the next one).

def case_date(fig: nb.Figure, question_figures: list[_GivenFigure]) -> bool:
    """``fig`` (a date with its day) is one a block's rule makes of a date of the question."""
    if fig.kind != "date" or fig.value[2] is None:
        return False
    year, month, day = fig.value
    bases = [q.figure.value for q in question_figures if q.figure.kind == "date" and q.figure.value[0]]
    years = {q.figure.value for q in question_figures if q.figure.kind == "year"} | {b[0] for b in bases}
    if not years:
        return False
    if year is not None and not ({year, year - 1} & years):
        return False
    if day in (1, 15) or day == _month_days(year or max(years), month):
        return True  # a month's first day or end (and with it a quarter's), a 15th ("bis zum 15.")
    for y, m, d in bases:
        d = d or 1
        for k in range(0, 4):
            m2, y2 = (m - 1 + k) % 12 + 1, y + (m - 1 + k) // 12
            for dd, mm, yy in ((d, m2, y2), *_day_before(d, m2, y2), *_day_after(d, m2, y2)):
                if (dd, mm) == (day, month) and (year is None or year == yy):
                    return True
    return False


def _month_days(year: int, month: int) -> int:
    return calendar.monthrange(year, month)[1]


def _day_before(d: int, m: int, y: int) -> tuple:
    if d > 1:
        return ((d - 1, m, y),)
    pm, py = (12, y - 1) if m == 1 else (m - 1, y)
    return ((_month_days(py, pm), pm, py),)


def _day_after(d: int, m: int, y: int) -> tuple:
    if d < _month_days(y, m):
        return ((d + 1, m, y),)
    nm, ny = (1, y + 1) if m == 12 else (m + 1, y)
    return ((1, nm, ny),)
