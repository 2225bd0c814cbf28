"""ExactIndex: the top-k of the full score matrix, in bounded chunks, saved and loaded; bad input named."""

import numpy as np
import pytest

from kerasbert.retrieval import ExactIndex, load_index


def brute_force(corpus, queries, top_k, metric):
    """Sort every query's scores against the whole corpus (stable: ties in corpus order)."""
    if metric == "cosine":
        corpus = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ corpus.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
    return np.take_along_axis(scores, order, axis=1), order


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("chunk_size", [7, 64, 100_000])
def test_search_equals_the_full_score_matrix_in_any_chunks(metric, chunk_size):
    rng = np.random.default_rng(0)
    corpus = rng.normal(size=(300, 16)).astype(np.float32)
    corpus[150] = corpus[20]  # a tie: the earlier vector ranks first
    queries = np.concatenate([rng.normal(size=(40, 16)), corpus[20:21]]).astype(np.float32)
    index = ExactIndex(16, metric, query_batch_size=16, chunk_size=chunk_size)
    index.add(corpus[:100], ids=[f"p{i}" for i in range(100)]).add(corpus[100:], ids=[f"p{i}" for i in range(100, 300)])
    scores, ids = index.search(queries, top_k=10)
    expected_scores, expected_positions = brute_force(corpus, queries, 10, metric)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-6)
    assert ids.tolist() == [[f"p{i}" for i in row] for row in expected_positions]
    tied = ids[-1].tolist().index("p20")  # the query equal to p20: p150 right after it
    assert ids[-1, tied + 1] == "p150"


def test_top_k_past_the_corpus_returns_every_vector_and_ids_default_to_positions():
    index = ExactIndex(2).add(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    scores, ids = index.search(np.array([[1.0, 0.2]]), top_k=10)
    assert ids.tolist() == [[0, 2, 1]] and scores.shape == (1, 3)


def test_saved_index_loads_and_searches_the_same(tmp_path):
    rng = np.random.default_rng(1)
    index = ExactIndex(8, "dot").add(rng.normal(size=(50, 8)), ids=[f"doc-{i}" for i in range(50)])
    queries = rng.normal(size=(5, 8))
    index.save(tmp_path / "index")
    loaded = load_index(tmp_path / "index")
    assert (loaded.metric, loaded.dimension, len(loaded)) == ("dot", 8, 50)
    for got, want in zip(loaded.search(queries, 5), index.search(queries, 5)):
        np.testing.assert_array_equal(got, want)
    index.add(rng.normal(size=(1, 8)), ids=["late"]).save(tmp_path / "index")  # a second save replaces the first
    assert len(load_index(tmp_path / "index")) == 51


def test_bad_input_is_named_before_any_search(tmp_path):
    index = ExactIndex(4)
    with pytest.raises(ValueError, match="empty"):
        index.search(np.ones((1, 4)))
    with pytest.raises(ValueError, match=r"shape \[n, 4\]"):
        index.add(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        index.add(np.array([[1.0, np.nan, 0, 0]]))
    with pytest.raises(ValueError, match="2 ids for 1 vectors"):
        index.add(np.ones((1, 4)), ids=["a", "b"])
    index.add(np.ones((1, 4)), ids=["a"])
    with pytest.raises(ValueError, match="'a' is given twice"):
        index.add(np.ones((1, 4)), ids=["a"])
    with pytest.raises(ValueError, match="metric"):
        ExactIndex(4, metric="euclid")
    (tmp_path / "broken").mkdir()
    with pytest.raises(ValueError, match="not a saved index"):
        load_index(tmp_path / "broken")
    index.save(tmp_path / "saved")
    (tmp_path / "saved" / "vectors.npy").unlink()
    with pytest.raises(ValueError, match="missing a file"):
        load_index(tmp_path / "saved")
