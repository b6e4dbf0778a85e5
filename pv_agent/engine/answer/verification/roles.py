"""The role of a figure: where it stands in its row, column and year – the other figures of
its clause, the years, the period (daily/monthly/yearly), share (full/half), side (DN/DG/gesamt),
whether it is a surcharge, a limit, or called outdated. ``mismatch`` says why a fact with the
right value still does not back a figure written in another role.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ...figures import Figure, _same_class, _years, _without_figures, same_value

# Words that tell rows of one table apart. A dimension compares like with like: a sentence saying
# "monatlich" is not backed by the "täglich" row.
PERIODS = re.compile(
    r"(?P<daily>\btäglich\w*|\btage(?:s)?(?:wert|satz|betrag|höchst\w*)|\b(?:pro|je|am) tag\b|/tag\b|\(tag\)|^tag\b"
    r"|\b(?:pro|je) (?:\w+(?:em|en) )?(?:arbeits|kalender|telearbeits|werk)tag\b)"  # "je ausschließlichem Telearbeitstag"
    r"|(?P<monthly>\bmonatlich\w*|\bmonats(?:wert|betrag|-)|\b(?:pro|je|im) (?:kalender)?monat\b|/monat\b|\(monat\)|^monat\b)"
    r"|(?P<weekly>\bwöchentlich\w*|\b(?:pro|je|in der) woche\b|/woche\b)"
    r"|(?P<yearly>\bjährlich\w*|\bjahres(?:betrag|wert|-)|\b(?:pro|je) (?:kalender)?jahr\b|/jahr\b|\(jahr\)"
    # "400 € im Jahr", not "im Jahr 2025" (nor "im Jahr   waren" where the year was blanked out)
    r"|\bim (?:kalender)?jahr\b(?![\s\d]*\d{4})(?!\s{2}))",
    re.I,
)
SHARES = re.compile(r"(?P<full>\bvoll(?:e[nmrs]?)?\b)|(?P<half>\bhalb(?:e[nmrs]?)?\b)", re.I)
SURCHARGE = re.compile(r"zuschl[aä]g", re.I)
# Who pays: the employee's and the employer's share and their sum are columns of their own
# ("KV | DN 3,87 % | DG 3,78 % | gesamt 7,65 %").
_SIDES = re.compile(r"(?P<employee>\bDN\b|\bDN-|[Dd]ienstnehmer\w*)|(?P<employer>\bDG\b|\bDG-|[Dd]ienstgeber\w*)"
                    r"|(?P<total>\b[Gg]esamt\b)")
# Before a figure in a sentence: the figure is a limit, not the amount itself.
_BOUND_IN_ANSWER = re.compile(
    r"\b(?:höchstens|maximal|bis(?: zu)?|unter|über|ab|mindestens|mehr als|weniger als|nicht mehr als|oberhalb|unterhalb)\b"
    r"|\b(?:max|mind|min)\.",
    re.I,
)
_BOUND_IN_BLOCK = re.compile(
    r"\b(?:höchst\w*|maximal\w*|bis|unter|über|ab|mindest\w*|mehr als|weniger als|\w*grenze\w*|deckel\w*|oberhalb|unterhalb)\b"
    r"|\b(?:max|mind|min)\."
    r"|nicht überschreit|nicht übersteig", re.I,
)
# "Der Satz ist ein Höchstbetrag": a paragraph that calls its figures limits
PARAGRAPH_BOUND = re.compile(r"\b(?:ist|sind|gilt|gelten) (?:als )?(?:ein|eine|der|die)?\s*(?:Höchst\w*|Obergrenze\w*|Grenze\w*)",
                              re.I)
# A block sentence that calls its own figure wrong does not back that figure.
REFUTED = re.compile(r"\b(?:falsch\w*|veraltet\w*|überholt\w*|irrtümlich\w*|fehlerhaft\w*)", re.I)
# An answer that says the figure is outdated may quote what a block calls outdated.
# … and the outdated side of a conflict, reported as what a source once said: "Huemer nannte für 2026
# dagegen 10 Überstunden"
REFUTED_IN_ANSWER = re.compile(REFUTED.pattern + r"|\b(?:vorab\w*|ursprünglich\w*|früher\w*|bisherig\w*"
                               r"|nannten?)\b", re.I)


@lru_cache(maxsize=8192)
def dimension(pattern: re.Pattern, text: str) -> str | None:
    """The one value of a dimension the text names (daily/monthly/yearly, full/half), or None
    when it names none or several."""
    found = {m.lastgroup for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None




@dataclass(frozen=True)
class Role:
    """Where a figure stands: the other figures of its clause (its row), the years it is about,
    and the words that tell rows apart."""

    companions: tuple = ()  # other figures of the clause / table row
    years: frozenset = frozenset()
    period: str | None = None  # daily | weekly | monthly | yearly
    share: str | None = None  # full | half
    side: str | None = None  # employee | employer | total (DN / DG / gesamt)
    surcharge: bool | None = None  # "Zuschlag" in the label (None: only the entry title says so)
    bound: bool = False  # written as a limit (höchstens, bis, über, Grenze …)
    lower: bool = False  # … a lower one ("über 2.630 €", "ab 1.095 €")
    refuted: bool = False  # the block calls the figure wrong or outdated
    # a figure without a period of its own: the periods its value has elsewhere in the entry
    periods_elsewhere: frozenset = frozenset()
    # a table row after "| 2 % | bis 2.630 € |": it holds what lies above the row before it ("| 2,95 % |
    # darüber |") – those upper limits are its lower ones, a companion only where the answer writes
    # "über 2.630 €" (``over``: the companions the answer writes that way)
    floors: tuple = ()
    caps: tuple = ()  # … and in the row before, the upper limits the next row starts from
    over: tuple = ()
    floor: bool = False  # the fact is such a lower limit itself (2.630 € in the 2,95-% row)


def role_of(fig: Figure, clause: str, clause_figs: list[Figure], *, context: str = "", context_figs=(),
            fallback_years=frozenset(), block: bool = False, title: str = "") -> Role:
    """The role of ``fig`` (found in ``clause``) given its clause, the row/column labels around it
    (``context``) and the years of the enclosing sentence (``fallback_years``)."""
    others = tuple(f for f in clause_figs if f is not fig) + tuple(context_figs)
    years = _years([f for f in others], clause) | _years(list(context_figs), context)
    if not years:
        years = frozenset(fallback_years)
    local, around = row_marks(_without_figures(clause, clause_figs)), row_marks(context)
    previous_end = max([f.end for f in clause_figs if f.end <= fig.start], default=0)
    before = clause[previous_end : fig.start]
    named_surcharge = local.surcharge or around.surcharge
    if block:
        bound = bool(_BOUND_IN_BLOCK.search(before)) or around.bound or row_marks(title).bound
        surcharge = True if named_surcharge else (None if row_marks(title).surcharge else False)
    else:
        # "von 2 bis 12 Monatsentgelten": the end of a range after its start is no limit
        start = [f for f in clause_figs if f.end == previous_end and f.kind not in ("year", "date")]
        bound = governs_bound(before) and not (start and _RANGE_END.fullmatch(before))
        surcharge = named_surcharge
    lower = lower_bound(clause[:fig.start])
    companions = tuple(f for f in others if f.kind not in ("year",))
    return Role(
        companions=companions,
        over=() if block else tuple(f for f in companions if f in clause_figs and lower_bound(clause[:f.start])),
        years=years,
        period=only_one(local.periods | around.periods),
        share=only_one(local.shares | around.shares),
        side=only_one(local.sides | around.sides),
        surcharge=surcharge,
        bound=bound,
        lower=bound and lower,
        refuted=local.refuted or around.refuted,
    )


_RANGE_END = re.compile(r"\s*(?:bis|–|-)\s*", re.I)
_VERBS = frozenset("beträgt betragen ist sind war waren liegt liegen gilt gelten gibt fällt fallen steht stehen "
                   "bleibt wird werden zahlt zahlen".split())


def governs_bound(before: str) -> bool:
    """A limit word of the answer makes the figure after it a limit only when it governs the
    figure: "höchstens 1.095 €", "bis zu einem Betrag von 120 €" – not "Ab Beitragsbeginn
    beträgt der Satz 1,53 %" or "nur bis zur HBGL für Sonderzahlungen von 12.900 €"."""
    tail = " ".join(before.split()[-5:])
    last = None
    for last in _BOUND_IN_ANSWER.finditer(tail):
        pass
    if last is None:
        return False
    if last.group(0).lower() == "bis" and re.search(r"\d\s*$", tail[:last.start()]):
        return False  # "von 2 bis 12 Monatsentgelten", "20 bis 40 km": a range, not a limit
    between = tail[last.end():].split()
    return (len(between) <= 3 and not any(w.lower() in _VERBS for w in between)
            and sum(1 for w in between if w[:1].isupper()) <= 1)


_LOWER = re.compile(r"\b(?:über|oberhalb|mehr als|ab)\s+(?:(?:den|dem|der|die|einer|einem|ersten)\s+){0,2}$", re.I)


def lower_bound(before: str) -> bool:
    """"über 2.630 €", "Teil über den ersten 620 €": the figure after it is a lower limit."""
    return bool(_LOWER.search(before[-40:]))


@dataclass(frozen=True)
class RowMarks:
    periods: frozenset
    shares: frozenset
    sides: frozenset
    surcharge: bool
    bound: bool  # limit words as a block writes them
    refuted: bool


@lru_cache(maxsize=8192)
def row_marks(text: str) -> RowMarks:
    """The row words of a text, once per text (labels and headers repeat across cells)."""
    low = text.lower()  # every period word holds one of these, every share word "voll" or "halb"
    has_period = "tag" in low or "tägl" in low or "monat" in low or "jahr" in low or "jährl" in low or "woch" in low or "wöch" in low
    return RowMarks(
        frozenset(m.lastgroup for m in PERIODS.finditer(text)) if has_period else frozenset(),
        frozenset(m.lastgroup for m in SHARES.finditer(text)) if "voll" in low or "halb" in low else frozenset(),
        frozenset(m.lastgroup for m in _SIDES.finditer(text)) if "d" in low or "gesamt" in low else frozenset(),
        bool(SURCHARGE.search(text)),
        bool(_BOUND_IN_BLOCK.search(text)),
        bool(REFUTED.search(text)),
    )


def only_one(names: frozenset) -> str | None:
    return next(iter(names)) if len(names) == 1 else None


def mismatch(answer: Role, fact: Role) -> str:
    """Why a fact with the right value does not back the figure in this role ("" when it does)."""
    if fact.refuted and not answer.refuted:
        return "refuted"
    if answer.years and fact.years and not (answer.years & fact.years):
        return "year"
    if answer.period and fact.period and answer.period != fact.period:
        return "period"
    if answer.period and not fact.period and fact.periods_elsewhere and answer.period not in fact.periods_elsewhere:
        return "period"  # "300 € im Monat" against "300 € pro Jahr … die 300 € bleiben frei"
    if answer.share and fact.share and answer.share != fact.share:
        return "share"
    if answer.side and fact.side and answer.side != fact.side:
        return "side"
    if fact.surcharge is True and answer.surcharge is False:
        return "row"
    if answer.surcharge and fact.surcharge is False:
        return "row"
    if answer.bound and not fact.bound:
        return "bound"
    if fact.floor and not lower_bound_role(answer):
        return "row"  # the upper limit of the row before, as a lower one: only after "über"
    if contradicts(answer.companions, fact.companions, answer.over, fact.floors, fact.caps):
        return "row"
    return ""


def lower_bound_role(role: Role) -> bool:
    return role.bound and role.lower



def contradicts(said_with: tuple, fact_with: tuple, said_over: tuple = (), fact_floors: tuple = (),
                fact_caps: tuple = ()) -> bool:
    """The answer writes a figure next to others (its clause); the fact's row pairs it with others.
    They contradict when, for some class (amounts, percentages, counts of one unit), the row has
    figures of that class and none of them is one the answer wrote next to it. The row's lower
    limits (``fact_floors``) pair only with a companion written as one ("über 2.630 €"), its upper
    limits the next row starts from (``fact_caps``) never with one."""
    said = [f for f in said_with if f.kind not in ("date", "number", "year")]
    row = [f for f in fact_with if f.kind not in ("date", "number", "year")]
    floors = [f for f in fact_floors if f.kind not in ("date", "number", "year")]
    for comp in said:
        same = [f for f in row if _same_class(f, comp)]
        low = [f for f in floors if _same_class(f, comp)] if comp in said_over else []
        if (same or low) and not any(same_value(c, f) for c in said if _same_class(c, comp)
                                     for f in (low + [g for g in same if g not in fact_caps]
                                               if c in said_over else same)):
            return True
    return False
