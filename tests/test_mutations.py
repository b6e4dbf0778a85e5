"""The mutation generator itself: wrong in one place, deterministic, and its skip rule."""
from __future__ import annotations

from decimal import Decimal

from kb_context import kb_context

from pv_agent.engine.answer.context import Context, ContextBlock
from mutations import find_figures, mutate


def block(entry_id: str, text: str, number: int = 1) -> ContextBlock:
    return ContextBlock(number=number, entry_id=entry_id, title="T", stand="2026-01", topic="t", source="briefing",
                        official=False, section="Zusammenfassung", text=text)


def kinds(muts, kind):
    return [m for m in muts if m.kind == kind]


def test_figures_in_german_formats_and_what_is_no_figure():
    found = find_figures("HBGL SZ 12.900 € (2025), DB 3,7 %, 12 Monatsentgelte, § 67 Abs 1 Z 3, 1.1.2026, "
                         "13. Bezug, erste 620 € 0 % (Stand 2026-01) [pv-sz-03]")
    assert [(f.kind, f.value) for f in found] == [
        ("eur", Decimal("12900")), ("year", Decimal("2025")), ("pct", Decimal("3.7")), ("count", Decimal("12")),
        ("eur", Decimal("620")), ("pct", Decimal("0"))]


def test_vab_mutations_are_wrong_in_one_place_and_deterministic():
    ctx = kb_context("pv-ab-01")
    draft = "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01]."
    muts = mutate(draft, ctx, draft_id="vab")
    assert muts == mutate(draft, ctx, draft_id="vab")
    assert [m.mutated for m in kinds(muts, "other_year")] == [
        "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 487 € [pv-ab-01]."]
    for m in muts:
        assert m.text != draft and m.sentence == draft
    digits = kinds(muts, "digits")
    assert digits and all(m.new not in ctx.text() for m in digits)


def test_an_enumeration_is_neither_swapped_nor_moved_to_another_row():
    muts = mutate("Die Stufen sind 0 %, 6 %, 27 % und 35,75 % [pv-sz-03].", kb_context("pv-sz-03"))
    assert not kinds(muts, "swap") and not kinds(muts, "other_row")


def test_swap_needs_two_roles():
    ctx = kb_context("pv-abf-01")
    swapped = kinds(mutate("Nach 25 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01].", ctx), "swap")
    assert [m.mutated for m in swapped] == ["Nach 12 Dienstjahren stehen 25 Monatsentgelte zu [pv-abf-01]."]
    hbgl = kb_context("pv-bg-02")
    assert not kinds(mutate("Die HBGL stieg von 6.450 € auf 6.930 € monatlich [pv-bg-02].", hbgl), "swap")


def test_a_value_in_the_same_role_elsewhere_in_the_block_is_skipped():
    text = "| Grenze | Betrag |\n|---|---|\n| Grenze X | 100 € |\n| Grenze Y | 300 € |\n\n- Grenze X (neu): 120 €."
    ctx = Context(blocks=[block("pv-x-01", text)], budget=10_000)
    rows = kinds(mutate("Die Grenze X beträgt 100 € [pv-x-01].", ctx), "other_row")
    assert [m.new for m in rows] == ["300"]  # 120 € is "Grenze X" too: not certainly wrong


def test_neighbour_citation_goes_to_a_block_without_the_figure():
    ctx = Context(blocks=[block("pv-x-01", "- Satz: 3,7 %.", 1), block("pv-x-02", "- Auch 3,7 %.", 2),
                          block("pv-x-03", "- Etwas anderes: 9 %.", 3)], budget=10_000)
    moved = kinds(mutate("Der Satz beträgt 3,7 % [pv-x-01].", ctx), "neighbour_citation")
    assert [m.mutated for m in moved] == ["Der Satz beträgt 3,7 % [pv-x-03]."]


def test_negation_where_the_block_states_the_positive():
    ctx = Context(blocks=[block("pv-x-01", "Die Zulage ist steuerfrei.")], budget=10_000)
    negated = kinds(mutate("Die Zulage ist steuerfrei [pv-x-01].", ctx), "negation")
    assert [m.mutated for m in negated] == ["Die Zulage ist steuerpflichtig [pv-x-01]."]
    both = Context(blocks=[block("pv-x-01", "Die Zulage ist steuerfrei, darüber steuerpflichtig.")], budget=10_000)
    assert not kinds(mutate("Die Zulage ist steuerfrei [pv-x-01].", both), "negation")
