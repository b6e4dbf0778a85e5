"""Dense search in memory, and the array cache it and the lexical index share.

Dense search reads the vectors once per index generation into a float32 matrix and searches
it with numpy (sign-bit candidates, ranked on an int8 copy, the best few hundred rescored
exactly in float32, see ``DenseMatrix``), where sqlite-vec's ``vec0`` brute force is 5–10×
slower (design.md §9). ``vec0`` stays the stored vector table; the matrix is loaded from the
embedding cache's plain BLOBs (0.1 s at 16k chunks, against 5 s through ``vec0``) and from
``vec0`` for any vector the cache lacks (those two reads are the SQL of this module).

Both in-memory structures (this matrix and ``lexical.LexicalIndex``) are derived once per index
generation and saved as ``.npy`` files in ``<sidecar>.arrays/<generation key>/``; every other
process memory-maps them, so the workers of one host share one copy through the page cache and
a new worker starts without reading the vectors through SQLite (``ArrayCache``). An update
saves only a delta on an older generation's arrays (the chunks added, the chunks deleted).

Over 400 lines on purpose: the matrix search and the cache of saved arrays (with its deltas)
are one file format, read and written here together with the ``pread`` reader both use.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile

import numpy as np


class DenseMatrix:
    """Unit-normalised chunk vectors (one row each) with their chunk rowids; cosine search.

    Search is three-stage (design.md §9), so that one query touches little memory and a
    worker's resident set stays small however many queries it answers:

    1. the Hamming distance between sign bits (1 bit per dimension, 1/32 of float32) picks a
       candidate pool that grows with the corpus (``candidates()``: a fixed 1,000 kept
       recall@50 at 1.0 on 16k chunks but let it fall to 0.72 on 171k);
    2. the pool is scored on an int8 copy of the matrix (1/4 of float32, one scale per row)
       and the best ``rescored(limit)`` rows are kept;
    3. those few rows are read in float32 with ``pread`` from the saved matrix (the page
       cache, not the process, holds them) and scored exactly: the distances returned are
       exact cosine distances, as before.

    Exact scan below ``EXACT_BELOW`` rows, where the full matrix is cheaper than stages.
    """

    RESCORE_FACTOR = 8
    MIN_RESCORE = 1000
    # Share of all rows kept by the sign bits at 1024 dimensions; fewer dimensions carry fewer
    # sign bits and need proportionally more candidates. Measured on clustered synthetic
    # vectors (docs/benchmarks.md): at 1024 dims recall@50 0.97 at 2.3 %, 0.9998 at 4.7 % of 171k rows.
    RESCORE_SHARE = 0.05
    SHARE_DIM = 1024
    EXACT_BELOW = 4096
    # Rows scored exactly after the int8 stage: int8 rounding moves a cosine by ~1e-3, far
    # less than the gap between the 50th and the 200th neighbour.
    EXACT_FACTOR = 4
    MIN_EXACT = 200
    _INT8_BLOCK = 1024  # pool rows converted to float32 at once (stays in cache)
    # Folder of the saved arrays; a new name when their set changes, so that arrays saved by an
    # older version (no int8 copy) are derived anew once instead of by every process.
    ARRAYS = "dense-int8"

    def __init__(self, rowids: np.ndarray, matrix: np.ndarray, key=None, bits: np.ndarray | None = None,
                 codes: np.ndarray | None = None, scales: np.ndarray | None = None, matrix_file=None):
        self.rowids = rowids
        self.matrix = matrix
        self.key = key
        staged = _HAS_POPCOUNT and len(rowids) >= self.EXACT_BELOW
        if bits is None and staged:
            bits = _sign_bits(matrix)
        self.bits = bits if staged and bits is not None and len(bits) == len(rowids) else None
        if self.bits is not None and (codes is None or scales is None or len(codes) != len(rowids)):
            codes, scales = _int8_codes(matrix)
        self.codes = codes if self.bits is not None else None
        self.scales = scales if self.bits is not None else None
        self._reader = _RowReader(*matrix_file) if matrix_file and self.bits is not None else None
        self.n_base = len(rowids)
        self.extra = None  # an update's rows (a DenseMatrix of their own), numbered after the base's
        self.dead = None  # the base's rows deleted since (numbers into the base)
        self.n_live = len(rowids)

    def with_delta(self, delta: dict) -> "DenseMatrix":
        """This (staged) base plus an update's delta (``derive_delta``): its rows numbered after
        the base's, the base's ``dead`` rows never candidates."""
        self.extra = delta
        self.dead = np.asarray(delta["dead"], dtype=np.int64)
        self.rowids = np.concatenate([self.rowids, delta["rowids"]])
        self.n_live = len(self.rowids) - len(self.dead)
        return self

    def candidates(self, limit: int) -> int:
        """How many rows the first stage keeps for rescoring."""
        dim = self.matrix.shape[1] if self.matrix.ndim == 2 else self.SHARE_DIM
        share = min(1.0, self.RESCORE_SHARE * self.SHARE_DIM / max(dim, 1))
        return max(self.MIN_RESCORE, self.RESCORE_FACTOR * limit, math.ceil(share * self.n_live))

    def rescored(self, limit: int) -> int:
        """How many rows of the pool the exact float32 stage scores."""
        return max(self.MIN_EXACT, self.EXACT_FACTOR * limit)

    NAMES = ("rowids", "matrix", "bits", "codes", "scales")
    # An update's delta: the same arrays for the rows added since the base generation, plus
    # ``dead``, the base's rows deleted since. Above DELTA_SHARE of the base changed, or when
    # rows below the base's last gained a vector in place, the arrays are derived anew.
    DELTA_NAMES = NAMES + ("dead",)
    DELTA_SHARE = 0.05

    @classmethod
    def open(cls, conn, model: str, dim: int, cache: "ArrayCache | None" = None, key=None,
             in_place_since: int = 0) -> "DenseMatrix":
        """Memory-map the generation's saved arrays (whole, or an update's delta on an older
        generation's), or derive and save them. ``in_place_since``: the last generation in
        which chunks gained a vector without a new rowid (no delta across it)."""
        if cache is None:
            return cls.load(conn, model, dim, key)
        arrays = cache.load(cls.ARRAYS, cls.NAMES)
        if arrays is not None:
            return cls._mapped(arrays, key, cache)
        layered = cache.load_layered(cls.ARRAYS, cls.NAMES, cls.DELTA_NAMES)
        if layered is not None:
            base, delta = layered
            base_cache = ArrayCache(cache.base, _unpack_key(delta["base"]))
            return cls._mapped(base, key, base_cache).with_delta(delta)
        previous = cache.previous(cls.ARRAYS, cls.NAMES)
        if previous is not None and _generation_of(previous[0]) >= in_place_since and len(previous[1]["bits"]):
            delta = cls.derive_delta(conn, model, dim, previous[1])
            if delta is not None:
                saved = cache.save_delta(cls.ARRAYS, previous[0], delta)
                base = cls._mapped(previous[1], key, ArrayCache(cache.base, previous[0]))
                return base.with_delta(saved)
        dense = cls.load(conn, model, dim, key)
        staged = dense.bits is not None
        saved = cache.save(cls.ARRAYS, {
            "rowids": dense.rowids, "matrix": dense.matrix,
            "bits": dense.bits if staged else np.zeros((0, 1), dtype=np.uint64),
            "codes": dense.codes if staged else np.zeros((0, 1), dtype=np.int8),
            "scales": dense.scales if staged else np.zeros(0, dtype=np.float32),
        })
        return cls(saved["rowids"], saved["matrix"], key, saved["bits"], saved["codes"], saved["scales"],
                   cache.file_of(cls.ARRAYS, "matrix") if saved["matrix"] is not dense.matrix else None)

    @classmethod
    def _mapped(cls, arrays: dict, key, cache: "ArrayCache | None" = None) -> "DenseMatrix":
        return cls(arrays["rowids"], arrays["matrix"], key, arrays["bits"], arrays["codes"], arrays["scales"],
                   cache.file_of(cls.ARRAYS, "matrix") if cache else None)

    @classmethod
    def derive_delta(cls, conn, model: str, dim: int, base: dict) -> dict[str, np.ndarray] | None:
        """The rows added since ``base`` (an older generation's full, staged arrays) with their
        sign bits and int8 codes, and the base's rows deleted since; None when so much changed
        that deriving anew is the better choice. Rowids are never reused (``SidecarWriter``)."""
        base_rowids = base["rowids"]
        last = int(base_rowids.max()) if len(base_rowids) else 0
        dead = dead_rows(conn, base_rowids)
        added = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1 AND rowid > ?", (last,)).fetchone()[0]
        if added + len(dead) > max(cls.DELTA_SHARE * len(base_rowids), 16):
            return None
        rowids, matrix = cls._read(conn, model, dim, after=last)
        return {"rowids": rowids, "matrix": matrix, "bits": _sign_bits(matrix), "codes": _int8_codes(matrix)[0],
                "scales": _int8_codes(matrix)[1], "dead": dead}

    @classmethod
    def load(cls, conn, model: str, dim: int, key=None) -> "DenseMatrix":
        """Read all vectors into one matrix (peak memory ≈ the matrix)."""
        return cls(*cls._read(conn, model, dim), key)

    @classmethod
    def _read(cls, conn, model: str, dim: int, after: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, unit-normalised matrix) of the chunks with a vector (only those above rowid
        ``after`` if given), read row by row into a preallocated matrix."""
        above = " AND c.rowid > ?" if after is not None else ""
        bound = (after,) if after is not None else ()
        expected = conn.execute(f"SELECT count(*) FROM chunks c WHERE c.has_vector = 1{above}", bound).fetchone()[0]
        rowids = np.empty(expected, dtype=np.int64)
        matrix = np.empty((expected, dim), dtype=np.float32)
        n = 0
        rows = conn.execute(
            "SELECT c.rowid, e.vector FROM chunks c JOIN embedding_cache e"
            f" ON e.model = ? AND e.content_hash = c.content_hash WHERE c.has_vector = 1{above}",
            (model, *bound),
        )
        for rowid, blob in rows:
            rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
            n += 1
        if n < expected:  # a vector missing from the cache: read it from vec0
            have = set(rowids[:n].tolist())
            missing = [r[0] for r in conn.execute(f"SELECT c.rowid FROM chunks c WHERE c.has_vector = 1{above}", bound)
                       if r[0] not in have]
            for start in range(0, len(missing), 500):
                part = missing[start : start + 500]
                marks = ",".join("?" * len(part))
                for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM chunk_vectors WHERE rowid IN ({marks})", part):
                    rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
                    n += 1
        rowids, matrix = rowids[:n], matrix[:n]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)  # cosine, as vec0's distance_metric=cosine
        return rowids, matrix

    def __len__(self) -> int:
        return self.n_live

    def search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the ``limit`` nearest rows, nearest first."""
        n = self.n_live
        if n == 0 or limit <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0.0:
            return []
        q = q / norm
        pool = self.candidates(limit) if self.bits is not None else n
        if pool >= n:  # small matrix: one exact scan
            scores = self.matrix @ q
            if self.extra is not None:
                scores = np.concatenate([scores, self.extra["matrix"] @ q])
                scores[self.dead] = -np.inf
            top = np.argpartition(scores, len(scores) - limit)[len(scores) - limit :] if limit < len(scores) else np.arange(len(scores))
            top = top[np.argsort(-scores[top], kind="stable")][: min(limit, n)]
            return list(zip(self.rowids[top].tolist(), (1.0 - scores[top]).tolist()))
        hamming = _hamming(self.bits, q)
        if self.extra is not None:
            hamming = np.concatenate([hamming, _hamming(self.extra["bits"], q)])
            hamming[self.dead] = np.inf
        candidates = np.sort(np.argpartition(hamming, pool)[:pool])  # rows in file order: fewer pages
        approx = self._int8_scores(candidates, q)
        keep = min(self.rescored(limit), pool)
        if keep < pool:
            candidates = np.sort(candidates[np.argpartition(-approx, keep)[:keep]])
        exact = self._exact_rows(candidates) @ q
        k = min(limit, len(candidates))
        order = np.argpartition(-exact, k - 1)[:k] if k < len(candidates) else np.arange(len(candidates))
        order = order[np.argsort(-exact[order], kind="stable")]
        return list(zip(self.rowids[candidates[order]].tolist(), (1.0 - exact[order]).tolist()))

    def _int8_scores(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Approximate cosine of ``rows`` (sorted) from the int8 copy (the base's, then the delta's)."""
        if self.extra is None:
            return self._int8_part(self.codes, self.scales, rows, q)
        cut = int(np.searchsorted(rows, self.n_base))
        return np.concatenate([self._int8_part(self.codes, self.scales, rows[:cut], q),
                               self._int8_part(self.extra["codes"], self.extra["scales"], rows[cut:] - self.n_base, q)])

    def _int8_part(self, codes, scales, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        out = np.empty(len(rows), dtype=np.float32)
        block = self._INT8_BLOCK
        buf = np.empty((min(block, len(rows)), codes.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), block):
            part = codes[rows[start : start + block]]
            m = len(part)
            np.copyto(buf[:m], part, casting="unsafe")
            out[start : start + m] = buf[:m] @ q
        return out * scales[rows]

    def _exact_rows(self, rows: np.ndarray) -> np.ndarray:
        """float32 rows of the matrix: read from the file (not mapped), or from memory; the
        delta's few rows from its own (small) matrix."""
        if self.extra is not None:
            cut = int(np.searchsorted(rows, self.n_base))
            if cut < len(rows):
                return np.concatenate([self._base_rows(rows[:cut]),
                                       np.asarray(self.extra["matrix"][rows[cut:] - self.n_base], dtype=np.float32)])
        return self._base_rows(rows)

    def _base_rows(self, rows: np.ndarray) -> np.ndarray:
        if self._reader is not None:
            got = self._reader.rows(rows, self.matrix.shape[1])
            if got is not None:
                return got
        return np.asarray(self.matrix[rows], dtype=np.float32)


_HAS_POPCOUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0; older numpy scans exactly


_HAMMING_BLOCK = 16384  # rows per step: the XOR and count temporaries stay ~2 MB, not ~40 MB at 171k rows


def _hamming(bits: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamming distance of each row's sign bits to the query's, as float32 (exact: integers
    below 2**24), in blocks so that a worker's peak memory does not grow with the corpus."""
    qbits = _sign_bits(q[None, :])
    ones = np.ones(bits.shape[1], dtype=np.float32)
    out = np.empty(len(bits), dtype=np.float32)
    xor = np.empty((min(_HAMMING_BLOCK, len(bits)), bits.shape[1]), dtype=np.uint64)
    counts = np.empty(xor.shape, dtype=np.float32)
    for start in range(0, len(bits), _HAMMING_BLOCK):
        m = min(_HAMMING_BLOCK, len(bits) - start)
        np.bitwise_xor(bits[start : start + m], qbits, out=xor[:m])
        np.copyto(counts[:m], np.bitwise_count(xor[:m]), casting="unsafe")
        np.matmul(counts[:m], ones, out=out[start : start + m])  # the sums via BLAS
    return out


def _sign_bits(matrix: np.ndarray) -> np.ndarray:
    """One bit per dimension (the sign), packed into uint64 words per row."""
    packed = np.packbits(matrix > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _int8_codes(matrix: np.ndarray, block: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """Each row as int8 codes times one float32 scale (its largest magnitude / 127)."""
    codes = np.empty(matrix.shape, dtype=np.int8)
    scales = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), block):
        part = np.asarray(matrix[start : start + block], dtype=np.float32)
        peak = np.abs(part).max(axis=1) if part.shape[1] else np.zeros(len(part), dtype=np.float32)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes[start : start + len(part)] = np.rint(part / scale[:, None]).astype(np.int8)
        scales[start : start + len(part)] = scale
    return codes, scales


class _RowReader:
    """float32 rows of a saved ``.npy`` matrix read with ``pread``: the rows come from the page
    cache (one copy per host) into a short-lived buffer, so they never add to the process's
    resident set as touched pages of a memory map would."""

    def __init__(self, path: str, offset: int):
        self.offset = offset
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def rows(self, rows: np.ndarray, dim: int) -> np.ndarray | None:
        if self.fd is None:
            return None
        size = dim * 4
        out = np.empty((len(rows), dim), dtype=np.float32)
        view = memoryview(out).cast("B")
        base = self.offset
        try:
            for i, row in enumerate(rows.tolist()):
                if os.preadv(self.fd, [view[i * size : (i + 1) * size]], base + row * size) != size:
                    return None
        except OSError:
            return None
        return out

    def span(self, start: int, stop: int, dtype) -> np.ndarray | None:
        """Items ``start:stop`` of a saved one-dimensional array."""
        out = np.empty(stop - start, dtype=dtype)
        if self.fd is None:
            return None
        if stop > start:
            size = out.nbytes
            try:
                if os.preadv(self.fd, [memoryview(out).cast("B")], self.offset + start * out.itemsize) != size:
                    return None
            except OSError:
                return None
        return out

    def __del__(self):
        if getattr(self, "fd", None) is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass


class ArrayCache:
    """``.npy`` files derived from one index generation, in ``<sidecar>.arrays/<key>/``.

    The first process that needs them derives and saves them (write to a temporary folder,
    then one ``rename``: readers see all files or none); every process memory-maps them
    read-only, so the page cache holds one copy for all workers of a host. Older generations'
    folders are removed when a new one is saved (a process still mapping them keeps its
    pages: the files live on until unmapped). If the folder cannot be written (read-only
    location), the arrays simply stay in the deriving process's memory.
    """

    def __init__(self, base: str, key: str):
        self.base = base
        self.key = key
        self.folder = os.path.join(base, key)

    def load(self, kind: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
        """The saved arrays of ``kind`` memory-mapped, or None if they are not (all) there."""
        return self._load_from(os.path.join(self.folder, kind), names)

    def load_layered(self, kind: str, names: tuple[str, ...], delta_names: tuple[str, ...]):
        """(base arrays, delta arrays) of a generation saved as a delta on an older one's full
        arrays (``save_delta``), both memory-mapped; None if either is missing."""
        delta = self._load_from(os.path.join(self.folder, kind + DELTA), delta_names + ("base",))
        if delta is None:
            return None
        base = self._load_from(os.path.join(self.base, _unpack_key(delta["base"]), kind), names)
        return (base, delta) if base is not None else None

    def of_base(self, delta: dict) -> "ArrayCache":
        """The cache of the generation a delta is saved against."""
        return ArrayCache(self.base, _unpack_key(delta["base"]))

    def previous(self, kind: str, names: tuple[str, ...]) -> tuple[str, dict[str, np.ndarray]] | None:
        """(key, arrays) of the newest older generation of the same file whose full arrays of
        ``kind`` are saved: the base an update's delta is derived against."""
        mine = _generation_of(self.key)
        same_file = self.key.split("-g")[0] + "-g"
        try:
            names_here = os.listdir(self.base)
        except OSError:
            return None
        older = sorted((n for n in names_here if n.startswith(same_file) and -1 < _generation_of(n) < mine),
                       key=_generation_of, reverse=True)
        for name in older:
            arrays = self._load_from(os.path.join(self.base, name, kind), names)
            if arrays is not None:
                return name, arrays
        return None

    def save_delta(self, kind: str, base_key: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Save a delta against the full arrays of generation ``base_key`` (kept while referenced)."""
        return self.save(kind + DELTA, {**arrays, "base": _pack_key(base_key)})

    @staticmethod
    def _load_from(folder: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
        try:
            # plain ndarray views of the maps: indexing a np.memmap costs a Python call each time
            return {name: np.load(os.path.join(folder, name + ".npy"), mmap_mode="r").view(np.ndarray) for name in names}
        except (OSError, ValueError):
            return None

    def file_of(self, kind: str, name: str) -> tuple[str, int] | None:
        """(path, offset of the data) of a saved C-ordered array, for reading rows with ``pread``."""
        path = os.path.join(self.folder, kind, name + ".npy")
        try:
            with open(path, "rb") as f:
                version = np.lib.format.read_magic(f)
                read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                _, fortran, _ = read_header(f)
                return None if fortran else (path, f.tell())
        except (OSError, ValueError):
            return None

    def save(self, kind: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Save and return the arrays memory-mapped (or as given if saving fails)."""
        final = os.path.join(self.folder, kind)
        try:
            os.makedirs(self.folder, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{kind}-", dir=self.folder)
            os.chmod(tmp, 0o755)  # readable by every worker that can read the sidecar
            for name, array in arrays.items():
                np.save(os.path.join(tmp, name + ".npy"), np.ascontiguousarray(array))
            try:
                os.rename(tmp, final)
            except OSError:  # another process was faster: its files are the same
                shutil.rmtree(tmp, ignore_errors=True)
            self._drop_other_generations()
        except OSError:
            return arrays
        return self.load(kind, tuple(arrays)) or arrays

    def _drop_other_generations(self) -> None:
        """Remove the folders of older generations (the counter grows across full rebuilds too);
        a process still on an older generation never removes a newer one's."""
        mine = _generation_of(self.key)
        keep = {self.key} | self._bases()
        for name in os.listdir(self.base):
            if name not in keep and not name.startswith(".") and _generation_of(name) < mine:
                shutil.rmtree(os.path.join(self.base, name), ignore_errors=True)

    def _bases(self) -> set[str]:
        """The generations this one's deltas are saved against."""
        found = set()
        for kind in os.listdir(self.folder):
            if kind.endswith(DELTA):
                try:
                    found.add(_unpack_key(np.load(os.path.join(self.folder, kind, "base.npy"))))
                except (OSError, ValueError):
                    pass
        return found


def dead_rows(conn, base_rowids: np.ndarray) -> np.ndarray:
    """Positions in ``base_rowids`` of the chunks deleted since (the base's generation)."""
    if not len(base_rowids):
        return np.zeros(0, np.int64)
    return np.flatnonzero(~np.isin(base_rowids, current_rowids(conn))).astype(np.int64)


_ROWIDS: tuple = (None, None, None)  # (connection, its data_version, rowids): the lexical and dense deltas share one read


def current_rowids(conn) -> np.ndarray:
    """All chunk rowids, as one string from the small entry-id index (a row per chunk through
    Python costs ~4x as much at 171k chunks)."""
    global _ROWIDS
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    cached = _ROWIDS  # one read: another thread may replace it meanwhile
    if cached[0] is conn and cached[1] == version:
        return cached[2]
    joined = conn.execute("SELECT group_concat(rowid) FROM chunks").fetchone()[0]
    rowids = np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.zeros(0, np.int64)
    _ROWIDS = (conn, version, rowids)
    return rowids


DELTA = ".delta"  # folder suffix of a generation's arrays saved as a delta on an older generation's


def _pack_key(key: str) -> np.ndarray:
    return np.frombuffer(key.encode(), dtype=np.uint8)


def _unpack_key(packed: np.ndarray) -> str:
    return bytes(np.asarray(packed)).decode()


def _generation_of(key: str) -> int:
    """The generation in a key ``<dev>-<ino>-g<generation>-<time>`` (-1 if none)."""
    for part in key.split("-"):
        if part.startswith("g") and part[1:].isdigit():
            return int(part[1:])
    return -1
