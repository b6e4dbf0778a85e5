"""The shipped seed of the embedding cache: vectors of the sample knowledge base's chunks,
keyed by embedder cache key (model + prefix) and chunk content hash, so a fresh checkout
builds its hybrid index without embedding the whole sample (an edited entry changes its
chunks' hashes and is embedded anew).

One file per cache key: ``<kb>/.embeddings/<cache key>.npz`` with ``hashes`` (sha256 hex)
and ``vectors`` (float32, one row per hash). Refreshed with ``pv-agent seed-embeddings``.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

SEED_DIR = ".embeddings"


def seed_path(kb_dir: str | Path, cache_key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", cache_key).strip("_") or "model"
    return Path(kb_dir) / SEED_DIR / f"{safe}.npz"


def load_seed(kb_dir: str | Path, cache_key: str) -> dict[str, bytes]:
    """content hash → packed float32 vector (the cache's format); empty when no seed or a damaged one."""
    path = seed_path(kb_dir, cache_key)
    if not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            hashes, vectors = data["hashes"], np.asarray(data["vectors"], dtype="<f4")
    except (OSError, ValueError, KeyError):
        return {}
    if vectors.ndim != 2 or len(hashes) != len(vectors):
        return {}
    return {str(h): vectors[i].tobytes() for i, h in enumerate(hashes)}


def write_seed(kb_dir: str | Path, cache_key: str, vectors: dict[str, bytes]) -> Path:
    path = seed_path(kb_dir, cache_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    hashes = sorted(vectors)
    matrix = np.stack([np.frombuffer(vectors[h], dtype="<f4") for h in hashes]) if hashes else np.zeros((0, 0), "<f4")
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, hashes=np.array(hashes, dtype="U64"), vectors=matrix)
    tmp.replace(path)
    return path
