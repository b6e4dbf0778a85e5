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
a new worker starts without reading the vectors through SQLite (``ArrayCache``).
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

    def candidates(self, limit: int) -> int:
        """How many rows the first stage keeps for rescoring."""
        dim = self.matrix.shape[1] if self.matrix.ndim == 2 else self.SHARE_DIM
        share = min(1.0, self.RESCORE_SHARE * self.SHARE_DIM / max(dim, 1))
        return max(self.MIN_RESCORE, self.RESCORE_FACTOR * limit, math.ceil(share * len(self.rowids)))

    def rescored(self, limit: int) -> int:
        """How many rows of the pool the exact float32 stage scores."""
        return max(self.MIN_EXACT, self.EXACT_FACTOR * limit)

    @classmethod
    def open(cls, conn, model: str, dim: int, cache: "ArrayCache | None" = None, key=None) -> "DenseMatrix":
        """Memory-map the generation's saved arrays, or load the matrix from SQLite and save them."""
        names = ("rowids", "matrix", "bits", "codes", "scales")
        arrays = cache.load(cls.ARRAYS, names) if cache else None
        if arrays is not None:
            return cls(arrays["rowids"], arrays["matrix"], key, arrays["bits"], arrays["codes"], arrays["scales"],
                       cache.file_of(cls.ARRAYS, "matrix"))
        dense = cls.load(conn, model, dim, key)
        if cache:
            staged = dense.bits is not None
            saved = cache.save(cls.ARRAYS, {
                "rowids": dense.rowids, "matrix": dense.matrix,
                "bits": dense.bits if staged else np.zeros((0, 1), dtype=np.uint64),
                "codes": dense.codes if staged else np.zeros((0, 1), dtype=np.int8),
                "scales": dense.scales if staged else np.zeros(0, dtype=np.float32),
            })
            dense = cls(saved["rowids"], saved["matrix"], key, saved["bits"], saved["codes"], saved["scales"],
                        cache.file_of(cls.ARRAYS, "matrix") if saved["matrix"] is not dense.matrix else None)
        return dense

    @classmethod
    def load(cls, conn, model: str, dim: int, key=None) -> "DenseMatrix":
        """Read the vectors row by row into a preallocated matrix (peak memory ≈ the matrix)."""
        expected = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
        rowids = np.empty(expected, dtype=np.int64)
        matrix = np.empty((expected, dim), dtype=np.float32)
        n = 0
        rows = conn.execute(
            "SELECT c.rowid, e.vector FROM chunks c JOIN embedding_cache e"
            " ON e.model = ? AND e.content_hash = c.content_hash WHERE c.has_vector = 1",
            (model,),
        )
        for rowid, blob in rows:
            rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
            n += 1
        if n < expected:  # a vector missing from the cache: read it from vec0
            have = set(rowids[:n].tolist())
            missing = [r[0] for r in conn.execute("SELECT rowid FROM chunks WHERE has_vector = 1") if r[0] not in have]
            for start in range(0, len(missing), 500):
                part = missing[start : start + 500]
                marks = ",".join("?" * len(part))
                for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM chunk_vectors WHERE rowid IN ({marks})", part):
                    rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
                    n += 1
        rowids, matrix = rowids[:n], matrix[:n]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)  # cosine, as vec0's distance_metric=cosine
        return cls(rowids, matrix, key)

    def __len__(self) -> int:
        return len(self.rowids)

    def search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the ``limit`` nearest rows, nearest first."""
        n = len(self.rowids)
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
            top = np.argpartition(scores, n - limit)[n - limit :] if limit < n else np.arange(n)
            top = top[np.argsort(-scores[top], kind="stable")]
            return list(zip(self.rowids[top].tolist(), (1.0 - scores[top]).tolist()))
        counts = np.bitwise_count(self.bits ^ _sign_bits(q[None, :]))
        hamming = counts.astype(np.float32) @ np.ones(counts.shape[1], dtype=np.float32)  # exact sums, via BLAS
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
        """Approximate cosine of ``rows`` (sorted) from the int8 copy."""
        out = np.empty(len(rows), dtype=np.float32)
        block = self._INT8_BLOCK
        buf = np.empty((min(block, len(rows)), self.codes.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), block):
            part = self.codes[rows[start : start + block]]
            m = len(part)
            np.copyto(buf[:m], part, casting="unsafe")
            out[start : start + m] = buf[:m] @ q
        return out * self.scales[rows]

    def _exact_rows(self, rows: np.ndarray) -> np.ndarray:
        """float32 rows of the matrix: read from the file (not mapped), or from memory."""
        if self._reader is not None:
            got = self._reader.rows(rows, self.matrix.shape[1])
            if got is not None:
                return got
        return np.asarray(self.matrix[rows], dtype=np.float32)


_HAS_POPCOUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0; older numpy scans exactly


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
        folder = os.path.join(self.folder, kind)
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
        for name in os.listdir(self.base):
            if name != self.key and not name.startswith(".") and _generation_of(name) < mine:
                shutil.rmtree(os.path.join(self.base, name), ignore_errors=True)


def _generation_of(key: str) -> int:
    """The generation in a key ``<dev>-<ino>-g<generation>-<time>`` (-1 if none)."""
    for part in key.split("-"):
        if part.startswith("g") and part[1:].isdigit():
            return int(part[1:])
    return -1
