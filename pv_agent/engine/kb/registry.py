"""``kb.json`` and ``INDEX.md``: generated from the entry files and checked against them.

The files are the source of truth; kb.json is a consistency gate (same ids, same count,
same content) so a forgotten regeneration or a half-copied knowledge base shows up.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from . import safe_files
from ..types import Entry, LoadIssue, LoadResult

REGISTRY_FILE = "kb.json"
INDEX_FILE = "INDEX.md"


def build_registry(entries: list[Entry]) -> dict:
    clusters: dict[str, int] = defaultdict(int)
    for e in entries:
        clusters[e.topic] += 1
    return {
        "count": len(entries),
        "clusters": dict(sorted(clusters.items())),
        "entries": [
            {**e.metadata(), "path": e.path, "content_hash": e.content_hash}
            for e in sorted(entries, key=lambda e: e.id)
        ],
    }


def write_registry(kb_dir: Path, result: LoadResult) -> tuple[Path, Path]:
    """Write kb.json and INDEX.md, each atomically; neither is written when either path is a
    symlink or leaves the folder (raises ``safe_files.UnsafePath``)."""
    for name in (REGISTRY_FILE, INDEX_FILE):
        safe_files.check_writable(kb_dir, name)
    registry = safe_files.write_text(
        kb_dir, REGISTRY_FILE, json.dumps(build_registry(result.entries), ensure_ascii=False, indent=1) + "\n")
    index = safe_files.write_text(kb_dir, INDEX_FILE, render_index(result.entries))
    return registry, index


def render_index(entries: list[Entry]) -> str:
    by_topic: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_topic[e.topic].append(e)
    lines = [
        "# Wissensbasis – Index",
        "",
        "Erzeugt von `tools/pv-agent registry` aus `dokumente/` – nicht von Hand bearbeiten.",
        "",
        f"{len(entries)} Einträge in {len(by_topic)} Clustern.",
        "",
    ]
    for topic in sorted(by_topic):
        items = sorted(by_topic[topic], key=lambda e: e.id)
        lines += [f"## {topic} ({len(items)})", ""]
        for e in items:
            flag = "" if e.official else " – nicht amtlich"
            lines.append(f"- [{e.id}](dokumente/{Path(e.path).name}) {e.title} (Stand {e.stand}, {e.source}{flag})")
        lines.append("")
    return "\n".join(lines)


def check_registry(kb_dir: Path, result: LoadResult) -> list[LoadIssue]:
    """Differences between kb.json and the loaded files, as issues against kb.json."""
    path = Path(kb_dir) / REGISTRY_FILE
    name = REGISTRY_FILE
    if not path.exists() and not path.is_symlink():
        return [LoadIssue(name, 0, "kb.json fehlt – mit `tools/pv-agent registry` erzeugen")]
    try:
        data = json.loads(safe_files.read_bytes(kb_dir, REGISTRY_FILE).decode("utf-8"))
        listed = {item["id"]: item for item in data["entries"]}
    except safe_files.UnsafePath as exc:
        return [LoadIssue(name, 0, exc.reason)]
    except (ValueError, KeyError, TypeError) as exc:
        return [LoadIssue(name, getattr(exc, "lineno", 1), f"kb.json nicht lesbar: {exc}")]
    issues = []
    loaded = {e.id: e for e in result.entries}
    if data.get("count") != len(listed):
        issues.append(LoadIssue(name, 1, f"count {data.get('count')} passt nicht zu {len(listed)} gelisteten Einträgen"))
    for eid in sorted(set(listed) - set(loaded)):
        issues.append(LoadIssue(name, 1, f"'{eid}' steht in kb.json, aber keine gültige Datei dazu"))
    for eid in sorted(set(loaded) - set(listed)):
        issues.append(LoadIssue(name, 1, f"'{eid}' fehlt in kb.json (registry neu erzeugen)"))
    for eid in sorted(set(loaded) & set(listed)):
        if listed[eid].get("content_hash") != loaded[eid].content_hash:
            issues.append(LoadIssue(name, 1, f"'{eid}' wurde geändert, kb.json ist veraltet (registry neu erzeugen)"))
    return issues
