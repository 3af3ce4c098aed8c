"""Exact vector search against the memory-bandwidth bound, and embedding throughput.

Run: .venv/bin/python bench/search.py [--sizes N ...] [--texts N]
Target: a top-10 search within 1.5x of the bound, the best of 5 `M.max()` over
the same in-memory matrix measured in the same run (a search must read every
byte of the matrix once, as max() does).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from figures import emit
from reflect.index import HashingEmbedder, SentenceTransformerEmbedder, VectorIndex

DIM = 384
SIZES = (10_000, 100_000, 1_000_000)
K = 10
QUERIES = 30
TEXTS = 512


def best_ms(*fns, repeat: int = 5) -> list[float]:
    """Each function's best time; interleaved, so noise from other processes hits all alike."""
    for fn in fns:
        fn()  # first touch (page faults, caches) is not what we measure
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for spent, fn in zip(times, fns, strict=True):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [min(spent) * 1000 for spent in times]


def p50_ms(fn, args) -> float:
    times = []
    for arg in args:
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def in_memory(n: int, rng: np.random.Generator, path: Path) -> tuple[float, float, float]:
    """(bound, best search, p50 search) in ms over an index of n random vectors saved to path."""
    index = VectorIndex("bench", DIM)
    index.add([f"L-{i}" for i in range(n)], rng.standard_normal((n, DIM), dtype=np.float32))
    queries = rng.standard_normal((QUERIES, DIM), dtype=np.float32)
    bound, search = best_ms(index.matrix.max, lambda: index.search(queries[0], K))
    single = p50_ms(lambda q: index.search(q, K), queries)
    index.save(path, "s")
    return bound, search, single


def search_row(n: int, rng: np.random.Generator, tmp: Path) -> tuple[str, dict]:
    path = tmp / "bench.vec"
    bound, search, single = in_memory(n, rng, path)
    start = time.perf_counter()
    loaded = VectorIndex.load(path, "bench", DIM, "s")
    opened = (time.perf_counter() - start) * 1000
    assert loaded is not None and len(loaded) == n
    path.unlink()
    gb = n * DIM * 4 / 1e9
    figures = {"vectors": n, "bound_ms": bound, "search_ms": search, "p50_ms": single,
               "load_ms": opened, "bound_gbps": gb / bound * 1000,
               "search_gbps": gb / search * 1000}
    return (
        f"{n:>9,}  {gb * 1000:7.0f} MB  {bound:8.2f} ms {gb / bound * 1000:5.1f} GB/s  "
        f"{search:8.2f} ms {gb / search * 1000:5.1f} GB/s  {search / bound:5.2f}x  "
        f"{single:8.2f} ms  {opened:7.1f} ms"
    ), figures


def sample_texts(n: int, rng: np.random.Generator) -> list[str]:
    words = (
        "error failed test import module migration table django pytest assertion "
        "timeout connection refused permission denied file not found config key value "
        "script run build compile type mismatch null pointer index out of range retry"
    ).split()
    return [" ".join(rng.choice(words, size=int(rng.integers(8, 40)))) for _ in range(n)]


def embed_row(embedder, texts: list[str]) -> tuple[str, dict]:
    embedder.embed(texts[:2])  # warm: load the model, first kernels
    single = p50_ms(lambda t: embedder.embed([t]), texts[:50])
    rates = []
    for batch in (32, 64):  # one embed() call per batch: the model encodes it at once
        start = time.perf_counter()
        for i in range(0, len(texts), batch):
            embedder.embed(texts[i : i + batch])
        rates.append(len(texts) / (time.perf_counter() - start))
    figures = {"name": embedder.name, "single_ms": single, "batch32_per_s": rates[0],
               "batch64_per_s": rates[1]}
    return (f"{embedder.name:<18} {single:8.3f} ms  {rates[0]:9.0f} texts/s  "
            f"{rates[1]:9.0f} texts/s"), figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES,
                   help="vectors of each index searched (" + " ".join(map(str, SIZES)) + ")")
    p.add_argument("--texts", type=int, default=TEXTS, help=f"texts embedded ({TEXTS})")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"exact top-{K} search, dim {DIM}, float32 (bound: best of 5 M.max() on the matrix)")
    print(
        f"{'vectors':>9}  {'matrix':>10}  {'bound (M.max)':>22}  {'search (best of 5)':>22}  "
        f"{'ratio':>6}  {'p50 1 query':>11}  {'mmap load':>10}"
    )
    figures: dict = {"dim": DIM, "k": K, "search": [], "embedding": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            row, found = search_row(n, rng, Path(tmp))
            figures["search"].append(found)
            print(row, flush=True)

    texts = sample_texts(args.texts, rng)
    print(f"\nembedding, {len(texts)} texts of 8-40 words")
    print(f"{'model':<18} {'p50 1 text':>11}  {'batch 32':>15}  {'batch 64':>15}")
    start = time.perf_counter()
    minilm = SentenceTransformerEmbedder()
    minilm.embed(["warm"])
    cold = time.perf_counter() - start
    for key, embedder in (("minilm", minilm), ("hash", HashingEmbedder())):
        row, figures["embedding"][key] = embed_row(embedder, texts)
        print(row, flush=True)
    print(f"(bundled model cold start, torch import + load: {cold:.1f} s)")
    figures["embedding"]["model_load_s"] = cold
    emit(figures)


if __name__ == "__main__":
    main()
