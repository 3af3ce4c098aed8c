"""An exact cosine index over a float32 matrix, saved as one memory-mappable file.

File layout (all integers little-endian)::

    offset  size  field
    0       8     magic  b"RFLXVEC\\0"
    8       4     format version (u32, currently 1)
    12      4     dim (u32)
    16      8     count: number of rows (u64)
    24      4     model name length in bytes (u32)
    28      4     stamp length in bytes (u32)
    32      8     ids length in bytes (u64)
    40      8     header length = offset of the matrix, a multiple of 64 (u64)
    48      ...   model name (UTF-8), stamp (UTF-8), ids (UTF-8, joined by NUL),
                  zero padding up to the header length
    header  4*count*dim  the matrix: float32 little-endian, row-major, rows L2-normalized

The file size must be exactly header length + 4 * count * dim. The stamp is the
caller's token for "what this index was built from" (say, a row count and the
last change time); a file whose stamp differs is stale and is not loaded.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .atomic import write_atomically

MAGIC = b"RFLXVEC\0"
VERSION = 1
ALIGN = 64
_HEADER = struct.Struct("<8sIIQIIQQ")
_SEP = "\0"


class Ranked(NamedTuple):
    """Search hits (id, cosine), best first, and the spread of all rows' cosines."""

    hits: list[tuple[str, float]]
    mean: float
    std: float
    rows: int


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dim: int) -> np.ndarray:
    """The vector stored by `to_blob`; ValueError when the size does not match `dim`."""
    if len(blob) != 4 * dim:
        raise ValueError(f"vector blob has {len(blob)} bytes, expected {4 * dim} (dim {dim})")
    return np.frombuffer(blob, "<f4")


def _normalize_rows(block: np.ndarray) -> None:
    """L2-normalize rows in place; zero rows stay zero. einsum avoids an n x dim temporary."""
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
    np.divide(block, norms, out=block, where=norms > 0)


class VectorIndex:
    """Ids and their unit vectors; exact top-k by cosine (a dot product on unit rows)."""

    def __init__(self, model: str, dim: int):
        self.model = model
        self.dim = dim
        self.ids: list[str] = []
        self.stamp = ""  # what the file it was loaded from was saved with
        self._pos: dict[str, int] | None = {}
        # Rows [0, len) are live; spare capacity makes repeated add() amortized O(rows added).
        self._data = np.empty((0, dim), dtype=np.float32)

    @property
    def matrix(self) -> np.ndarray:
        return self._data[: len(self.ids)]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def _positions(self) -> dict[str, int]:
        # Built on the first change, not at load: a process that only searches never needs it.
        if self._pos is None:
            self._pos = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self._pos

    def _reserve(self, rows: int) -> None:
        # A memory-mapped matrix is read-only: the first change copies it into memory.
        if rows <= len(self._data) and self._data.flags.writeable:
            return
        capacity = rows if len(self._data) == 0 else max(rows, len(self._data) * 3 // 2)
        data = np.empty((capacity, self.dim), dtype=np.float32)
        data[: len(self.ids)] = self.matrix
        self._data = data

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add or replace vectors (normalized on the way in); the last of a repeated id wins."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors")
        if any(_SEP in i for i in ids):
            raise ValueError("vector ids cannot contain NUL characters")
        last = {i: k for k, i in enumerate(ids)}
        if len(last) < len(ids):
            ids, vectors = list(last), vectors[list(last.values())]
        n, pos = len(self.ids), self._positions
        fresh = [i for i in ids if i not in pos]
        self._reserve(n + len(fresh))
        for k, i in enumerate(fresh):
            pos[i] = n + k
        self.ids.extend(fresh)
        if len(fresh) == len(ids):
            # Pure append: write straight into the buffer and normalize there, no copy.
            block = self._data[n : n + len(ids)]
            block[...] = vectors
            _normalize_rows(block)
        else:
            vectors = vectors.copy()
            _normalize_rows(vectors)
            self._data[[pos[i] for i in ids]] = vectors

    def delete(self, ids: Iterable[str]) -> None:
        """Remove ids; unknown ids are ignored."""
        pos = self._positions
        gone = {pos[i] for i in ids if i in pos}
        if not gone:
            return
        keep = np.ones(len(self.ids), dtype=bool)
        keep[list(gone)] = False
        self._data = self.matrix[keep]  # a fresh in-memory copy, also of a mapped matrix
        self.ids = [i for k, i in enumerate(self.ids) if keep[k]]
        self._pos = None

    def search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k ids most similar to `query`, best first, with their cosine similarity."""
        return self.ranked(query, k).hits

    def ranked(self, query: np.ndarray, k: int) -> Ranked:
        """`search`, with the mean and standard deviation of every row's similarity to
        the query: how far a hit stands above the rest tells a close match from a query
        that is close to everything (a long text on a common topic)."""
        n = len(self.ids)
        k = min(k, n)
        if k <= 0:
            return Ranked([], 0.0, 0.0, n)
        # float32 on purpose: a float64 query would promote (copy) the whole matrix.
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        norm = float(np.linalg.norm(q))
        scores = self.matrix @ (q / norm if norm > 0 else q)
        top = np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return Ranked([(self.ids[t], float(scores[t])) for t in top],
                      float(scores.mean()), float(scores.std()), n)

    def save(self, path: Path, stamp: str) -> None:
        """Write the index to `path` atomically: a temp file beside it, then a rename."""
        path = Path(path)
        model, stamp_b = self.model.encode(), stamp.encode()
        ids = _SEP.join(self.ids).encode()
        fixed = _HEADER.size + len(model) + len(stamp_b) + len(ids)
        offset = -(-fixed // ALIGN) * ALIGN
        header = _HEADER.pack(
            MAGIC, VERSION, self.dim, len(self.ids), len(model), len(stamp_b), len(ids), offset
        )
        matrix = np.ascontiguousarray(self.matrix, dtype="<f4").data
        write_atomically(path, (header + model + stamp_b + ids + bytes(offset - fixed), matrix),
                         new_mode=0o600)  # beside the store, private as it is

    @classmethod
    def load(cls, path: Path, model: str, dim: int, stamp: str | None) -> VectorIndex | None:
        """Open a saved index with its matrix memory-mapped read-only; ``stamp`` None
        takes whatever stamp the file carries (then in ``index.stamp``).

        None when the file is missing, truncated or corrupt, was made for another
        model or dim, or carries another stamp: the caller rebuilds it from its data.
        """
        try:
            with open(path, "rb") as f:
                head = f.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    return None
                magic, version, fdim, count, mlen, slen, ilen, offset = _HEADER.unpack(head)
                if magic != MAGIC or version != VERSION or fdim != dim or offset % ALIGN:
                    return None
                if offset < _HEADER.size + mlen + slen + ilen:
                    return None
                if os.fstat(f.fileno()).st_size != offset + 4 * count * dim:
                    return None
                meta = f.read(mlen + slen + ilen)
                saved = meta[mlen : mlen + slen].decode()
                if meta[:mlen] != model.encode() or stamp not in (None, saved):
                    return None
                ids = meta[mlen + slen :].decode().split(_SEP) if count else []
                if len(ids) != count:
                    return None
                index = cls(model, dim)
                if count:
                    # Mapped through this open file, so it is the very file whose header
                    # was checked even if another process renames a new one over it.
                    index._data = np.memmap(f, "<f4", "r", offset, (count, dim))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        index.ids, index._pos, index.stamp = ids, None, saved
        return index
