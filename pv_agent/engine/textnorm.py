"""German folding and tokenising, shared by indexing and querying.

FTS5's unicode61 tokenizer folds ``ü`` to ``u`` but does not equate ``ü`` with ``ue`` or
``ß`` with ``ss`` (design.md §9), so text and questions are folded here, the same way,
before FTS5 sees them: ``Überstunden``, ``Ueberstunden`` and ``Uberstunden`` all become
``uberstunden``.
"""
from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"[0-9a-z]+")
_DIGRAPHS = (("ae", "a"), ("oe", "o"), ("ue", "u"))
# "ue" spelled for "ü" (Ueberstunden, fuer, Zuschuesse) – not in the word "heuer", not after a/i/q
# (Dauer, Quelle) and not in "-uell" (aktuell, eventuell): those keep their letters, so "heuer" and
# "aktuell" stay recognisable after folding. "Steuer" still folds to "steur" as before, so a
# question typed "Kommunalsteur" keeps finding "Kommunalsteuer".
# The pattern starts with its literal "ue" and checks what precedes it afterwards (the same
# matches as "(?<![aiq])(?<!\bhe)ue(?!ll)"): a leading literal lets the regex engine jump from
# one "ue" to the next instead of trying every position — 25× faster on a section's text.
_UE_UMLAUT = re.compile(r"ue(?!ll)(?<![aiq]ue)(?<!\bheue)")

# Words that carry no topic in a clerk's question. Kept small on purpose: payroll terms
# such as "frist", "satz" or "grenze" must stay searchable.
STOPWORDS = frozenset(
    """
    a ab aber alle allem allen aller alles als also am an andere anderen auch auf aus bei beim bin bis
    bitte bzw da dafur damit dann darf das dass dem den denn der des dessen dich die dies diese diesem
    diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines er es etwa euch fur
    gibt gilt hab habe haben hat hatte heuer ich ihr im in ist ja jetzt kann kein keine konnen
    konnte man mehr mein meine mich mir mit muss mussen nach nein nicht noch nun nur ob oder ohne
    sein seine sich sie sind so soll sollen sowie uber um und uns unser unter viel vom von vor war
    waren was weil welche welcher welches wenn wer werden wie wieviel wieviele wird wo wurde zu zum
    zur zwischen hallo danke gerne bzgl lt usw eig eigentlich genau mal schon sagen sag bekommt
    bekomme kriegt kriege geht gehts
    hoch hohe hoher hohes hohen viel viele vielen lange lang gross grosse grosser betragt
    aktuell aktuelle aktuellen aktueller derzeit momentan
    is isch gibts gib wir ihm ihn eh gar will selber heisst schaut passiert komplett extra ma mitm firma
    uberhaupt irgendein irgendeinen irgendwas okay ok
    """.split()
)


_UMLAUT_PAIRS = (("ä", "a"), ("ö", "o"), ("ü", "u"), ("ß", "ss"), ("ẞ", "ss"))
# Non-ASCII characters that payroll text is full of and that fold to nothing anyway (they are
# not word characters): skipping Unicode decomposition for them keeps folding fast.
_NEEDS_DECOMPOSITION = re.compile("[^\x00-\x7f€–—§…„“”‚‘’«»·×°±²³¼½¾⚠✱✗⇄→←↔≤≥≈ ]")


def fold(text: str) -> str:
    """Lower-case, strip diacritics, map ae/oe/ue to plain vowels and ß to ss."""
    text = text.lower()
    if not text.isascii():  # str.replace per umlaut: several times faster than translate() with a dict
        for umlaut, plain in _UMLAUT_PAIRS:
            if umlaut in text:
                text = text.replace(umlaut, plain)
    if not text.isascii() and _NEEDS_DECOMPOSITION.search(text):  # é, č …, ｆｕｌｌｗｉｄｔｈ
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    if "ue" in text:  # "ue" for ü, but not in "heuer", "Dauer" nor "aktuell" (see _UE_UMLAUT)
        text = _UE_UMLAUT.sub("u", text)
    for digraph, vowel in _DIGRAPHS[:2]:
        text = text.replace(digraph, vowel)
    return text


def tokens(text: str) -> list[str]:
    """Folded word tokens; anything that is not a letter or digit separates words."""
    return _TOKEN.findall(fold(text))


def index_text(text: str) -> str:
    """The form in which text is stored in the FTS5 table: folded tokens joined by spaces."""
    return " ".join(tokens(text))


_SUFFIXES = ("innen", "ungen", "en", "er", "es", "em", "e", "n", "s")


def stem(token: str) -> str:
    """Strip one German inflection suffix so a prefix query also finds the other forms.

    ``sonderzahlungen`` → ``sonderzahlung`` (a prefix of both forms). Short and numeric
    tokens are left alone.
    """
    if token.isdigit() or len(token) < 6:
        return token
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 5:
            return token[: -len(suffix)]
    return token


def query_terms(question: str, limit: int = 24) -> list[str]:
    """Significant folded terms of a question, in order, without duplicates and stopwords."""
    seen: list[str] = []
    for tok in tokens(question):
        if tok in STOPWORDS or (len(tok) < 2 and not tok.isdigit()):
            continue
        if tok not in seen:
            seen.append(tok)
        if len(seen) >= limit:
            break
    return seen



# -- query glosses -------------------------------------------------------------------------
# Words a clerk types for which the knowledge base's entries use others: payroll
# abbreviations, fractions written with digits, towns where a Bundesland decides the rate.
# The embedding model reads the question with each one's long form in parentheses ("Wieviel
# FBP (Familienbonus) bekommt ein MA (Mitarbeiter)?"): a small multilingual model knows neither
# "FBP" nor that "1/6" is the "Jahressechstel". BM25 gets only the Bundesland: the
# abbreviations mostly stand in the entries themselves, and searching their long forms too
# (tried, one group per abbreviation) changed nothing but a few ranks down.
# Keys are matched as written where the abbreviation is also an ordinary word ("MA":
# Mitarbeiter, "ma": dialect for "wir"; "AN" and "an"), otherwise case-insensitively.
ABBREVIATIONS: dict[str, str] = {
    "MA": "Mitarbeiter",
    "AN": "Arbeitnehmer",
    "AG": "Arbeitgeber",
    "dn": "Dienstnehmer",
    "dg": "Dienstgeber",
    "dv": "Dienstverhältnis",
    "lst": "Lohnsteuer",
    "est": "Einkommensteuer",
    "sv": "Sozialversicherung",
    "uv": "Unfallversicherung",
    "alv": "Arbeitslosenversicherung",
    "kv": "Kollektivvertrag",
    "db": "Dienstgeberbeitrag",
    "kommst": "Kommunalsteuer",
    "fbp": "Familienbonus Plus",
    "fabo": "Familienbonus Plus",
    "avab": "Alleinverdienerabsetzbetrag",
    "aeab": "Alleinerzieherabsetzbetrag",
    "atz": "Altersteilzeit",
    "uel": "Urlaubsersatzleistung",
    "efz": "Entgeltfortzahlung",
    "hbgl": "Höchstbeitragsgrundlage",
    "bv": "betriebliche Vorsorge",
    "bvk": "Vorsorgekasse",
    "mvk": "Vorsorgekasse",
    "sz": "Sonderzahlung",
    "uz": "Urlaubszuschuss",
    "wr": "Weihnachtsremuneration",
    "ust": "Überstunden",
    "km": "Kilometer",
    "kfz": "Kraftfahrzeug",
    "ogk": "Gesundheitskasse",
    "NÖ": "Niederösterreich",
    "OÖ": "Oberösterreich",
    "stmk": "Steiermark",
    "ktn": "Kärnten",
    "sbg": "Salzburg",
    "vbg": "Vorarlberg",
    "bgld": "Burgenland",
}
FRACTIONS = {"2": "Hälfte", "3": "Drittel", "4": "Viertel", "6": "Sechstel", "12": "Zwölftel"}
# Towns by Bundesland (the capitals and the larger towns; folded, as tokens joined by spaces).
# Not "Baden", "Hard" or "Ried": ordinary words or several places.
PLACES = {
    "Niederösterreich": "st polten|sankt polten|wiener neustadt|krems|amstetten|klosterneuburg|modling|tulln|"
                        "korneuburg|stockerau|schwechat|neunkirchen|zwettl|mistelbach|hollabrunn",
    "Oberösterreich": "linz|wels|steyr|leonding|traun|vocklabruck|gmunden|braunau|ansfelden|enns|bad ischl|perg",
    "Steiermark": "graz|leoben|kapfenberg|bruck an der mur|judenburg|knittelfeld|weiz|gleisdorf|leibnitz|hartberg",
    "Kärnten": "klagenfurt|villach|wolfsberg|spittal|feldkirchen|st veit|sankt veit",
    "Salzburg": "hallein|saalfelden|zell am see|bischofshofen|seekirchen",
    "Tirol": "innsbruck|kufstein|schwaz|lienz|telfs|worgl|kitzbuhel|imst|landeck",
    "Vorarlberg": "bregenz|dornbirn|feldkirch|bludenz|lustenau|hohenems|rankweil",
    "Burgenland": "eisenstadt|neusiedl|oberwart|mattersburg|gussing",
}
_PLACE = re.compile(r"\b(" + "|".join(PLACES.values()) + r")\b")
_STATE_OF = {place: state for state, places in PLACES.items() for place in places.split("|")}
_FRACTION = re.compile(r"(?<![\d/.,])1 ?/ ?(2|3|4|6|12)(?![\d/])")
_GLOSS_WORD = re.compile(r"[^\W_]+")


def _abbreviation_gloss(word: str) -> str:
    # cased keys ("MA") match only as written: fold("ma") is no key
    return ABBREVIATIONS.get(word) or ABBREVIATIONS.get(fold(word)) or ""


def glossed(question: str) -> str:
    """The question with the long form of each abbreviation, fraction and town in parentheses
    after it: the text the embedding model reads."""
    text = _GLOSS_WORD.sub(lambda m: f"{m.group(0)} ({g})" if (g := _abbreviation_gloss(m.group(0))) else m.group(0),
                           question or "")
    text = _FRACTION.sub(lambda m: f"{m.group(0)} ({FRACTIONS[m.group(1)]})", text)
    states = place_states(question)
    return f"{text} ({', '.join(states)})" if states else text


def place_states(question: str) -> list[str]:
    """The Bundesländer of the towns a question names ("St. Pölten" → Niederösterreich)."""
    joined = " ".join(tokens(question or ""))
    return list(dict.fromkeys(_STATE_OF[m.group(1)] for m in _PLACE.finditer(joined)))
