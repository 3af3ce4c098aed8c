"""The store's queries about the vectors of query texts (run goals, error lines) and the
embedder that made them. Shared by both backends (a mixin of ``SQLStore``).

A vector is little-endian float32 bytes (``np.frombuffer(blob, "<f4")``): a BLOB in
SQLite, ``bytea`` in PostgreSQL; what is read is handed back as ``bytes``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reflect.base.text import clip, format_error, text_key
from reflect.store.base import Args, Backend, Tx, put_meta
from reflect.store.runs import MAX_GOAL_CHARS


def error_query(failure: Mapping[str, Any]) -> str:
    """The text that stands for a failure in a search: its error type and message."""
    return format_error(failure["error_type"], failure["message"])


def drop_failure_texts(tx: Tx, condition: str, args: Args) -> None:
    """Take out of the vector table the texts the failures that meet ``condition`` asked
    vectors for (their error lines and goals), unless another failure has them too: what
    goes with a run cleared or a lesson forgotten."""
    def keys(where: str) -> set[str]:
        return {text_key(t) for r in tx.execute(
            f"SELECT error_type, message, goal FROM failures WHERE {where}", args).fetchall()
            for t in (error_query(r), clip(r["goal"], MAX_GOAL_CHARS))}

    texts = keys(condition)
    for key in sorted(texts - keys(f"NOT ({condition})") if texts else ()):
        tx.execute("DELETE FROM query_vectors WHERE key = ?", (key,))


def _embedder_key(spec: str) -> str:
    return f"embedder:{spec}"


class VectorQueries(Backend):
    def embedder_model(self, spec: str) -> str | None:
        """The model that was loaded for ``spec`` (a REFLECT_EMBEDDINGS value), recorded
        by whichever process loaded it: a process that never loads it can still use its
        vectors."""
        value = self._value("SELECT value FROM meta WHERE key = ?", (_embedder_key(spec),))
        return None if value is None else str(value)

    def record_embedder(self, spec: str, model: str) -> None:
        with self.write() as tx:
            put_meta(tx, _embedder_key(spec), model)

    def texts_to_embed(self, model: str, limit: int) -> list[tuple[str, str]]:
        """Queued texts (key, text) with no vector from ``model``."""
        return [(r[0], r[1]) for r in self._rows(
            "SELECT key, text FROM query_vectors WHERE vector IS NULL OR model != ? LIMIT ?",
            (model, limit))]

    def put_vectors(self, model: str, vectors: list[tuple[str, bytes]]) -> None:
        """Store ``model``'s vector (key, bytes) of texts already queued."""
        with self.write() as tx:
            for key, vector in vectors:
                tx.execute("UPDATE query_vectors SET model = ?, vector = ? WHERE key = ?",
                           (model, vector, key))

    def text_vector(self, key: str, model: str) -> bytes | None:
        """The vector ``model`` made of the text ``key`` names, if it did."""
        vector = self._value(
            "SELECT vector FROM query_vectors WHERE key = ? AND model = ?"
            " AND vector IS NOT NULL", (key, model))
        return None if vector is None else bytes(vector)

    def add_text_vector(self, key: str, text: str, model: str, vector: bytes,
                        now: float) -> None:
        """Keep a text with its vector, computed by the caller just now."""
        with self.write() as tx:
            tx.execute(
                """INSERT INTO query_vectors (key, text, model, vector, created)
                   VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET
                   text = excluded.text, model = excluded.model, vector = excluded.vector,
                   created = excluded.created""",
                (key, text, model, vector, now))
