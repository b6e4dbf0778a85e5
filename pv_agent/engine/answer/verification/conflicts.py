"""Conflicts of sources in the context, and whether the answer shows each side it states."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ...textnorm import STOPWORDS, tokens
from ..context import ContextBlock
from . import facts as fc
from ... import figures as nb
from .claims import _GAP
from .units import _CITATION, _LIST_ITEM, Unit

# "Siehe auch [id]" names an entry without stating what it says.
_SEE_ALSO = re.compile(r"\b(?:siehe(?: auch)?|vgl\.?|s\. auch|weiterführend)\b", re.IGNORECASE)
_RELATED = re.compile(r"\bverwandt\w*|\bweiterführend\w*|\bähnlich\w* Themen", re.IGNORECASE)
_STATUS_WORDS = re.compile(r"maßgeblich|überholt|veraltet|nicht mehr (?:gültig|aktuell)|gilt nicht mehr", re.IGNORECASE)


@dataclass
class ConflictGroup:
    ids: list[str]
    reason: str  # "marked" (⚠ + cross_refs) | "values" (same quantity, different values)
    cited: list[str] = field(default_factory=list)  # sides the answer states (not only "siehe auch")
    unmarked: list[str] = field(default_factory=list)  # sides stated without ⚠
    status_missing: bool = False  # a block calls one side maßgeblich/überholt, the answer does not

    camps: list[list[str]] = field(default_factory=list)  # members that agree with each other

    @property
    def one_sided(self) -> bool:
        """Only one side stated (a group of three sides may be answered with any two): one
        entry, or only entries that agree with each other."""
        if len(self.cited) == 1:
            return True
        return any(set(self.cited) <= set(camp) for camp in self.camps)

    @property
    def failing(self) -> bool:
        return bool(self.cited) and (self.one_sided or bool(self.unmarked) or self.status_missing)

    def as_dict(self) -> dict:
        return {"ids": self.ids, "reason": self.reason, "cited": self.cited, "one_sided": self.one_sided,
                "unmarked": self.unmarked, "status_missing": self.status_missing, "failing": self.failing}



def find_conflicts(blocks: list[ContextBlock]) -> list[ConflictGroup]:
    """Groups of blocks that disagree: ⚠-marked entries linked by cross_refs, or blocks of
    the same topic and stand giving different values for a line with the same label."""
    parent: dict[str, str] = {}
    reasons: dict[tuple[str, str], str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def link(a: str, b: str, reason: str) -> None:
        parent[root(a)] = root(b)
        reasons[tuple(sorted((a, b)))] = reason

    ids = {b.entry_id for b in blocks}
    for b in blocks:
        if not b.conflict_marked:
            continue
        for other in blocks:
            if other is b or not other.conflict_marked:
                continue
            # the two sides of a ⚠ pair name each other (kb-spec); an entry that only points to a
            # side (pv-ues-08 beside pv-ues-02/-03) is a side only where it states what the
            # other calls wrong, or the reverse
            mutual = other.entry_id in b.cross_refs and b.entry_id in other.cross_refs
            pointing = other.entry_id in b.cross_refs or b.entry_id in other.cross_refs
            if mutual or pointing and _disagree(b, other):
                link(b.entry_id, other.entry_id, "marked")
    quantities: dict[tuple, dict[str, frozenset]] = {}
    # a quantity's key holds the block's topic and stand: a block alone with its topic and stand
    # in the context cannot disagree with another one, so its lines are not read
    shared = Counter((b.topic, b.stand) for b in blocks)
    for b in blocks:
        if shared[(b.topic, b.stand)] < 2:
            continue
        for key, values in _quantities(b):
            quantities.setdefault(key, {})[b.entry_id] = values
    agree: dict[str, set] = {}  # entries giving the same values for a quantity
    for per_block in quantities.values():
        if len(set(per_block.values())) > 1:
            members = list(per_block)
            for i, a in enumerate(members):
                for b in members[i + 1:]:
                    if per_block[a] != per_block[b]:
                        if tuple(sorted((a, b))) not in reasons:
                            link(a, b, "values")
                    else:
                        agree.setdefault(a, set()).add(b)
                        agree.setdefault(b, set()).add(a)
    groups: dict[str, list[str]] = {}
    for x in ids:
        if x in parent:
            groups.setdefault(root(x), []).append(x)
    order = {b.entry_id: b.number for b in blocks}
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=order.get)
        pair_reasons = {r for (a, c), r in reasons.items() if a in members}
        reason = "marked" if "marked" in pair_reasons else "values"
        camps = [[m] + sorted(agree.get(m, set()) & set(members), key=order.get) for m in members]
        out.append(ConflictGroup(members, reason, camps=camps))
    out.sort(key=lambda g: order[g.ids[0]])
    return out


def _disagree(a: ContextBlock, b: ContextBlock) -> bool:
    """One states a value (for a year, or for none) that the other calls falsch/überholt."""
    said = {x.entry_id: _dated_values(x) for x in (a, b)}

    def states_what_is_refuted(x: str, y: str) -> bool:
        refuted = said[y][1]
        return bool(said[x][0] & refuted) or any((k, v) in said[x][2] for k, v, _ in refuted)

    return states_what_is_refuted(a.entry_id, b.entry_id) or states_what_is_refuted(b.entry_id, a.entry_id)


def _dated_values(block: ContextBlock) -> tuple[frozenset, frozenset, frozenset]:
    """(values the block states, values it calls wrong), each as (kind, value, year), and the
    values it states without a year, as (kind, value)."""
    stated, refuted, undated = set(), set(), set()
    for f in fc.facts_of_block(block.entry_id, block.text, block.title, block.stand):
        if f.where in ("stand", "title") or f.figure.kind in ("year", "date", "number"):
            continue
        key = (nb.value_class(f.figure), f.figure.value)
        if not f.role.years and not f.role.refuted:
            undated.add(key)
        for year in f.role.years:
            (refuted if f.role.refuted else stated).add(key + (year,))
    return frozenset(stated), frozenset(refuted), frozenset(undated)


def _quantities(block: ContextBlock):
    """(label, years, topic, stand) → value for table rows and list items that state exactly
    one amount, percentage or count after a label of at least two significant words.
    Rows with several figures are left out: which figure is "the" quantity is unclear."""
    return _quantities_of(block.text, block.topic, block.stand)


@lru_cache(maxsize=1024)
def _quantities_of(text: str, topic: str, stand: str) -> tuple:
    return tuple(_iter_quantities(text, topic, stand))


def _iter_quantities(text: str, topic: str, stand: str):
    year = stand[:4]
    for line in text.splitlines():
        s = line.strip()
        if not (s.startswith("|") or _LIST_ITEM.match(s)):
            continue
        found = nb.extract(s)
        figs = [f for f in found if f.kind in ("money", "percent") or f.kind.startswith("count:")]
        if len(figs) != 1 or figs[0].text not in s:
            continue
        label = tuple(t for t in tokens(s[: s.find(figs[0].text)]) if t not in STOPWORDS)
        if len([t for t in label if not t.isdigit()]) < 2:
            continue
        years = [f.value for f in found if f.kind == "year"] or [year]
        yield (label, tuple(years), topic, stand), frozenset((f.kind, f.value) for f in figs)



def _check_conflict_sides(conflicts: list[ConflictGroup], units: list[Unit], blocks, refused: bool = False) -> None:
    """``refused``: the answer opens with the refusal sentence – what it names after it without a
    value is a related topic, no side."""
    statements = []  # (unit, its value figures) of the units that can state a side
    pointing = False  # under "Verwandte Themen:": the items name topics
    for u in units:
        if u.kind == "prose":
            pointing = bool(_RELATED.search(u.text)) and u.text.rstrip().endswith(":")
        # a heading, a "siehe auch" and a sentence saying what the blocks leave open state no side
        if u.kind == "heading" or _SEE_ALSO.search(u.text) or _GAP.search(u.text):
            continue
        text = _CITATION.sub(" ", u.text)
        values = {_value_key(f) for f in nb.extract(text) if _is_value(f)}
        if not values and (refused or pointing and u.kind == "item"):
            continue
        statements.append((u, values))
    for g in conflicts:
        if not any(c in g.ids for u, _ in statements for c in u.citations):
            g.cited, g.unmarked, g.status_missing = [], [], False  # no side stated: nothing to read
            continue
        facts = {i: _value_facts(blocks[i]) for i in g.ids if i in blocks}
        outside_blocks = [b for i, b in blocks.items() if i not in g.ids]
        outside: set | None = None  # the values the other blocks state: read only when a statement needs them
        stated: list[str] = []
        marked: set[str] = set()
        warned: set = set()  # values stated with ⚠
        said: dict[str, set] = {}  # values stated under each side's citation without ⚠
        status_named: set[str] = set()
        for u, values in statements:
            cites = [c for c in u.citations if c in g.ids]
            # by design, a sentence citing a side states it, whatever its figures are about
            if not cites:
                continue
            others = [o for o in facts if o not in cites]
            if g.reason == "marked" and values and others and outside is None:
                outside = set().union(*(_value_facts(b)[0] for b in outside_blocks))
            if g.reason == "marked" and values and others and all(
                    v in outside and not any(v in facts[o][0] | facts[o][1] for o in others)
                    for v in values):
                # "auch [pv-lst-03] nennt für 2025 103.072 €": a value the other side never names and
                # an entry outside the dispute states too is not what the sides dispute
                continue
            shown = list(cites)
            if "⚠" in u.text and _STATUS_WORDS.search(u.text):
                # "⚠ 2.100 € ist überholt, 2024 galt 2.447 € [⚠ pv-sz-07]": the entry that settles
                # the dispute reports the other side – a value the cited entry holds only as the
                # outdated one shows the side that states it
                for other in g.ids:
                    if other not in cites and other in facts and any(
                            v in facts[other][0] | facts[other][1]
                            and all(v not in facts[c][0] for c in cites if c in facts)
                            and any(v in facts[c][1] for c in cites if c in facts) for v in values):
                        shown.append(other)
            for c in shown:
                if c not in stated:
                    stated.append(c)
                if "⚠" in u.text:
                    marked.add(c)
                    warned |= values
                else:
                    said.setdefault(c, set()).update(values)
                if _STATUS_WORDS.search(u.text):
                    status_named.add(c)
        g.cited = [i for i in g.ids if i in stated]
        if g.reason == "marked":
            # a side is shown with ⚠ where its values are: "⚠ ÖGK: 2 % [pv-sv-13]" marks the 2 % that
            # the ÖGK's own entry [pv-sv-12] also states elsewhere in the answer
            g.unmarked = [i for i in g.cited if i not in marked and not said.get(i, set()) & warned]
        says_status = any(_STATUS_WORDS.search(blocks[i].text) for i in g.ids if i in blocks)
        g.status_missing = bool(g.cited) and says_status and not (status_named & set(g.cited))


def _is_value(f) -> bool:
    return f.kind in ("money", "percent") or f.kind.startswith("count:")


def _value_key(f) -> tuple:
    return (nb.value_class(f), f.value)


def _value_facts(block: ContextBlock) -> tuple[frozenset, frozenset]:
    """(values the block states, values it calls wrong or outdated)."""
    stated, refuted = set(), set()
    for f in fc.facts_of_block(block.entry_id, block.text, block.title, block.stand):
        if f.where not in ("stand", "title") and _is_value(f.figure):
            (refuted if f.role.refuted else stated).add(_value_key(f.figure))
    return frozenset(stated), frozenset(refuted)
