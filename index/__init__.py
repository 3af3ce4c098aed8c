"""Embeddings and vector search, installed as ``reflect.index``.

General on purpose: it knows nothing of failures or lessons. Vectors are
little-endian float32 (``np.frombuffer(blob, "<f4")``), rows L2-normalized so
cosine similarity is a dot product.

Importing this package is free: the names below load their module (and numpy)
on first access, and torch is imported only when a real model is loaded.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook that writes a file loads no typing
if TYPE_CHECKING:
    from typing import Any

    from .embedders import (
        Embedder,
        HashingEmbedder,
        SentenceTransformerEmbedder,
        bundled_model_path,
        load_embedder,
    )
    from .vectors import Ranked, VectorIndex, from_blob, to_blob

_HOME = {
    "Embedder": "embedders",
    "HashingEmbedder": "embedders",
    "SentenceTransformerEmbedder": "embedders",
    "bundled_model_path": "embedders",
    "load_embedder": "embedders",
    "Ranked": "vectors",
    "VectorIndex": "vectors",
    "from_blob": "vectors",
    "to_blob": "vectors",
}

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "Ranked",
    "SentenceTransformerEmbedder",
    "VectorIndex",
    "bundled_model_path",
    "from_blob",
    "load_embedder",
    "to_blob",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value
