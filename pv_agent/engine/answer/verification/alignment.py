"""Which fact of the cited blocks a figure of the answer is about.

A value that stands somewhere in a cited block is not yet a backed figure: "Die
Geringfügigkeitsgrenze 2026 beträgt 826,65 € [pv-gfb-02]" quotes a value of pv-gfb-02, but the
cell it quotes is the threshold of the pauschale DG-Abgabe. So every fact of the same kind
(amounts, percentages, counts of one unit) in the blocks the sentence cites competes for the
figure: each is scored by how many of the words around the figure name what the fact is the
value of (its ``about``: row label, caption, column header, list label, the clause it stands
in, the entry's title) and by the years both name. The words nearest the figure count most:
its clause, then the rest of its sentence, then what introduces it (a heading, a lead-in
ending in ":", a table's header row) and the question.

Words match after folding when equal, when one is a compound containing the other
("Grenze" ~ "Geringfügigkeitsgrenze"), or through an abbreviation (HBGL, GFB, VAB, … and the
"Langform (ABK)" pairs a block writes itself). A word shared by every competitor weighs almost
nothing; a word only one competitor has weighs most.

The figure is about the fact(s) with the highest score. It is backed when one of them carries
its value; when a fact with another value scores clearly higher (``CELL_MARGIN``), the sentence
names that fact's cell instead. When nothing near the figure names any competitor and they
carry different values, the sentence says too little to decide (``ambiguous``) – unless it
lists several figures of the class at once ("Die Stufen sind 0 %, 6 %, 27 % und 35,75 %").
The figures written beside it count like words: a row holding them is the row it is about.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from ...textnorm import ABBREVIATIONS, STOPWORDS, fold, tokens
from .facts import Fact
from ...figures import _same_class, same_value

# Calibrated on the calibration half's realistic drafts and their wrong-cell mutations
# (tools/mutation_report.py --split calibration; docs/verification.md, "Which cell").
CELL_MARGIN = 0.5  # a competitor must score this much more than the best fact with the value
LEVEL_WEIGHTS = {"clause": 1.0, "sentence": 0.6, "around": 1.0, "question": 0.5}
YEAR_WEIGHT = 1.0  # the sentence names a year the fact is about
CONTEXT_YEAR_WEIGHT = 0.6  # a heading, a sentence before it or the question names it
LATEST_YEAR_WEIGHT = 0.3  # no year named anywhere: the most recent year of the blocks
LENGTH_NORM = 0.8
COMPANION_WEIGHT = 1.5
ELSEWHERE_PENALTY = 0.5  # the fact's value is written beside the figure: it is the other figure's cell  # a figure the sentence writes beside it stands in the fact's row too

# Verification's own additions to the query glosses: abbreviations in answers and row labels.
_ALIASES = {
    "gfb": "geringfügigkeitsgrenze geringfügig", "geringfügig": "gfb", "vab": "verkehrsabsetzbetrag",
    "pab": "pensionistenabsetzbetrag", "dz": "zuschlag dienstgeberbeitrag", "db": "dienstgeberbeitrag",
    "pv": "pensionsversicherung", "kv": "krankenversicherung", "av": "arbeitslosenversicherung",
    "ak": "arbeiterkammerumlage", "wf": "wohnbauförderung", "ab": "absetzbetrag", "ue": "überstunden",
    "üst": "überstunden", "sb": "sachbezug", "ea": "elektroauto", "dga": "dienstgeberabgabe",
    "max": "höchstens maximal", "höchstens": "max maximal", "maximal": "max höchstens", "mind": "mindestens",
    "mindestens": "mind",
}
_ALIASES = {fold(k): v for k, v in _ALIASES.items()}
# Words that say nothing about which value is meant ("beträgt", "Betrag", "Wert").
_GENERIC = frozenset(
    "betrag betragt betragen betrug wert werte hohe hoch liegt liegen gilt gelten beim pro euro eur "
    "stand insgesamt jeweils derzeit aktuell laut gemass rund genau ebenfalls unverandert sowie "
    "dabei damit somit also bzw siehe nur noch auch sind ist wird werden vergleich beispiel hinweis "
    "achtung etwa zb je steht stehen".split()
)
_OPPOSITE_TAILS = frozenset({"neh", "geb"})
_LONG_SHORT = re.compile(r"([A-Za-zÄÖÜäöüß-]{6,})\s*\(([A-Za-zÄÖÜ]{2,6})\)")


@dataclass(frozen=True)
class Reading:
    """The words a figure of the answer is read with, nearest first."""

    clause: frozenset
    sentence: frozenset = frozenset()
    around: frozenset = frozenset()
    question: frozenset = frozenset()
    years: frozenset = frozenset()  # the years its own sentence names
    context_years: frozenset = frozenset()  # else: the years named above it or in the question
    companions: tuple = ()  # the other figures of its clause
    over: tuple = ()  # those written as a lower limit ("über 2.630 €")
    sentence_companions: tuple = ()  # the other figures of its sentence
    listing: bool = False  # the clause lists several figures of its class ("0 %, 6 %, 27 %")


@dataclass(frozen=True)
class Alignment:
    """The verdict on one figure: the fact it is about and whether that fact carries its value."""

    backed: bool
    ambiguous: bool = False
    clear: bool = False  # backed, and the sentence names the value's cell clearly above every other
    about: Fact | None = None  # the best fact with another value (when not backed)
    quoted: Fact | None = None  # the best fact with the figure's value


@lru_cache(maxsize=16384)
def words(text: str) -> frozenset:
    """Folded content words of ``text`` with their abbreviation glosses (what a fact is about)."""
    return frozenset(form for group in groups(text) for form in group)


@lru_cache(maxsize=16384)
def groups(text: str, generic: bool = False) -> frozenset:
    """The content words of ``text`` (what a sentence says), each as the group of its forms:
    the word and its abbreviation's long form or the reverse ("HBGL" and "Höchstbeitragsgrundlage"
    count once). ``generic``: keep the words that say nothing in a sentence ("Betrag", "Wert") –
    in a row label they name the row."""
    out = set()
    for w in tokens(text):
        if w.isdigit() or w in STOPWORDS or (w in _GENERIC and not generic) or len(w) < 2:
            continue
        gloss = _ALIASES.get(w) or ABBREVIATIONS.get(w) or ABBREVIATIONS.get(w.upper()) or ""
        out.add(frozenset({_stem(w)} | {_stem(t) for t in tokens(gloss) if t not in STOPWORDS}))
    return frozenset(out)


def _stem(word: str) -> str:
    """One inflection ending off (halben/halber → halb, vollen/voller → voll), at least 3 letters left."""
    for ending in ("en", "er", "es", "em", "e", "n", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def block_aliases(text: str) -> dict[str, str]:
    """"Höchstbeitragsgrundlage (HBGL)": the abbreviations a block spells out itself."""
    return {fold(short): fold(long) for long, short in _LONG_SHORT.findall(text)}


@lru_cache(maxsize=65536)
def _match(word: str, other: str) -> bool:
    if word == other:
        return True
    short, long_ = (word, other) if len(word) <= len(other) else (other, word)
    if len(short) < 5:
        return False
    if short in long_:
        return True
    if len(short) < 6 or short[:6] != long_[:6]:
        return False
    # a common first part, unless the rest names the other side: "Dienstnehmer" and
    # "Dienstgeber", "Arbeitnehmer" and "Arbeitgeber" are opposites
    common = len(os.path.commonprefix((short, long_)))
    return not {short[common:common + 3], long_[common:common + 3]} & _OPPOSITE_TAILS


@lru_cache(maxsize=65536)
def _other_compound(word: str, other: str) -> bool:
    """Two compounds of one head with different first parts name different quantities:
    "Tageshöchstarbeitszeit" and "Wochenhöchstarbeitszeit" (not "Beitragsgrundlage" and
    "Höchstbeitragsgrundlage": one holds the other)."""
    if word == other or word in other or other in word:
        return False
    tail = len(os.path.commonprefix((word[::-1], other[::-1])))
    return tail >= 8 and len(word) - tail >= 3 and len(other) - tail >= 3


@lru_cache(maxsize=65536)
def _matched(group: frozenset, about: frozenset) -> bool:
    return any(_match(form, w) for form in group for w in about)


def align(fig, candidates: list[Fact], reading: Reading, titles: dict[str, str], aliases: dict[str, str],
          trace: list | None = None) -> Alignment:
    """Decide which of ``candidates`` (facts of the cited blocks of ``fig``'s class, none of them
    contradicted by the sentence's role) ``fig`` is about."""
    with_value = [f for f in candidates if same_value(fig, f.figure)]
    others = [f for f in candidates if f.where != "stand" and _same_class(fig, f.figure)
              and not same_value(fig, f.figure)]
    if not with_value or not others:  # nothing to choose between
        return Alignment(True, quoted=with_value[0] if with_value else None)
    pool = with_value + others
    near, far = _scores(fig, pool, reading, titles, aliases)
    if trace is not None:
        trace += sorted(((round(a, 2), round(b, 2), f.figure.text, describe(f, 60))
                         for a, b, f in zip(near, far, pool)), reverse=True)
    k = len(with_value)
    # the sentence's own words decide; what stands above it and the question only break a tie
    best_value = max(range(k), key=lambda i: (near[i], far[i]))
    best_other = max(range(k, len(pool)), key=lambda i: (near[i], far[i]))
    quoted, about = pool[best_value], pool[best_other]
    if near[best_other] >= near[best_value] + CELL_MARGIN:
        return Alignment(False, about=about, quoted=quoted)
    tied = near[best_other] >= near[best_value]
    if tied and far[best_other] >= far[best_value] + CELL_MARGIN:
        return Alignment(False, about=about, quoted=quoted)
    if max(near) <= 0 and max(far) <= 0 and not reading.listing:
        return Alignment(False, ambiguous=True, about=about, quoted=quoted)
    return Alignment(True, clear=near[best_value] >= near[best_other] + CELL_MARGIN, quoted=quoted)


def _scores(fig, pool: list[Fact], reading: Reading, titles, aliases) -> tuple[list[float], list[float]]:
    """Per fact: the evidence of the figure's own sentence (words, years, the figures beside it)
    and that of what stands around it (heading, lead-in, question, the years named there)."""
    # an entry's title is said of all its facts: it tells facts of different cited entries apart
    several = len({f.entry_id for f in pool}) > 1
    abouts = [_about_words(f, titles.get(f.entry_id, "") if several else "", aliases) for f in pool]
    n = len(pool)
    mean_length = sum(len(a) for a in abouts) / n or 1.0
    latest = max((max(f.role.years) for f in pool if f.role.years), default=None)
    elsewhere = reading.companions + reading.sentence_companions
    near_words = _levels(reading, aliases, ("sentence", "clause"))
    far_words = _levels(reading, aliases, ("question", "around"))
    df = {w: sum(1 for a in abouts if _matched(w, a)) for w in {**near_words, **far_words}}

    near, far = [], []
    for f, about in zip(pool, abouts):
        # a long sentence matches more words by its length alone (as in BM25)
        norm = max(0.25, 1 - LENGTH_NORM + LENGTH_NORM * len(about) / mean_length)
        s_near = _word_score(near_words, df, n, about) / norm
        # the sentence names another compound of the fact's head word: about something else
        if any(_other_compound(form, w) and form not in about for g in near_words for form in g for w in about):
            s_near -= COMPANION_WEIGHT
        s_far = _word_score(far_words, df, n, about) / norm
        if reading.years:
            s_near += YEAR_WEIGHT if f.role.years & reading.years else 0.0
        elif reading.context_years:
            s_far += CONTEXT_YEAR_WEIGHT if f.role.years & reading.context_years else 0.0
        elif f.role.years and max(f.role.years) == latest:
            s_far += LATEST_YEAR_WEIGHT  # "beträgt", no year named: the current value
        beside = f.role.companions + f.mates
        # "2,95 % über 2.630 €": the row after "| 2 % | bis 2.630 € |" holds it, not that row
        floored = [c for c in reading.over if any(same_value(c, g) for o in pool for g in o.role.floors)]
        # a value the sentence writes elsewhere is more likely that other figure's cell than this
        # one's – unless the block too writes the value twice side by side ("AV | 2,95 % | 2,95 %"
        # for "AV: DN 2,95 %, DG 2,95 %")
        if any(same_value(c, f.figure) for c in elsewhere) and not (
                same_value(fig, f.figure) and any(same_value(fig, o) for o in beside + f.row_mates)):
            s_near -= ELSEWHERE_PENALTY
        s_near += COMPANION_WEIGHT * sum(1 for c in reading.companions if any(
            same_value(c, o) for o in (f.role.floors if c in floored else beside)))
        # figures elsewhere in the sentence: weak evidence, one at most (a sentence restating a
        # block sentence with many figures elsewhere is no evidence for each of them); the row of
        # a cell with the figure's value counts here ("1,5 %, höchstens 720 €" for "| CO₂ ≤
        # Grenzwert | 1,5 % | 720 € |") – only for it: in a table whose columns are the sources,
        # a competitor's row holds the sentence's other figure too
        row = f.row_mates if same_value(fig, f.figure) else ()
        s_near += COMPANION_WEIGHT / 2 * min(1, sum(1 for c in reading.sentence_companions
                                                    if any(same_value(c, o) for o in beside + row)))
        near.append(s_near)
        far.append(s_far)
    return near, far


def _word_score(levels: dict[str, float], df: dict[str, int], n: int, about: frozenset) -> float:
    # a word every competitor matches tells none apart; one only this fact matches counts fully
    return sum(weight * (n - df[w]) / (n - 1) for w, weight in levels.items() if df[w] and _matched(w, about))


def _levels(reading: Reading, aliases: dict[str, str], names: tuple) -> dict[frozenset, float]:
    """Each word (group of forms) of the reading once, at the weight of the nearest level it stands in."""
    out: dict[frozenset, float] = {}
    for level in names:
        for group in _grouped_aliases(getattr(reading, level), aliases):
            out[group] = LEVEL_WEIGHTS[level]
    return out


def _with_aliases(ws: frozenset, aliases: dict[str, str]) -> frozenset:
    if not aliases:
        return ws
    extra = {t for w in ws if w in aliases for t in tokens(aliases[w])}
    return ws | extra if extra else ws


def _grouped_aliases(gs: frozenset, aliases: dict[str, str]) -> frozenset:
    if not aliases:
        return gs
    return frozenset(_with_aliases(g, aliases) for g in gs)


def _about_words(fact: Fact, title: str, aliases: dict[str, str]) -> frozenset:
    return _with_aliases(words(fact.about) | words(title), aliases)


def describe(fact: Fact, limit: int = 90) -> str:
    """What a fact is the value of, for the clerk: its labels without the figure."""
    text = " ".join(fact.about.replace("|", " ").split()).strip(" :.,;")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
