"""ApproximateIndex (USearch HNSW) finds nearly the exact top-k, at lower precision too, and searches the same
after a save, read into memory or viewed from disk."""

import numpy as np
import pytest

pytest.importorskip("usearch")

from kerasbert.retrieval import ApproximateIndex, ExactIndex, load_index  # noqa: E402


@pytest.fixture(scope="module")
def clustered():
    """4,000 vectors in 40 clusters (neighbours close together, as sentence embeddings are) and 200 queries."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(40, 64))
    corpus = centres[rng.integers(0, 40, 4000)] + 0.3 * rng.normal(size=(4000, 64))
    queries = centres[rng.integers(0, 40, 200)] + 0.3 * rng.normal(size=(200, 64))
    return corpus.astype(np.float32), queries.astype(np.float32), [f"p{i}" for i in range(4000)]


def recall_at(found, exact):
    return np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact)])


@pytest.mark.parametrize("metric, precision, least_recall", [("cosine", "f32", 0.97), ("cosine", "f16", 0.97),
                                                              ("cosine", "i8", 0.9), ("dot", "f32", 0.97)])
def test_top_10_is_nearly_the_exact_top_10(clustered, metric, precision, least_recall):
    corpus, queries, ids = clustered
    exact_scores, exact_ids = ExactIndex(64, metric).add(corpus, ids).search(queries, 10)
    scores, found = ApproximateIndex(64, metric, precision=precision).add(corpus, ids).search(queries, 10)
    assert recall_at(found, exact_ids) >= least_recall
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first
    if precision == "f32":  # the scores of the vectors both found: the exact scores
        for row_ids, row_scores, want_ids, want_scores in zip(found, scores, exact_ids, exact_scores):
            want = dict(zip(want_ids, want_scores))
            shared = [(score, want[i]) for i, score in zip(row_ids, row_scores) if i in want]
            np.testing.assert_allclose(*zip(*shared), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("view", [False, True])
def test_saved_graph_searches_the_same_in_memory_or_viewed_from_disk(clustered, tmp_path, view):
    corpus, queries, ids = clustered
    index = ApproximateIndex(64, precision="i8", connectivity=8).add(corpus[:1000], ids[:1000])
    index.save(tmp_path / "hnsw")
    loaded = load_index(tmp_path / "hnsw", view=view)
    assert isinstance(loaded, ApproximateIndex) and len(loaded) == 1000
    assert (loaded.precision, loaded.connectivity) == ("i8", 8)
    for got, want in zip(loaded.search(queries, 5), index.search(queries, 5)):
        np.testing.assert_array_equal(got, want)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="precision"):
        ApproximateIndex(8, precision="f8")
    with pytest.raises(ValueError, match="cosine only|keeps only cosine"):
        ApproximateIndex(8, metric="dot", precision="i8")
    with pytest.raises(ValueError, match="connectivity"):
        ApproximateIndex(8, connectivity=0)
