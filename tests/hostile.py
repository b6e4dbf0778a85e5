"""Generated hostile questions: FTS5 operators and quotes, SQL fragments, control characters,
lone surrogates, huge strings, mixed scripts, only punctuation. Deterministic by seed."""
from __future__ import annotations

import random

FRAGMENTS = [
    "Sonderzahlung", "Urlaubsersatzleistung", "HBGL", "§ 67", "Abs 4a", "Überstunden", "DZ", "2026",
    "AND", "OR", "NOT", "NEAR", "NEAR(a b, 2)", '"', "'", "*", "^", "-", "+", ":", "(", ")", "{", "}",
    "title:", "body:", "chunks_fts", "'; DROP TABLE entries; --", "\" OR 1=1 --", "UNION SELECT *",
    "\x00", "\x07", "\x1b[31m", "\r\n", "\t", "\ud800", "\udfff", "😀", "🇦🇹", "Ж", "漢字", "عربى",
    "ｆｕｌｌｗｉｄｔｈ", "ß", "ẞ", "Ä", "e\u0301", "\u200b", "\ufeff", "<script>alert(1)</script>",
    "[pv-sz-01]", "[[id]]", "%", "_", "\\", "/", "…", "—", "€", "1.234,56 €", "0,95 %",
]


def hostile_questions(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    questions = ["", " ", "?!.,;:", "\"\"\"", "''''", "()()()", "*" * 50, "\x00" * 10]
    while len(questions) < n:
        kind = rng.random()
        if kind < 0.02:
            questions.append(rng.choice(FRAGMENTS) * rng.randint(1000, 20000))  # up to ~100 kB+
        elif kind < 0.1:
            questions.append("".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 80))))
        else:
            questions.append(" ".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12))))
    return questions[:n]
