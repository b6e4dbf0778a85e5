"""Verification of answers: citations, figures per sentence, conflicts (design.md §5)."""
from decimal import Decimal

from answer_helpers import make_context

from pv_agent.engine import figures as fg
from pv_agent.engine.answer.verification import citations_in, find_conflicts, mark_unsupported, split_units, verify


def test_figures_are_normalised_across_notations():
    values = [f.value for f in fg.extract("1.234,56 € und 1234.56 € und 1 234,56 € und € 1.234,56")]
    assert values == [Decimal("1234.56")] * 4


def test_paragraphs_ordinals_and_citation_ids_are_not_figures():
    text = "Nach § 67 Abs 1 EStG ist der 13. Bezug begünstigt [pv-sz-01]."
    assert [f for f in fg.extract(text) if fg.is_answer_figure(f)] == []


def test_kinds_of_figures():
    kinds = {f.kind for f in fg.extract("3,87 %, 14 Tage, 4 Wochen, 2 Monate, 12 Stunden, 2026, 1. Jänner 2026, 31.5.2026")}
    assert kinds == {"percent", "count:tag", "count:woche", "count:monat", "count:stunde", "year", "date"}


def test_citations_in_brackets_with_several_ids_and_warning_sign():
    assert citations_in("A [pv-sv-01, pv-sv-02] B ⚠ [pv-sz-03] C [⚠ pv-sz-04] [Link](http://x)") == [
        "pv-sv-01", "pv-sv-02", "pv-sz-03", "pv-sz-04"]


def test_a_citation_after_the_full_stop_belongs_to_the_sentence_before():
    units = split_units("Die HBGL beträgt 6.930 € (Stand 2026-01). [pv-sv-02] Ab 1. Jänner gilt das.")
    assert units[0].citations == ["pv-sv-02"]
    assert "1. Jänner" in units[1].text


def test_good_answer_passes():
    ctx = make_context("pv-sv-02", "pv-sv-01")
    answer = (
        "Die HBGL beträgt 2026 monatlich 6.930 € und täglich 231 € (Stand 2026-01) [pv-sv-02]. "
        "2025 waren es 6.450 € (Stand 2025-01) [pv-sv-01]."
    )
    result = verify(answer, ctx)
    assert result.ok, result.flags()
    assert [c.supported for c in result.citations] == [True, True]


def test_citing_an_id_that_was_not_retrieved_fails():
    ctx = make_context("pv-sv-02")
    result = verify("Die HBGL beträgt 6.930 € [pv-sv-02] [pv-sv-99].", ctx)
    assert result.unknown_citations == ["pv-sv-99"]
    assert not result.ok


def test_citing_an_id_that_does_not_exist_in_the_index_fails():
    ctx = make_context("pv-sv-02")
    result = verify("Die HBGL beträgt 6.930 € [pv-sv-02].", ctx, exists=lambda i: False)
    assert result.unknown_citations == ["pv-sv-02"] and not result.ok


def test_a_figure_in_no_block_fails():
    ctx = make_context("pv-sv-02")
    result = verify("Die HBGL beträgt 7.070 € (Stand 2026-01) [pv-sv-02].", ctx)
    assert [i.figure for i in result.unsupported_figures] == ["7.070 €"]
    assert result.unsupported_figures[0].found_in == []
    assert result.citations[0].supported is False


def test_a_figure_from_another_block_than_the_cited_one_fails():
    ctx = make_context("pv-sv-02", "pv-sv-01")
    result = verify("Die HBGL 2026 beträgt 6.450 € [pv-sv-02].", ctx)
    issue = result.unsupported_figures[0]
    assert issue.figure == "6.450 €" and issue.found_in == ["pv-sv-01"] and issue.cited == ["pv-sv-02"]


def test_a_figure_without_any_citation_in_its_sentence_fails():
    ctx = make_context("pv-sv-02")
    result = verify("Die HBGL beträgt 6.930 €. Das gilt laut Eintrag [pv-sv-02] für 2026.", ctx)
    assert [i.figure for i in result.unsupported_figures] == ["6.930 €"]


def test_list_items_take_the_citations_of_their_intro_line():
    ctx = make_context("pv-ur-01")
    answer = "Der Urlaubsanspruch (Stand 2025-01) [pv-ur-01]:\n\n- 30 Werktage bzw. 25 Arbeitstage\n- nach 25 Dienstjahren 36 Werktage\n"
    assert verify(answer, ctx).ok


def test_an_answer_without_citations_fails_but_the_refusal_sentence_does_not():
    ctx = make_context("pv-ur-01")
    assert verify("Der Urlaub ist großzügig bemessen.", ctx).missing_citations
    assert verify("Dazu enthält die Wissensbasis keine Aussage.", ctx).ok


def test_conflict_pair_is_found_and_one_side_fails():
    ctx = make_context("pv-sz-03", "pv-sz-04", "pv-sv-02")
    groups = find_conflicts(ctx.blocks)
    assert [(g.ids, g.reason) for g in groups] == [(["pv-sz-03", "pv-sz-04"], "marked")]
    one_side = verify("Die Freigrenze 2024 betrug 2.100 € (Stand 2024-01) [pv-sz-03].", ctx)
    assert not one_side.ok and one_side.conflicts[0].one_sided
    both = verify(
        "⚠ Die Quellen widersprechen sich: 2.100 € laut [pv-sz-03] und 2.447 € laut ⚠ [pv-sz-04] (Stand 2024-01).", ctx)
    assert both.ok, both.flags()


def test_same_quantity_with_different_values_is_a_conflict():
    from pv_agent.engine.answer.context import ContextBlock
    a = ContextBlock(1, "kv-a", "A", "2025-01", "lohn", "kv", True, "K", "- Mindestlohn Gruppe A: 2.000 €")
    b = ContextBlock(2, "kv-b", "B", "2025-01", "lohn", "kv", True, "K", "- Mindestlohn Gruppe A: 2.100 €")
    c = ContextBlock(3, "kv-c", "C", "2026-01", "lohn", "kv", True, "K", "- Mindestlohn Gruppe A: 2.200 €")
    assert [(g.ids, g.reason) for g in find_conflicts([a, b, c])] == [(["kv-a", "kv-b"], "values")]


def test_unsupported_parts_are_marked():
    ctx = make_context("pv-sv-02")
    answer = "Die HBGL beträgt 7.070 € [pv-sv-02]. Siehe auch [pv-xx-01]."
    result = verify(answer, ctx)
    marked = mark_unsupported(answer, result, figure_mark="{figure} (!)", citation_mark="[{id} ?]")
    assert "7.070 € (!)" in marked and "[pv-xx-01 ?]" in marked
