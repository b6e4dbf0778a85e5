"""Build or update the index from entries: the sidecar file, or PostgreSQL (pg_store.py) when
the target is a DSN. The steps below are the same for both; each store does them its way.

* Full build: a new file next to the old one, swapped in with ``os.replace`` (PostgreSQL: new
  tables, then the pointer row flipped in one transaction) — atomic, so an interrupted build
  leaves the old index serving. The embedding cache is carried over.
* Update: in place, in one transaction: only changed entries are re-chunked and only chunks
  whose (model, hash) is not cached are embedded. Embedding happens before the transaction,
  so readers are never blocked while the model server works.
* No reachable Ollama: the index is built lexical-only and says so; nothing half-written. A
  lexical index is upgraded to vectors (a full build) only once every section could be
  embedded; until then each run updates it in place, so unchanged entries are never rebuilt.
* An entry whose file no longer loads (``broken``) keeps its last good version from the index.
* The sidecar path is checked first: a path to anything but a regular file is never written,
  and a file that is not a PV-Agent index is replaced only with ``force``.
* The embedder (embedders.py: Ollama or the built-in model) is recorded in the metadata with
  its model and dimension; another embedder than the index's means a full build, never mixed
  vectors. ``seed`` (embedding_seed.py) fills the cache before anything is embedded.

Over 400 lines because the cases above (full build, update, lexical upgrade, broken entries,
path safety, embedder changes) are one decision about the same index; each is a small function.
"""
from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field
from typing import Callable

from ..kb.chunker import chunk_entry
from ..config import Settings
from .embedders import as_embedder
from .target import is_dsn, open_index
from ..ollama import OllamaError
from .sqlite_conn import sqlite_module
from .base import IndexCorrupt, IndexError_, pack_vector
from .sqlite_store import SidecarIndex, SidecarWriter, is_sidecar_file
from ..types import Chunk, Entry

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class EmbeddingDimensionMismatch(OllamaError):
    reason = embed_reason = "Embedding-Dimension passt nicht zum Index"


class IndexPathRefused(IndexError_):
    """The index path leads to something the indexer must not replace."""


class IndexNotOurs(IndexPathRefused):
    """A regular file that is not a PV-Agent index: replaced only with ``force``."""


class IndexUnwritable(IndexError_):
    """The index file or its folder cannot be created or written."""


@dataclass
class IndexReport:
    path: str
    full: bool
    mode: str  # "hybrid" | "lexical"
    entries: int = 0
    chunks: int = 0
    vectors: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0  # chunks sent to the embedding model in this run
    cache_hits: int = 0
    generation: int = 0
    notice: str = ""
    timings_s: dict = field(default_factory=dict)
    kept: list = field(default_factory=list)  # broken entries served in their last good version
    broken_without_previous: list = field(default_factory=list)  # broken entries the index never had

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def build_index(
    entries: list[Entry],
    target: str,
    settings: Settings,
    embedder=None,
    *,
    full: bool = False,
    progress: Progress | None = None,
    broken=(),
    force: bool = False,
    seed: dict[str, bytes] | None = None,
    notice: str = "",
) -> IndexReport:
    """Build or update the index at ``target``: a sidecar file path or a PostgreSQL DSN
    (``postgresql://…``, see pg_store.py). ``embedder``: an Embedder, an OllamaClient or None
    (lexical; ``notice`` says why). ``seed``: content hash → vector of ``embedder``'s model.

    ``broken``: ids of entries whose files failed to load; each keeps its last good version
    from the index instead of being removed. ``force``: replace a sidecar path holding a
    file that is not a PV-Agent index (never anything but a regular file)."""
    embedder = as_embedder(embedder, settings)
    store = _store_for(target, force)
    kept = _last_good_versions(target, set(broken) - {e.id for e in entries})
    entries = list(entries) + kept
    with store.exclusive():
        report = _build_or_update(entries, store, settings, embedder, full, progress, seed, notice)
    report.kept = sorted(e.id for e in kept)
    report.broken_without_previous = sorted(set(broken) - {e.id for e in entries})
    if not is_dsn(target):
        _prepare_sidecar(str(target))
    return report


def _prepare_sidecar(path: str) -> None:
    """Derive the new generation's search arrays now, so that no clerk's first question after
    a reindex waits for them (seconds at 10×); readers build them themselves if this fails."""
    try:
        index = SidecarIndex.open(path)
    except IndexError_:
        return
    try:
        index.prepare()
    finally:
        index.close()


def _same_embedder(meta: dict, embedder) -> bool:
    """The index's vectors come from ``embedder`` (or it has none yet)."""
    if meta.get("mode") != "hybrid":
        return True
    return (meta.get("embedder") or "ollama") == embedder.kind and meta.get("embed_model", "") in ("", embedder.model) \
        and (meta.get("cache_key") or meta.get("embed_model", "")) in ("", embedder.cache_key)


def _cache_key(meta: dict, settings, embedder) -> str:
    if embedder is not None:
        return embedder.cache_key
    return meta.get("cache_key") or meta.get("embed_model") or settings.embed_model


def _build_or_update(entries, store, settings, embedder, full, progress, seed=None, notice="") -> IndexReport:
    writer = store.open_for_update() if not full else None
    probe = None
    if writer is not None:
        meta = writer.get_meta()
        same_model = embedder is None or _same_embedder(meta, embedder)
        wants_vectors = embedder is not None and meta.get("mode") != "hybrid"
        if same_model and wants_vectors:
            probe = _embed_everything(writer, entries, settings, embedder, progress, seed)
            wants_vectors = probe.mode == "hybrid"
        if same_model and not wants_vectors:
            try:
                return _update(writer, entries, store.name, settings, embedder, progress, seed,
                               notice=probe.notice if probe else notice)
            finally:
                writer.close()
        writer.close()
    report = _full_build(entries, store, settings, embedder, progress, seed, notice)
    if probe is not None:
        report.embedded += probe.embedded  # embedded into the cache just before, for this build
    return report


def _embed_everything(writer, entries, settings, embedder, progress, seed=None) -> IndexReport:
    """A lexical index and an embedder: embed every section into the cache first. Its mode says
    whether that worked ("hybrid": the full build finds every vector in the cache) or not
    ("lexical", with the reason in ``notice``: the index is updated in place instead)."""
    probe = IndexReport(path="", full=False, mode="lexical")
    texts = {c.content_hash: c.embed_text for e in entries for c in chunk_entry(e, settings.chunk_max_chars)}
    _, dim = _embed_missing(writer, texts, settings, embedder, probe, progress, seed=seed)
    probe.mode = "hybrid" if dim else "lexical"
    return probe


def _last_good_versions(target, ids: set[str]) -> list[Entry]:
    """The entries ``ids`` as the index holds them now (none if there is no readable index)."""
    if not ids:
        return []
    try:
        index = open_index(target)
    except IndexError_:
        return []
    try:
        return list(index.entries_by_id(sorted(ids)).values())
    finally:
        index.close()


def _store_for(target, force: bool = False):
    if is_dsn(target):
        from .pg_store import PgTarget

        return PgTarget(str(target))
    return SidecarTarget(str(target), force=force)


def check_sidecar_path(path: str, *, force: bool = False) -> None:
    """Refuse a sidecar path the indexer must not write: one leading to anything but a regular
    file (a folder, a device, a FIFO — also through a symlink), or to a file that is not a
    PV-Agent index unless ``force``; and a folder that cannot be made. One German line each."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise IndexUnwritable(f"Index {path}: ein Teil des Pfades ist eine Datei, kein Ordner.") from None
    except OSError as exc:
        raise IndexUnwritable(f"Index {path} nicht zugänglich: {exc.strerror}.") from None
    if mode is not None:
        if not stat.S_ISREG(mode):
            kind = "ein Ordner" if stat.S_ISDIR(mode) else "keine normale Datei (Gerät, FIFO oder Socket)"
            raise IndexPathRefused(f"Index {path} ist {kind} – wird nie überschrieben.")
        try:
            ours = is_sidecar_file(path)
        except OSError as exc:
            raise IndexUnwritable(f"Index {path} nicht lesbar: {exc.strerror}.") from None
        if not ours and not force:
            raise IndexNotOurs(f"{path} ist kein PV-Agent-Index (oder bis zur Unkenntlichkeit beschädigt) – wird nicht überschrieben.")
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        raise IndexUnwritable(f"Index {path}: ein Teil des Pfades ist eine Datei, kein Ordner.") from None
    except OSError as exc:
        raise IndexUnwritable(f"Ordner {folder} für den Index lässt sich nicht anlegen: {exc.strerror}.") from None


class SidecarTarget:
    """The write side's handle on a sidecar file: a full build goes into a new file next to
    it, swapped in with ``os.replace``; an update works on the file itself."""

    def __init__(self, index_path: str, *, force: bool = False):
        self.path = self.name = index_path
        check_sidecar_path(index_path, force=force)

    def exclusive(self):
        return contextlib.nullcontext(self)  # SQLite's own write lock serialises writers

    def open_for_update(self) -> SidecarWriter | None:
        """The live index for an in-place update, or None when a full build is needed
        (no file yet, another schema, or a damaged file — which the full build then replaces)."""
        if not os.path.exists(self.path) or not is_sidecar_file(self.path):
            return None  # a foreign file reaches this point only with force: it is replaced
        try:
            writer = SidecarWriter(self.path, create=False)
            writer.get_meta()
            writer.conn.execute("SELECT count(*) FROM chunks").fetchone()
            return writer
        except (IndexCorrupt, sqlite_module().DatabaseError):
            return None

    def new_build(self) -> SidecarWriter:
        _remove_stale_builds(self.path)
        tmp = f"{self.path}.building-{os.getpid()}"
        _remove(tmp)
        try:
            writer = SidecarWriter(tmp, create=True)
            if os.path.exists(self.path) and is_sidecar_file(self.path):
                writer.carry_over_from(self.path)
        except (OSError, sqlite_module().OperationalError) as exc:
            _remove(tmp)
            raise IndexUnwritable(f"Index {self.path} lässt sich nicht schreiben: {exc}.") from exc
        except BaseException:
            _remove(tmp)
            raise
        return writer

    def publish(self, writer: SidecarWriter) -> None:
        writer.conn.execute("PRAGMA optimize")
        writer.close()
        _fsync(writer.path)
        check_sidecar_path(self.path, force=True)  # still no folder or device there (it may have changed meanwhile)
        os.replace(writer.path, self.path)  # the atomic swap: readers see the old or the new file, never a mix

    def discard(self, writer: SidecarWriter) -> None:
        try:
            writer.close()
        finally:
            _remove(writer.path)  # even when closing fails too (disk full), the half-built file goes


def _full_build(entries, store, settings, embedder, progress, seed=None, notice="") -> IndexReport:
    started = time.monotonic()
    report = IndexReport(path=store.name, full=True, mode="lexical")
    writer = store.new_build()
    try:
        chunks_by_entry = {e.id: chunk_entry(e, settings.chunk_max_chars) for e in entries}
        all_chunks = [c for cs in chunks_by_entry.values() for c in cs]
        report.timings_s["chunk"] = round(time.monotonic() - started, 3)

        texts = {c.content_hash: c.embed_text for c in all_chunks}
        vectors, dim = _embed_missing(writer, texts, settings, embedder, report, progress, seed=seed, why=notice)
        if dim:
            writer.create_vector_table(dim)
            report.mode = "hybrid"
        t = time.monotonic()
        for n, entry in enumerate(entries, start=1):
            writer.insert_entry(entry, chunks_by_entry[entry.id], vectors if dim else {})
            if progress and (n % 200 == 0 or n == len(entries)):
                progress("speichern", n, len(entries))
        report.added = len(entries)
        meta = {"mode": report.mode, "notice": report.notice}
        if dim:
            meta.update(embedder=embedder.kind, embed_model=embedder.model, cache_key=embedder.cache_key, dim=dim)
        report.generation = writer.bump_generation(**meta)
        writer.commit()
        report.entries, report.chunks, report.vectors = writer.counts()
        report.timings_s["store"] = round(time.monotonic() - t, 3)
        store.publish(writer)
    except BaseException:
        store.discard(writer)
        raise
    report.timings_s["total"] = round(time.monotonic() - started, 3)
    return report


def _update(writer, entries, index_path, settings, embedder, progress, seed=None, notice: str = "") -> IndexReport:
    started = time.monotonic()
    meta = writer.get_meta()
    report = IndexReport(path=index_path, full=False, mode=meta.get("mode", "lexical"), notice=notice)
    old = writer.entry_hashes()
    new = {e.id: e for e in entries}
    changed = [e for e in entries if e.id in old and old[e.id] != e.content_hash]
    added = [e for e in entries if e.id not in old]
    removed = [i for i in old if i not in new]
    report.unchanged = len(entries) - len(changed) - len(added)
    report.added, report.updated, report.removed = len(added), len(changed), len(removed)

    chunks_by_entry = {e.id: chunk_entry(e, settings.chunk_max_chars) for e in changed + added}
    new_chunks = [c for cs in chunks_by_entry.values() for c in cs]
    vectors: dict[str, bytes] = {}
    leftover = writer.chunks_without_vectors() if report.mode == "hybrid" else []
    if report.mode == "hybrid":
        texts = {c.content_hash: c.embed_text for c in new_chunks}
        texts.update({h: text for _, h, text in leftover})
        vectors, _ = _embed_missing(writer, texts, settings, embedder, report, progress, dim=int(meta["dim"]),
                                    seed=seed, why=notice, key=_cache_key(meta, settings, embedder))
    if not (changed or added or removed or leftover):
        report.entries, report.chunks, report.vectors = writer.counts()
        report.generation = int(meta.get("generation", "0"))
        report.timings_s["total"] = round(time.monotonic() - started, 3)
        return report
    with writer.transaction():  # one transaction: all of the update or none of it
        for entry_id in removed:
            writer.delete_entry(entry_id)
        for entry in changed:
            writer.delete_entry(entry.id)
        for entry in changed + added:
            writer.insert_entry(entry, chunks_by_entry[entry.id], vectors)
        if leftover:
            _attach_cached_vectors(writer, _cache_key(meta, settings, embedder))
        report.generation = writer.bump_generation(notice=report.notice)
    report.entries, report.chunks, report.vectors = writer.counts()
    report.timings_s["total"] = round(time.monotonic() - started, 3)
    return report


def _embed_missing(writer, texts: dict[str, str], settings, embedder, report, progress, dim: int = 0,
                   seed=None, why: str = "", key: str = ""):
    """Vectors for ``texts`` (content hash → text) from the cache, embedding what is missing.

    Returns (hash → packed vector, dim). For a new index (``dim`` 0) a failing model server
    gives ({}, 0): the caller builds lexical-only. For an existing hybrid index the cached
    vectors are returned and the rest stay without a vector until the next run. What was
    embedded before a failure stays in the cache either way.
    """
    fixed_dim = dim
    key = key or (embedder.cache_key if embedder is not None else settings.embed_model)
    cached = writer.cached_vectors(key, texts)
    if embedder is not None and seed:
        seeded = {h: v for h, v in seed.items() if h in texts and h not in cached and (not dim or len(v) == 4 * dim)}
        if seeded:
            writer.cache_vectors(key, seeded)
            writer.commit()
            cached.update(seeded)
    report.cache_hits = len(cached)
    if embedder is None:  # none was asked for (e.g. index --lexical), or none can run: ``why`` says which
        if fixed_dim:
            report.notice = why or "Ohne Embedding-Modell aktualisiert – neue Abschnitte vorerst nur lexikalisch auffindbar."
            return cached, dim
        report.notice = why or "Ohne Embedding-Modell gebaut – Index nur lexikalisch (BM25)."
        return {}, 0
    missing = [h for h in texts if h not in cached]
    if progress and not missing:
        progress("einbetten", len(texts), len(texts))
    t = time.monotonic()
    # The built-in model runs in this process: small batches keep the progress bar moving.
    batch = 16 if embedder.kind == "builtin" else max(1, settings.embed_batch_size) * 4
    try:
        for start in range(0, len(missing), batch):
            part = missing[start : start + batch]
            got = embedder.embed_passages([texts[h] for h in part])
            blobs = {}
            for h, vec in zip(part, got):
                if dim and len(vec) != dim:
                    raise EmbeddingDimensionMismatch(
                        f"Modell {embedder.model} liefert {len(vec)} Dimensionen, erwartet {dim}"
                    )
                dim = dim or len(vec)
                blobs[h] = pack_vector(vec)
            writer.cache_vectors(key, blobs)
            writer.commit()
            cached.update(blobs)
            report.embedded += len(part)
            if progress:
                progress("einbetten", min(start + batch, len(missing)), len(missing))
    except OllamaError as exc:
        writer.commit()
        if not fixed_dim:
            report.notice = f"{exc.reason}: {exc} – Index nur lexikalisch (BM25)."
            return {}, 0
        report.notice = f"{exc.reason}: {exc} – neue Abschnitte vorerst nur lexikalisch auffindbar."
        return cached, dim
    report.timings_s["embed"] = round(time.monotonic() - t, 3)
    if not dim and cached:
        dim = len(next(iter(cached.values()))) // 4
    return cached, dim


def _attach_cached_vectors(writer, model: str) -> None:
    """Give every chunk still lacking a vector the cached one, if the cache has it."""
    rows = writer.chunks_without_vectors()
    cached = writer.cached_vectors(model, [h for _, h, _ in rows])
    for rowid, h, _ in rows:
        if h in cached:
            writer.set_chunk_vector(rowid, cached[h])


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_builds(index_path: str) -> None:
    """Remove what a build killed mid-way (kill -9, power loss) left behind."""
    prefix = os.path.basename(index_path) + ".building-"
    folder = os.path.dirname(os.path.abspath(index_path))
    for name in os.listdir(folder):
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix) :].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue
        _remove(os.path.join(folder, name[: len(prefix) + len(pid)]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: str) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass
