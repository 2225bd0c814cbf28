"""SpanBoundaryHead against the SpanBERT paper's equations (section 3.2) written in numpy: for token i of a
masked span (s, e), y_i = f(x_{s-1}, x_{e+1}, p_{i-s+1}) with f two layers of Linear -> GeLU -> LayerNorm, then
the tied output embedding plus a bias."""

import math

import keras
import numpy as np
import pytest

from kerasbert.layers.span_boundary_head import SpanBoundaryHead, span_boundaries


def spans_by_hand(positions):
    """(s - 1, e + 1, i - s + 1) of every masked position, spans being runs of adjacent masked positions."""
    masked = {p for p in positions if p > 0}
    result = []
    for p in positions:
        if p == 0:
            result.append((0, 0, 0))
            continue
        start, end = p, p
        while start - 1 in masked:
            start -= 1
        while end + 1 in masked:
            end += 1
        result.append((start - 1, end + 1, p - start + 1))
    return result


def layer_norm(x, gamma, beta, epsilon=1e-12):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + epsilon) * gamma + beta


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.mark.all_backends
def test_boundaries_are_the_tokens_around_each_span():
    positions = np.array([[2, 3, 4, 7, 0, 0], [1, 9, 10, 11, 12, 5]], "int32")
    left, right, place = (keras.ops.convert_to_numpy(part) for part in span_boundaries(positions, 14))
    expected = [spans_by_hand(row) for row in positions.tolist()]
    assert np.stack([left, right, place], -1).tolist() == [[list(t) for t in row] for row in expected]
    assert expected[0][:4] == [(1, 5, 1), (1, 5, 2), (1, 5, 3), (6, 8, 1)]


@pytest.mark.all_backends
def test_logits_equal_the_papers_equations_on_the_same_weights():
    rng = np.random.default_rng(0)
    embedding = keras.layers.Embedding(50, 8)
    embedding.build((None,))
    head = SpanBoundaryHead(vocabulary_size=50, token_embedding=embedding, max_span_length=3, position_embedding_dim=6)
    x = rng.normal(size=(2, 12, 8)).astype("float32")
    positions = np.array([[3, 4, 5, 6, 9], [2, 7, 8, 0, 0]], "int32")  # a 4-token span: its 4th place shares the 3rd
    head(x, positions)
    for weight in head.weights:  # the LayerNorms' gammas and betas away from 1 and 0
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    logits = keras.ops.convert_to_numpy(head(x, positions))

    weights = {w.path.split("/", 1)[1]: keras.ops.convert_to_numpy(w) for w in head.weights}
    table = keras.ops.convert_to_numpy(embedding.embeddings)
    for row in range(2):
        for slot, (left, right, place) in enumerate(spans_by_hand(positions[row].tolist())):
            h0 = np.concatenate([x[row, left], x[row, right], weights["position_embeddings"][min(place, 3) - 1]])
            h1 = layer_norm(gelu(h0 @ weights["dense_1/kernel"] + weights["dense_1/bias"]),
                            weights["layer_norm_1/gamma"], weights["layer_norm_1/beta"])
            h2 = layer_norm(gelu(h1 @ weights["dense_2/kernel"] + weights["dense_2/bias"]),
                            weights["layer_norm_2/gamma"], weights["layer_norm_2/beta"])
            expected = h2 @ table.T + weights["output_bias"]
            if positions[row, slot]:  # padding slots are weighted out of the loss
                np.testing.assert_allclose(logits[row, slot], expected, rtol=1e-5, atol=1e-5)
