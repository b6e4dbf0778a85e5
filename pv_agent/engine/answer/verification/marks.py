"""The answer with what failed visibly marked, for the clerk and the regeneration."""
from __future__ import annotations

import re

from .backing import REASONS, FigureIssue
from .verdict import Verification

def mark_unsupported(answer: str, result: Verification, *, figure_mark: str, citation_mark: str,
                     claim_mark: str = "", reasons: dict[str, str] | None = None) -> str:
    """The answer with each unsupported figure, unsupported claim and unknown citation visibly marked.

    ``figure_mark`` / ``citation_mark`` are templates with ``{figure}`` (and optionally
    ``{reason}``, filled from ``reasons`` by the issue's reason key) / ``{id}``; ``claim_mark``
    is appended to an unsupported claim sentence without an unsupported figure.
    """
    out = answer
    reasons = reasons or REASONS
    by_sentence: dict[str, list[FigureIssue]] = {}
    for issue in result.unsupported_figures:
        by_sentence.setdefault(issue.sentence, []).append(issue)
    for sentence, issues in by_sentence.items():
        marked = sentence
        for fig, issue in {i.figure: i for i in issues}.items():
            mark = figure_mark.format(figure=fig, reason=reasons.get(issue.reason, issue.reason))
            marked = re.sub(rf"(?<![\d.,]){re.escape(fig)}(?![\d])", lambda _m, m=mark: m, marked, count=1)
        out = out.replace(sentence, marked, 1)
    if claim_mark:
        for claim in result.claims:
            if claim.state == "unsupported" and not claim.figures_backed and claim.sentence not in by_sentence:
                out = out.replace(claim.sentence, claim.sentence + claim_mark, 1)
    for cid in result.unknown_citations:
        # "[pv-xx-99]" or, naming a cell, "[pv-xx-99 · Betrag · 2026]"
        out = re.sub(rf"\[\s*{re.escape(cid)}(?:\s*·[^\[\]\n]*)?\s*\]", citation_mark.format(id=cid), out)
    return out
