"""GradCache (`CachedMultipleNegativesRankingLoss`) on every backend: trained a few texts at a time, an encoder takes
the steps of the plain loss over the whole batch: with dropout off over uneven mini-batches (the gradients add up),
and with dropout on (each mini-batch embedded again with the masks of its first pass)."""

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks import BertTextEncoder
from kerasbert.training import CachedMultipleNegativesRankingLoss, MatryoshkaLoss, MultipleNegativesRankingLoss


@pytest.fixture(scope="module")
def triplets():
    """12 rows of real reviews: each review's first five words, the review, and another review."""
    reviews = [text for text in load_dataset("uci_sentiment", "train")["text"] if len(text.split()) >= 12][:12]
    return pd.DataFrame({"anchor": [" ".join(text.split()[:5]) for text in reviews], "positive": reviews,
                         "negative": reviews[6:] + reviews[:6]})


def trained_weights(tiny_preset, rows, loss, dropout):
    keras.utils.set_random_seed(0)
    encoder = BertTextEncoder.from_preset(tiny_preset, backbone_overrides={"dropout": dropout,
                                                                           "attention_dropout": dropout})
    encoder.compile(optimizer=keras.optimizers.SGD(0.5), loss=loss)  # steps = gradients (Adam would magnify noise)
    before = [np.array(weight) for weight in encoder.trainable_weights]
    losses = encoder.fit(rows, epochs=2, batch_size=6, verbose=0).history["loss"]
    after = [np.array(weight) for weight in encoder.trainable_weights]
    assert max(np.abs(a - b).max() for a, b in zip(after, before)) > 1e-3  # the steps moved the weights
    return losses, after


# Every backend has its own cached step: the second case (dropout, a last chunk of another size) runs on each.
@pytest.mark.parametrize("dropout, mini_batch_size", [(0.0, 8), pytest.param(0.1, 18, marks=pytest.mark.all_backends)])
def test_cached_steps_are_the_plain_steps(tiny_preset, triplets, dropout, mini_batch_size):
    """6 rows of 3 texts a batch: 18 texts in mini-batches of 8 (8+8+2) without dropout; with dropout, in one
    mini-batch, where the plain step draws the same masks (a second pass with other masks would differ)."""
    cached = trained_weights(tiny_preset, triplets, CachedMultipleNegativesRankingLoss(mini_batch_size=mini_batch_size),
                             dropout)
    plain = trained_weights(tiny_preset, triplets, MultipleNegativesRankingLoss(), dropout)
    np.testing.assert_allclose(cached[0], plain[0], rtol=1e-5)
    for got, expected in zip(cached[1], plain[1]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_mini_batch_size_is_checked_and_the_loss_has_a_name():
    with pytest.raises(ValueError, match="mini_batch_size must be a positive int"):
        CachedMultipleNegativesRankingLoss(mini_batch_size=0)
    loss = keras.losses.deserialize(keras.losses.serialize(CachedMultipleNegativesRankingLoss(mini_batch_size=8)))
    assert loss.mini_batch_size == 8 and loss.name == "cached_multiple_negatives_ranking_loss"
    assert MatryoshkaLoss(loss, dimensions=(16, 8)).mini_batch_size == 8  # trains with GradCache too
    assert MatryoshkaLoss(MultipleNegativesRankingLoss(), dimensions=(16, 8)).mini_batch_size is None
