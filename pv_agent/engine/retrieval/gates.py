"""Gates before the language model: off-topic questions and questions nothing relevant was found for.

Both are cheap and deterministic; neither calls the model. The relevance thresholds are
Settings fields (min_coverage, min_cosine, weak_coverage, weak_cosine).
"""
from __future__ import annotations

import math
import re

from ..config import Settings
from ..textnorm import STOPWORDS, fold, index_text, query_terms, stem, tokens
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
    On the sample goldset in lexical mode it stops 1 of 7 outside questions and 1 of 71 others.
    A question in English with any hit goes on (``is_foreign_language``: its terms are no evidence)."""
    if is_foreign_language(result.question or "") and any(h.via == "retrieval" for h in result.hits):
        return False
    for h in result.hits:
        if h.via != "retrieval":
            continue
        if h.coverage >= settings.min_coverage or (h.cosine is not None and h.cosine >= settings.min_cosine):
            return False
        if h.coverage >= settings.weak_coverage and (h.cosine is None or h.cosine >= settings.weak_cosine):
            return False
    return True



# -- relevance without a language model ------------------------------------------------------
# How many of the best entries the topic coverage looks at: a question's terms may be spread
# over an entry and the two next to it (a rate in one, its exception in the next).
TOPIC_TOP_ENTRIES = 3
# Shorter words are abbreviations (SV, DZ, UEL) that mean the same in covered and uncovered
# questions; the best hit's ``coverage`` counts them.
MIN_TOPIC_TERM_LENGTH = 4
# German function words (the Snowball stop list, folded and stemmed, with the retrieval's own
# stop words): they carry no topic, and a knowledge base written in the third person lacks
# some of them ("unsere"), which would make them weigh like the rarest term.
_FUNCTION_WORDS = """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anderm andern
    anders auch auf aus bei bin bis bist da damit dann der den des dem die das dass du durch ein eine einem
    einen einer eines einig einige einigem einigen einiger einiges einmal er ihn ihm es etwas euer eure eurem
    euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich mich mir ihr ihre
    ihrem ihren ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes
    jetzt kann kein keine keinem keinen keiner keines können könnte machen man manche manchem manchen mancher
    manches mein meine meinem meinen meiner meines mit muss musste nach nicht nichts noch nun nur ob oder ohne
    sehr sein seine seinem seinen seiner seines selbst sich sie ihnen sind so solche solchem solchen solcher
    solches soll sollte sondern sonst über um und uns unsere unserem unseren unser unseres unter viel vom von
    vor während war waren warst was weg weil weiter welche welchem welchen welcher welches wenn werde werden
    wie wieder will wir wird wirst wo wollen wollte würde würden zu zum zur zwar zwischen
"""
FUNCTION_STEMS = frozenset(stem(t) for w in (*_FUNCTION_WORDS.split(), *STOPWORDS) for t in tokens(w))


def topic_coverage(index, result: RetrievalResult) -> float:
    """How much of what the question is about the best entries say, weighting each of the
    question's terms by its rarity in the knowledge base (idf over entries): the largest share,
    over the top ``TOPIC_TOP_ENTRIES`` entries, of the question's idf mass found anywhere in one
    entry's title, tags or text. An uncovered question hinges on a term the knowledge base never
    or hardly mentions ("Lohnpfändung", "Rufbereitschaft"): it carries most of the weight and no
    near entry has it; generic payroll words ("Beitrag", "Monat") weigh little. 1.0 when the
    question has no term of four letters or more (nothing to miss), 0.0 without hits."""
    hits = [h for h in result.hits if h.via == "retrieval"][:TOPIC_TOP_ENTRIES]
    if not hits:
        return 0.0
    roots = list(dict.fromkeys(stem(t) for t in result.terms if len(t) >= MIN_TOPIC_TERM_LENGTH and not t.isdigit()))
    roots = [r for r in roots if r not in FUNCTION_STEMS]
    if not roots:
        return 1.0
    n_entries = index.entry_count()
    frequencies = index.entry_frequencies(roots)
    weights = {r: math.log((n_entries + 1) / (frequencies[r] + 1)) for r in roots}
    total = sum(weights.values())
    if total <= 0:  # every term in every entry
        return 1.0
    texts = _entry_texts(index, [h.entry_id for h in hits])
    return max(sum(w for r, w in weights.items() if _contains(t, r)) for t in texts) / total


def _contains(text: str, root: str) -> bool:
    # as the entry frequencies count: long roots anywhere (inside compounds), short ones at a word start
    return root in text if len(root) >= 5 else f" {root}" in text


# Folded entry texts kept per process: the best entries of recent questions, not the corpus.
ENTRY_TEXT_CACHE_SIZE = 256


def _entry_texts(index, entry_ids: list[str]) -> list[str]:
    """The folded title, tags, legal bases and body of each entry (" " first, for word starts),
    from a small per-generation cache on the index."""
    cached = getattr(index, "_pv_entry_texts", None)
    if cached is None or cached[0] != index.generation or len(cached[1]) > ENTRY_TEXT_CACHE_SIZE:
        cached = index._pv_entry_texts = (index.generation, {})
    texts = cached[1]
    missing = [eid for eid in entry_ids if eid not in texts]
    for eid, e in index.entries_by_id(missing).items():
        texts[eid] = " " + index_text(f"{e.title} {' '.join(e.tags)} {' '.join(e.legal_bases)} {e.body}")
    return [texts.get(eid, "") for eid in entry_ids]


# Words that mark a question as English (none of them is also a German word): the knowledge base
# is German, so an English question shares almost no terms with the entry that answers it, and the
# lexical signals say "uncovered" for it as for a missing topic. Issue 28: no refusal on that.
_ENGLISH_WORDS = frozenset("""
    the a is are what how much many does do we our you your of for to with when which who whom
    per must can could should would may after before under over about from there this that these
    those it its be been get gets pay paid has have had and or not any each every than into
    employee employees employer salary wage wages tax taxes year years month monthly
""".split())
_GERMAN_WORDS = frozenset("""
    der die das ist wie was und ein eine einer einem einen für bei mit von zu zum zur ich wir muss
    kann im am auf den dem des es gibt wann welche welcher welches wieviel viel hoch noch auch nicht
""".split())


# Words of both languages: English evidence only in a question without any German function word
# (telegraphic English such as "benefit in kind for an electric vehicle").
_SHARED_WORDS = frozenset("in an so man also".split())


def is_foreign_language(question: str) -> bool:
    """True for a question written in English rather than German: at least two English words
    and more of them than German function words."""
    words = re.findall(r"[a-zäöüß]+", question.lower())
    english = sum(w in _ENGLISH_WORDS for w in words)
    german = sum(w in _GERMAN_WORDS for w in words)
    if not german:
        english += sum(w in _SHARED_WORDS for w in words)
    return english >= 2 and english > german


def relevance_signals(result: RetrievalResult) -> dict:
    """The language-model-free signals ``supported`` decides on (also shown by ``eval --refusals``).
    ``topic_coverage`` is set by ``answer.ask`` (it needs the index), None on a bare result."""
    hits = [h for h in result.hits if h.via == "retrieval"]
    return {
        "hits": len(hits),
        "coverage": max((h.coverage for h in hits), default=0.0),
        "topic_coverage": result.topic_coverage,
        "cosine": max((h.cosine for h in hits if h.cosine is not None), default=None),
        "cosine_model": result.cosine_model,
        "dense_z": result.dense_z,
        "unknown_share": result.unknown_share,
        "unknown_terms": list(result.unknown_terms),
        "foreign_language": is_foreign_language(result.question or ""),
    }


def supported(result: RetrievalResult, settings: Settings = DEFAULTS) -> bool:
    """Whether the knowledge base says anything on the question, decided without a language
    model: False means "Dazu enthält die Wissensbasis keine Aussage" (plus related topics)
    instead of presenting the nearest entries as best matches.

    Unsupported when nothing was found, or when a linear support score falls below zero:
    ``bias + w_topic · topic_coverage + w_coverage · coverage (+ w_cosine · best cosine)``,
    where ``topic_coverage`` is the idf-weighted share of the question's terms in one of the
    best three entries, ``coverage`` the plain share in the best hit's shown text and the cosine
    the best dense similarity (hybrid only). Weights and bias per mode (``refuse_hybrid_*`` /
    ``refuse_lexical_*`` in Settings) come from a regularised logistic regression on the goldset's
    calibration half, the bias then moved so that at most 2 % of the covered calibration
    questions are refused (``pv-agent eval --refusals --calibrate``; issue 28: the same check
    decides whether a model's refusal stands); docs/retrieval.md reports both halves and the
    fresh set. A question in English is never refused here (``is_foreign_language``).
    """
    if not any(h.via == "retrieval" for h in result.hits):
        return False
    return supported_by_signals(relevance_signals(result), settings)


def support_features(signals: dict, settings: Settings = DEFAULTS) -> tuple[str, tuple[float, ...]]:
    """The mode and the feature vector of ``supported``'s score, in the order of its weights.
    Hybrid only with cosines of the model the weights were fitted on (``refuse_cosine_model``):
    raw cosines of another model (bge-m3 through Ollama) lie in another band, so its hybrid
    results are judged by the lexical score."""
    topic = signals.get("topic_coverage")
    coverage = signals["coverage"]
    topic = coverage if topic is None else topic  # a bare retrieve() result: the plain share stands in
    if signals.get("cosine") is None or signals.get("cosine_model") != settings.refuse_cosine_model:
        return "lexical", (topic, coverage)
    return "hybrid", (topic, coverage, signals["cosine"])


def support_score(signals: dict, settings: Settings = DEFAULTS) -> float:
    """``bias + Σ weight · feature``: ≥ 0 supported, < 0 "nothing in the knowledge base"."""
    mode, features = support_features(signals, settings)
    bias, weights = support_weights(settings, mode)
    return bias + sum(w * x for w, x in zip(weights, features))


def support_weights(settings: Settings, mode: str) -> tuple[float, tuple[float, ...]]:
    """(bias, weights) of ``support_score`` for ``mode``, from the ``refuse_<mode>_*`` settings."""
    if mode == "hybrid":
        return settings.refuse_hybrid_bias, (settings.refuse_hybrid_topic, settings.refuse_hybrid_coverage,
                                             settings.refuse_hybrid_cosine)
    return settings.refuse_lexical_bias, (settings.refuse_lexical_topic, settings.refuse_lexical_coverage)


def supported_by_signals(signals: dict, settings: Settings = DEFAULTS) -> bool:
    """``supported`` on precomputed signals (the calibration evaluates many settings on them).
    A question in another language than the knowledge base's is never refused on these signals:
    its missing terms are no evidence of a missing topic (issue 28)."""
    if not signals.get("hits", 1):
        return False
    if signals.get("foreign_language"):
        return True
    return support_score(signals, settings) >= 0
