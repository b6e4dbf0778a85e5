"""Is a figure backed by the facts of some blocks? In a role its sentence does not contradict
(roles.mismatch), in a row that pairs it with the figures beside it, and in the cell its
sentence's words are about (alignment.align). Used for every figure (backing.py) and, among the
cells a citation names, for named ones (named_cells.py).
"""
from __future__ import annotations

from . import alignment as al
from . import facts as fc
from . import roles as rl
from .fact_index import BlockFacts, FactIndex
from ... import figures as nb


def cell_issue(fig, role, reading, cited_facts: FactIndex, facts: BlockFacts, *, align: bool = True,
             taken: list | None = None, clear: list | None = None) -> tuple | None:
    """None when ``fig`` is backed, else (reason, detail[, the fact it is about]). An example
    ("z. B. 38,5 h") is no cell of its own: its value in the cited entry is enough. The cells of
    ``taken`` values belong to other figures of the sentence and compete no more; ``clear``
    gets the verdict when the sentence names the figure's cell above every other."""
    reason = role_support(fig, role, cited_facts)
    if not reason and paired_elsewhere(fig, role, cited_facts):
        reason = "row"
    if reason:
        return reason, ""
    if fig.kind in ("year", "date", "number") or not align:
        return None
    verdict = al.align(fig, competitors(fig, role, cited_facts, taken), reading, facts.titles, facts.aliases)
    if verdict.backed:
        if verdict.clear and clear is not None:
            clear.append(verdict)
        return None
    about, quoted = verdict.about, verdict.quoted
    if verdict.ambiguous:
        return "ambiguous", (f"[{quoted.entry_id}] nennt {quoted.figure.text} für „{al.describe(quoted)}“, "
                             f"aber auch {about.figure.text} für „{al.describe(about)}“")
    return "cell", (f"[{about.entry_id}] nennt für „{al.describe(about)}“ {about.figure.text}; "
                    f"{fig.text} ist dort der Wert für „{al.describe(quoted)}“"), about

def competitors(fig, role, cited_facts: FactIndex, taken: list | None = None) -> list:
    """The facts of the cited blocks ``fig`` may be about: its class, not contradicted by its role."""
    # a figure the answer calls outdated is one of the values a block calls outdated
    in_text = any(f.where != "title" and nb.same_value(fig, f.figure) for f in cited_facts.candidates(fig))
    return [fc.as_unit_of(f, fig) for f in cited_facts.facts if f.figure.kind not in ("year", "date")
            and (f.where != "title" or not in_text and nb.same_value(fig, f.figure))
            and not rl.mismatch(role, f.role) and not is_compound(f.figure)
            and (f.role.refuted or not role.refuted or nb.same_value(fig, f.figure))
            and not (taken and any(nb.same_value(f.figure, t) for t in taken))]

def paired_elsewhere(fig: nb.Figure, role: rl.Role, cited_facts: FactIndex) -> bool:
    """The other direction of a row: the answer pairs ``fig`` with a companion (620 € with 6 %),
    and every row of the cited blocks holding that companion pairs it with a different figure
    of ``fig``'s class (620 € with 0 %)."""
    if fig.kind in ("year", "date", "number"):
        return False
    for comp in role.companions:
        if comp.kind in ("year", "date", "number"):
            continue
        # (a row's upper limit restated in the next row as its lower one pairs with that row only
        # where the answer writes it as one: "2,95 % über 2.630 €", not "über 69.166 € bis 103.072 €")
        rows = [f for f in cited_facts.candidates(comp) if nb.matches(comp, f.figure)
                and (not f.role.floor or comp in role.over)
                and not (role.years and f.role.years and not role.years & f.role.years)
                and any(nb._same_class(c, fig) for c in f.role.companions)]
        if rows and not any(any(nb.same_value(fig, c) for c in f.role.companions) for f in rows):
            return True
    return False

def role_support(fig: nb.Figure, role: rl.Role, cited_facts: FactIndex) -> str:
    """"" when a fact of the cited blocks backs ``fig`` in ``role``, else the reason why not."""
    if fig.kind == "year":  # a year is backed by any fact about that year in a cited block
        return "" if fig.value in cited_facts.years else "not_in_block"
    reasons = []
    for fact in cited_facts.candidates(fig):
        if not nb.matches(fig, fact.figure) or is_compound(fact.figure) and not is_compound(fig):
            continue  # a name in the block ("5-Tage-Woche") is no value of 5 Arbeitstage
        if fig.kind == "date":
            if fig.value[0] is None and fact.figure.value[0] is None and role.years and fact.role.years \
                    and not role.years & fact.role.years:
                reasons.append("year")
                continue
            return ""
        why = rl.mismatch(role, fact.role)
        if not why:
            return ""
        reasons.append(why)
    return reasons[0] if reasons else "not_in_block"

def is_compound(fig: nb.Figure) -> bool:
    return "-" in fig.text
