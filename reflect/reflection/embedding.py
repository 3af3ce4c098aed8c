"""Vectors of query texts (run goals, error lines): the embedder in use, vectors in the
store, and the index of run goals that recall compares a run's goal with.

Vectors live in the store as little-endian float32 blobs (the source of truth)
and the run goals' in a memory-mapped index file beside it, local to each machine
even when the store is shared: each run whose goal gets a vector is stamped with a
change number, so the file is brought up to date with the changes after its own.
A process that may not load the model (the CLI) only reads vectors the worker
already wrote, and queues texts it lacks; the embed job then fills in every
missing vector at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reflect import index as dense  # its names load numpy on first use
from reflect.base import config
from reflect.base.text import text_key
from reflect.store.protocol import VectorStore

if TYPE_CHECKING:
    import numpy as np

    from reflect.index import Embedder, VectorIndex
    from reflect.reflection.model_lock import ModelLock

BATCH = 64


class Vectors:
    """Dense search for one store; ``spec`` is the REFLECT_EMBEDDINGS value (None: off).
    numpy loads with the first vector used: a cold CLI recall that finds none (no worker
    has embedded its goal yet) starts without it."""

    def __init__(self, store: VectorStore, spec: str | None,
                 clock: Callable[[], float] = time.time, lock: ModelLock | None = None):
        """``lock``: taken before a model is loaded and held while it stays loaded (a
        worker's: ``reflect.reflection.model_lock``); None loads without one (the in-process API's
        own model)."""
        self.store = store
        self.spec = spec
        self.clock = clock
        self.lock = lock
        self.waiting = False  # the last try to load found the lock held by another process
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None

    def model_name(self) -> str | None:
        """The model whose vectors this store holds for ``spec``: recorded by whichever
        process loaded it, so a process that never loads it can still use them."""
        if self.spec is None:
            return None
        if self._embedder is not None:
            return self._embedder.name
        return self.store.embedder_model(self.spec)

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    def embedder(self) -> Embedder | None:
        """Load the model once (torch: seconds) and keep it warm; None while another
        process holds the lock (``waiting``). The hashing embedder needs no lock."""
        if self._embedder is None and self.spec is not None:
            self.waiting = (self.lock is not None and self.spec != "hash"
                            and not self.lock.acquire())
            if self.waiting:
                return None
            self._embedder = dense.load_embedder(self.spec, config.warn)
            if self._embedder is not None:
                self.store.record_embedder(self.spec, self._embedder.name)
        return self._embedder

    def close(self) -> None:
        """Let go of the model, and of the lock with it."""
        self._embedder = None
        if self.lock is not None:
            self.lock.release()

    # -- writing vectors (the worker, or an in-process recall for its own query) ---------

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed the queued texts that have no vector from the current model."""
        embedder = self.embedder()
        if embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = BATCH if limit is None else min(BATCH, limit - done)
            texts = self.store.texts_to_embed(embedder.name, size)
            if not texts:
                break
            vectors = embedder.embed([text for _, text in texts])
            self.store.put_vectors(embedder.name, [
                (key, dense.to_blob(v)) for (key, _), v in zip(texts, vectors, strict=True)])
            done += len(texts)
        return done

    def _path(self, model: str) -> Path:
        return self.store.home / f"runs-{re.sub(r'[^A-Za-z0-9._-]', '_', model)}.idx"

    # -- reading -------------------------------------------------------------------

    def query_vector(self, text: str, embed: bool) -> np.ndarray | None:
        """The text's vector: cached, else computed now (``embed``), else queued for the
        worker and None this time."""
        key, model = text_key(text), self.model_name()
        blob = self.store.text_vector(key, model or "")
        if blob is not None:
            return dense.from_blob(blob, len(blob) // 4)
        if embed and (embedder := self.embedder()) is not None:
            vector: np.ndarray = embedder.embed([text])[0]
            self.store.add_text_vector(key, text, embedder.name, dense.to_blob(vector),
                                       self.clock())
            return vector
        self.store.queue_texts([text], self.clock())
        return None

    def similar_runs(self, goal_vector: np.ndarray, run: str, k: int
                     ) -> list[tuple[str, float]]:
        """The ``k`` other runs whose goal vectors are closest (positive cosines only)."""
        index = self.index()
        if index is None:
            return []
        hits = index.search(goal_vector, k + 1)
        return [(other, cosine) for other, cosine in hits if other != run and cosine > 0][:k]

    def index(self) -> VectorIndex | None:
        """The memory-mapped index of run goals for the current model, brought up to date
        from the store: only the runs changed since the file was saved are read, unless
        a run or vector was removed since (then, or when the file is missing, corrupt or
        another model's, it is rebuilt from every vector)."""
        model = self.model_name()
        if model is None:
            return None
        removals, latest = self.store.run_vectors_state()
        stamp = f"{removals}:{latest}"
        if self._index is not None and self._index.stamp == stamp:
            return self._index
        dim = self.store.run_vector_dim(model)
        if dim is None:
            return None
        path = self._path(model)
        index = self._index
        if index is None or (index.model, index.dim) != (model, dim):
            index = dense.VectorIndex.load(path, model, dim, None)
        since = _synced(index, removals) if index is not None else None
        if index is None or since is None:
            index, since = dense.VectorIndex(model, dim), -1
        if since < latest:
            import numpy as np

            rows = self.store.run_goal_vectors(model, since)
            index.add([r[0] for r in rows],
                      np.frombuffer(b"".join(r[1] for r in rows), "<f4").reshape(len(rows), -1))
            index.save(path, stamp)
        index.stamp = stamp
        self._index = index
        return index


def _synced(index: VectorIndex, removals: int) -> int | None:
    """The latest change an index holds, or None when it must be rebuilt (made before a
    removal, or by an older version)."""
    made, _, latest = index.stamp.partition(":")
    if made != str(removals) or not latest.isdigit():
        return None
    return int(latest)
