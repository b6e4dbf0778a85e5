"""``wissensbasis/parameters.yaml``: which figure of the knowledge base each payroll rule
parameter must hold.

Each item: ``code`` (the rule parameter's code), ``name`` (for people), ``entry`` (an entry
id), ``fact`` (the label the entry gives the figure, see ``facts``), optional ``column``, and
``unit`` (``EUR``, ``%`` – percent points –, ``g/km``, ``Anzahl``). Read with line numbers, so
``validate`` says ``parameters.yaml:LINE: …`` for an unknown entry, a label that names no
fact or one that names two figures for one year.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from ..types import Entry, LoadIssue
from .facts import UNITS, FactLookup, find_fact

MAPPING_FILE = "parameters.yaml"
CODE_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
FIELDS = ("code", "name", "entry", "fact", "column", "unit")
REQUIRED = ("code", "entry", "fact", "unit")
HEADER = (
    "# Lohnparameter (hr.rule.parameter-Codes) → der Wert der Wissensbasis, den sie tragen müssen.\n"
    "# Geprüft von `tools/pv-agent validate` und verwendet von `tools/pv-agent check-params`.\n"
    "# fact: das Label im Eintrag (Tabellenzeile, Tabellenspalte über Jahreszeilen oder „Label:“\n"
    "# eines Listenpunkts); column: die Spalte, wenn die Zeile mehrere Werte hat; unit: EUR, %\n"
    "# (Prozentpunkte), g/km oder Anzahl.\n"
)


@dataclass(frozen=True)
class ParameterMapping:
    code: str
    entry: str
    fact: str
    unit: str
    name: str = ""
    column: str = ""
    line: int = 0  # where the item starts in the file (1-based)

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("line")
        return data


def mapping_path(kb_dir: str | Path) -> Path:
    return Path(kb_dir) / MAPPING_FILE


def load_mapping(path: str | Path) -> tuple[list[ParameterMapping], list[LoadIssue]]:
    """The items of the mapping file and the problems of its form (not of its targets)."""
    path = Path(path)
    rel = path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return [], [LoadIssue(rel, 0, "Datei nicht gefunden")]
    except (OSError, UnicodeDecodeError) as exc:
        return [], [LoadIssue(rel, 0, f"nicht lesbar: {exc}")]
    return parse_mapping(text, rel)


def parse_mapping(text: str, rel: str = MAPPING_FILE) -> tuple[list[ParameterMapping], list[LoadIssue]]:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [LoadIssue(rel, mark.line + 1 if mark else 1, f"YAML-Fehler: {getattr(exc, 'problem', exc)}")]
    items = _items_node(root)
    if items is None:
        return [], [LoadIssue(rel, 1, "erwartet 'parameters:' mit einer Liste von Einträgen")]
    out: list[ParameterMapping] = []
    issues: list[LoadIssue] = []
    first_line: dict[str, int] = {}
    for node in items.value:
        line = node.start_mark.line + 1
        if not isinstance(node, yaml.MappingNode):
            issues.append(LoadIssue(rel, line, "Eintrag muss code, entry, fact und unit haben"))
            continue
        values = {}
        for key, value in node.value:
            if key.value not in FIELDS:
                issues.append(LoadIssue(rel, key.start_mark.line + 1, f"unbekanntes Feld '{key.value}' (erlaubt: {', '.join(FIELDS)})"))
            elif not isinstance(value, yaml.ScalarNode):
                issues.append(LoadIssue(rel, value.start_mark.line + 1, f"'{key.value}' muss Text sein"))
            else:
                values[key.value] = str(value.value).strip()
        missing = [k for k in REQUIRED if not values.get(k)]
        if missing:
            issues.append(LoadIssue(rel, line, f"Pflichtfeld fehlt: {', '.join(missing)}"))
            continue
        code = values["code"]
        if not CODE_PATTERN.match(code):
            issues.append(LoadIssue(rel, line, f"ungültiger code '{code}' (Buchstaben, Ziffern, _ . -)"))
            continue
        if values["unit"] not in UNITS:
            issues.append(LoadIssue(rel, line, f"{code}: unbekannte unit '{values['unit']}' (erlaubt: {', '.join(UNITS)})"))
            continue
        if code in first_line:
            issues.append(LoadIssue(rel, line, f"code '{code}' doppelt (schon in Zeile {first_line[code]})"))
            continue
        first_line[code] = line
        out.append(ParameterMapping(line=line, **values))
    return out, issues


def _items_node(root):
    if not isinstance(root, yaml.MappingNode):
        return None
    for key, value in root.value:
        if key.value == "parameters" and isinstance(value, yaml.SequenceNode):
            return value
    return None


def resolve(mapping: ParameterMapping, entries_by_id: dict[str, Entry]) -> tuple[Entry | None, FactLookup]:
    """The entry and the fact a mapping item points to; ``lookup.problem`` says what is wrong."""
    entry = entries_by_id.get(mapping.entry)
    if entry is None:
        return None, FactLookup(problem=f"Eintrag '{mapping.entry}' gibt es nicht")
    return entry, find_fact(entry, mapping.fact, mapping.unit, mapping.column)


def check_mapping(mappings: list[ParameterMapping], entries: list[Entry], rel: str = MAPPING_FILE) -> list[LoadIssue]:
    """One issue per item that points to no entry, to no fact, or to an ambiguous label."""
    by_id = {e.id: e for e in entries}
    issues = []
    for m in mappings:
        _, lookup = resolve(m, by_id)
        if lookup.problem:
            issues.append(LoadIssue(rel, m.line, f"{m.code}: {lookup.problem}"))
    return issues


def validate_mapping_file(kb_dir: str | Path, entries: list[Entry]) -> list[LoadIssue]:
    """``validate``'s check of ``<kb>/parameters.yaml`` (none when the file does not exist)."""
    path = mapping_path(kb_dir)
    if not path.is_file():
        return []
    mappings, issues = load_mapping(path)
    return issues + check_mapping(mappings, entries)


def dump_mapping(mappings: list[ParameterMapping]) -> str:
    """The mapping as the file's text, in the order given (Odoo writes its edited records back
    with this); reading it again gives the same items, and an unchanged mapping the same text."""
    items = []
    for m in mappings:
        item = {"code": m.code}
        if m.name:
            item["name"] = m.name
        item.update({"entry": m.entry, "fact": m.fact})
        if m.column:
            item["column"] = m.column
        item["unit"] = m.unit
        items.append(item)
    body = yaml.safe_dump({"parameters": items}, allow_unicode=True, sort_keys=False, width=200)
    return HEADER + body
