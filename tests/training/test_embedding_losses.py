"""The embedding losses equal sentence-transformers' on the same embeddings (every backend); through the real
all-MiniLM-L6-v2, on the same weights and texts, in tests/tasks/test_text_encoder_training.py."""

import numpy as np
import pytest
from keras import ops

from kerasbert.training.embedding_losses import (
    angle_loss,
    contrastive_loss,
    cosent_loss,
    matryoshka_loss,
    multiple_negatives_ranking_loss,
    triplet_loss,
)

torch = pytest.importorskip("torch")
st_losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")


def reference(loss_class, *embeddings, labels=None, **options):
    loss = loss_class(None, **options)  # the model is only used to embed texts, not by the loss itself
    tensors = [torch.tensor(x) for x in embeddings]
    return float(loss.compute_loss_from_embeddings(tensors, None if labels is None else torch.tensor(labels)))


def ours(loss, *embeddings, **arguments):
    return float(ops.convert_to_numpy(loss(*[ops.convert_to_tensor(x) for x in embeddings], **arguments)))


@pytest.fixture(params=[48, 47], ids=["even width", "odd width"])
def batch(request):
    """Four [16, width] embedding tensors at different scales, with a repeated row, and scores with ties."""
    rng = np.random.default_rng(request.param)
    a, p, n1, n2 = (rng.normal(size=(16, request.param)).astype(np.float32) * rng.uniform(0.5, 3) for _ in range(4))
    p[3] = a[3]
    scores = rng.integers(0, 5, 16).astype(np.float32) / 4
    return a, p, n1, n2, scores


@pytest.mark.all_backends
def test_in_batch_negative_losses_equal_sentence_transformers(batch):
    a, p, n1, n2, _ = batch
    for scale in (20.0, 7.5):
        for negatives in ((), (n1,), (n1, n2)):
            assert ours(multiple_negatives_ranking_loss, a, p, *negatives, scale=scale) == pytest.approx(
                reference(st_losses.MultipleNegativesRankingLoss, a, p, *negatives, scale=scale), rel=1e-5)
        symmetric = reference(st_losses.MultipleNegativesRankingLoss, a, p, scale=scale,
                              directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction")
        assert ours(multiple_negatives_ranking_loss, a, p, scale=scale, symmetric=True) == pytest.approx(symmetric,
                                                                                                          rel=1e-5)


@pytest.mark.all_backends
def test_scored_and_labelled_pair_losses_equal_sentence_transformers(batch):
    a, p, n1, _, scores = batch
    assert ours(cosent_loss, a, p, scores=scores) == pytest.approx(
        reference(st_losses.CoSENTLoss, a, p, labels=scores), rel=1e-5)
    assert ours(angle_loss, a, p, scores=scores) == pytest.approx(
        reference(st_losses.AnglELoss, a, p, labels=scores), rel=1e-5)
    labels = (scores > 0.5).astype(np.float32)
    for margin in (0.5, 0.9):
        assert ours(contrastive_loss, a, p, labels=labels, margin=margin) == pytest.approx(
            reference(st_losses.ContrastiveLoss, a, p, labels=labels, margin=margin), rel=1e-5)
    for margin in (5.0, 1.0):
        assert ours(triplet_loss, a, p, n1, margin=margin) == pytest.approx(
            reference(st_losses.TripletLoss, a, p, n1, triplet_margin=margin), rel=1e-5)


@pytest.mark.all_backends
def test_matryoshka_sums_the_loss_of_each_renormalised_prefix(batch):
    a, p, _, _, scores = batch
    dimensions, weights = (32, 16, 8), (1.0, 0.5, 0.25)

    def prefix(x, k):
        return x[:, :k] / np.linalg.norm(x[:, :k], axis=1, keepdims=True)

    expected = sum(w * reference(st_losses.CoSENTLoss, prefix(a, k), prefix(p, k), labels=scores)
                   for k, w in zip(dimensions, weights))
    assert ours(lambda *x, **kw: matryoshka_loss(cosent_loss, list(x), dimensions, weights, **kw), a, p,
                scores=scores) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="one weight per dimension"):
        matryoshka_loss(cosent_loss, [ops.convert_to_tensor(a)], (8, 4), (1.0,), scores=scores)
    with pytest.raises(ValueError, match="must lie in 1..47|must lie in 1..48"):
        matryoshka_loss(cosent_loss, [ops.convert_to_tensor(a)], (400,), scores=scores)
