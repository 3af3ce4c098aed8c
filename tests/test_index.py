import struct

import numpy as np
import pytest
from reflect.index import VectorIndex, from_blob, to_blob
from reflect.index.vectors import ALIGN, MAGIC

DIM = 16


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def random_index(n: int, seed: int = 0) -> tuple[VectorIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    index = VectorIndex("m", DIM)
    index.add([f"v{i}" for i in range(n)], vectors)
    return index, vectors


def brute_force(vectors: np.ndarray, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    scores = unit(vectors.astype(np.float64)) @ unit(query.astype(np.float64))
    order = np.argsort(-scores)[:k]
    return [(f"v{i}", scores[i]) for i in order]


def assert_same(got, expected):
    assert [i for i, _ in got] == [i for i, _ in expected]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)


@pytest.mark.parametrize("k", [1, 5, 37, 500, 501, 10_000])
def test_search_matches_brute_force(k):
    index, vectors = random_index(500)
    rng = np.random.default_rng(1)
    for _ in range(5):
        query = rng.standard_normal(DIM).astype(np.float32)
        assert_same(index.search(query, k), brute_force(vectors, query, k))


def test_search_scales_the_query_and_accepts_float64():
    index, vectors = random_index(50)
    query = np.random.default_rng(2).standard_normal(DIM) * 7.5
    assert_same(index.search(query, 10), brute_force(vectors, query, 10))


def test_ranked_gives_the_spread_of_every_row_s_cosine():
    index, vectors = random_index(300)
    query = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    ranked = index.ranked(query, 7)
    assert_same(ranked.hits, brute_force(vectors, query, 7))
    every = unit(vectors.astype(np.float64)) @ unit(query.astype(np.float64))
    assert ranked.rows == 300
    np.testing.assert_allclose([ranked.mean, ranked.std], [every.mean(), every.std()],
                               atol=1e-5)


def test_empty_index_and_nonpositive_k():
    index = VectorIndex("m", DIM)
    assert len(index) == 0 and index.matrix.shape == (0, DIM)
    assert index.search(np.ones(DIM), 5) == []
    full, _ = random_index(10)
    assert full.search(np.ones(DIM), 0) == []


def test_add_normalizes_and_is_incremental():
    index, vectors = random_index(300)
    more = np.random.default_rng(3).standard_normal((200, DIM)).astype(np.float32)
    for i in range(0, 200, 7):  # many small adds exercise the growing buffer
        index.add([f"v{300 + j}" for j in range(i, min(i + 7, 200))], more[i : i + 7])
    assert len(index) == 500 and index.matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(index.matrix, axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(index.matrix, unit(np.vstack([vectors, more])), atol=1e-6)


def test_readd_replaces_and_delete_removes():
    index, vectors = random_index(20)
    target = np.zeros(DIM, dtype=np.float32)
    target[3] = 1
    index.add(["v7", "new"], np.stack([target * 2, -target]))
    assert len(index) == 21
    assert index.search(target, 1) == [("v7", pytest.approx(1.0))]
    assert index.search(-target, 1) == [("new", pytest.approx(1.0))]
    index.delete(["v7", "v0", "unknown"])
    assert len(index) == 19 and "v7" not in index.ids and "v0" not in index.ids
    query = vectors[5]
    assert index.search(query, 1)[0][0] == "v5"
    rest = np.delete(np.arange(20), [0, 7])
    np.testing.assert_allclose(index.matrix[:18], unit(vectors[rest]), atol=1e-6)


def test_repeated_id_in_one_add_keeps_the_last():
    index = VectorIndex("m", 2)
    index.add(["a", "a"], np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert index.ids == ["a"]
    np.testing.assert_allclose(index.matrix, [[0.0, 1.0]])


def test_zero_vector_stays_zero():
    index = VectorIndex("m", 2)
    index.add(["z", "x"], np.array([[0.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(index.matrix, [[0, 0], [0.6, 0.8]])
    assert index.search(np.zeros(2), 2)[0][1] == 0.0


def test_bad_input_is_refused():
    index = VectorIndex("m", 2)
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the message is index's own
        index.add(["a", "b"], np.ones((1, 2)))
    with pytest.raises(ValueError):  # noqa: PT011 - as above
        index.add(["a\0b"], np.ones((1, 2)))


def test_save_load_round_trip_memory_maps(tmp_path):
    index, vectors = random_index(1000)
    path = tmp_path / "lessons.vec"
    index.save(path, stamp="42@2024")
    assert [p.name for p in tmp_path.iterdir()] == ["lessons.vec"]  # no temp file left
    loaded = VectorIndex.load(path, "m", DIM, "42@2024")
    assert loaded is not None and loaded.ids == index.ids
    matrix = loaded.matrix
    assert isinstance(matrix, np.memmap) and not matrix.flags.writeable
    assert path.samefile(matrix.filename) and matrix.offset % ALIGN == 0
    np.testing.assert_array_equal(matrix, index.matrix)
    query = np.random.default_rng(4).standard_normal(DIM)
    assert_same(loaded.search(query, 10), brute_force(vectors, query, 10))


def test_change_after_load_copies_and_saves_again(tmp_path):
    index, vectors = random_index(100)
    path = tmp_path / "i.vec"
    index.save(path, "s1")
    loaded = VectorIndex.load(path, "m", DIM, "s1")
    extra = np.ones((1, DIM), dtype=np.float32)
    loaded.add(["v0", "extra"], np.vstack([-vectors[0], extra[0]]))
    assert len(loaded) == 101 and not isinstance(loaded.matrix, np.memmap)
    assert loaded.search(-vectors[0], 1)[0][0] == "v0"
    loaded.save(path, "s2")  # over the file it was mapped from
    again = VectorIndex.load(path, "m", DIM, "s2")
    np.testing.assert_array_equal(again.matrix, loaded.matrix)
    again.delete(["v1"])
    assert len(again) == 100 and again.search(extra[0], 1)[0][0] == "extra"


def test_empty_index_round_trip(tmp_path):
    path = tmp_path / "empty.vec"
    VectorIndex("m", DIM).save(path, "s")
    loaded = VectorIndex.load(path, "m", DIM, "s")
    assert loaded is not None and len(loaded) == 0 and loaded.search(np.ones(DIM), 3) == []
    loaded.add(["a"], np.ones((1, DIM)))
    assert loaded.search(np.ones(DIM), 3) == [("a", pytest.approx(1.0))]


def test_unicode_ids_round_trip(tmp_path):
    index = VectorIndex("modèle", 2)
    index.add(["L-é", "", "L-漢"], np.eye(2)[[0, 1, 0]])
    index.save(tmp_path / "u.vec", "s")
    assert VectorIndex.load(tmp_path / "u.vec", "modèle", 2, "s").ids == ["L-é", "", "L-漢"]


@pytest.fixture
def saved(tmp_path):
    index, _ = random_index(10)
    path = tmp_path / "i.vec"
    index.save(path, "s")
    return path


def test_load_refuses_other_model_dim_or_stamp(saved):
    assert VectorIndex.load(saved, "m", DIM, "s") is not None
    assert VectorIndex.load(saved, "other", DIM, "s") is None
    assert VectorIndex.load(saved, "m", DIM * 2, "s") is None
    assert VectorIndex.load(saved, "m", DIM, "stale") is None


def test_load_missing_is_none(tmp_path):
    assert VectorIndex.load(tmp_path / "absent.vec", "m", DIM, "s") is None
    assert VectorIndex.load(tmp_path, "m", DIM, "s") is None  # a directory


@pytest.mark.parametrize("keep", [0, 10, 47, 100, -1, -4 * DIM])
def test_load_truncated_is_none(saved, keep):
    data = saved.read_bytes()
    saved.write_bytes(data[:keep])
    assert VectorIndex.load(saved, "m", DIM, "s") is None


def patch(path, offset, raw):
    data = bytearray(path.read_bytes())
    data[offset : offset + len(raw)] = raw
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("offset", "raw"),
    [
        (0, b"NOTMAGIC"),
        (8, struct.pack("<I", 99)),  # format version
        (16, struct.pack("<Q", 11)),  # count no longer matches the size
        (32, struct.pack("<Q", 10**9)),  # ids longer than the header
        (40, struct.pack("<Q", 65)),  # unaligned matrix
    ],
)
def test_load_corrupt_is_none(saved, offset, raw):
    assert saved.read_bytes()[:8] == MAGIC
    patch(saved, offset, raw)
    assert VectorIndex.load(saved, "m", DIM, "s") is None


def test_load_with_extra_bytes_is_none(saved):
    saved.write_bytes(saved.read_bytes() + b"\0" * 4)
    assert VectorIndex.load(saved, "m", DIM, "s") is None


def test_blob_round_trip():
    vector = np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
    blob = to_blob(vector)
    assert blob == vector.astype("<f4").tobytes() and len(blob) == 4 * DIM
    back = from_blob(blob, DIM)
    assert back.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(back, vector)
    assert to_blob(np.array([1.0], dtype=np.float64)) == b"\x00\x00\x80\x3f"


def test_blob_wrong_size():
    with pytest.raises(ValueError, match="expected 64"):
        from_blob(b"\0" * 60, DIM)
