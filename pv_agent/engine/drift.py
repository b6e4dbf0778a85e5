"""Source drift: did the sections an answer cited change since it was given?

Every stored answer keeps, per section it cited *or displayed*, the entry id, the section and
the content hash of the chunk (its *fingerprint*), plus the text as it was: the model saw the
hit's section and the entry's key values; a sources-only answer shows the key values alone. After a reindex, each
fingerprint is looked up in the new index: same hash → unchanged; the entry still there but
the section's text differs → ``changed`` (with a diff old → new); the entry gone → ``removed``.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from .types import SECTION_KEY_VALUES

UNCHANGED, CHANGED, REMOVED = "unchanged", "changed", "removed"
LABELS = {CHANGED: "Quelle geändert", REMOVED: "Quelle entfernt", UNCHANGED: "unverändert"}


@dataclass(frozen=True)
class Fingerprint:
    entry_id: str
    section: str
    chunk_hash: str
    text: str = ""  # header + text as the model saw it; needed for the diff

    def as_dict(self) -> dict:
        return {"id": self.entry_id, "section": self.section, "chunk_hash": self.chunk_hash, "text": self.text}

    @classmethod
    def from_dict(cls, data: dict) -> "Fingerprint":
        return cls(data["id"], data.get("section", ""), data["chunk_hash"], data.get("text", ""))


def fingerprint_of_hit(hit) -> Fingerprint:
    """The fingerprint of a retrieval hit's own section."""
    return Fingerprint(hit.entry_id, hit.section, hit.chunk_hash, f"{hit.header}\n{hit.text}")


KEY_VALUES_KIND = "key_values"  # chunker.section_kind of "Kernwerte & Fristen"


def key_value_fingerprints(index, entry_ids) -> dict[str, list[Fingerprint]]:
    """Per entry the fingerprints of its key values (all parts of a split section), in one read:
    taken right after retrieval, so nothing is read from the index after the model answered."""
    found: dict[str, list[Fingerprint]] = {}
    for r in index.chunks_of_entries(list(entry_ids), kind=KEY_VALUES_KIND):
        found.setdefault(r.entry_id, []).append(Fingerprint(r.entry_id, r.section, r.content_hash, f"{r.header}\n{r.text}"))
    return found


def fingerprints_shown(hit, key_values: list[Fingerprint], *, key_values_only: bool = False) -> list[Fingerprint]:
    """Fingerprints of every section of ``hit`` that was shown: its own section and, when the
    block carried them, the entry's ``key_values`` (``Hit.block_text``, what the model saw); with
    ``key_values_only`` the key values alone where the entry has them (a sources-only answer)."""
    own = fingerprint_of_hit(hit)
    shows_key_values = bool(hit.key_values.strip()) or own_is_key_values(hit)
    if not shows_key_values or not key_values:  # none, or the index changed under us: name what we can
        return [own]
    if key_values_only or own_is_key_values(hit):
        return list(key_values)
    return [own, *key_values]


def own_is_key_values(hit) -> bool:
    return hit.section == SECTION_KEY_VALUES


@dataclass
class Verdict:
    fingerprint: Fingerprint
    status: str
    new_text: str = ""
    diff: str = ""

    @property
    def label(self) -> str:
        return LABELS[self.status]

    def as_dict(self) -> dict:
        return {
            "id": self.fingerprint.entry_id,
            "section": self.fingerprint.section,
            "status": self.status,
            "label": self.label,
            "diff": self.diff,
        }


@dataclass
class AnswerDrift:
    answer_id: str
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {v.status for v in self.verdicts}
        return REMOVED if REMOVED in statuses else CHANGED if CHANGED in statuses else UNCHANGED

    def as_dict(self) -> dict:
        return {"answer_id": self.answer_id, "status": self.status, "citations": [v.as_dict() for v in self.verdicts]}


def section_text(index, entry_id: str, section: str) -> tuple[str, set[str]]:
    """Header + text of an entry's section (all parts of a split one) and its chunk hashes."""
    rows = [r for r in index.chunks_of_entries([entry_id]) if r.section == section]
    return "\n\n".join(f"{r.header}\n{r.text}" for r in rows), {r.content_hash for r in rows}


def check_fingerprints(fingerprints: list[Fingerprint], new_index, old_index=None) -> list[Verdict]:
    verdicts = []
    live = new_index.entry_hashes()
    for fp in fingerprints:
        if fp.entry_id not in live:
            verdicts.append(Verdict(fp, REMOVED, diff=_diff(_old_text(fp, old_index), "")))
            continue
        new_text, hashes = section_text(new_index, fp.entry_id, fp.section)
        if fp.chunk_hash in hashes:
            verdicts.append(Verdict(fp, UNCHANGED))
            continue
        old_text = _old_text(fp, old_index)
        verdicts.append(Verdict(fp, CHANGED, new_text=new_text, diff=_diff(old_text, new_text)))
    return verdicts


def check_answers(answers: list[dict], new_index, old_index=None) -> list[AnswerDrift]:
    """``answers``: stored answer objects with ``fingerprints`` (and an ``id``)."""
    results = []
    for n, answer in enumerate(answers, start=1):
        fps = [Fingerprint.from_dict(f) for f in answer.get("fingerprints", [])]
        results.append(AnswerDrift(str(answer.get("id", n)), check_fingerprints(fps, new_index, old_index)))
    return results


def _old_text(fp: Fingerprint, old_index) -> str:
    if fp.text or old_index is None:
        return fp.text
    for row in old_index.chunks_of_entries([fp.entry_id]):
        if row.content_hash == fp.chunk_hash:
            return f"{row.header}\n{row.text}"
    return ""


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "vorher", "jetzt", lineterm="", n=1)
    return "\n".join(lines)
