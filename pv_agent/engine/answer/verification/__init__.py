"""Verification of an answer against the context blocks it was given (docs/verification.md).

One module per concern, plain data between them:

- ``backing``   per unit: is each figure backed by a fact in its role and its cell
- ``named_cells`` the cell a citation names ("[pv-gfb-02 · Betrag · 2026]", prompt v3) and the
  figure checked against it
- ``row_names`` figures that name a row, a bracket or a cell rather than state a value
- ``quotes``    a block's own words quoted in the answer back the figures inside them
- ``support``   is a figure backed by the facts of some blocks (role, row pairing, cell)
- ``reversals`` two figures the wrong way round; a figure called outdated that is not
- (``engine/figures.py``: figures in text – amounts, percentages, counts, years, dates – and
  clauses; beside textnorm.py, since the knowledge base's own checks read figures too)
- ``facts``     the facts of a block: each figure in its row, column and year
- ``roles``     a figure's role (period, share, side, limit, year, row mates) and why two differ
- ``fact_index`` the facts of the given blocks, parsed once and looked up by value
- ``alignment`` which fact of the cited blocks a figure of the answer is about
- ``units``     the answer as sentences, items, rows and headings with their citations
- ``given``     figures the question itself gave, and dates a block's rule makes of them
- ``conflicts`` sources that disagree, and whether each side is shown
- ``claims``    whether a claim sentence is found in a cited block
- ``verdict``   ``verify()`` and its result; ``marks`` marks what failed in the text
"""
from .claims import CachedSimilarity, ClaimCheck, Similarity, block_sentences, lexical_coverage
from .conflicts import ConflictGroup, find_conflicts
from .marks import mark_unsupported
from .units import Unit, citations_in, leaks_prompt, split_units
from .verdict import REASONS, CitationCheck, FigureIssue, Verification, verify

__all__ = [
    "REASONS", "CachedSimilarity", "CitationCheck", "ClaimCheck", "ConflictGroup", "FigureIssue", "Similarity",
    "Unit", "Verification", "block_sentences", "citations_in", "find_conflicts", "leaks_prompt",
    "lexical_coverage", "mark_unsupported", "split_units", "verify",
]
