"""A ranking detail of retrieve._fuse: a multi-word tag the question says word for word."""
from __future__ import annotations

from pv_agent.engine.retrieval import retrieve as R
from pv_agent.engine.textnorm import stem, tokens


class _Entries:
    generation = 1

    def __init__(self, tags: dict[str, tuple[str, ...]]):
        self.tags, self.reads = tags, 0

    def entry_tags(self, ids=None):
        self.reads += 1
        return {e: self.tags[e] for e in (self.tags if ids is None else ids) if e in self.tags}


def _stems(question: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in tokens(question))


def test_a_multi_word_tag_in_the_question_marks_its_entry():
    index = _Entries({"dz-2026": ("DZ", "Zuschlag zum DB"), "db-2026": ("DB", "Dienstgeberbeitrag"), "x": ()})
    found = R._tag_phrase_entries(index, _stems("Was zahl ma 2026 an Zuschlag zum DB?"), ["db-2026", "dz-2026", "x"])
    assert found == ["dz-2026"]


def test_single_words_compounds_and_figures_are_no_phrases():
    index = _Entries({"ho": ("Homeoffice-Pauschale", "100 Tage", "Telearbeit")})
    assert R._tag_phrase_entries(index, _stems("Homeoffice Pauschale für 100 Tage Telearbeit"), ["ho"]) == []


def test_words_apart_do_not_match_and_tags_are_read_once_per_generation():
    index = _Entries({"dz": ("Zuschlag zum DB",), "other": ("Zuschlag zum DB",)})
    assert R._tag_phrase_entries(index, _stems("Zuschlag für Überstunden, DB 2026"), ["dz"]) == []
    assert R._tag_phrase_entries(index, _stems("der Zuschlag zum DB"), ["dz"]) == ["dz"]
    assert R._tag_phrase_entries(index, _stems("Zuschlag zum DB"), ["x", "other", "dz"]) == ["other", "dz"]
    assert index.reads == 1
    index.generation, index.tags = 2, {"dz": ("Zuschlag zum DB",), "other": ()}
    assert R._tag_phrase_entries(index, _stems("Zuschlag zum DB"), ["other", "dz"]) == ["dz"]
    assert index.reads == 2


def test_a_phrase_matches_at_any_place_and_length_in_the_question():
    index = _Entries({"a": ("Zuschlag zum DB",), "b": ("freie Station Wohnung Heizung",), "c": ("DB zum",)})
    stems = _stems("Freie Station, Wohnung, Heizung und Zuschlag zum DB")
    assert R._tag_phrase_entries(index, stems, ["a", "b", "c"]) == ["a", "b"]
    assert R._tag_phrase_entries(index, _stems("Station Wohnung Heizung"), ["a", "b", "c"]) == []
