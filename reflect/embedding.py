"""Lesson and query vectors: the embedder in use, vectors in the store, the index file.

Vectors live in the store as little-endian float32 blobs (the source of truth)
and in a memory-mapped index file beside it, rebuilt whenever its stamp (the
model's vector generation) no longer matches. A process that may not load the
model (the CLI) only reads vectors the worker already wrote, and queues texts
it lacks; the embed job then fills in every missing vector at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from reflect import config
from reflect.index import Embedder, Ranked, VectorIndex, from_blob, load_embedder, to_blob
from reflect.store import SQLiteStore, text_key

BATCH = 64


class Vectors:
    """Dense search for one store; ``spec`` is the REFLECT_EMBEDDINGS value (None: off)."""

    def __init__(self, store: SQLiteStore, spec: str | None,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.spec = spec
        self.clock = clock
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None
        self._stamp = ""
        self._dirty = False  # the loaded index holds vectors its file does not

    @property
    def meta_key(self) -> str:
        return f"embedder:{self.spec}"

    def model_name(self) -> str | None:
        """The model whose vectors this store holds for ``spec``: recorded by whichever
        process loaded it, so a process that never loads it can still use them."""
        if self.spec is None:
            return None
        if self._embedder is not None:
            return self._embedder.name
        row = self.store.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (self.meta_key,)
        ).fetchone()
        return row[0] if row else None

    def embedder(self) -> Embedder | None:
        """Load the model once (torch: seconds) and keep it warm."""
        if self._embedder is None and self.spec is not None:
            self._embedder = load_embedder(self.spec, config.warn)
            if self._embedder is not None:
                with self.store.write() as conn:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                 (self.meta_key, self._embedder.name))
        return self._embedder

    # -- writing vectors (worker, or an in-process recall) ---------------------------

    def embed_queued(self) -> int:
        """In process: do the queued embedding work now, if there is any. The queued job
        is claimed first, so work queued meanwhile queues a new one."""
        with self.store.write() as conn:
            claimed = conn.execute(
                "UPDATE jobs SET state = 'done', reason = 'embedded in process'"
                " WHERE kind = 'embed' AND state = 'queued'"
            ).rowcount
        return self.embed_pending() if claimed else 0

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed lessons and queued texts that have no vector from the current model."""
        embedder = self.embedder()
        if embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = BATCH if limit is None else min(BATCH, limit - done)
            lessons = self.store.conn.execute(
                """SELECT l.id, l.trigger, l.guidance, l.error_text FROM lessons l
                   LEFT JOIN lesson_vectors v ON v.lesson_id = l.id AND v.model = ?
                   WHERE v.lesson_id IS NULL AND l.status = 'active' LIMIT ?""",
                (embedder.name, size),
            ).fetchall()
            texts = self.store.conn.execute(
                "SELECT key, text FROM query_vectors WHERE vector IS NULL OR model != ? LIMIT ?",
                (embedder.name, size),
            ).fetchall()
            if not lessons and not texts:
                break
            vectors = embedder.embed([lesson_text(r) for r in lessons] + [r[1] for r in texts])
            with self.store.write() as conn:
                before = self._generation(embedder.name)
                conn.executemany(
                    "INSERT OR REPLACE INTO lesson_vectors VALUES (?, ?, ?)",
                    [(r[0], embedder.name, to_blob(v))
                     for r, v in zip(lessons, vectors[: len(lessons)], strict=True)],
                )
                conn.executemany(
                    "UPDATE query_vectors SET model = ?, vector = ? WHERE key = ?",
                    [(embedder.name, to_blob(v), r[0])
                     for r, v in zip(texts, vectors[len(lessons):], strict=True)],
                )
                after = self._generation(embedder.name)
            # Keep a loaded index current instead of rebuilding it: valid only when no
            # other process changed this model's vectors meanwhile (one bump per row).
            if (lessons and self._index is not None and self._index.model == embedder.name
                    and self._stamp == before and int(after) - int(before) == len(lessons)):
                self._index.add([r[0] for r in lessons], vectors[: len(lessons)])
                self._stamp, self._dirty = after, True
            done += len(lessons) + len(texts)
        return done

    def _generation(self, model: str) -> str:
        row = self.store.conn.execute(
            "SELECT generation FROM vector_generations WHERE model = ?", (model,)
        ).fetchone()
        return str(row[0]) if row else "0"

    def flush(self) -> None:
        """Write an index kept current in memory to its file, for cold processes."""
        if self._dirty and self._index is not None:
            self._index.save(self._path(self._index.model), self._stamp)
            self._dirty = False

    def _path(self, model: str) -> Path:
        return self.store.path.parent / f"vectors-{re.sub(r'[^A-Za-z0-9._-]', '_', model)}.idx"

    # -- reading -------------------------------------------------------------------

    def query_vector(self, text: str, embed: bool) -> np.ndarray | None:
        """The text's vector: cached, else computed now (``embed``), else queued for the
        worker and None this time."""
        key, model = text_key(text), self.model_name()
        row = self.store.conn.execute(
            "SELECT vector FROM query_vectors WHERE key = ? AND model = ? AND vector IS NOT NULL",
            (key, model or ""),
        ).fetchone()
        if row is not None:
            return from_blob(row[0], len(row[0]) // 4)
        if embed and self.embedder() is not None:
            vector = self._embedder.embed([text])[0]
            with self.store.write() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO query_vectors VALUES (?, ?, ?, ?, ?)",
                    (key, text, self._embedder.name, to_blob(vector), self.clock()),
                )
            return vector
        self.store.queue_texts([text], self.clock())
        return None

    def search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.ranked(query, k).hits

    def ranked(self, query: np.ndarray, k: int) -> Ranked:
        index = self.index()
        return index.ranked(query, k) if index is not None else Ranked([], 0.0, 0.0, 0)

    def index(self) -> VectorIndex | None:
        """The memory-mapped index for the current model, rebuilt from the store's blobs
        when the file is missing, stale, corrupt or another model's."""
        model = self.model_name()
        if model is None:
            return None
        stamp = self._generation(model)
        if self._index is not None and self._stamp == stamp:
            return self._index
        dim_row = self.store.conn.execute(
            "SELECT length(vector) / 4 FROM lesson_vectors WHERE model = ? LIMIT 1", (model,)
        ).fetchone()
        if dim_row is None:
            return None
        path = self._path(model)
        index = VectorIndex.load(path, model, dim_row[0], stamp)
        if index is None:
            index = VectorIndex(model, dim_row[0])
            rows = self.store.conn.execute(
                "SELECT lesson_id, vector FROM lesson_vectors WHERE model = ?", (model,)
            ).fetchall()
            index.add([r[0] for r in rows],
                      np.frombuffer(b"".join(r[1] for r in rows), "<f4").reshape(len(rows), -1))
            index.save(path, stamp)
        self._index, self._stamp, self._dirty = index, stamp, False
        return index


def lesson_text(row) -> str:
    """What a lesson is about, for its vector: when it applies, what to do, the error."""
    return f"{row[1]}\n{row[2]}\n{row[3]}"

