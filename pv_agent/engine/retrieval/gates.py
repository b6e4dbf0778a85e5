"""Gates before the language model: off-topic questions and questions nothing relevant was found for.

Both are cheap and deterministic; neither calls the model. The relevance thresholds are
Settings fields (min_coverage, min_cosine, weak_coverage, weak_cosine).
"""
from __future__ import annotations

import re

from ..config import Settings
from ..textnorm import fold, query_terms
from ..types import RetrievalResult

DEFAULTS = Settings()

_GREETING_WORDS = frozenset(
    fold(w)
    for w in """
    hallo hi hey servus griass grüß gruss gruess gott guten morgen tag abend moin moinsen
    danke dankeschön vielen dank merci tschüss tschuess baba ciao auf wiedersehen bye ok okay super
    toll passt alles klar gut wie gehts geht's dir ihnen es wer bist du sind sie was kannst
    """.split()
)
_CHITCHAT = re.compile(
    r"\b(wie geht(s| es)|wer bist du|wer sind sie|was kannst du|bist du (ein|eine) (ki|bot|mensch)|erzähl.* witz)\b",
    re.IGNORECASE,
)
# Folded word prefixes that put a question inside payroll.
_PAYROLL_PREFIXES = tuple(
    fold(w)
    for w in """
    lohn löhn gehalt bezug bezüg entgelt brutto netto abrechn verrechn payroll sozialversicher versicher
    beitrag beiträg steuer abgabe dienstgeber dienstnehm arbeitnehm arbeitgeb arbeiter angestellt
    lehrling urlaub kranken krankenst abfertig kündig entlass austritt beendig sonderzahl weihnacht
    zuschuss zulage zuschlag überstund prämie pendler sachbezug dienstwagen kilometergeld diät reise
    familienbonus freibetrag freigrenze jahressechstel sechstel geringfüg teilzeit altersteilzeit karenz
    mutterschutz elternteil kollektivvertrag mindestlohn einstufung dienstjahr vordienst frist
    höchstbeitrag beitragsgrundlage kommunalsteuer dienstgeberbeitrag zuschlag mitarbeitervorsorge
    pension ruhestand aufroll lohnzettel l16 e-card ögk elda dienstzettel arbeitszeit feiertag
    """.split()
)
_PAYROLL_ABBREVIATIONS = frozenset(
    "sv sz dz db dzu hbgl uel atz bv mv fbp vab pp kommst lst est asvg estg urlg angg abgb bmsvg avrag azg "
    "kv av uv pv ak wf ibe l16 gfb gkk ögk".split()
)
_OUTSIDE = re.compile(
    r"\b(wetter|rezept|kochen|backen|fußball|fussball|bundesliga|witz|film|serie|musik|lied|gedicht|"
    r"hauptstadt|aktie|bitcoin|krypto|horoskop|restaurant|urlaubsziel|reiseziel|programmier|python|javascript|"
    r"auto kaufen|fernseh|spiel(e|en)?|sport)\w*",
    re.IGNORECASE,
)


def is_payroll(question: str) -> bool:
    words = query_terms(question, limit=64)
    for w in words:
        if w in _PAYROLL_ABBREVIATIONS or any(w.startswith(p) for p in _PAYROLL_PREFIXES):
            return True
        if any(p in w for p in _PAYROLL_PREFIXES if len(p) >= 6):  # compounds: "urlaubsersatzleistung"
            return True
    return False


def off_topic_reason(question: str) -> str | None:
    """``greeting`` / ``chit_chat`` / ``outside`` when the question is not a payroll question."""
    if is_payroll(question):
        return None
    if _CHITCHAT.search(question):
        return "chit_chat"
    words = [w for w in query_terms(question, limit=64) if w not in _GREETING_WORDS]
    if not words:
        return "greeting"
    if _OUTSIDE.search(question):
        return "outside"
    return None


def nothing_relevant(result: RetrievalResult, settings: Settings = DEFAULTS) -> bool:
    """True when no retrieved entry (cross-reference expansions aside) is relevant enough:
    none has the share of the question's terms or the dense similarity of ``settings``, nor
    the weaker pair together (lexical mode has no similarity: the weaker coverage alone).
    On the sample goldset in lexical mode it stops 1 of 7 outside questions and 1 of 71 others."""
    for h in result.hits:
        if h.via != "retrieval":
            continue
        if h.coverage >= settings.min_coverage or (h.cosine is not None and h.cosine >= settings.min_cosine):
            return False
        if h.coverage >= settings.weak_coverage and (h.cosine is None or h.cosine >= settings.weak_cosine):
            return False
    return True



def relevance_signals(result: RetrievalResult) -> dict:
    """The language-model-free signals ``supported`` decides on (also shown by ``eval --refusals``)."""
    hits = [h for h in result.hits if h.via == "retrieval"]
    return {
        "hits": len(hits),
        "coverage": max((h.coverage for h in hits), default=0.0),
        "dense_z": result.dense_z,
        "unknown_share": result.unknown_share,
        "unknown_terms": list(result.unknown_terms),
    }


def supported(result: RetrievalResult, settings: Settings = DEFAULTS) -> bool:
    """Whether the knowledge base says anything on the question, decided without a language
    model: False means "Dazu enthält die Wissensbasis keine Aussage" (plus related topics)
    instead of presenting the nearest entries as best matches.

    Unsupported when nothing was found; when the best dense similarity does not stand out of
    the candidate pool (``refuse_dense_z``); or when the question's nouns are largely unknown
    to the index (``refuse_unknown_share``) and neither the dense similarity
    (``refuse_unknown_dense_z``) nor the best hit's coverage of the question's terms
    (``refuse_unknown_coverage``) makes up for it. Lexical mode has no dense similarity:
    the unknown nouns and the coverage alone (``refuse_lexical_*``, calibrated apart).
    The thresholds are calibrated on the calibration half of the goldset's refusal and covered
    questions (``pv-agent eval --refusals --calibrate``); docs/retrieval.md reports both halves.
    """
    if not any(h.via == "retrieval" for h in result.hits):
        return False
    return supported_by_signals(relevance_signals(result), settings)


def supported_by_signals(signals: dict, settings: Settings = DEFAULTS) -> bool:
    """``supported`` on precomputed signals (the calibration evaluates many thresholds on them)."""
    if not signals.get("hits", 1):
        return False
    z, coverage, share = signals["dense_z"], signals["coverage"], signals["unknown_share"]
    if z is None:
        if coverage < settings.refuse_lexical_coverage:
            return False
        return not (share >= settings.refuse_lexical_unknown_share and coverage < settings.refuse_lexical_unknown_coverage)
    if z < settings.refuse_dense_z:
        return False
    return not (share >= settings.refuse_unknown_share and z < settings.refuse_unknown_dense_z
                and coverage < settings.refuse_unknown_coverage)
