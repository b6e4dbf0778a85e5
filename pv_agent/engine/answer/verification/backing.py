"""Is each figure of one answer unit backed? By a fact of a block the unit cites with the same
value and unit, in a role the sentence does not contradict (facts.mismatch), and in the cell
the sentence is about (alignment.align). A table row of the answer is read cell by cell with
its row label and column header.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from . import alignment as al
from . import named_cells as nc
from . import roles as rl
from . import reversals as rv
from . import quotes as qt
from . import row_names as rn
from .fact_index import BlockFacts, FactIndex
from .support import cell_issue, role_support
from ... import figures as nb
from .given import (_GivenFigure, _given, case_date, echoes_question, marked_elsewhere, marks_question,
                    of_question, possessed)

REASONS = {
    "not_in_block": "steht in keinem zitierten Eintrag",
    "other_block": "steht nur in einem anderen, hier nicht zitierten Eintrag",
    "year": "steht im zitierten Eintrag für ein anderes Jahr",
    "period": "steht im zitierten Eintrag in einer anderen Zeile (monatlich/täglich/jährlich)",
    "share": "steht im zitierten Eintrag in einer anderen Spalte (voll/halb)",
    "side": "steht im zitierten Eintrag für eine andere Seite (Dienstnehmer/Dienstgeber/gesamt)",
    "row": "steht im zitierten Eintrag in einer anderen Zeile",
    "bound": "ist im zitierten Eintrag keine Grenze",
    "refuted": "wird im zitierten Eintrag als falsch oder überholt bezeichnet",
    "cell": "steht im zitierten Eintrag für etwas anderes, als der Satz sagt",
    "ambiguous": "lässt offen, wofür sie steht (der zitierte Eintrag nennt dafür mehrere Werte)",
    "not_in_question": "ist als Angabe der Frage bezeichnet, steht aber nicht in der Frage",
}
_INSTEAD = re.compile(r"\b(?:statt|anstatt|anstelle von|instead of)\s*$", re.IGNORECASE)
_EXAMPLE = re.compile(r"(?:z\.\s?B\.|zB|etwa|beispielsweise|Beispiel:?)\s*\(?\s*$", re.IGNORECASE)


@dataclass
class FigureIssue:
    figure: str
    sentence: str
    cited: list[str]
    found_in: list[str]  # blocks that do hold the figure (in any role)
    reason: str = "not_in_block"  # a key of REASONS
    detail: str = ""  # for a wrong cell: what the cited entry says for what the sentence names

    def as_dict(self) -> dict:
        out = {"figure": self.figure, "sentence": self.sentence, "cited": self.cited,
               "found_in": self.found_in, "reason": self.reason}
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass
class Surroundings:
    """What stands around a unit of the answer: the text introducing it (heading, lead-in
    ending in ":", a table's header row) and the question."""

    around: frozenset = frozenset()
    question: frozenset = frozenset()
    years: frozenset = frozenset()  # named above the unit (since the last heading) or in the question
    header_cells: list[str] = field(default_factory=list)  # of the table a row belongs to
    header_row: bool = False  # the unit is that header row: its figures name columns


@dataclass
class UnitResult:
    checked: int = 0
    given: list[str] = field(default_factory=list)
    issues: list[FigureIssue] = field(default_factory=list)
    beside_question: list = field(default_factory=list)  # figures written next to one the question gave


def check_unit(kind: str, text: str, cites: list[str], answer_cites: list[str], facts: BlockFacts,
               question_figures: list[_GivenFigure], around: Surroundings, *, gap: bool = False,
               restated: list | None = None, gap_years: bool = False,
               restated_in: list | None = None, names: list | None = None, asks: bool = False) -> UnitResult:
    """The figures of one unit (``text`` with its citation brackets blanked). In a sentence that
    says what the blocks leave open (``gap``), years and dates name what is missing, not a value;
    a question back to the clerk (``asks``: "Rückfrage: … 2025 oder 2026?") states no figure.
    ``names``: the citations naming a cell (named_cells.CellName), positions in ``text``."""
    out = UnitResult()
    all_figs = nb.extract(text)
    cited_facts, answer_facts = facts.index(cites), facts.index(answer_cites)
    # "Eine Aussage für 2026 enthalten die Blöcke nicht": a year of the context – looked up in the
    # blocks the answer cites first, in every block only when they do not hold it (parsing all)
    context_facts = (lambda: facts.index(list(facts.blocks))) if gap_years else None
    refuted = bool(rl.REFUTED_IN_ANSWER.search(text))
    years_before = frozenset()  # years carry within a sentence, never into the next one
    pieces = _pieces(kind, text, around.header_cells)
    # the clauses without a figure of their own speak of the sentence's figures as a whole
    sentence_words = frozenset() if kind == "row" else al.groups(" ".join(
        c for o, c, _ in pieces if not any(nb.in_clause(f, o, c) for f in all_figs)))
    # "überholt" is said of the figures of its clause; in no clause with a figure, of all of them
    refuted_clauses = [bool(rl.REFUTED_IN_ANSWER.search(c)) for _, c, _ in pieces] if refuted else []
    for i in range(1, len(refuted_clauses)):  # "nannte … 10 Überstunden und 120 €": a bare figure continues its clause
        if not refuted_clauses[i] and _bare_figures(pieces[i][1]):
            refuted_clauses[i] = refuted_clauses[i - 1]
    refuted_with_figure = refuted and any(
        r and any(nb.in_clause(f, o, c) for f in all_figs if f.kind not in ("year", "date"))
        for r, (o, c, _) in zip(refuted_clauses, pieces))
    label = ""  # "AV: DN 2,95 %, DG 2,95 %": the answer's own "Label:" is said of each clause after it
    quoted = qt.quoted_spans(text, cites, facts, names)
    backed, pending = [], []  # figures backed in their cell; figures read in another cell, to look at again
    named_backed: list = []  # (name, figure, index of its fact in the block): figures backed in a named cell
    for n_piece, (offset, clause, labels) in enumerate(pieces):
        clause_refuted = bool(refuted_clauses[n_piece]) if refuted else False
        if kind == "row":
            years_before = frozenset()  # a cell names its own years (or its row and column do)
        else:
            own_label = _lead_label(clause)
            label, carried = (own_label or label), ("" if own_label else label)
            if carried:
                labels = carried
        clause_figs = [nb.shifted(f, -offset) for f in all_figs if nb.in_clause(f, offset, clause)]
        # a counted name ("5-Tage-Woche", "17-Wochen-Zeitraum") is no value standing next to the
        # others; a named cell ("der 40-%-Satz") still is
        value_figs = [f for f in clause_figs if not rn.counted_name(f)]
        years_before = nb._years(clause_figs, clause) or years_before
        scope = text if kind != "row" else f"{labels} {clause}"
        scope_figs = all_figs if kind != "row" else nb.extract(scope)
        plain_scope = nb._without_figures(scope, scope_figs)
        # the row words of the sentence (or, in a table, of the cell's row and column): once per clause
        scope_period = rl.dimension(rl.PERIODS, plain_scope)
        scope_share = rl.dimension(rl.SHARES, plain_scope)
        named_surcharge = bool(rl.SURCHARGE.search(scope))
        given_here = {id(f): _given(f, clause, clause_figs, question_figures) for f in clause_figs} \
            if question_figures else {}
        for fig in clause_figs:
            at = nb.shifted(fig, offset)  # the figure in the unit's text (names and marks are read there)
            # a bare number ("1567", "0800") is no figure to check – unless its citation names
            # the cell it quotes: then it claims that cell's value
            if fig.kind == "number" and not nb.is_answer_figure(fig) and not rn.named_number(
                    text, at, all_figs, names, facts):
                continue
            if any(a <= fig.start + offset and fig.end + offset <= b for a, b in quoted):
                out.checked += 1  # „2 bis 20 km“: the block's own words, quoted
                continue
            if asks:
                # the figures it asks about need only be the question's or a block's of the context
                if not _known_in_context(fig, question_figures, answer_facts, facts):
                    _report(out, fig, ("not_in_block", ""), cites, facts)
                out.checked += 1
                continue
            if gap and fig.kind in ("year", "date"):
                # a year of a sentence saying what the blocks leave open names what is missing – a
                # year the question, a cited or another block names ("ob die Prämie für 2025 …")
                if not _known_in_context(fig, question_figures, answer_facts, facts):
                    _report(out, fig, ("not_in_block", ""), cites, facts, question_figures)
                continue
            # (the mark is read in the whole unit: "320 €, 300 € und 280 € (laut Frage)" spans clauses)
            mark = marks_question(text, at)
            marked = mark and bool(question_figures) and bool(of_question(fig, question_figures)) \
                and not marked_elsewhere(clause, fig, clause_figs, question_figures)
            if not marked and fig.kind != "number" and mark and not given_here.get(id(fig), False):
                # "4 Monate (laut Frage)" where the clerk wrote "3 Monate": the answer puts words in
                # the clerk's mouth, whatever a block says
                _report(out, fig, ("not_in_question", ""), cites, facts)
                out.checked += 1
                continue
            # (a figure the answer marks as the clerk's is no cell of the bracket after it:
            # "bei ca. 9 Fahrten (laut Frage) nur zu zwei Dritteln [pv-pp-07 · 8 bis 10 · Anteil]")
            name = nc.named_cell(at, all_figs, names) if names and not marked else None
            row = rn.named_row(at, all_figs, names, facts, text) if names and not marked and name is None else None
            if row is not None and (row[1] or not given_here.get(id(fig), False)):
                # "nach 25 Jahren … [pv-abf-03 · nach 25 Jahren · Monatsentgelte]": the row the bracket
                # names; "Nach 20 Jahren stehen 12 [… · nach 25 Jahren · …]" puts its value in another
                out.checked += 1
                if not row[1]:
                    _report(out, fig, ("row", f"[{row[0].entry_id}] nennt die Zeile „{nc.describe_name(row[0])}“; "
                                              f"{fig.text} nennt im Satz eine andere"), cites, facts)
                continue
            # (a heading names the clerk's case in the question's figures: "### … bei 2.150 € Beitragsgrundlage")
            given = given_here.get(id(fig), False) or marked or kind == "heading" and any(
                nb.matches(fig, q.figure) for q in question_figures)
            if any(given_here.get(id(o)) for o in clause_figs if o is not fig and o.kind not in ("year", "date")):
                out.beside_question.append(at)
            if given:
                out.given.append(fig.text)
            else:
                out.checked += 1
            # a cell of an answer table stands in its row and column: their labels name its years too
            label_figs = nb.extract(labels) if labels else []
            role = rl.role_of(fig, clause, value_figs if fig in value_figs else clause_figs, context=labels,
                              context_figs=label_figs, fallback_years=years_before)
            role = rl.Role(
                companions=role.companions, over=role.over, lower=role.lower, years=role.years,
                period=role.period or scope_period,
                share=role.share or scope_share,
                side=role.side,  # named in its own clause (or its row and column): no further
                # in its own clause: a Zuschlag; elsewhere in the sentence only: undecided
                surcharge=True if role.surcharge else (None if named_surcharge else False),
                # "2.100 € ist überholt, 2024 galt 2.447 €": said of the figures of its clause; a
                # sentence that says it in no clause with a figure says it of all of them
                bound=role.bound, refuted=refuted and (clause_refuted or not refuted_with_figure),
            )
            reading = al.Reading(
                clause=al.groups(_window(clause, fig, clause_figs) + " " + labels),
                sentence=sentence_words, around=around.around, question=around.question, years=role.years,
                context_years=around.years,
                companions=tuple(f for f in value_figs if f is not fig and f.kind not in ("year", "date")),
                over=role.over,
                sentence_companions=tuple(f for f in all_figs if f.kind not in ("year", "date")
                                          and not rn.counted_name(f) and not nb.in_clause(f, offset, clause)),
                # "0 %, 6 %, 27 % und 35,75 %": a sentence with several figures of one class
                listing=sum(1 for f in all_figs if nb._same_class(f, fig)) > 1)
            # a year is backed by any cited entry about that year; every other figure by a
            # fact of an entry cited in its own sentence
            # an example ("z. B. 38,5 h") or a name ("die 1-%-Stufe", "5-Tage-Woche") is no cell of its own
            # a named cell ("die 27-%-Stufe") is read like the value it names
            example = bool(_EXAMPLE.search(clause[max(0, fig.start - 24):fig.start]))
            # "17,07 % statt 18,07 %": the figure after "statt" is the other cell, named to compare
            instead = bool(_INSTEAD.search(clause[max(0, fig.start - 16):fig.start]))
            # a year, or a Stand (2026-01), is backed by any cited entry about it; every other
            # figure by a fact of an entry cited in its own sentence
            anywhere = fig.kind == "year" or fig.kind == "date" and fig.value[2] is None
            if restated is not None and fig.kind not in ("year", "date") and not given:
                # a bare heading ("**27 %.**") restates a figure its section backs, or says nothing
                # that tells which cell it means
                issue = None if any(nb.matches(fig, r) and r.kind == fig.kind for r in restated) \
                    else ("ambiguous", "")
                # a bold lead opening a sentence ("**1,5 %.** … [pv-sb-03]"): that sentence's entries hold it
                if issue is None and restated_in and not any(
                        nb.matches(fig, f.figure) for f in facts.index(restated_in).candidates(fig)):
                    issue = ("not_in_block", "")
            elif around.header_row and not anywhere and not given:
                # "| 20 bis 40 km | monatlich | jährlich |": a column's name claims no value – it
                # needs only to stand in a cited entry; the cells below are checked in its column
                issue = None if any(nb.matches(fig, f.figure) for f in cited_facts.candidates(fig)) \
                    else ("not_in_block", "")
            elif name is not None and (named := nc.check_named(
                    fig, nc.named_role(fig, clause, value_figs if fig in value_figs else clause_figs, labels,
                                     label_figs, role, name), reading, name, facts,
                    record=named_backed, at=at, sentence=_sentence_of(text, at) if kind != "row" else None)) \
                    is not nc.UNRESOLVED:
                # the model named the cell it quotes: that cell is compared, not a guessed one (also
                # for a figure the question gave: the answer says the block holds it there)
                issue = named
            elif (rn.counted_name(fig) or rn.rate_name(fig)) and not anywhere:
                # a name needs its value in a cited entry, in a role the sentence does not
                # contradict – but stands next to no other figure
                reason = "" if given else role_support(fig, dataclasses.replace(role, companions=()), cited_facts)
                issue = (reason, "") if reason else None
            elif given:
                # the clerk's figure needs no source – but where a cited entry holds it, the
                # sentence must not pass it off as another cell's value ("nach der Novelle 10
                # Überstunden" when the question's 10 is the outdated figure and the Novelle says 15)
                issue = _given_misplaced(fig, role, reading, cited_facts, facts) \
                    if not example and not marked and not possessed(clause, fig) \
                    and not echoes_question(clause, fig, clause_figs, question_figures) else None
            else:
                index = answer_facts if anywhere else cited_facts
                if instead:  # "über 2.427 € 1,15 % statt 2,95 %": the limit beside it is the other one's
                    role = dataclasses.replace(role, over=(), companions=tuple(
                        c for c in role.companions if nb._same_class(c, fig)))
                clear = []
                issue = cell_issue(fig, role, reading, index, facts, align=not (example or instead), clear=clear)
                if issue is not None and anywhere and context_facts is not None:
                    issue = cell_issue(fig, role, reading, context_facts(), facts, align=not (example or instead),
                                     clear=clear)
                if issue is None and role.refuted and not anywhere and rv.CALLED_OUTDATED.search(text):
                    issue = rv.not_the_outdated_one(fig, cited_facts)
                if issue is None and clear:
                    backed.append(fig)
                elif issue and issue[0] == "cell":
                    pending.append((fig, role, reading, index, issue))
                    continue
            if issue is not None:
                _report(out, fig, issue, cites, facts, question_figures if name is None else None)
    # "14,12 % für KV und PV plus 0,5 % AK": a cell whose value the sentence gives to another of
    # its figures, whose words name that cell clearly, is that figure's cell – the figure is read
    # among the other cells and backed when its words name its own cell clearly (two figures
    # swapped name neither cell clearly)
    for fig, role, reading, index, issue in pending:
        taken = [b for b in backed if nb._same_class(b, fig) and not nb.same_value(b, fig)]
        if taken and any(nb.same_value(issue[2].figure, b) for b in taken):
            clear = []
            if cell_issue(fig, role, reading, index, facts, taken=taken, clear=clear) is None and clear:
                issue = None
        if issue is not None:
            _report(out, fig, issue, cites, facts)
    # (a table row's cells stand in the answer's columns, not in the block's order)
    for fig, detail in nc.named_order_issues(named_backed) if kind != "row" else ():
        out.issues.append(FigureIssue(fig.text, "", list(cites), facts.holding(fig), "row", detail))
    flagged = {i.figure for i in out.issues}
    for old, new, detail in rv.arrows_reversed(text, all_figs, cited_facts):
        if new.text not in flagged:
            out.issues.append(FigureIssue(new.text, "", list(cites), [], "year", detail))
    for low, high in rv.bounds_reversed(text, all_figs):
        if low.text not in flagged:
            out.issues.append(FigureIssue(low.text, "", list(cites), [], "row",
                                          f"„mindestens {low.text}“ über „höchstens {high.text}“"))
    return out


def _report(out: UnitResult, fig, issue: tuple, cites: list[str], facts: BlockFacts,
            question_figures: list | None = None) -> None:
    reason, detail = issue[0], issue[1]
    found = facts.holding(fig)
    if reason == "not_in_block" and any(i not in cites for i in found):
        reason = "other_block"
    if reason in ("not_in_block", "other_block") and question_figures and case_date(fig, question_figures):
        out.given.append(fig.text)  # "frei bis 16.4.2026" for a start on 17.3.2026: the clerk's case
        return
    out.issues.append(FigureIssue(fig.text, "", list(cites), found, reason, detail))


def _known_in_context(fig, question_figures, answer_facts: FactIndex, facts: BlockFacts) -> bool:
    """A year or date (or any figure) the question, a cited block or any other block of the
    context names."""
    if any(nb.matches(fig, q.figure) or nb.matches(q.figure, fig) for q in question_figures):
        return True
    for index in (answer_facts, facts.index(list(facts.blocks))):  # the cited blocks first: no parse of the rest
        if fig.kind == "year" and fig.value in index.years \
                or any(nb.matches(fig, f.figure) for f in index.candidates(fig)):
            return True
    return False


def _given_misplaced(fig, role, reading, cited_facts: FactIndex, facts: BlockFacts) -> tuple[str, str] | None:
    if fig.kind in ("year", "date", "number") or role_support(fig, role, cited_facts):
        return None  # not in the cited entries in this role: the question's own figure
    issue = cell_issue(fig, role, reading, cited_facts, facts)
    # the clerk's figure need not say which cell it is; only one naming another cell is misplaced
    return None if issue and issue[0] == "ambiguous" else issue


_LABEL = re.compile(r"^[\s*_\-•]*([A-Za-zÄÖÜäöüß][^:\d]{0,40}?)\**:\s")


def _lead_label(clause: str) -> str:
    """The "Label:" a clause of the answer opens with (a few words, no figure), or ""."""
    m = _LABEL.match(clause)
    return m.group(1) if m and len(m.group(1).split()) <= 4 else ""


def _sentence_of(text: str, fig: nb.Figure) -> str:
    """The sentence of the unit's ``text`` that holds ``fig`` (a list item may hold several)."""
    start, end = nc._own_sentence(text, fig)
    return text[start:end]


def _window(clause: str, fig: nb.Figure, clause_figs: list[nb.Figure]) -> str:
    """The words of ``fig``'s clause up to the values before and after it (a year or a date
    between them is part of the words: "der SV-Anteil 2025 beträgt 17,07 %")."""
    values = [f for f in clause_figs if f.kind not in ("year", "date")]
    left = max([f.end for f in values if f.end <= fig.start], default=0)
    right = min([f.start for f in values if f.start >= fig.end], default=len(clause))
    return nb._without_figures(f"{clause[left:fig.start]} {clause[fig.end:right]}",
                               nb.extract(f"{clause[left:fig.start]} {clause[fig.end:right]}"))


def _bare_figures(clause: str) -> bool:
    """A clause of figures alone ("120 € (Stand 2026-01)"): it says nothing of its own."""
    rest = nb._without_figures(clause, nb.extract(clause))
    return not re.search(r"[A-Za-zÄÖÜäöüß]{3,}", re.sub(r"\bStand\b", " ", rest))


def _pieces(kind: str, text: str, header_cells: list[str]):
    """(offset, clause, labels): the clauses of a unit; a table row cell by cell, each with
    its row label and column header as labels."""
    if kind != "row":
        return [(o, c, "") for o, c in nb.segments(text)]
    cells = [(m.start() + len(m.group(0)) - len(m.group(0).lstrip()), m.group(0).strip())
             for m in re.finditer(r"[^|]+", text) if m.group(0).strip()]
    label = cells[0][1] if cells else ""
    out = []
    for i, (offset, cell) in enumerate(cells):
        column = header_cells[i] if i < len(header_cells) else ""
        labels = f"{label if i else ''} {column}".strip()
        out += [(offset + o, c, labels) for o, c in nb.segments(cell)]
    return out


def table_cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]
