"""The encoder's Keras losses read a training batch `[examples * texts, dim]` (example-major) and equal
sentence-transformers' losses on the same texts grouped by role, on every backend; a mismatched loss and data layout
is named before training."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasbert.data.text_tuples import TextTuples
from kerasbert.training.encoder_losses import (
    AnglELoss,
    ContrastiveLoss,
    CoSENTLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
    TripletLoss,
    encoder_loss,
)

torch = pytest.importorskip("torch")
st_losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")


def reference(loss, columns, labels=None):
    tensors = [torch.tensor(x) for x in columns]
    return float(loss.compute_loss_from_embeddings(tensors, None if labels is None else torch.tensor(labels)))


def ours(loss, columns, y_true, sample_weight=None):
    """`loss` on the batch laid out as `fit` feeds it: each example's texts one after the other."""
    flat = np.stack(columns, axis=1).reshape(-1, columns[0].shape[-1])
    return float(ops.convert_to_numpy(loss(ops.convert_to_tensor(y_true), ops.convert_to_tensor(flat),
                                           sample_weight=sample_weight)))


@pytest.fixture
def columns():
    """Four [12, 40] embedding columns (anchor, positive, two negatives) at different scales; scores with ties."""
    rng = np.random.default_rng(7)
    return [rng.normal(size=(12, 40)).astype(np.float32) * rng.uniform(0.5, 3) for _ in range(4)]


@pytest.mark.all_backends
def test_losses_on_a_training_batch_equal_sentence_transformers(columns):
    scores = np.random.default_rng(1).integers(0, 5, 12).astype(np.float32) / 4
    zeros = np.zeros(12, np.float32)
    for negatives in (0, 1, 2):
        texts = columns[:2 + negatives]
        assert ours(MultipleNegativesRankingLoss(scale=7.5), texts, zeros) == pytest.approx(
            reference(st_losses.MultipleNegativesRankingLoss(None, scale=7.5), texts), rel=1e-5)
    symmetric = st_losses.MultipleNegativesRankingLoss(None, directions=("query_to_doc", "doc_to_query"),
                                                       partition_mode="per_direction")
    assert ours(MultipleNegativesRankingLoss(symmetric=True), columns[:2], zeros) == pytest.approx(
        reference(symmetric, columns[:2]), rel=1e-5)
    pair = columns[:2]
    assert ours(CoSENTLoss(), pair, scores) == pytest.approx(reference(st_losses.CoSENTLoss(None), pair, scores),
                                                             rel=1e-5)
    assert ours(AnglELoss(), pair, scores) == pytest.approx(reference(st_losses.AnglELoss(None), pair, scores),
                                                            rel=1e-5)
    labels = (scores > 0.5).astype(np.float32)
    assert ours(ContrastiveLoss(margin=0.7), pair, labels) == pytest.approx(
        reference(st_losses.ContrastiveLoss(None, margin=0.7), pair, labels), rel=1e-5)
    assert ours(TripletLoss(margin=1.0), columns[:3], zeros) == pytest.approx(
        reference(st_losses.TripletLoss(None, triplet_margin=1.0), columns[:3]), rel=1e-5)


@pytest.mark.all_backends
def test_matryoshka_and_sample_weights(columns):
    zeros = np.zeros(12, np.float32)
    inner = st_losses.MultipleNegativesRankingLoss(None)

    def cut(x, k):
        return x[:, :k] / np.linalg.norm(x[:, :k], axis=1, keepdims=True)

    expected = sum(w * reference(inner, [cut(x, k) for x in columns[:3]]) for k, w in zip((40, 16, 8), (1, .5, .5)))
    matryoshka = MatryoshkaLoss(MultipleNegativesRankingLoss(), (40, 16, 8), weights=(1, .5, .5))
    assert ours(matryoshka, columns[:3], zeros) == pytest.approx(expected, rel=1e-5)
    # a weight per example: example 0 counted twice, example 1 not at all (Keras: weighted sum / examples)
    weights = np.ones(12, np.float32)
    weights[0], weights[1] = 2.0, 0.0
    per_example = [ours(TripletLoss(), [x[i:i + 1] for x in columns[:3]], zeros[:1]) for i in range(12)]
    assert ours(TripletLoss(), columns[:3], zeros, sample_weight=weights) == pytest.approx(
        np.dot(per_example, weights) / 12, rel=1e-5)


def rows(scored=False, texts=2):
    return TextTuples(texts=[], texts_per_example=texts, scores=np.zeros(1, np.float32), scored=scored,
                      text_ids=np.zeros((1, texts), np.int64))


def test_loss_and_rows_must_match():
    assert isinstance(encoder_loss(None, rows(), 384), MultipleNegativesRankingLoss)
    assert isinstance(encoder_loss(None, rows(scored=True), 384), CoSENTLoss)
    assert isinstance(encoder_loss("angle", rows(scored=True), 384), AnglELoss)
    with pytest.raises(ValueError, match="CoSENTLoss trains on scored pairs"):
        encoder_loss("cosent", rows(), 384)
    with pytest.raises(ValueError, match="MultipleNegativesRankingLoss trains on \\(anchor, positive"):
        encoder_loss(MatryoshkaLoss(MultipleNegativesRankingLoss(), (64,)), rows(scored=True), 384)
    with pytest.raises(ValueError, match="TripletLoss reads 3 texts per row; these rows have 2. Give one `negative`"):
        encoder_loss(TripletLoss(), rows(), 384)
    with pytest.raises(ValueError, match="Unknown loss 'mnrl'"):
        encoder_loss("mnrl", rows(), 384)
    with pytest.raises(TypeError, match="compile the encoder yourself"):
        encoder_loss(keras.losses.MeanSquaredError(), rows(), 384)
    with pytest.raises(ValueError, match=r"dimensions \[512, 64\] go past the encoder's 384"):
        encoder_loss(MatryoshkaLoss(CoSENTLoss(), (512, 64)), rows(scored=True), 384)
    with pytest.raises(ValueError, match="one weight per dimension"):
        MatryoshkaLoss(CoSENTLoss(), (256, 64), weights=(1.0,))
    with pytest.raises(ValueError, match="MatryoshkaLoss wraps one of the encoder losses"):
        MatryoshkaLoss("cosent", (64,))
